#!/bin/bash
# rounds.sh ROUNDS OUT SPEC...: alternating rounds of llama-bench and hfstatic bench.
# SPEC is model:weights:PROGRAM.hfs[:MODEL.gguf]. For each round, spec and thread count (1, 2):
# llama-bench (if a GGUF is given), then hfstatic bench, -p 128 -n 64 (GEN_TOKENS) on both sides.
# One tab-separated line per run, appended to OUT:
#   round model weights threads tool prefill_tok_s decode_tok_s cpu_share loadavg
# cpu_share is process CPU time / (wall time x threads).
# RECACHE=1 re-reads each GGUF through a huge-page mapping (recache.py) before its run, so
# that llama.cpp maps it in 2 MiB pages as hfstatic's loader does (rounds-huge.sh sets it).
# Environment: HFSTATIC (default: hfstatic), LLAMA_BENCH (default: llama-bench), PYTHON,
# GEN_TOKENS (default 64: -n), THREADS (default "1 2"), ROUND (the round number to log, for a
# caller running one round at a time).
set -u
R=$1; OUT=$2; shift 2
N=${GEN_TOKENS:-64}
HF=${HFSTATIC:-hfstatic}; LB=${LLAMA_BENCH:-llama-bench}; PY=${PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
rt=$(mktemp); trap 'rm -f "$rt"' EXIT
share() { awk -v t="$2" '{printf "%.2f", ($2+$3)/($1*t)}' "$1"; }
for r in $(seq 1 "$R"); do for spec in "$@"; do
  IFS=: read -r model wt hfs gguf <<<"$spec"
  for t in ${THREADS:-1 2}; do
    if [ -n "${gguf:-}" ]; then
      [ "${RECACHE:-0}" = 1 ] && "$PY" "$here/recache.py" "$gguf"
      load=$(cut -d' ' -f1 /proc/loadavg)
      j=$(/usr/bin/time -f "%e %U %S" -o "$rt" "$LB" -m "$gguf" -p 128 -n "$N" -t "$t" -r 1 -o json 2>/dev/null)
      v=$(echo "$j" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print("\t".join("%.2f"%x["avg_ts"] for x in d))')
      echo -e "${ROUND:-$r}\t$model\t$wt\t$t\tllama.cpp\t$v\t$(share "$rt" $t)\t$load" | tee -a "$OUT"
    fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    j=$(/usr/bin/time -f "%e %U %S" -o "$rt" "$HF" bench "$hfs" --prompt-tokens 128 --gen-tokens "$N" --threads "$t" --repeat 1 --json)
    v=$(echo "$j" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print("%.2f\t%.2f"%(d["prefill_tok_s"],d["decode_tok_s"]))')
    echo -e "${ROUND:-$r}\t$model\t$wt\t$t\thfstatic\t$v\t$(share "$rt" $t)\t$load" | tee -a "$OUT"
  done
done; done
