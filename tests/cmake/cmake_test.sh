#!/usr/bin/env bash
# Usage: cmake_test.sh INSTALL_FILES_SH LIBEP_SO EP_H EP_INFO PROJECT_DIR FORTRAN_PROJECT_DIR
# Installs libep into a temp prefix (CMake package included), then, as a CMake user would:
#   1. configures and builds PROJECT_DIR (find_package(ep CONFIG REQUIRED), ep::ep) with
#      CMAKE_PREFIX_PATH=PREFIX and runs it with 2 MPI processes x 2 endpoints;
#   2. checks that the package, ep.pc and ep_info report the same version, and that
#      find_package rejects versions 0.2 and 1.0;
#   3. builds FORTRAN_PROJECT_DIR (COMPONENTS Fortran, ep::ep_fortran: the installed
#      ep_f08) and runs it on 2 processes; a copy of the prefix without the Fortran files
#      refuses COMPONENTS Fortran with its reason.
set -euo pipefail

install_files=$1
libep_so=$2
ep_h=$3
ep_info=$4
project=$5
fortran_project=$6

work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/cmake_test.XXXXXX")
prefix="$work/prefix"
export UCX_MEM_EVENTS=no
unset LD_LIBRARY_PATH

echo "--- install into $prefix"
EP_INFO_BIN="$ep_info" bash "$install_files" "$prefix" "$libep_so" "$ep_h"
for f in lib/cmake/ep/epConfig.cmake lib/cmake/ep/epConfigVersion.cmake \
  lib/cmake/ep/epTargets.cmake bin/ep_info; do
  [[ -f "$prefix/$f" ]] || { echo "FAIL: missing $prefix/$f"; exit 1; }
done

# Under --config=asan/tsan libep.so itself is instrumented; the applications built here are
# not, so the sanitizer runtime must be loaded first (and UCX's ~1 KiB leak is not ours).
san=$(ldd "$prefix/lib/libep.so" | grep -oE '/[^ ]*lib(asan|tsan|ubsan)\.so[^ ]*' | head -n 1 || true)
if [[ -n "$san" ]]; then
  echo "libep.so is sanitized: applications run with LD_PRELOAD=$san"
  export ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}"
fi

# run_mpi OUT NP CMD...: runs CMD under mpiexec with a hard timeout; prints its output.
run_mpi() {
  local out=$1 np=$2
  shift 2
  local rc=0
  LD_PRELOAD="$san" timeout --kill-after=10 120 mpiexec -n "$np" "$@" >"$out" 2>&1 || rc=$?
  cat "$out"
  if [[ $rc -ne 0 ]]; then
    echo "FAIL: mpiexec -n $np $* exited with $rc"
    exit 1
  fi
}

echo "--- 1. configure, build and run the C project"
cp -rL "$project" "$work/src"
cmake -S "$work/src" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" >"$work/configure.log" 2>&1 || {
  cat "$work/configure.log"
  echo "FAIL: cmake configure"
  exit 1
}
cat "$work/configure.log"
cmake --build "$work/build" -- VERBOSE=1 || { echo "FAIL: cmake --build"; exit 1; }
ldd_out=$(ldd "$work/build/app")
grep -qF "$prefix/lib/libep.so" <<<"$ldd_out" || {
  echo "FAIL: app does not resolve libep.so from $prefix/lib:"
  echo "$ldd_out"
  exit 1
}
run_mpi "$work/out.txt" 2 "$work/build/app"
fail=0
# 4 endpoints: endpoint r receives from r-1 mod 4; the ranks sum to 6.
for r in 0 1 2 3; do
  line="endpoint $r of 4: from $(((r + 3) % 4)), sum 6"
  n=$(grep -cxF "$line" "$work/out.txt" || true)
  [[ $n -eq 1 ]] || { echo "FAIL: expected one line '$line', found $n"; fail=1; }
