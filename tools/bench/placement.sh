#!/usr/bin/env bash
# Row c of p2p_bench (the 2-stream message rate) under each placement of its threads:
# the OS's choice, each process bound to one core, and the three pinnings of the four
# stream threads that --place-c offers (see the head of tools/bench/p2p_bench.cc).
# Both halves of the row (libep and MPI_THREAD_MULTIPLE) run under the same placement.
#
# Usage: tools/bench/placement.sh [p2p_bench options]   default: --reps 5
# Environment: as tools/bench/run.sh (BAZEL_OUTPUT_BASE, BAZEL, MPIEXEC).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

source tools/bench/build_bench.sh
build_bench p2p_bench

opts=("$@")
[[ ${#opts[@]} -gt 0 ]] || opts=(--reps 5)
mpiexec_cmd="${MPIEXEC:-mpiexec}"

# Prints one table row from the p2p_bench table's row c.
row() {
  local what=$1
  shift
  "$@" --phases c "${opts[@]}" 2>/dev/null |
    awk -F'|' -v what="$what" '$2 ~ /^ c $/ {
      sub(/^ *MPI_THREAD_MULTIPLE, 2 threads per process: */, "", $5)
      sub(/ *$/, "", $5)
      printf "| %s |%s| %s |%s|\n", what, $4, $5, $6 }'
}

echo "placement.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, ${opts[*]}"
echo
echo "| where row c's four stream threads run | libep | MPI_THREAD_MULTIPLE | ratio |"
echo "|---|---:|---:|---:|"
row "the OS decides (no binding)" "$mpiexec_cmd" -n 2 "$exe"
row "each process bound to one core (\`mpiexec -bind-to core\`)" \
  "$mpiexec_cmd" -bind-to core -n 2 "$exe"
row "\`--place-c process\`: a process's two threads on one core" "$mpiexec_cmd" -n 2 "$exe" \
  --place-c process
row "\`--place-c crossed\`: a stream's two ends, and a process's two threads, on different cores" \
  "$mpiexec_cmd" -n 2 "$exe" --place-c crossed
row "\`--place-c stream\`: a stream's two ends on one core" "$mpiexec_cmd" -n 2 "$exe" \
  --place-c stream
