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

bazel_cmd=("${BAZEL:-bazel}")
# Same flags for build and info, so that info names the tree the build wrote.
flags=(--noshow_progress)
if [[ -n "${BAZEL_OUTPUT_BASE:-}" ]]; then
  bazel_cmd+=("--output_base=${BAZEL_OUTPUT_BASE}")
  # A private output base must not repoint the workspace's bazel-* symlinks.
  flags+=(--symlink_prefix=/)
fi

"${bazel_cmd[@]}" build "${flags[@]}" //tools/bench:p2p_bench >&2
bin=$("${bazel_cmd[@]}" info "${flags[@]}" bazel-bin 2>/dev/null)
exe="$bin/tools/bench/p2p_bench"
[[ -x "$exe" ]] || { echo "run.sh: $exe was not built" >&2; exit 1; }

echo "run.sh: ${MPIEXEC:-mpiexec} -n 2 $exe $*" >&2
exec "${MPIEXEC:-mpiexec}" -n 2 "$exe" "$@"