done
[[ $(grep -c '^endpoint ' "$work/out.txt" || true) -eq 4 ]] || { echo "FAIL: not 4 endpoint lines"; fail=1; }

echo "--- 2. versions"
pkg_version=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --modversion ep)
cmake_version=$(sed -n 's/^-- ep_VERSION=//p' "$work/configure.log")
app_version=$(sed -n 's/^app: built with ep package //p' "$work/out.txt")
info_version=$("$prefix/bin/ep_info" | sed -n 's/^libep version: *//p')
echo "ep.pc $pkg_version, CMake $cmake_version, app $app_version, ep_info $info_version"
for v in "$cmake_version" "$app_version" "$info_version"; do
  [[ "$v" == "$pkg_version" ]] || { echo "FAIL: version '$v' differs from ep.pc's '$pkg_version'"; fail=1; }
done
for want in 0.2 1.0; do
  mkdir -p "$work/v$want"
  cat >"$work/v$want/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.13)
project(v LANGUAGES C)
find_package(ep $want CONFIG QUIET)
message(STATUS "ep_FOUND=\${ep_FOUND}")
CM
  found=$(cmake -S "$work/v$want" -B "$work/v$want/build" -DCMAKE_PREFIX_PATH="$prefix" |
    sed -n 's/^-- ep_FOUND=//p')
  [[ "$found" == "0" ]] || { echo "FAIL: find_package(ep $want) accepted $pkg_version ($found)"; fail=1; }
done

echo "--- 3. ep::ep_fortran: a Fortran project against the installed ep_f08"
for f in lib/libep_fortran.so include/ep/ep_f08.mod lib/pkgconfig/ep-fortran.pc; do
  [[ -f "$prefix/$f" ]] || { echo "FAIL: missing $prefix/$f"; exit 1; }
done
cp -rL "$fortran_project" "$work/fsrc"
cmake -S "$work/fsrc" -B "$work/fbuild" -DCMAKE_PREFIX_PATH="$prefix" || {
  echo "FAIL: cmake configure of the Fortran project"
  exit 1
}
cmake --build "$work/fbuild" -- VERBOSE=1 || { echo "FAIL: cmake --build of the Fortran project"; exit 1; }
fldd=$(ldd "$work/fbuild/fapp")
for lib in "$prefix/lib/libep_fortran.so" "$prefix/lib/libep.so"; do
  grep -qF "$lib" <<<"$fldd" || { echo "FAIL: fapp does not resolve $lib"; echo "$fldd"; fail=1; }
done
run_mpi "$work/fout.txt" 2 "$work/fbuild/fapp"
[[ $(grep -cxF "fapp: size 2, sum of ranks 1" "$work/fout.txt" || true) -eq 2 ]] || {
  echo "FAIL: expected 2 lines 'fapp: size 2, sum of ranks 1'"
  fail=1
}
# A copy of the prefix without the Fortran files has no ep::ep_fortran and refuses
# COMPONENTS Fortran, saying why.
nprefix="$work/nofortran"
cp -a "$prefix" "$nprefix"
rm -f "$nprefix/lib/libep_fortran.so" "$nprefix/include/ep/ep_f08.mod"
rm -rf "$work/fbuild2"
if cmake -S "$work/fsrc" -B "$work/fbuild2" -DCMAKE_PREFIX_PATH="$nprefix" >"$work/f2.log" 2>&1; then
  cat "$work/f2.log"
  echo "FAIL: COMPONENTS Fortran was found in a prefix without libep_fortran.so"
  fail=1
else
  # (CMake wraps the message: compare with the whitespace squeezed)
  tr -s ' \n' ' ' <"$work/f2.log" |
    grep -qF "ep component Fortran is unavailable: this installation has no libep_fortran.so and ep_f08.mod" ||
    { cat "$work/f2.log"; echo "FAIL: no reason given for missing Fortran"; fail=1; }
fi

[[ $fail -eq 0 ]] || exit 1
echo "PASS"
