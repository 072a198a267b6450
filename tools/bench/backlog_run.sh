#!/usr/bin/env bash
# Builds backlog_bench and runs its two backlog rows (2 MPI processes):
#   500 then 2,000 unmatched messages of 64 KiB + 1 (rendezvous at the default limit);
#   16,000 then 64,000 one-byte messages under EP_EAGER_LIMIT=0 (every message rendezvous).
# Each row prints both drain times (medians of REPS alternating repetitions) and their
# ratio; linear draining gives about 4x.
#
# Usage: tools/bench/backlog_run.sh [REPS]      (default 9)
# Environment: BAZEL_OUTPUT_BASE, BAZEL, MPIEXEC as for tools/bench/run.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

source tools/bench/build_bench.sh
build_bench backlog_bench

reps=${1:-9}
mpiexec=${MPIEXEC:-mpiexec}
"$mpiexec" -n 2 "$exe" 65537 500 2000 "$reps"
EP_EAGER_LIMIT=0 "$mpiexec" -n 2 "$exe" 1 16000 64000 "$reps"
