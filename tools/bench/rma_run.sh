#!/usr/bin/env bash
# Builds and runs libep's one-sided benchmark and prints its table.
#
# Usage: tools/bench/rma_run.sh [--reps N]
#   mpiexec -n 2 rma_bench   libep (2 processes x 2 endpoints, endpoint 0 of process 0 ->
#                            endpoint 0 of process 1) and plain MPI (rank 0 -> rank 1) in
#                            the same run; 8-byte put + flush rate and fetch-and-op + flush
#                            latency on allocated windows (EP_Win_allocate against
#                            MPI_Win_allocate: the issue's targets) and on windows over
#                            user memory (EP_Win_create against MPI_Win_create).
#   mpiexec -n 2 rma_dyn_bench   rows 7-12: 8-byte EP_Rput rate and EP_Rget
#                            latency on dynamic windows (node path, and the progress
#                            thread's path with ep_shared_memory=false) against MPI_Rput /
#                            MPI_Rget on an MPI_Win_create_dynamic window; a load/store
#                            ping-pong through EP_Win_allocate_shared memory against the
#                            same loop on MPI_Win_allocate_shared memory.
# Environment: BAZEL_OUTPUT_BASE, BAZEL, MPIEXEC as for tools/bench/run.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

source tools/bench/build_bench.sh
build_bench rma_dyn_bench
dyn_exe=$exe
build_bench rma_bench
mpiexec="${MPIEXEC:-mpiexec}"

out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "rma_run.sh: $mpiexec -n 2 $exe $*" >&2
"$mpiexec" -n 2 "$exe" "$@" >>"$out"
echo "rma_run.sh: $mpiexec -n 2 $dyn_exe $*" >&2
"$mpiexec" -n 2 "$dyn_exe" "$@" | sed 's/^checks_ok /dyn_checks_ok /' >>"$out"

v() { awk -v k="$1" '$1 == k { print $2 }' "$out"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
verdict() { awk -v a="$1" -v b="$2" -v t="$3" -v hi="$4" 'BEGIN { r = a / b; ok = hi ? r >= t : r <= t; print ok ? "yes" : "NO" }'; }

if [[ "$(v checks_ok)" != "1" || "$(v dyn_checks_ok)" != "1" ]]; then
  echo "rma_run.sh: the benchmark's result checks failed" >&2
  exit 1
fi

echo "# libep rma_bench, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| | measurement | libep (2 x 2) | MPI (2 processes) | ratio | target | met |"
echo "|---|---|---:|---:|---:|---|---|"
row() {  # row N label libep_key mpi_key unit target_ratio higher_is_better
  local a b
  a=$(v "$3")
  b=$(v "$4")
  echo "| $1 | $2 | $a $5 | $b $5 | $(ratio "$a" "$b") | $([[ $7 == 1 ]] && echo ">=" || echo "<=") ${6}x | $(verdict "$a" "$b" "$6" "$7") |"
}
row 1 "8 B put + flush rate, EP_Win_allocate / MPI_Win_allocate" ep_alloc_put8_rate mpi_alloc_put8_rate ops/s 0.5 1
row 2 "8 B fetch-and-op + flush latency, EP_Win_allocate / MPI_Win_allocate" ep_alloc_fop8_us mpi_alloc_fop8_us us 2 0
row 3 "8 B put + flush rate, EP_Win_create / MPI_Win_create" ep_create_put8_rate mpi_create_put8_rate ops/s 0.5 1
row 4 "8 B fetch-and-op + flush latency, EP_Win_create / MPI_Win_create" ep_create_fop8_us mpi_create_fop8_us us 2 0
# Rows 5-6: the handler path (what windows on other nodes use), for information.
row 5 "8 B put + flush rate, EP_Win_create + ep_shared_memory=false (handler calls) / MPI_Win_create" ep_handler_put8_rate mpi_create_put8_rate ops/s 0.5 1
row 6 "8 B fetch-and-op + flush latency, EP_Win_create + ep_shared_memory=false (handler calls) / MPI_Win_create" ep_handler_fop8_us mpi_create_fop8_us us 2 0
# Rows 7-12: rma_dyn_bench (origin rank 0, target rank 2 in the other process).
row 7 "8 B EP_Rput + wait + flush rate, dynamic window, node path / MPI_Rput, MPI_Win_create_dynamic" ep_dyn_rput8_rate mpi_dyn_rput8_rate ops/s 0.5 1
row 8 "8 B EP_Rget + wait latency, dynamic window, node path / MPI_Rget, MPI_Win_create_dynamic" ep_dyn_rget8_us mpi_dyn_rget8_us us 2 0
row 9 "8 B EP_Rput + wait + flush rate, dynamic window, ep_shared_memory=false (progress thread) / MPI_Rput" ep_dynh_rput8_rate mpi_dyn_rput8_rate ops/s 0.5 1
row 10 "8 B EP_Rget + wait latency, dynamic window, ep_shared_memory=false (progress thread) / MPI_Rget" ep_dynh_rget8_us mpi_dyn_rget8_us us 2 0
row 11 "load/store ping-pong round trip, EP_Win_allocate_shared / same loop on MPI_Win_allocate_shared" ep_shm_ping_us mpi_shm_ping_us us 1.5 0
echo
echo "Information (no target): same-process dynamic target, EP_Rput rate $(v ep_dyn_local_rput8_rate) ops/s, EP_Rget latency $(v ep_dyn_local_rget8_us) us."
