#!/usr/bin/python3
"""Write a reference.summary.json (the format of internal/testckpt's Summary) from the logits
of llamacpp_logits or ref64.py.

  python3 summarize.py LOGITS DTYPE VOCAB IDS GREEDY_TXT REFERENCE MODEL DECIMALS > summary.json

DTYPE is f32 or f64 (the logits file's element type); REFERENCE and MODEL are the summary's
"reference" and "model" strings; logits are written with DECIMALS decimals.
"""
import json, sys

import numpy as np

path, dtype, vocab, ids, greedy, reference, model, decimals = sys.argv[1:9]
vocab, decimals = int(vocab), int(decimals)
ids = [int(t) for t in ids.split(",")]
logits = np.fromfile(path, "<f4" if dtype == "f32" else "<f8").astype(np.float64).reshape(len(ids), vocab)
r = lambda x: round(float(x), decimals)
probe = [k * (vocab // 64) for k in range(64)]
positions = []
for i, row in enumerate(logits):
    m = row.max()
    top = np.argsort(-row, kind="stable")[:10]
    positions.append({
        "pos": i, "argmax": int(np.argmax(row)),
        "logsumexp": r(m + np.log(np.exp(row - m).sum())),
        "top10": [[int(j), r(row[j])] for j in top],
        "probe_logits": [r(row[j]) for j in probe],
    })
g = [line.split() for line in open(greedy) if line.strip()]
json.dump({
    "reference": reference, "model": model, "n_vocab": vocab, "n_positions": len(ids),
    "logits_layout": f"float{32 if dtype == 'f32' else 64} little-endian [n_positions][n_vocab]",
    "input_ids": ids, "greedy_ids": [int(a) for a, _ in g], "greedy_max_logits": [r(b) for _, b in g],
    "probe_ids": probe, "positions": positions,
}, sys.stdout, separators=(",", ":"))
sys.stdout.write("\n")
