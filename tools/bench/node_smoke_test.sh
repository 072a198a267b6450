#!/usr/bin/env bash
# Usage: node_smoke_test.sh MPIRUN_TEST_SH NODE_BENCH OPENMP_HALO NODE_REPORT_SH
# 1. Runs node_bench at T=2 with tiny budgets in every mode and layout (through
#    tools/mpirun_test.sh, which sets up the sanitizer options) and checks what rank 0
#    prints: one line per row asked for, every field there and well-formed, positive
#    figures with min <= value <= max, as many values as repetitions, `checks_ok=1`.
# 2. Runs node_report.sh --quick on a few rows (one of each kind: in-process, two-process
#    with MPI_THREAD_MULTIPLE, collective, openmp_halo) and checks that it wrote
#    README.md with a table per row, raw.txt with the rows' lines and the PNG plots.
# Timings are not judged.
set -euo pipefail

wrapper=$1
bench=$2
halo=$3
report=$4
case "$bench" in /*) ;; *) bench=$PWD/$bench ;; esac
case "$halo" in /*) ;; *) halo=$PWD/$halo ;; esac

fail=0
check() {  # check DESCRIPTION COMMAND...: runs the command, records a failure
  local what=$1
  shift
  if ! "$@"; then
    echo "FAIL: $what"
    fail=1
  fi
}

# Rank 0's lines of one node_bench run: NP ARGS...
run() {
  local np=$1
  shift
  bash "$wrapper" "$bench" "$np" 60 -- --seconds 0.01 --reps 2 "$@" | tee /dev/stderr |
    sed -n 's/^\[0\] //p'
}

# A row's line: every field, the mode, process and thread counts, T, and figures.
row_ok() {  # row_ok LINES ROW MODE PROCS THREADS T UNIT
  awk -v row="$2" -v mode="$3" -v procs="$4" -v threads="$5" -v t="$6" -v unit="$7" '
    function num(s) { return s ~ /^[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/ && s + 0 > 0 }
    $1 == "row=" row {
      found++
      delete f
      for (i = 1; i <= NF; i++) { p = index($i, "="); f[substr($i, 1, p - 1)] = substr($i, p + 1) }
      n = split(f["values"], v, ",")
      ok = f["mode"] == mode && f["procs"] == procs && f["threads"] == threads && f["T"] == t &&
           f["unit"] == unit && num(f["value"]) && num(f["min"]) && num(f["max"]) &&
           f["min"] + 0 <= f["value"] + 0 && f["value"] + 0 <= f["max"] + 0 &&
           (f["better"] == "lower" || f["better"] == "higher") && f["reps"] == 2 && n == 2
      for (i = 1; i <= n; i++) ok = ok && num(v[i])
      if (row ~ /^rate8_/) ok = ok && num(f["per_pair"])
      if (!ok) { print "malformed: " $0; bad = 1 }
    }
    END { if (found != 1) print row " " mode ": " found + 0 " lines, want 1"
          exit !(found == 1 && !bad) }' <<<"$1"
}

out=$(run 1 --mode libep --threads 2 --rows rt64_1p,rtvec_1p,rate8_1p,allreduce8_1p,barrier_1p)
for r in rt64_1p:us rtvec_1p:us rate8_1p:Mmsg/s allreduce8_1p:us barrier_1p:us; do
  check "libep ${r%%:*}" row_ok "$out" "${r%%:*}" libep 1 2 2 "${r#*:}"
done
check "libep 1p checks_ok=1" grep -qx 'checks_ok=1' <<<"$out"

out=$(run 2 --mode mpi --rows 1p)
for r in rt64_1p:us rtvec_1p:us rate8_1p:Mmsg/s allreduce8_1p:us barrier_1p:us; do
  check "mpi ${r%%:*}" row_ok "$out" "${r%%:*}" mpi 2 1 2 "${r#*:}"
done
check "mpi 1p checks_ok=1" grep -qx 'checks_ok=1' <<<"$out"

rows2=(rate8_2p:Mmsg/s bw64k_2p:MiB/s barrier_2p:us allreduce8_2p:us allreduce1m_2p:us
  bcast8_2p:us bcast1m_2p:us alltoall64_2p:us dup_2p:us)
out=$(run 2 --mode libep --threads 2 --rows 2p)
for r in "${rows2[@]}"; do check "libep ${r%%:*}" row_ok "$out" "${r%%:*}" libep 2 2 2 "${r#*:}"; done
check "libep 2p checks_ok=1" grep -qx 'checks_ok=1' <<<"$out"

out=$(run 4 --mode mpi --rows rate8_2p,bw64k_2p,bcast8_2p,alltoall64_2p,dup_2p)
for r in rate8_2p:Mmsg/s bw64k_2p:MiB/s bcast8_2p:us alltoall64_2p:us dup_2p:us; do
  check "mpi ${r%%:*}" row_ok "$out" "${r%%:*}" mpi 4 1 2 "${r#*:}"
done
check "mpi 2p checks_ok=1" grep -qx 'checks_ok=1' <<<"$out"

out=$(run 2 --mode mt --threads 2 --rows 2p)
check "mt rate8_2p" row_ok "$out" rate8_2p mt 2 2 2 Mmsg/s
check "mt bw64k_2p" row_ok "$out" bw64k_2p mt 2 2 2 MiB/s
check "mt runs the rate and bandwidth rows only" test "$(grep -c '^row=' <<<"$out")" -eq 2
check "mt checks_ok=1" grep -qx 'checks_ok=1' <<<"$out"

# A row of the wrong layout for the process count is refused with a message.
set +e
refused=$(bash "$wrapper" "$bench" 2 60 -- --mode libep --rows rt64_1p 2>&1)
rc=$?
set -e
check "libep in-process rows on 2 processes refused" test "$rc" -ne 0
check "the refusal says why" grep -q 'in-process rows' <<<"$refused"

# ---- node_report.sh ------------------------------------------------------------------------
dir=${TEST_TMPDIR:-$(mktemp -d)}/node
rows=(rt64_1p rate8_2p barrier_2p halo_1p_8)
set +e
NODE_BENCH=$bench OPENMP_HALO=$halo timeout 100 bash "$report" --quick --out "$dir" \
  --rows "$(IFS=,; echo "${rows[*]}")" --threads 2 --threads2 1 --reps 1 --seconds 0.01 \
  --rounds 1 --halo-reps 1 --bind off
rc=$?
set -e
check "node_report.sh exits 0" test "$rc" -eq 0
check "README.md written" test -s "$dir/README.md"
for r in "${rows[@]}"; do
  check "README.md has a table for $r" grep -q "^### .*(\`$r\`)" "$dir/README.md"
  check "raw.txt has $r" grep -q "^row=$r " "$dir/raw.txt"
done
check "rate8_2p has an MPI_THREAD_MULTIPLE line" grep -q '^row=rate8_2p mode=mt ' "$dir/raw.txt"
check "README.md has no failed runs" bash -c "! grep -q '^## Failed runs' '$dir/README.md'"
check "openmp_halo's checksums agree" grep -q 'Both modes printed the same checksum' "$dir/README.md"
for p in latency rate collectives halo; do
  check "$p.png is a PNG" bash -c "head -c 8 '$dir/$p.png' | od -An -tx1 | grep -q '89 50 4e 47'"
done

if [[ $fail -ne 0 ]]; then
  exit 1
fi
echo "PASS"
