#!/bin/bash
# startup.sh: first_token_s (map, checksum every tensor, compile, one token) of the Qwen3-0.6B
# programs, warm (file cached) and cold (its cached pages dropped first), 1 and 2 threads,
# 3 runs each; one JSON line per run (bench --json also reports huge_page_bytes, recached).
# Environment: HFSTATIC (default: hfstatic), PYTHON.
set -u
HF=${HFSTATIC:-hfstatic}; PY=${PYTHON:-python3}
drop() { "$PY" -c 'import os,sys; fd=os.open(sys.argv[1],os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)' "$1"; }
for w in f32 q8 q4; do for t in 1 2; do for state in warm cold; do for r in 1 2 3; do
  [ $state = cold ] && drop qwen3-0.6b-$w.hfs
  echo -n "$w $t $state "
  "$HF" bench qwen3-0.6b-$w.hfs --prompt-tokens 1 --gen-tokens 1 --repeat 1 --threads $t --json
done; done; done; done
