#!/usr/bin/env bash
# One of the fault suite's concurrent store writers: 100 owt calls in a
# row, cycling `owt note`, `owt send` and `owt hook --event working`.
# Usage: store-writer.sh WORKER OWT SESSION_NAME SESSION_SHORT_ID OUT_DIR
# Each call's stderr goes to OUT_DIR/WORKER.err; a non-zero exit is
# written to OUT_DIR/WORKER.fail. Text is unique per call: w<WORKER>-<K>.
worker=$1 owt=$2 name=$3 short_id=$4 out=$5
for k in $(seq 0 99); do
  text="w$worker-$k"
  case $((k % 3)) in
    0) "$owt" note "$text" >/dev/null 2>>"$out/$worker.err" ;;
    1) "$owt" send "$name" "$text" >/dev/null 2>>"$out/$worker.err" ;;
    2) OWT_SESSION=$short_id "$owt" hook --event working >/dev/null 2>>"$out/$worker.err" ;;
  esac
  code=$?
  [ "$code" -eq 0 ] || echo "call $k ($text) exited $code" >>"$out/$worker.fail"
done
