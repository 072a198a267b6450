#!/usr/bin/env bash
# Usage: io_server_test.sh IO_SERVER
# Runs io_server in three layouts and checks server 0's line: no mismatching element and
# the checksum computed here from the field formula (awk; every value is a multiple of 1/8,
# so the sums are exact):
#   2 processes x 3 endpoints, 3 servers (clients in process 0; servers in both processes)
#   3 processes x 2 endpoints, 2 servers (servers in the last process)
#   2 processes x 2 endpoints, 1 server, EP_EAGER_LIMIT=1K (slabs travel by rendezvous)
set -euo pipefail

bin=$1
case "$bin" in
  /*) ;;
  *) bin="$PWD/$bin" ;;
esac
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/io_server_test.XXXXXX")
export UCX_MEM_EVENTS=no TMPDIR="$work"
fail=0

# expected_checksum T NX NY: sum over y, x of (1 + (y*NX + x) mod 7) * sum over t of
# (1 + t/2 + y/4 + x/8).
expected_checksum() {
  awk -v T="$1" -v nx="$2" -v ny="$3" 'BEGIN {
    s = 0
    for (y = 0; y < ny; y++) for (x = 0; x < nx; x++) {
      a = 0
      for (t = 0; t < T; t++) a += 1 + 0.5 * t + 0.25 * y + 0.125 * x
      s += (1 + (y * nx + x) % 7) * a
    }
    printf "%.17g\n", s
  }'
}

# run NP ENDPOINTS SERVERS T NX NY
run() {
  local np=$1 eps=$2 servers=$3 t=$4 nx=$5 ny=$6
  local out="$work/run_${np}_${eps}_${servers}.txt"
  echo "--- mpiexec -n $np io_server $eps $servers $t $nx $ny ${EP_EAGER_LIMIT:+(EP_EAGER_LIMIT=$EP_EAGER_LIMIT)}"
  timeout --kill-after=10 120 mpiexec -n "$np" "$bin" "$eps" "$servers" "$t" "$nx" "$ny" >"$out" 2>&1 || {
    cat "$out"
    echo "FAIL: io_server exited with an error"
    exit 1
  }
  cat "$out"
  local clients=$((np * eps - servers))
  local want
  want="io_server: $t timesteps of ${ny}x${nx} from $clients clients to $servers servers: checksum $(expected_checksum "$t" "$nx" "$ny"), mismatches 0"
  local n
  n=$(grep -cxF "$want" "$out" || true)
  if [[ $n -ne 1 ]]; then
    echo "FAIL: want exactly one line '$want'"
    fail=1
  fi
  [[ $(grep -c '^io_server: ' "$out") -eq 1 ]] || { echo "FAIL: want one result line"; fail=1; }
}

run 2 3 3 4 16 12
run 3 2 2 5 10 9
EP_EAGER_LIMIT=1K run 2 2 1 3 300 8

[[ $fail -eq 0 ]] || exit 1
echo "PASS"
