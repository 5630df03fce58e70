#!/bin/bash
# depth.sh ROUNDS OUT: long context. For each round and T in 1 2: re-read the q4 GGUF into
# 2 MiB pages (recache.py), then llama-bench and hfstatic bench with 1920 tokens already in the
# cache (-d 1920 / --depth 1920), 64 prompt and 64 generated tokens. The hfstatic program is
# Qwen3-0.6B q4 exported with --context 2048 (qwen3-0.6b-q4-2k.hfs).
# Environment: HFSTATIC (default: hfstatic), LLAMA_BENCH (default: llama-bench), PYTHON.
set -u
R=$1; OUT=$2
HF=${HFSTATIC:-hfstatic}; LB=${LLAMA_BENCH:-llama-bench}; PY=${PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
for r in $(seq 1 "$R"); do for T in 1 2; do
  "$PY" "$here/recache.py" q3/qwen3-0.6b-q4_0.gguf
  echo "$r $T llama.cpp $("$LB" -m q3/qwen3-0.6b-q4_0.gguf -p 64 -n 64 -d 1920 -t $T -r 1 -o jsonl | tr '\n' ' ')" >> "$OUT"
  echo "$r $T hfstatic $("$HF" bench qwen3-0.6b-q4-2k.hfs --depth 1920 --prompt-tokens 64 --gen-tokens 64 --threads $T --repeat 1 --json)" >> "$OUT"
done; done
