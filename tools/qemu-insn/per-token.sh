#!/usr/bin/env bash
# Instructions per token of an arm64 hfstatic binary under qemu-aarch64, as the
# difference of two runs of `hfstatic bench`, 1 thread: it cancels loading, and the
# warm-up's decode steps (4 in both runs); the warm-up's prefill of the prompt counts
# with the measured one (2 × 128 tokens apart). Usage:
#   per-token.sh decode|prefill HFSTATIC-ARM64 PROGRAM.hfs [qemu -cpu model, default max]
# Needs libinsn.so (built from insn.c) in the current directory or at $INSN_LIB, and
# HFSTATIC_KERNELS, if set, picks the route as for hfstatic itself.
set -euo pipefail
mode=$1 bin=$2 prog=$3 cpu=${4:-max}
lib=${INSN_LIB:-$PWD/libinsn.so}
run() { # prompt gen -> instruction count
  local out; out=$(mktemp)
  INSN_OUT=$out qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu "$cpu" -plugin "$lib" \
    "$bin" bench "$prog" --prompt-tokens "$1" --gen-tokens "$2" --threads 1 --repeat 1 >/dev/null
  awk '{print $2}' "$out"; rm -f "$out"
}
case $mode in
decode) a=$(run 1 4); b=$(run 1 20); n=16 ;;
prefill) a=$(run 64 1); b=$(run 192 1); n=256 ;; # bench's warm-up prefills the prompt too
*) echo "usage: $0 decode|prefill BIN PROGRAM [cpu]" >&2; exit 2 ;;
esac
echo "$mode $(basename "$prog"): $(( (b - a) / n )) instructions per token ($a, $b; $n tokens apart)"
