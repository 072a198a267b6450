#!/usr/bin/env bash
# Usage: programs_test.sh INSTALL_FILES_SH LIBEP_SO EP_H LIBEP_MPI_SO MPI_ENDPOINTS_H HARNESS_H
#                         TSAN_SUPP PROGRAM.c|PROGRAM.F90...
# Installs libep and libep_mpi into a temporary prefix, then builds each C program (written
# against <mpi.h> and ep/mpi_endpoints.h only) twice, as a user would:
#   - with libep_mpi:  mpicc -fopenmp prog.c $(pkg-config --cflags --libs ep-mpi)
#   - on plain MPI:    mpicc -fopenmp -DPLAIN_MPI prog.c   (harness.h: one thread per process)
# (a .F90 program: mpifort, MPICH's `use mpi` binding) and runs both with 1, 2 and 3 MPI
# processes (uneven thread counts: harness.h).  Each
# program checks its values and prints "<name>: PASS".  Under --config=tsan/asan/ubsan
# (libep and libep_mpi instrumented) the endpoint builds preload the sanitizer runtime and
# use POSIX threads instead of OpenMP (-DHARNESS_PTHREADS: ThreadSanitizer cannot see
# libgomp's barriers).
set -euo pipefail

install_files=$1
libep_so=$2
ep_h=$3
mpi_so=$4
mpi_h=$5
harness="$(cd "$(dirname "$6")" && pwd)/$(basename "$6")"
supp="$(cd "$(dirname "$7")" && pwd)/$(basename "$7")"
shift 7
programs=()
for src in "$@"; do programs+=("$(cd "$(dirname "$src")" && pwd)/$(basename "$src")"); done

work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/mpi_programs.XXXXXX")
prefix="$work/prefix"
export TMPDIR="$work"

echo "--- install into $prefix"
EP_MPI_SO=$mpi_so EP_MPI_H=$mpi_h bash "$install_files" "$prefix" "$libep_so" "$ep_h" \
  >"$work/install.log" 2>&1 || {
  cat "$work/install.log"
  exit 1
}
for f in include/ep/mpi_endpoints.h lib/libep_mpi.so lib/pkgconfig/ep-mpi.pc; do
  [[ -f "$prefix/$f" ]] || { echo "FAIL: missing $prefix/$f"; exit 1; }
done
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
flags=$(pkg-config --cflags --libs ep-mpi)
echo "pkg-config ep-mpi: $flags"
cd "$work"
cp "$harness" harness.h

export UCX_MEM_EVENTS=no OMP_WAIT_POLICY=passive OMP_DYNAMIC=false
unset LD_LIBRARY_PATH
cflags=(-fopenmp -O1 -Wall -Werror -Wno-stringop-overflow)
fail=0
for src in "${programs[@]}"; do
  base=$(basename "$src")
  prog=${base%.*}
  cp "$src" "$base"
  echo "--- build $prog"
  # Under --config=asan/tsan libep is instrumented, the program is not: preload the
  # sanitizer runtime (as tests/install does).
  san=$(grep -oE '/[^ ]*lib(asan|tsan|ubsan)\.so[^ ]*' <<<"$(ldd "$prefix/lib/libep_mpi.so")" |
    head -n 1 || true)
  threads=()
  [[ -n "$san" ]] && threads=(-DHARNESS_PTHREADS -pthread)
  if [[ $base == *.F90 ]]; then  # MPICH's `use mpi` binding calls the C MPI_ functions
    # shellcheck disable=SC2086  # word splitting of the flags is intended
    mpifort -fopenmp -O1 -Wall "$base" $flags -o "$prog.ep"
    mpifort -fopenmp -O1 -Wall -DPLAIN_MPI "$base" -o "$prog.plain"
  else
    # shellcheck disable=SC2086
    mpicc "${cflags[@]}" "${threads[@]}" "$base" $flags -o "$prog.ep"
    mpicc "${cflags[@]}" -DPLAIN_MPI "$base" -o "$prog.plain"
  fi
  ldd_out=$(ldd "./$prog.ep")
  grep -qF "$prefix/lib/libep_mpi.so" <<<"$ldd_out" || {
    echo "FAIL: $prog.ep does not resolve libep_mpi.so from $prefix/lib"
    exit 1
  }
  for build in ep plain; do
    for np in 1 2 3; do
      set +e
      if [[ $build == ep ]]; then
        LD_PRELOAD="${san}" ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" \
          TSAN_OPTIONS="suppressions=$supp halt_on_error=1 ${TSAN_OPTIONS:-}" \
          timeout --kill-after=10 120 mpiexec -n "$np" "./$prog.$build" >out.txt 2>&1
      else
        timeout --kill-after=10 120 mpiexec -n "$np" "./$prog.$build" >out.txt 2>&1
      fi
      rc=$?
      set -e
      if [[ $rc -ne 0 ]] || ! grep -qx "$prog: PASS" out.txt; then
        sed "s/^/[$prog.$build np=$np] /" out.txt
        echo "FAIL: $prog ($build) with $np processes (exit $rc)"
        fail=1
      else
        echo "ok: $prog ($build) with $np processes"
      fi
    done
  done
done
[[ $fail -eq 0 ]] || exit 1
echo "PASS"
