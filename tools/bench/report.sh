#!/usr/bin/env bash
# Runs libep's benchmark report and writes it into docs/bench/: README.md (every table,
# stamped with the date, the machine and the commit), the plots latency.png,
# bandwidth.png and rate.png (gnuplot), sweep.txt (sweep_bench's raw output) and
# headline.md (the four-row table README.md's "Benchmarks" section shows; copy it there
# by hand with the run's date and commit).
#
# Usage: tools/bench/report.sh [--out DIR] [--note TEXT] [--quick]
#   --out DIR    where to write (default docs/bench)
#   --note TEXT  a sentence about the conditions of the run, printed under the machine
#                (e.g. "Other builds ran on the machine at the time.")
#   --quick      tiny sizes and repetitions, a check of the script itself: its figures
#                are not worth keeping (README.md says so in its first lines)
# What it runs (about 4 minutes on 2 cores with the default settings):
#   sweep_bench (mpiexec -n 2)   ping-pong latency and bandwidth, 8 B to 4 MiB, and the
#                                8-byte message rate over 1, 2, 4 endpoint pairs,
#                                libep against plain MPI;
#   tools/bench/run.sh, coll_run.sh, rma_run.sh   point-to-point, collective and one-sided
#                                tables, with short repetition settings.
# Needs gnuplot (tools/setup.sh installs gnuplot-nox).
# Environment: BAZEL_OUTPUT_BASE, BAZEL, MPIEXEC as for tools/bench/run.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

out_dir=docs/bench
note=""
quick=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out_dir=$2; shift 2 ;;
    --note) note=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    *) echo "usage: $0 [--out DIR] [--note TEXT] [--quick]" >&2; exit 2 ;;
  esac
done
command -v gnuplot >/dev/null || { echo "report.sh: gnuplot is missing (tools/setup.sh)" >&2; exit 1; }
mkdir -p "$out_dir"
mpiexec="${MPIEXEC:-mpiexec}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [[ $quick == 1 ]]; then
  sweep_args=(--max-bytes 65536 --factor 4 --reps 1 --rep-seconds 0.01)
  p2p_args=(--reps 1 --rep-seconds 0.02)
  coll_args=(--reps 1)
  rma_args=(--reps 1)
else
  sweep_args=(--reps 7 --rep-seconds 0.1)
  p2p_args=(--reps 5 --rep-seconds 0.2)
  coll_args=(--reps 5)
  rma_args=(--reps 5)
fi

# ---- the stamp: date, machine, commit ------------------------------------------------------
started=$(date -u '+%Y-%m-%d %H:%M UTC')
t0=$(date +%s)
commit=$(git rev-parse --short HEAD)
# Changes outside the report's own output make the figures those of an uncommitted tree.
out_rel=$(realpath --relative-to=. "$out_dir")
if [[ -n "$(git status --porcelain | awk -v o="$out_rel/" 'index($2, o) != 1')" ]]; then
  commit="$commit+dirty"
