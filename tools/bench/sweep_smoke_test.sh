#!/usr/bin/env bash
# Usage: sweep_smoke_test.sh MPIRUN_TEST_SH SWEEP_BENCH
# Runs sweep_bench with tiny sizes and budgets on 2 MPI processes (through
# tools/mpirun_test.sh, which sets up the sanitizer options) and checks what process 0
# prints: one `pp` row per series and size, one `rate` row per series and pair count, each
# with the right number of fields, positive figures, min <= median <= max, and
# `checks_ok 1` (every payload arrived intact). Timings are not judged.
set -euo pipefail

wrapper=$1
bench=$2
sizes=(8 32 128 512)
pairs=(1 2)

out=$(bash "$wrapper" "$bench" 2 120 -- --min-bytes 8 --max-bytes 512 --factor 4 --reps 1 \
  --rep-seconds 0.01 --pairs 1,2)
echo "$out"
# Process 0's lines, without the wrapper's "[0] " prefix.
rows=$(sed -n 's/^\[0\] //p' <<<"$out")

fail=0
check() {  # check DESCRIPTION COMMAND...: runs the command, records a failure
  local what=$1
  shift
  if ! "$@"; then
    echo "FAIL: $what"
    fail=1
  fi
}

# A row: its kind, series and x value, then figures that must be positive numbers with
# min (field 5) <= median (field 4) <= max (field 6), and an integer count last.
row_ok() {  # row_ok KIND SERIES X NFIELDS
  awk -v kind="$1" -v series="$2" -v x="$3" -v nf="$4" '
    function num(s) { return s ~ /^[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/ && s + 0 > 0 }
    $1 == kind && $2 == series && $3 == x {
      found++
      ok = NF == nf && num($4) && num($5) && num($6) && $5 + 0 <= $4 + 0 && $4 + 0 <= $6 + 0 \
           && $NF ~ /^[1-9][0-9]*$/
      if (NF == 8) ok = ok && num($7)
      if (!ok) { print "malformed: " $0; bad = 1 }
    }
    END { if (found != 1) print kind " " series " " x ": " found + 0 " rows, want 1"
          exit !(found == 1 && !bad) }' <<<"$rows"
}

for s in "${sizes[@]}"; do
  for series in ep_intra ep_inter mpi; do
    check "pp $series $s" row_ok pp "$series" "$s" 8
  done
done
for k in "${pairs[@]}"; do
  for series in ep mpi_threads; do
    check "rate $series $k" row_ok rate "$series" "$k" 7
  done
done
check "12 pp rows and 4 rate rows in all" \
  test "$(grep -c '^pp ' <<<"$rows")" -eq 12 -a "$(grep -c '^rate ' <<<"$rows")" -eq 4
check "checks_ok 1" grep -qx 'checks_ok 1' <<<"$rows"

if [[ $fail -ne 0 ]]; then
  exit 1
fi
echo "PASS"
