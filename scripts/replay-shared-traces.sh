#!/usr/bin/env bash
# Replays every shared trace (../shared/traces) on DEVICE with the caching and
# expandable strategies, a line "ok" or "FAIL" each; exits 1 if any failed.
# Used by check-ascend.sh and check-cuda.sh: replay-shared-traces.sh NPUMEM DEVICE.
set -uo pipefail
npumem=$1
device=$2
status=0
for trace in ../shared/traces/*.trace; do
  [[ -f $trace ]] || continue
  for strategy in caching expandable; do
    if "$npumem" replay "$trace" --device "$device" --strategy "$strategy" >/dev/null; then
      echo "ok   $strategy $trace"
    else
      echo "FAIL $strategy $trace"
      status=1
    fi
  done
done
exit $status