fi
cores=$(nproc)
model=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
kernel=$(uname -sr)
container=$(systemd-detect-virt --container 2>/dev/null || true)
if grep -qw hypervisor /proc/cpuinfo; then virt="virtual machine"; else virt="no hypervisor"; fi
if [[ -n "$container" && "$container" != none ]]; then virt="$container container, $virt"; fi
mpi=$(mpichversion 2>/dev/null | awk '{ sub(/^[^:]*:[ \t]*/, "", $0) } NR == 1 { v = $0 } /^ch/ { d = $0 }
  END { if (v) print "MPICH " v " " d }')
mem=$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
stamp="$started, commit $commit, $cores cores ($model), $kernel"

# ---- the runs --------------------------------------------------------------------------------
# shellcheck source=tools/bench/build_bench.sh
source tools/bench/build_bench.sh
build_bench sweep_bench
echo "report.sh: $mpiexec -n 2 $exe ${sweep_args[*]}" >&2
"$mpiexec" -n 2 "$exe" "${sweep_args[@]}" >"$work/sweep.txt"
grep -qx 'checks_ok 1' "$work/sweep.txt" || { echo "report.sh: sweep_bench's payload checks failed" >&2; exit 1; }
tools/bench/run.sh "${p2p_args[@]}" >"$work/p2p.md"
tools/bench/coll_run.sh "${coll_args[@]}" >"$work/coll.md"
tools/bench/rma_run.sh "${rma_args[@]}" >"$work/rma.md"
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
minutes=$(( ($(date +%s) - t0 + 30) / 60 ))

# ---- data for the tables and plots -----------------------------------------------------------
# pp.dat: bytes, then median / min / max one-way latency (us) of ep_intra, ep_inter, mpi
# (columns 2-4, 5-7, 8-10), then their median bandwidth (MiB/s, columns 11-13).
awk '
  $1 == "pp" { key = $3; if (!(key in seen)) { seen[key] = 1; order[n++] = key }
               lat[$2, key] = $4 " " $5 " " $6; bw[$2, key] = $7 }
  END { for (i = 0; i < n; i++) { k = order[i]
          print k, lat["ep_intra", k], lat["ep_inter", k], lat["mpi", k],
                bw["ep_intra", k], bw["ep_inter", k], bw["mpi", k] } }' "$work/sweep.txt" >"$work/pp.dat"
# rate.dat: pairs, then median / min / max messages per second of ep and mpi_threads.
awk '
  $1 == "rate" { key = $3; if (!(key in seen)) { seen[key] = 1; order[n++] = key }
                 r[$2, key] = $4 " " $5 " " $6 }
  END { for (i = 0; i < n; i++) { k = order[i]; print k, r["ep", k], r["mpi_threads", k] } }' \
  "$work/sweep.txt" >"$work/rate.dat"

# Figures of the headline table.
pp() { awk -v s="$1" -v b="$2" -v c="$3" '$1 == "pp" && $2 == s && $3 == b { print $c }' "$work/sweep.txt"; }
rate() { awk -v s="$1" -v k="$2" '$1 == "rate" && $2 == s && $3 == k { print $4 }' "$work/sweep.txt"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "-"; else printf "%.2fx", a / b }'; }
fmt() { awk -v x="$1" -v d="$2" 'BEGIN { if (x == "") print "-"; else printf "%." d "f", x }'; }
bwf() { awk -v x="$1" 'BEGIN { if (x == "") print "-"; else printf(x < 10 ? "%.1f" : "%.0f", x) }'; }
mps() { awk -v x="$1" 'BEGIN { if (x == "") print "-"; else printf "%.2f", x / 1e6 }'; }
max_pairs=$(awk 'END { print $1 }' "$work/rate.dat")
big=1048576
[[ -n "$(pp mpi $big 4)" ]] || big=$(awk 'END { print $1 }' "$work/pp.dat")  # --quick stops earlier
human() { awk -v b="$1" 'BEGIN { if (b >= 1048576) printf "%g MiB", b / 1048576
                                else if (b >= 1024) printf "%g KiB", b / 1024
                                else printf "%d B", b }'; }

headline() {
  echo "| measurement | libep | MPI | libep / MPI |"
  echo "|---|---:|---:|---:|"
  echo "| 8 B latency, 2 endpoints of one process (MPI: 2 processes on the node) | $(fmt "$(pp ep_intra 8 4)" 2) us | $(fmt "$(pp mpi 8 4)" 2) us | $(ratio "$(pp ep_intra 8 4)" "$(pp mpi 8 4)") |"
  echo "| 8 B latency, 1 endpoint in each of 2 processes (MPI: ranks 0 and 1) | $(fmt "$(pp ep_inter 8 4)" 2) us | $(fmt "$(pp mpi 8 4)" 2) us | $(ratio "$(pp ep_inter 8 4)" "$(pp mpi 8 4)") |"
  echo "| $(human "$big") ping-pong bandwidth, 1 endpoint in each of 2 processes | $(bwf "$(pp ep_inter "$big" 7)") MiB/s | $(bwf "$(pp mpi "$big" 7)") MiB/s | $(ratio "$(pp ep_inter "$big" 7)" "$(pp mpi "$big" 7)") |"
  echo "| 8 B message rate, $max_pairs endpoints per process streaming to $max_pairs in the other (MPI: $max_pairs threads per process) | $(mps "$(rate ep "$max_pairs")") M msg/s | $(mps "$(rate mpi_threads "$max_pairs")") M msg/s | $(ratio "$(rate ep "$max_pairs")" "$(rate mpi_threads "$max_pairs")") |"
}

# ---- plots -------------------------------------------------------------------------------------
# x tics: every size of the sweep (every other one when there are more than 11), written
# in B / KiB / MiB.
step=$(awk 'END { print (NR > 11 ? 2 : 1) }' "$work/pp.dat")
xtics=$(awk -v step="$step" '(NR - 1) % step == 0 { b = $1
  l = b >= 1048576 ? sprintf("%g MiB", b / 1048576) : b >= 1024 ? sprintf("%g KiB", b / 1024) : sprintf("%d B", b)
  printf "%s\"%s\" %d", (n++ ? ", " : ""), l, b }' "$work/pp.dat")
# The legend goes under the plot (the series cross every corner), the stamp under the
# title.
common="set terminal pngcairo size 1000,700 font 'DejaVu Sans,11' noenhanced
set grid
set tmargin 5
set bmargin 8.5
set label 1 '$stamp' at screen 0.5, screen 0.925 center font 'DejaVu Sans,9'
set key at screen 0.5, screen 0.015 center bottom vertical maxrows 3 Left reverse box
set style line 1 lc rgb '#6a1b9a' lw 2 pt 7 ps 0.9
set style line 2 lc rgb '#2e7d32' lw 2 pt 5 ps 0.9
set style line 3 lc rgb '#e65100' lw 2 pt 9 ps 1.1 dt 2"
gnuplot <<EOF
$common
set output '$out_dir/latency.png'
set label 2 'Ping-pong latency (one-way, median; bars: min-max of the repetitions)' at screen 0.5, screen 0.965 center font 'DejaVu Sans,13'
set logscale x 2
set logscale y 10
# (the series are drawn a little apart along x, so that their bars do not hide each other)
set xtics ($xtics)
set mxtics 2
set xrange [$(awk 'NR == 1 { a = $1 } END { print a / 1.6 ":" $1 * 1.6 }' "$work/pp.dat")]
set xlabel 'message size'
set ylabel 'one-way latency (us)'
set format y '%g'
plot '$work/pp.dat' using (\$1/1.3):2:3:4 with yerrorlines ls 1 title 'libep, 2 endpoints of 1 process', \
     '' using 1:5:6:7 with yerrorlines ls 2 title 'libep, 1 endpoint in each of 2 processes', \
     '' using (\$1*1.3):8:9:10 with yerrorlines ls 3 title 'MPI_Send/MPI_Recv, 2 processes on the node (baseline of both)'
set output '$out_dir/bandwidth.png'
set label 2 'Ping-pong bandwidth (message size / one-way latency, median)' at screen 0.5, screen 0.965 center font 'DejaVu Sans,13'
unset logscale y
set ylabel 'bandwidth (MiB/s)'
set yrange [0:*]
plot '$work/pp.dat' using 1:11 with linespoints ls 1 title 'libep, 2 endpoints of 1 process', \
     '' using 1:12 with linespoints ls 2 title 'libep, 1 endpoint in each of 2 processes', \
     '' using 1:13 with linespoints ls 3 title 'MPI_Send/MPI_Recv, 2 processes on the node (baseline of both)'
EOF
gnuplot <<EOF
$common
set output '$out_dir/rate.png'
set label 2 '8-byte message rate, 2 processes, windows of 64 (median; bars: min-max)' at screen 0.5, screen 0.965 center font 'DejaVu Sans,13'
set xlabel 'stream pairs = endpoints (libep) or threads (MPI) per process'
set ylabel 'message rate (million messages/s, all streams)'
set logscale x 2
set xtics ($(awk '{ printf "%s\"%d\" %d", (NR > 1 ? ", " : ""), $1, $1 }' "$work/rate.dat"))
set xrange [0.8:$(awk 'END { print $1 * 1.25 }' "$work/rate.dat")]
set yrange [0:*]
plot '$work/rate.dat' using (\$1/1.04):(\$2/1e6):(\$3/1e6):(\$4/1e6) with yerrorlines ls 1 title 'libep: endpoints per process', \
     '' using (\$1*1.04):(\$5/1e6):(\$6/1e6):(\$7/1e6) with yerrorlines ls 3 title 'MPI: MPI_THREAD_MULTIPLE threads per process, one communicator each'
EOF

# ---- the Markdown ------------------------------------------------------------------------------
md="$out_dir/README.md"
{
  echo "# libep benchmark report"
  echo
  echo "Generated by \`tools/bench/report.sh\`; every figure below comes from that one run."
  [[ $quick == 1 ]] && echo "**This is a --quick run (tiny sizes and repetitions): a check of the script, not figures to keep.**"
  echo
  echo "- date: $started (about $minutes minutes)"
  echo "- commit: $commit"
  echo "- machine: $cores cores, $model, $mem, $virt; $kernel; $mpi"
  echo "- load average at the start: $load_start, at the end: $load_end ($cores cores)"
  steal=$(sed -n 's/^# host steal time per phase: //p' "$work/sweep.txt")
  echo "- host steal time during the sweep: $steal"
  if [[ -n "$note" ]]; then
    echo "- conditions: $note"
  fi
  # The load at the end counts the benchmarks' own processes: only the start says
  # whether other work was running.
  busy=$(awk -v a="$load_start" 'BEGIN { split(a, x, " "); print (x[1] > 1) }')
  if [[ $busy == 1 ]]; then
    echo "- the machine ran other work when the run began (load average above 1): absolute"
    echo "  times are noisy, and one figure's repetitions can differ by 100x or more when a"
    echo "  measuring thread waits for its core (the min-max bars of the plots, the best"
    echo "  repetitions in brackets below, every repetition's spread in sweep.txt); compare"
    echo "  the libep / MPI ratios, each measured in one run with repetitions interleaved."
  fi
  echo
  echo "How to read: latencies are one-way (round trip / 2), medians over the repetitions;"
  echo "compare ratios from one run, never absolute times across runs (docs/performance.md,"
  echo "\"How to measure\"). Plain MPI has no safe in-process counterpart of two endpoints of"
  echo "one process (two threads on MPI_COMM_SELF can hang Debian's MPICH), so the MPI"
  echo "series is 2 MPI processes on the node for both libep series."
  echo
  echo "## Headline"
  echo
  headline
  echo
  echo "## Size sweep (\`sweep_bench ${sweep_args[*]}\`, mpiexec -n 2)"
  echo
  echo "![latency vs message size](latency.png)"
  echo
  echo "![bandwidth vs message size](bandwidth.png)"
  echo
  echo "Series: **intra** = 2 endpoints of one process (2 threads of MPI process 0; process 1"
  echo "idle), **inter** = endpoint 0 of each of the 2 processes, **MPI** = MPI_Send/MPI_Recv"
  echo "between ranks 0 and 1 after EP_Init (libep's progress threads idle). The three are"
  echo "measured in turn for every size in every repetition. Bandwidth = size / one-way"
  echo "latency (one message in flight)."
  echo
  echo "One-way latency in us: the median of the repetitions, the best (lowest) one in"
  echo "brackets; the ratios are those of the medians, then of the best repetitions."
  echo
  echo "| size | intra | inter | MPI | intra / MPI | inter / MPI |"
  echo "|---:|---:|---:|---:|---:|---:|"
  while read -r b i1 i1min _ i2 i2min _ m mmin _ _; do
    echo "| $(human "$b") | $(fmt "$i1" 2) ($(fmt "$i1min" 2)) | $(fmt "$i2" 2) ($(fmt "$i2min" 2)) | $(fmt "$m" 2) ($(fmt "$mmin" 2)) | $(ratio "$i1" "$m") ($(ratio "$i1min" "$mmin")) | $(ratio "$i2" "$m") ($(ratio "$i2min" "$mmin")) |"
  done <"$work/pp.dat"
  echo
  echo "Bandwidth in MiB/s (size / median one-way latency):"
  echo
  echo "| size | intra | inter | MPI | intra / MPI | inter / MPI |"
  echo "|---:|---:|---:|---:|---:|---:|"
  while read -r b _ _ _ _ _ _ _ _ _ bw1 bw2 bw3; do
    echo "| $(human "$b") | $(bwf "$bw1") | $(bwf "$bw2") | $(bwf "$bw3") | $(ratio "$bw1" "$bw3") | $(ratio "$bw2" "$bw3") |"
  done <"$work/pp.dat"
  echo
  echo "## Message rate against endpoints per process"
  echo
  echo "![message rate vs endpoints](rate.png)"
  echo
  echo "k endpoints per process, endpoint i of process 0 streaming 8-byte messages to endpoint"
  echo "i of process 1 in windows of 64 (Isend x64 + Waitall, then a 1-byte acknowledgement),"
  echo "one thread per endpoint; the rate is the sum over the k streams. MPI: k threads per"
  echo "process under MPI_THREAD_MULTIPLE, each on its own dup of MPI_COMM_WORLD. (k MPI"
  echo "processes per side would mean 8 busy-polling processes on $cores cores at k = 4, which"
  echo "measures the scheduler rather than MPI.) With $cores cores, k = 2 and 4 put more threads"
  echo "than cores on the machine."
  echo
  echo "| pairs | libep (M msg/s) | MPI threads (M msg/s) | libep / MPI |"
  echo "|---:|---:|---:|---:|"
  while read -r k e _ _ m _ _; do
    echo "| $k | $(mps "$e") | $(mps "$m") | $(ratio "$e" "$m") |"
  done <"$work/rate.dat"
  echo
  echo "## Point-to-point (\`tools/bench/run.sh ${p2p_args[*]}\`)"
  echo
  # The tables' own titles become plain lines under this section's heading.
  sed 's/^# \(.*\)/**\1**/' "$work/p2p.md"
  echo
  echo "## Collectives (\`tools/bench/coll_run.sh ${coll_args[*]}\`)"
  echo
  sed 's/^# \(.*\)/**\1**/' "$work/coll.md"
  echo
  echo "## One-sided (\`tools/bench/rma_run.sh ${rma_args[*]}\`)"
  echo
  sed 's/^# \(.*\)/**\1**/' "$work/rma.md"
  echo
  echo "## Raw data"
  echo
  echo "[sweep.txt](sweep.txt): sweep_bench's output (format at the top of"
  echo "tools/bench/sweep_bench.cc)."
} >"$md"
cp "$work/sweep.txt" "$out_dir/sweep.txt"
headline >"$out_dir/headline.md"
echo "report.sh: wrote $md, $out_dir/{latency,bandwidth,rate}.png, sweep.txt, headline.md ($minutes min)" >&2
