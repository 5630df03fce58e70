#!/usr/bin/env bash
# Instructions by function of an arm64 Go program under qemu-aarch64 (prof.c):
#   prof.sh BINARY ARGS...      prints the functions taking the most instructions
# Needs libprof.so (built from prof.c) in the current directory or at $PROF_LIB.
set -euo pipefail
bin=$1
lib=${PROF_LIB:-$PWD/libprof.so}
out=$(mktemp)
PROF_OUT=$out qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu "${QEMU_CPU:-max}" -plugin "$lib" "$@" >/dev/null
awk '{print $1}' "$out" | go tool addr2line "$bin" | awk 'NR%2==1' | paste -d' ' - <(awk '{print $2}' "$out") |
  awk '{n[$1]+=$2; t+=$2} END {for (f in n) printf "%14.0f %5.1f%% %s\n", n[f], 100*n[f]/t, f; printf "%14.0f total\n", t}' |
  sort -rn | head -${TOP:-30}
rm -f "$out"
