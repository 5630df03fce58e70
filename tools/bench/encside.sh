#!/bin/bash
# encside.sh ROUNDS WEIGHTS [cpu]: alternating rounds of an encoder program (WEIGHTS.hfs, e.g.
# f32.hfs exported with --context 128 --delegate onnx) on two hfstatic binaries and ONNX Runtime:
# BEFORE (default hfstatic-before), HFSTATIC (default hfstatic, built with -tags ort) and
# HFSTATIC --executor ort (HFSTATIC_ORT_LIB set). Each run is `bench --threads 2 --repeat 3`
# (32 × 128); one line per run with the load average and bench's last line (sentences/s).
# With "cpu": CPU seconds per batch instead, (user+sys of --repeat 8) - (of --repeat 2), ÷ 6.
set -u
R=$1; W=$2; MODE=${3:-wall}
HF=${HFSTATIC:-hfstatic}; BEFORE=${BEFORE:-hfstatic-before}
cpu() { /usr/bin/time -f "%U %S" "$@" 2>&1 >/dev/null | tail -1 | awk '{print $1+$2}'; }
for r in $(seq 1 "$R"); do
  for b in before after ort; do
    bin=$HF; ex=go
    [ "$b" = before ] && bin=$BEFORE
    [ "$b" = ort ] && ex=ort
    l=$(cut -d' ' -f1 /proc/loadavg)
    if [ "$MODE" = cpu ]; then
      a=$(cpu "$bin" bench "$W.hfs" --threads 2 --repeat 8 --executor $ex)
      c=$(cpu "$bin" bench "$W.hfs" --threads 2 --repeat 2 --executor $ex)
      echo "round $r $W $b load $l: $(awk -v a="$a" -v c="$c" 'BEGIN{printf "%.3f", (a-c)/6}') CPU-s/batch"
    else
      echo "round $r $W $b load $l: $("$bin" bench "$W.hfs" --threads 2 --repeat 3 --executor $ex 2>&1 | tail -1)"
    fi
  done
done
