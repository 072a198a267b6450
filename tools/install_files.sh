#!/usr/bin/env bash
# Installs libep's files into PREFIX (no building; see tools/install.sh):
#   PREFIX/include/ep/ep.h
#   PREFIX/lib/libep.so
#   PREFIX/lib/pkgconfig/ep.pc
#   PREFIX/lib/cmake/ep/{epConfig,epConfigVersion,epTargets}.cmake  (from cmake/ beside tools/)
#   PREFIX/bin/ep_info          (only when EP_INFO_BIN names the built //tools:ep_info)
#   and the Fortran binding (fortran/build_fortran.sh): PREFIX/include/ep/ep_f08.mod,
#   PREFIX/lib/libep_fortran.so, PREFIX/lib/pkgconfig/ep-fortran.pc
# Usage: [EP_INFO_BIN=path/to/ep_info] install_files.sh PREFIX LIBEP_SO EP_H
set -euo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: $0 PREFIX LIBEP_SO EP_H" >&2
  exit 2
fi
prefix=$1
libep_so=$2
ep_h=$3

for f in "$libep_so" "$ep_h"; do
  if [[ ! -f "$f" ]]; then
    echo "install_files.sh: no such file: $f" >&2
    exit 1
  fi
done

mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd -P)  # absolute: it ends up in ep.pc and the rpath

install -d "$prefix/include/ep" "$prefix/lib/pkgconfig"
# Bazel outputs are read-only symlinks into its cache: copy the contents, set sane modes.
install -m 0644 "$ep_h" "$prefix/include/ep/ep.h"
install -m 0755 "$libep_so" "$prefix/lib/libep.so"

cat >"$prefix/lib/pkgconfig/ep.pc" <<PC
prefix=$prefix
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: ep
Description: libep, MPI endpoints runtime (build with mpicc/mpicxx)
Version: 0.1.0
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lep
PC

# --- begin: CMake package and ep_info --------------------------------------------------------
# The package files are relocatable (paths derive from their location): plain copies.
cmake_src="$(dirname "${BASH_SOURCE[0]}")/../cmake"
install -d "$prefix/lib/cmake/ep"
for f in epConfig.cmake epConfigVersion.cmake epTargets.cmake; do
  if [[ ! -f "$cmake_src/$f" ]]; then
    echo "install_files.sh: no such file: $cmake_src/$f" >&2
    exit 1
  fi
  install -m 0644 "$cmake_src/$f" "$prefix/lib/cmake/ep/$f"
done
if [[ -n "${EP_INFO_BIN:-}" ]]; then
  if [[ ! -f "$EP_INFO_BIN" ]]; then
    echo "install_files.sh: no such file: EP_INFO_BIN=$EP_INFO_BIN" >&2
    exit 1
  fi
  install -d "$prefix/bin"
  install -m 0755 "$EP_INFO_BIN" "$prefix/bin/ep_info"
fi
# --- end: CMake package and ep_info ----------------------------------------------------------

# ---- Fortran binding (module ep_f08; owner: fortran/) -------------------------------
# Compiled here with mpifort, against the libep.so just installed.  The sources sit next
# to this script in the tree (and in the runfiles of the tests that list //fortran:srcs).
fortran_build="$(dirname "${BASH_SOURCE[0]}")/../fortran/build_fortran.sh"
if [[ -f "$fortran_build" ]]; then
  bash "$fortran_build" "$prefix"
else
  echo "install_files.sh: $fortran_build not found: Fortran binding not installed" >&2
fi
# ---- end of Fortran binding ----------------------------------------------------------

echo "install_files.sh: installed libep into $prefix"
