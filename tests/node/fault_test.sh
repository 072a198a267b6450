#!/usr/bin/env bash
# Usage: fault_test.sh FAULT_PROG   (bazel test //tests/node:fault_test)
# Faults and isolation of the node transport (runtime/node.h), with two processes:
#   - a normal job: the segment is an unlinked memfd whose descriptor is closed once
#     EP_Init returned, unmapped by EP_Finalize; the job exits 0;
#   - process 1 SIGKILLed while process 0 waits in EP_Recv from it: the launcher ends the
#     job with a non-zero status, within the time limit, and no process is left;
#   - after either, /dev/shm holds no new entry (the segments were never names there).
set -uo pipefail
# The node transport is what this checks: on, whatever the environment of the run.
unset EP_NODE_TRANSPORT

prog=$1
case "$prog" in
  /*) ;;
  *) prog="$PWD/$prog" ;;
esac
export UCX_MEM_EVENTS=no
fail=0

shm_before=$(ls -A /dev/shm | sort)
check_shm() {
  local now
  now=$(ls -A /dev/shm | sort)
  if [[ "$now" != "$shm_before" ]]; then
    echo "FAIL ($1): /dev/shm changed:"
    diff <(echo "$shm_before") <(echo "$now")
    fail=1
  fi
}

echo "--- a normal job"
timeout --kill-after=10 120 mpiexec -n 2 "$prog" normal
rc=$?
[[ $rc -eq 0 ]] || { echo "FAIL: the normal job exited with $rc"; fail=1; }
check_shm normal

echo "--- process 1 killed while process 0 waits for it"
start=$(date +%s)
timeout --kill-after=10 120 mpiexec -n 2 "$prog" kill
rc=$?
took=$(( $(date +%s) - start ))
echo "exit status $rc after ${took}s"
if [[ $rc -eq 0 ]]; then
  echo "FAIL: the job with a killed process exited 0"
  fail=1
elif [[ $rc -eq 124 || $rc -eq 137 ]]; then
  echo "FAIL: the job did not end: killed by the time limit"
  fail=1
fi
sleep 1
if pgrep -f "$prog kill" >/dev/null; then
  echo "FAIL: a process of the killed job is still running"
  pkill -9 -f "$prog kill"
  fail=1
fi
check_shm kill

[[ $fail -eq 0 ]] || exit 1
echo "PASS"
