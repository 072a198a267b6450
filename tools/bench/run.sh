#!/usr/bin/env bash
# Builds and runs libep's point-to-point benchmark (2 MPI processes) and prints its table.
#
# Usage: tools/bench/run.sh [p2p_bench options]   e.g. --reps 7 --rep-seconds 0.3 --phases abcd
# Environment:
#   BAZEL_OUTPUT_BASE  if set, every bazel command uses --output_base=$BAZEL_OUTPUT_BASE
#                      (a separate Bazel server); default: the workspace's usual one.
#   BAZEL              the bazel executable (default: bazel).
#   MPIEXEC            the launcher (default: mpiexec).
#   EP_PROGRESS_POLICY, EP_STATS, ...  are passed through to libep.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

source tools/bench/build_bench.sh
build_bench p2p_bench

echo "run.sh: ${MPIEXEC:-mpiexec} -n 2 $exe $*" >&2
exec "${MPIEXEC:-mpiexec}" -n 2 "$exe" "$@"
