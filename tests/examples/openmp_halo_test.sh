#!/usr/bin/env bash
# Usage: openmp_halo_test.sh RUN_BOTH_SH BINARY
# Runs openmp_halo with 2 processes x 2 OpenMP threads (libep) and with 4 MPI processes on
# the same 2x2 tile grid, twice: once until convergence and once stopped by the iteration
# limit. Checks both modes report the same tile grid, iterations, residual and checksum,
# that the converged run converged, and that its checksum is plausible for the boundary
# values (the solution lies between 0 and 1).
set -euo pipefail

run_both=$1
bin=$2
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/openmp_halo_test.XXXXXX")
export TMPDIR="$work"
fail=0

# check NAME ARGS...: runs both modes with ARGS and compares them; sets $iters.
check() {
  local name=$1
  shift
  local out="$work/$name.txt"
  bash "$run_both" "$bin" 2 2 "$@" >"$out" 2>&1 || { cat "$out"; echo "FAIL: $name: run failed"; exit 1; }
  cat "$out"
  local ep mpi
  ep=$(grep '^openmp_halo libep: ' "$out" || true)
  mpi=$(grep '^openmp_halo mpi: ' "$out" || true)
  [[ $(grep -c '^openmp_halo libep: ' "$out") -eq 1 && $(grep -c '^openmp_halo mpi: ' "$out") -eq 1 ]] || {
    echo "FAIL: $name: want one result line per mode"
    exit 1
  }
  # Everything but the mode and the time must be identical.
  local ep_core mpi_core
  ep_core=$(sed -E 's/^openmp_halo libep: //; s/, time [0-9.]+ s$//' <<<"$ep")
  mpi_core=$(sed -E 's/^openmp_halo mpi: //; s/, time [0-9.]+ s$//' <<<"$mpi")
  if [[ "$ep_core" != "$mpi_core" ]]; then
    echo "FAIL: $name: libep '$ep_core' differs from MPI '$mpi_core'"
    fail=1
  fi
  grep -Eq '^2x2 tiles of ' <<<"$ep_core" || { echo "FAIL: $name: not a 2x2 tile grid"; fail=1; }
  iters=$(sed -E 's/.* ([0-9]+) iterations,.*/\1/' <<<"$ep_core")
  residual=$(sed -E 's/.*residual ([^,]+),.*/\1/' <<<"$ep_core")
  checksum=$(sed -E 's/.*checksum ([^,]+)$/\1/' <<<"$ep_core")
}

echo "--- converges: 12x10 points per tile, tolerance 1e-3"
check converged 12 10 5000 1e-3
awk -v r="$residual" 'BEGIN { exit !(r < 1e-3) }' || { echo "FAIL: residual $residual >= 1e-3"; fail=1; }
[[ $iters -gt 1 && $iters -lt 5000 ]] || { echo "FAIL: converged after $iters iterations"; fail=1; }
# 24x20 points, top edge 1: the solution is strictly between 0 and 1.
awk -v c="$checksum" 'BEGIN { exit !(c > 0 && c < 480) }' || { echo "FAIL: checksum $checksum"; fail=1; }

echo "--- stopped by the iteration limit: 9x7 points per tile, 40 iterations"
check limited 9 7 40 1e-12
[[ $iters -eq 40 ]] || { echo "FAIL: ran $iters iterations, want 40"; fail=1; }

[[ $fail -eq 0 ]] || exit 1
echo "PASS"
