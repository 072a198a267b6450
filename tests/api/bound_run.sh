#!/usr/bin/env bash
# Usage: bound_run.sh CPU COMMAND...   (tests/api:binding_test)
# Runs COMMAND - tools/mpirun_test.sh and its mpiexec - under `taskset -c CPU`, so that
# every process of the job is bound to that one CPU, as a launcher's binding does.
set -euo pipefail
cpu=$1
shift
exec taskset -c "$cpu" bash "$@"
