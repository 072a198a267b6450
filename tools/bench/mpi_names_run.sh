#!/usr/bin/env bash
# What libep_mpi (the MPI names over libep) costs, measured in alternating runs:
#   A. libep through MPI_ names against EP_ names (mpi_names_bench: both in every run)
#   B. libep's own MPI traffic through libep_mpi's wrappers: p2p_bench's libep rows
#      (--phases bcf, 2 processes) with libep_mpi.so preloaded ahead of MPICH against
#      the same without it, runs alternating.
# Prints every run's table, then per row the median over the runs of A's ratio, and B's
# ratio of the medians (preloaded / not).
#
# Usage: tools/bench/mpi_names_run.sh [ROUNDS] [REPS] [REP_SECONDS]   (default 5 7 0.3)
# Environment: as tools/bench/run.sh (BAZEL, BAZEL_OUTPUT_BASE, MPIEXEC, EP_*), and
#   WAIT_IDLE=S  before each run, wait (at most S seconds) until the machine's CPUs
#                were at least 90% idle over 2 s: on a shared machine, the runs take its
#                quiet moments (each wait and idle share is printed).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
rounds=${1:-5}
reps=${2:-7}
secs=${3:-0.3}

source tools/bench/build_bench.sh
build_bench mpi_names_bench
names=$exe
build_bench p2p_bench_shared
p2p=$exe
preload="$(dirname "$(dirname "$(dirname "$p2p")")")/mpi/libep_mpi.so"
[[ -f $preload ]] || { echo "mpi_names_run.sh: $preload was not built" >&2; exit 1; }
export UCX_MEM_EVENTS=no
out=$(mktemp -d "${TMPDIR:-/tmp}/mpi_names_run.XXXXXX")
launch=("${MPIEXEC:-mpiexec}" -n 2)

# The share of idle CPU time over the next 2 seconds, in percent (/proc/stat).
idle_percent() {
  local a b
  a=($(head -n 1 /proc/stat))
  sleep 2
  b=($(head -n 1 /proc/stat))
  local total=0 i
  for ((i = 1; i < ${#a[@]}; ++i)); do total=$((total + b[i] - a[i])); done
  echo $((total > 0 ? 100 * (b[4] - a[4]) / total : 0))
}

wait_idle() {
  [[ -n "${WAIT_IDLE:-}" ]] || return 0
  local waited=0 idle
  while idle=$(idle_percent) && ((idle < 90 && waited < WAIT_IDLE)); do
    sleep 3
    waited=$((waited + 5))
  done
  echo "    waited ${waited} s for an idle machine (${idle}% idle)" >&2
}

for ((k = 1; k <= rounds; ++k)); do
  echo "--- round $k of $rounds (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  wait_idle
  "${launch[@]}" "$names" --reps "$reps" --rep-seconds "$secs" >"$out/names.$k"
  # B: the two sides in turn first.
  for side in $( ((k % 2)) && echo "plain preloaded" || echo "preloaded plain"); do
    wait_idle
    if [[ $side == preloaded ]]; then
      LD_PRELOAD=$preload "${launch[@]}" "$p2p" --phases bcf --libep-only --reps "$reps" \
        --rep-seconds "$secs" >"$out/p2p.$side.$k"
    else
      "${launch[@]}" "$p2p" --phases bcf --libep-only --reps "$reps" --rep-seconds "$secs" \
        >"$out/p2p.$side.$k"
    fi
  done
  cat "$out/names.$k"
done

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo
echo "## A. MPI_ names / EP_ names, median over $rounds runs (each run: the ratio of its medians)"
echo
echo "| row | ratios of the runs | median |"
echo "|---|---|---:|"
for row in a b f c; do
  ratios=$(grep -h "^| $row |" "$out"/names.* | awk -F'|' '{gsub(/[ x]/, "", $6); print $6}')
  [[ -n $ratios ]] || continue
  echo "| $row | $(tr '\n' ' ' <<<"$ratios")| $(median <<<"$ratios")x |"
done

echo
echo "## B. p2p_bench's libep figures with libep_mpi.so preloaded / without, $rounds runs each"
echo
echo "| row | preloaded (median) | plain (median) | ratio |"
echo "|---|---:|---:|---:|"
# The detail table: "| series | min | median | max | ... |" - the libep series' medians.
for series in "libep, 1 endpoint per process" "libep, 2 endpoints per process" \
  "libep, persistent: EP_Start + EP_Wait" "EP_Isend/EP_Irecv + EP_Wait" \
  "libep, persistent: EP_Start + EP_Waitall" \
  "EP_Isend/EP_Irecv + EP_Waitall, 2 endpoints per process"; do
  vals() {
    grep -hF "| $series |" "$out"/p2p."$1".* | awk -F'|' '{split($4, a, " "); print a[1]}'
  }
  pre=$(vals preloaded | median)
  pl=$(vals plain | median)
  [[ -n $pre && -n $pl ]] || continue
  echo "| $series | $pre | $pl | $(awk -v a="$pre" -v b="$pl" 'BEGIN {printf "%.3fx", a / b}') |"
done
echo
echo "(latencies in us, rates in M msg/s; every run's output is in $out)"
