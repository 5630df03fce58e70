#!/bin/bash
# roof.sh OUT: a triad, decode-only runs of the Qwen3-0.6B programs on 1 and 2 threads, a
# triad, twice. Each decode line: weights threads decode_tok_s program_bytes. Decode reads the
# whole program once per token, so tok/s x program_bytes / triad is the share of the roofline.
# Environment: HFSTATIC (default: hfstatic), TRIAD (default: triad), PYTHON.
set -u
OUT=$1; HF=${HFSTATIC:-hfstatic}; TR=${TRIAD:-triad}; PY=${PYTHON:-python3}
tri() { echo "triad 1t $(OMP_NUM_THREADS=1 "$TR" | awk '{print $7}') 2t $(OMP_NUM_THREADS=2 "$TR" | awk '{print $7}')" >> "$OUT"; }
tri; for r in 1 2; do for w in f32 q8 q4; do for t in 1 2; do
  echo "$w $t $("$HF" bench qwen3-0.6b-$w.hfs --prompt-tokens 1 --gen-tokens 64 --threads $t --repeat 1 --json |
    "$PY" -c 'import json,sys; d=json.load(sys.stdin); print("%.2f %d"%(d["decode_tok_s"], d["program_bytes"]))')" >> "$OUT"
done; done; tri; done
