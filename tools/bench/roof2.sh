#!/bin/bash
# roof2.sh OUT [ROUNDS]: ROUNDS (default 6) rounds of, for W in q8 f32 and T in 1 2, a triad on
# T threads right before a decode-only run of qwen3-0.6b-W.hfs on T threads, so that each
# decode is compared with the bandwidth of the same minute. One line per pair:
#   W T triad_read_GB_s decode_tok_s program_bytes
# Environment: HFSTATIC (default: hfstatic), TRIAD (default: triad), PYTHON.
set -u
OUT=$1; R=${2:-6}; HF=${HFSTATIC:-hfstatic}; TR=${TRIAD:-triad}; PY=${PYTHON:-python3}
for r in $(seq 1 "$R"); do for w in q8 f32; do for t in 1 2; do
  tr=$(OMP_NUM_THREADS=$t "$TR" | awk '{print $7}')
  d=$("$HF" bench qwen3-0.6b-$w.hfs --prompt-tokens 1 --gen-tokens 64 --threads $t --repeat 1 --json |
    "$PY" -c 'import json,sys; d=json.load(sys.stdin); print("%.2f %d"%(d["decode_tok_s"], d["program_bytes"]))')
  echo "$w $t $tr $d" >> "$OUT"
done; done; done
