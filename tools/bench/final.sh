#!/bin/bash
# final.sh OUT [ROUNDS]: the side-by-side of the README. ROUNDS (default 3) times: a triad on
# 1 and 2 threads (appended to OUT-triad.txt), then every model through rounds-huge.sh (OUT).
# Expects, in the current directory, the programs qwen3-0.6b-{f32,q8,q4}.hfs and
# smollm2-135m-{f32,q8,q4}.hfs and the GGUFs q3/qwen3-0.6b-{f32,q8_0,q4_0}.gguf and
# l2c/smollm2-135m-{f32,q8_0,q4_0}.gguf (docs/performance.md says how to make them).
# Environment: TRIAD (default: triad, built from triad.c), and those of rounds.sh.
# (The lab notebook calls runs of this script final5.sh, OUT r6.tsv, and final7.sh, OUT r8.tsv.)
set -u
OUT=$1; R=${2:-3}
here=$(cd "$(dirname "$0")" && pwd); TR=${TRIAD:-triad}
for r in $(seq 1 "$R"); do
  echo "triad round $r 1t: $(OMP_NUM_THREADS=1 "$TR")" >> "$OUT-triad.txt"
  echo "triad round $r 2t: $(OMP_NUM_THREADS=2 "$TR")" >> "$OUT-triad.txt"
  "$here/rounds-huge.sh" 1 "$OUT" \
    qwen3-0.6b:f32:qwen3-0.6b-f32.hfs:q3/qwen3-0.6b-f32.gguf \
    qwen3-0.6b:q8:qwen3-0.6b-q8.hfs:q3/qwen3-0.6b-q8_0.gguf \
    qwen3-0.6b:q4:qwen3-0.6b-q4.hfs:q3/qwen3-0.6b-q4_0.gguf \
    smollm2-135m:f32:smollm2-135m-f32.hfs:l2c/smollm2-135m-f32.gguf \
    smollm2-135m:q8:smollm2-135m-q8.hfs:l2c/smollm2-135m-q8_0.gguf \
    smollm2-135m:q4:smollm2-135m-q4.hfs:l2c/smollm2-135m-q4_0.gguf
done
