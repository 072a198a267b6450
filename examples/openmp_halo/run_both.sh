#!/usr/bin/env bash
# Runs openmp_halo both ways on the same tile grid and prints both result lines:
#   libep: mpiexec -n PROCS with OMP_NUM_THREADS=THREADS (PROCS x THREADS endpoints)
#   MPI:   mpiexec -n PROCS*THREADS openmp_halo --mpi (one process per tile)
# Usage: run_both.sh BINARY PROCS THREADS [tile_nx tile_ny max_iterations tolerance]
# Exits non-zero if either run fails.
set -euo pipefail

if [[ $# -lt 3 ]]; then
  echo "usage: $0 BINARY PROCS THREADS [tile_nx tile_ny max_iterations tolerance]" >&2
  exit 2
fi
bin=$1
procs=$2
threads=$3
shift 3
export UCX_MEM_EVENTS=no

OMP_NUM_THREADS=$threads timeout --kill-after=10 300 mpiexec -n "$procs" "$bin" "$@"
OMP_NUM_THREADS=1 timeout --kill-after=10 300 mpiexec -n $((procs * threads)) "$bin" --mpi "$@"
