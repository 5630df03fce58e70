#!/usr/bin/env python3
# med.py LOG...: medians per (model, weights, threads, tool) of rounds.sh logs, and the ratios
# hfstatic / llama.cpp, as prefill / decode.
import sys, statistics
from collections import defaultdict
runs = defaultdict(list)
for path in sys.argv[1:]:
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if len(f) >= 7:
            runs[(f[1], f[2], int(f[3]), f[4])].append((float(f[5]), float(f[6])))
for k in sorted({k[:3] for k in runs}):
    l, h = runs.get(k + ("llama.cpp",), []), runs.get(k + ("hfstatic",), [])
    if l and h:
        m = lambda xs, i: statistics.median(x[i] for x in xs)
        print(*k, "llama.cpp %.0f / %.1f" % (m(l, 0), m(l, 1)), "hfstatic %.0f / %.1f" % (m(h, 0), m(h, 1)),
              "ratio %.2f / %.2f" % (m(h, 0) / m(l, 0), m(h, 1) / m(l, 1)))
