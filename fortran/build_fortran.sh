#!/usr/bin/env bash
# Builds and installs the Fortran binding of libep into PREFIX, which already holds
# include/ep/ep.h and lib/libep.so (tools/install_files.sh calls this after them):
#   PREFIX/include/ep/ep_f08.mod      module ep_f08 (gfortran, the compiler of mpifort)
#   PREFIX/lib/libep_fortran.so       linked against PREFIX/lib/libep.so with an rpath
#   PREFIX/lib/pkgconfig/ep-fortran.pc
# Usage: build_fortran.sh PREFIX
# Then: mpifort app.f90 $(PKG_CONFIG_PATH=PREFIX/lib/pkgconfig pkg-config --cflags --libs ep-fortran)
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 PREFIX" >&2
  exit 2
fi
prefix=$1
src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
for f in "$prefix/include/ep/ep.h" "$prefix/lib/libep.so"; do
  [[ -f "$f" ]] || { echo "build_fortran.sh: no such file: $f" >&2; exit 1; }
done
for tool in mpifort mpicc python3; do
  command -v "$tool" >/dev/null || { echo "build_fortran.sh: $tool not found (tools/setup.sh installs it)" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/ep_fortran.XXXXXX")
trap 'rm -rf "$work"' EXIT

python3 "$src/gen_ep_f08.py" "$prefix/include/ep/ep.h" "$work"
mpicc -I"$prefix/include" "$work/ep_f08_consts.c" -o "$work/ep_f08_consts"
"$work/ep_f08_consts" >"$work/ep_f08_consts.inc"

cflags=(-O2 -fPIC -Wall -I"$prefix/include" -I"$src" -I"$work")
mpicc "${cflags[@]}" -c "$src/ep_f08_glue.c" -o "$work/ep_f08_glue.o"
mpicc "${cflags[@]}" -c "$work/ep_f08_glue_gen.c" -o "$work/ep_f08_glue_gen.o"
# -frecursive: every local of a wrapper lives on the stack, none is static, so the module
# is thread-safe whether or not the application is compiled with -fopenmp.
mpifort -O2 -fPIC -frecursive -I"$work" -J"$work" -c "$src/ep_f08.f90" -o "$work/ep_f08.o"
mpifort -shared -o "$work/libep_fortran.so" "$work/ep_f08.o" "$work/ep_f08_glue.o" \
  "$work/ep_f08_glue_gen.o" -L"$prefix/lib" -Wl,-rpath,"$prefix/lib" -lep

install -d "$prefix/include/ep" "$prefix/lib/pkgconfig"
install -m 0644 "$work/ep_f08.mod" "$prefix/include/ep/ep_f08.mod"
install -m 0755 "$work/libep_fortran.so" "$prefix/lib/libep_fortran.so"
cat >"$prefix/lib/pkgconfig/ep-fortran.pc" <<PC
prefix=$prefix
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: ep-fortran
Description: libep's Fortran 2008 module ep_f08 (build with mpifort; use mpi_f08 too)
Version: 0.1.0
Requires: ep
Cflags: -I\${includedir}/ep
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lep_fortran
PC
echo "build_fortran.sh: installed ep_f08 into $prefix"
