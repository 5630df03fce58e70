#!/bin/bash
# routes.sh ROUNDS OUT ROUTE=LLAMA_BENCH... -- SPEC...: rounds.sh for several kernel routes,
# alternating: in each round, for each ROUTE, hfstatic with HFSTATIC_KERNELS=ROUTE against the
# llama-bench binary given for it (llama.cpp built for the same instruction set; docs/performance.md,
# "x86 without AVX-512"). SPEC is as for rounds.sh; its model is logged as MODEL@ROUTE, so med.py
# gives the medians and ratios per route. GEN_TOKENS and THREADS pass through to rounds.sh.
#   routes.sh 3 r.log avx2=$P/build-avx2/bin/llama-bench avx2+vnni=$P/build-avxvnni/bin/llama-bench \
#     -- qwen3-0.6b:q8:qwen3-0.6b-q8.hfs:q06-q8_0.gguf ...
set -u
R=$1; OUT=$2; shift 2
routes=()
while [ "$1" != -- ]; do routes+=("$1"); shift; done
shift
here=$(cd "$(dirname "$0")" && pwd)
for r in $(seq 1 "$R"); do
  for rt in "${routes[@]}"; do
    route=${rt%%=*}
    specs=()
    for s in "$@"; do specs+=("${s%%:*}@$route:${s#*:}"); done
    ROUND=$r HFSTATIC_KERNELS=$route LLAMA_BENCH=${rt#*=} "$here/rounds.sh" 1 "$OUT" "${specs[@]}"
  done
done
