#!/usr/bin/env bash
# Usage: install_test.sh INSTALL_FILES_SH LIBEP_SO EP_H RING_C
# Installs libep into a temp prefix, builds ring.c with mpicc + pkg-config (as a user would),
# runs it with 2 MPI processes, and checks its output.
set -euo pipefail

install_files=$1
libep_so=$2
ep_h=$3
ring_c=$4

work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/install_test.XXXXXX")
prefix="$work/prefix"

echo "--- install into $prefix"
bash "$install_files" "$prefix" "$libep_so" "$ep_h"
for f in include/ep/ep.h lib/libep.so lib/pkgconfig/ep.pc; do
  [[ -f "$prefix/$f" ]] || { echo "FAIL: missing $prefix/$f"; exit 1; }
done
cat "$prefix/lib/pkgconfig/ep.pc"

echo "--- build ring.c with mpicc"
cp "$ring_c" "$work/ring.c"
cd "$work"
flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs ep)
echo "pkg-config: $flags"
# shellcheck disable=SC2086  # word splitting of the flags is intended
mpicc -O2 -Wall ring.c $flags -pthread -o ring
# The rpath from ep.pc must be what finds libep.so (no LD_LIBRARY_PATH).
unset LD_LIBRARY_PATH
# (capture first: `ldd | grep -q` can die of SIGPIPE under pipefail)
ldd_out=$(ldd ./ring)
grep -qF "$prefix/lib/libep.so" <<<"$ldd_out" || {
  echo "FAIL: ./ring does not resolve libep.so from $prefix/lib:"
  ldd ./ring
  exit 1
}

echo "--- run: mpiexec -n 2 ./ring"
export UCX_MEM_EVENTS=no
# Under --config=asan/tsan libep.so itself is instrumented; the demo program is not, so
# the sanitizer runtime must be loaded first (and UCX's ~1 KiB leak is not ours).
san=$(grep -oE '/[^ ]*lib(asan|tsan|ubsan)\.so[^ ]*' <<<"$ldd_out" | head -n 1 || true)
if [[ -n "$san" ]]; then
  echo "libep.so is sanitized: LD_PRELOAD=$san"
  export LD_PRELOAD="$san" ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}"
fi
set +e
timeout --kill-after=10 120 mpiexec -n 2 ./ring 3 50 >out.txt 2>&1
rc=$?
set -e
cat out.txt
if [[ $rc -ne 0 ]]; then
  echo "FAIL: mpiexec -n 2 ./ring exited with $rc"
  exit 1
fi

echo "--- check output"
fail=0
expect() {  # expect PATTERN [COUNT]: fixed-string line count (default: at least 1)
  local n
  n=$(grep -cF -- "$1" out.txt || true)
  if [[ -n "${2:-}" && $n -ne $2 ]] || [[ -z "${2:-}" && $n -lt 1 ]]; then
    echo "FAIL: expected ${2:-at least 1} line(s) containing '$1', found $n"
    fail=1
  fi
}
# 2 processes x 3 endpoints = 6 endpoints, 3 laps = 18 hops; token k arrives at k+1 mod 6.
expect "received token" 18
for k in $(seq 0 17); do
  dst=$(((k + 1) % 6))
  src=$((k % 6))
  expect "endpoint $dst (process $((dst / 3)), thread $((dst % 3))) received token $k from endpoint $src" 1
done
grep -Eq '^ring: 6 endpoints, 50 timed laps, 300 hops: [0-9.]+ us per hop$' out.txt || {
  echo "FAIL: no per-hop timing line from process 0"
  fail=1
}
expect "ring: done" 1
[[ $fail -eq 0 ]] || exit 1
echo "PASS"
