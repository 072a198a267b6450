#!/usr/bin/env bash
# Usage: fortran_test.sh INSTALL_FILES_SH LIBEP_SO EP_H HARNESS.f90 PROGRAM.f90...
# Installs libep and its Fortran binding into a temporary prefix, checks that module
# ep_f08 makes every name of ep.h public, builds each Fortran program with
# mpifort -fopenmp $(pkg-config --cflags --libs ep-fortran) as a user would (with
# HARNESS.f90, module ep_ftest: the frame they share), and runs it
# with 1, 2 and 3 MPI processes; each program checks its values and exits non-zero (or
# aborts) on a mismatch.
set -euo pipefail

install_files=$1
libep_so=$2
ep_h=$3
harness="$(cd "$(dirname "$4")" && pwd)/$(basename "$4")"
shift 4
programs=()
for src in "$@"; do programs+=("$(cd "$(dirname "$src")" && pwd)/$(basename "$src")"); done

work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/fortran_test.XXXXXX")
prefix="$work/prefix"
export TMPDIR="$work"

echo "--- install into $prefix"
bash "$install_files" "$prefix" "$libep_so" "$ep_h"
for f in include/ep/ep_f08.mod lib/libep_fortran.so lib/pkgconfig/ep-fortran.pc; do
  [[ -f "$prefix/$f" ]] || { echo "FAIL: missing $prefix/$f"; exit 1; }
done
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
flags=$(pkg-config --cflags --libs ep-fortran)
echo "pkg-config ep-fortran: $flags"
cd "$work"

echo "--- every name of ep.h is public in ep_f08"
# Functions, constants, error codes, handle and callback types; not the header guard,
# the status fields (components of TYPE(EP_Status)) or ep.h's C-only helpers.
names=$(perl -0pe 's|/\*.*?\*/||gs' "$prefix/include/ep/ep.h" | grep -oE '\bEP_[A-Za-z0-9_]+' |
  grep -vxE 'EP_EP_H_|EP_SOURCE|EP_TAG|EP_ERROR' | sort -u)
count=$(wc -w <<<"$names")
{
  echo "program names"
  for n in $names; do echo "  use ep_f08, only: $n"; done
  echo "end program names"
} >names.f90
# shellcheck disable=SC2086  # word splitting of the flags is intended
mpifort names.f90 $flags -o names || { echo "FAIL: ep_f08 lacks a name of ep.h (above)"; exit 1; }
echo "ep_f08 declares all $count names of ep.h"

export UCX_MEM_EVENTS=no OMP_WAIT_POLICY=passive OMP_DYNAMIC=false
unset LD_LIBRARY_PATH
fail=0
for src in "${programs[@]}"; do
  prog=$(basename "$src" .f90)
  echo "--- build $prog"
  cp "$src" "$prog.f90"
  cp "$harness" ftest.f90
  # shellcheck disable=SC2086
  mpifort -fopenmp -O1 -Wall ftest.f90 "$prog.f90" $flags -o "$prog"
  ldd_out=$(ldd "./$prog")
  grep -qF "$prefix/lib/libep_fortran.so" <<<"$ldd_out" || {
    echo "FAIL: $prog does not resolve libep_fortran.so from $prefix/lib"
    exit 1
  }
  # Under --config=asan/tsan libep.so is instrumented, the program is not: preload the
  # sanitizer runtime (as tests/install does).
  san=$(grep -oE '/[^ ]*lib(asan|tsan|ubsan)\.so[^ ]*' <<<"$ldd_out" | head -n 1 || true)
  for np in 1 2 3; do
    set +e
    LD_PRELOAD="${san}" ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" \
      timeout --kill-after=10 120 mpiexec -n "$np" "./$prog" >out.txt 2>&1
    rc=$?
    set -e
    sed "s/^/[$prog np=$np] /" out.txt
    if [[ $rc -ne 0 ]] || ! grep -qx "$prog: PASS" out.txt; then
      echo "FAIL: $prog with $np processes (exit $rc)"
      fail=1
    else
      echo "ok: $prog with $np processes"
    fi
  done
done
[[ $fail -eq 0 ]] || exit 1
echo "PASS"
