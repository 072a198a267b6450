#!/usr/bin/env bash
# Builds and runs libep's collective benchmark and prints its table.
#
# Usage: tools/bench/coll_run.sh [--reps N] [--nb-only]
#   mpiexec -n 2 coll_bench ep    libep (2 processes x 2 endpoints) and MPI on 2 processes
#   mpiexec -n 4 coll_bench mpi4  MPI on 4 processes ("MPI everywhere")
# --nb-only: only the nonblocking rows (6-9) and their baselines.
# Environment: BAZEL_OUTPUT_BASE, BAZEL, MPIEXEC as for tools/bench/run.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

source tools/bench/build_bench.sh
build_bench coll_bench
mpiexec="${MPIEXEC:-mpiexec}"

out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "coll_run.sh: $mpiexec -n 2 $exe ep $*" >&2
"$mpiexec" -n 2 "$exe" ep "$@" >>"$out"
echo "coll_run.sh: $mpiexec -n 4 $exe mpi4 $*" >&2
"$mpiexec" -n 4 "$exe" mpi4 "$@" >>"$out"

v() { awk -v k="$1" '$1 == k { print $2 }' "$out"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
verdict() { awk -v r="$1" -v t="$2" -v hi="$3" 'BEGIN { ok = hi ? r >= t : r <= t; print ok ? "yes" : "NO" }'; }

echo "# libep coll_bench, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| | measurement | libep (2 x 2) | baseline | ratio | target | met |"
echo "|---|---|---:|---|---:|---|---|"
if [[ -n "$(v ep_allreduce8_us)" ]]; then
  r1=$(awk -v a="$(v ep_allreduce8_us)" -v b="$(v mpi2_allreduce8_us)" 'BEGIN{print a/b}')
  echo "| 1 | 8 B allreduce | $(v ep_allreduce8_us) us | MPI_Allreduce, 2 processes: $(v mpi2_allreduce8_us) us | $(ratio "$(v ep_allreduce8_us)" "$(v mpi2_allreduce8_us)") | <= 2x | $(verdict "$r1" 2 0) |"
  if [[ -n "$(v floor_allreduce8_us)" ]]; then
    echo "| 1' | row 1's floor: the same 4 threads, 8 B summed through shared memory with atomics, no MPI, no libep | $(v floor_allreduce8_us) us (libep: $(ratio "$(v ep_allreduce8_us)" "$(v floor_allreduce8_us)") of it) | MPI_Allreduce, 2 processes: $(v mpi2_allreduce8_us) us | $(ratio "$(v floor_allreduce8_us)" "$(v mpi2_allreduce8_us)") | (what the cores allow) | - |"
  fi
  r2=$(awk -v a="$(v ep_allreduce8_us)" -v b="$(v mpi4_allreduce8_us)" 'BEGIN{print a/b}')
  echo "| 2 | 8 B allreduce | $(v ep_allreduce8_us) us | MPI_Allreduce, 4 processes: $(v mpi4_allreduce8_us) us | $(ratio "$(v ep_allreduce8_us)" "$(v mpi4_allreduce8_us)") | < 1x (faster) | $(verdict "$r2" 1 0) |"
  r3=$(awk -v a="$(v ep_allreduce1m_mibps)" -v b="$(v mpi2_allreduce1m_mibps)" 'BEGIN{print a/b}')
  echo "| 3 | 1 MiB allreduce bandwidth | $(v ep_allreduce1m_mibps) MiB/s | MPI_Allreduce, 2 processes: $(v mpi2_allreduce1m_mibps) MiB/s | $(ratio "$(v ep_allreduce1m_mibps)" "$(v mpi2_allreduce1m_mibps)") | >= 0.7x | $(verdict "$r3" 0.7 1) |"
  r4=$(awk -v a="$(v ep_barrier_us)" -v b="$(v mpi4_barrier_us)" 'BEGIN{print a/b}')
  echo "| 4 | barrier | $(v ep_barrier_us) us | MPI_Barrier, 4 processes: $(v mpi4_barrier_us) us | $(ratio "$(v ep_barrier_us)" "$(v mpi4_barrier_us)") | (compare) | - |"
  echo "| 5 | new communicator: dup + first 8 B allreduce + free | $(v ep_dup_allreduce_free_us) us | the same in MPI, 2 processes: $(v mpi2_dup_allreduce_free_us) us | $(ratio "$(v ep_dup_allreduce_free_us)" "$(v mpi2_dup_allreduce_free_us)") | (compare) | - |"
fi
r6=$(awk -v a="$(v nb_overlap_us)" -v b="$(v nb_compute_alone_us)" 'BEGIN{print a/b}')
echo "| 6 | overlap: EP_Iallreduce 1 MiB started, 5 ms busy loop outside libep, EP_Wait | $(v nb_overlap_us) us (the allreduce alone: $(v nb_iallreduce1m_us) us) | the busy loop alone (same 4 threads): $(v nb_compute_alone_us) us | $(ratio "$(v nb_overlap_us)" "$(v nb_compute_alone_us)") (repetitions: $(v nb_overlap_ratio_min)-$(v nb_overlap_ratio_max)) | <= 1.2x | $(verdict "$r6" 1.2 0) |"
echo "| 6' | row 6 in detail: time in EP_Test + EP_Wait after the busy loop; share of allreduces already complete at that EP_Test | $(v nb_overlap_wait_us) us; $(v nb_overlap_done_at_test) | | | | - |"
echo "| 6'' | share of 1 MiB EP_Iallreduces complete at the first EP_Test after the endpoints slept 5 ms (instead of computing) | $(v nb_sleep_done_at_test) | | | | - |"
for op in alltoall allgather; do
  for sz in 8 64k; do
    a=$(v "ep_i${op}${sz}_us"); b=$(v "ep_${op}${sz}_us")
    r=$(awk -v a="$a" -v b="$b" 'BEGIN{print a/b}')
    bytes=$([[ $sz == 8 ]] && echo "8 B" || echo "64 KiB")
    row=$([[ $op == alltoall ]] && echo 7 || echo 8)
    echo "| $row | EP_I${op} $bytes per endpoint: start + wait | $a us | blocking EP_${op^}: $b us | $(ratio "$a" "$b") | <= 1.5x | $(verdict "$r" 1.5 0) |"
  done
done
for op in alltoall allgather; do
  a=$(v "ep_${op}64k_us"); b=$(v "mpi4_${op}64k_us")
  echo "| 9 | blocking EP_${op^}, 64 KiB per endpoint | $a us | MPI_${op^}, 4 processes, 64 KiB per process: $b us | $(ratio "$a" "$b") | (report) | - |"
done
