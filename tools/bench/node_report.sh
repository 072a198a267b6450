#!/usr/bin/env bash
# node_report.sh - libep's node report: how libep scales with endpoints per process T,
# against MPI everywhere (one MPI process per endpoint) and MPI_THREAD_MULTIPLE, every mode
# measured in this one run.  Writes DIR/README.md (tables and the exact commands, stamped
# with the date, the machine and the commit), DIR/raw.txt (every measurement line) and the
# plots DIR/{latency,rate,collectives,halo}.png (gnuplot).
#
# Usage: tools/bench/node_report.sh [--threads "2 4 8 14"] [--threads2 "1 2 4 7"] [--quick]
#            [--out DIR] [--rows LIST] [--reps N] [--seconds S] [--rounds R]
#            [--halo-reps N] [--bind auto|on|off] [--note TEXT] [--cores N] [--dry-run]
#   --threads L   T of the in-process rows (1 process x T endpoints against T processes)
#   --threads2 L  T of the two-process rows (2 processes x T endpoints against 2T processes
#                 and against 2 processes x T threads under MPI_THREAD_MULTIPLE)
#                 A T runs where its units fit the cores (T <= cores, 2T <= cores), and
#                 always at T <= 2, so that the report runs on 2 cores.
#   --quick       short budgets, T=2 in-process and T=1,2 two-process: a check of the
#                 script and a first look (about a minute on 2 cores)
#   --out DIR     where to write (default docs/bench/node)
#   --rows LIST   rows to run (names of README.md's tables, or 1p, 2p, halo; default all)
#   --reps N, --seconds S   node_bench's recorded repetitions per run and budget per
#                 repetition; --rounds R: runs per mode, alternated between the modes
#                 (a figure's median is over R x N repetitions); --halo-reps N: runs of
#                 openmp_halo per mode and size
#   --bind M      mpiexec -bind-to hwthread:K (K = cores / processes): auto binds where
#                 every mode's units fit the cores, on always, off never
#   --note TEXT   a sentence about the conditions of the run, printed in README.md
#   --cores N     plan for N cores (default: nproc); --dry-run: print the runs and the
#                 time estimate, run nothing
#
# Programs: node_bench and openmp_halo from $NODE_BENCH / $OPENMP_HALO, else from PATH
# (a node set up with .node/env.sh), else built with bazel (bazel-bin; without bazel, an
# existing bazel-bin/ build).  mpiexec from
# $MPIEXEC or PATH; gnuplot for the plots.
#
# On a bare many-core node (../shared/tools/node/README.md): here, after a build,
#   ../shared/tools/node/pack.sh bazel-bin/tools/bench/node_bench \
#       bazel-bin/examples/openmp_halo/openmp_halo && git rev-parse --short HEAD >.node/commit
# there, from a copy of the project root with .node/:
#   tar xJf .node/node.tar.xz && source .node/env.sh && tools/bench/node_report.sh
# (the commit comes from git, else from .node/commit, else "unknown").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# The command line as typed (arguments with spaces or quotes in single quotes).
invocation=tools/bench/node_report.sh
for a in "$@"; do
  if [[ $a =~ ^[A-Za-z0-9_./,:=+-]+$ ]]; then invocation+=" $a"; else invocation+=" '${a//\'/\'\\\'\'}'"; fi
done

threads="2 4 8 14"
threads_given=0
threads2=""
quick=0
out_dir=docs/bench/node
rows_arg=all
reps=""
seconds=""
rounds=""
halo_reps=""
bind=auto
note=""
cores=$(nproc)
dry_run=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads=$2; threads_given=1; shift 2 ;;
    --threads2) threads2=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --out) out_dir=$2; shift 2 ;;
    --rows) rows_arg=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --halo-reps) halo_reps=$2; shift 2 ;;
    --bind) bind=$2; shift 2 ;;
    --note) note=$2; shift 2 ;;
    --cores) cores=$2; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    *) sed -n '/^# Usage/,/^#                 time estimate/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
case "$bind" in auto | on | off) ;; *) echo "node_report.sh: --bind auto|on|off" >&2; exit 2 ;; esac

# ---- settings ------------------------------------------------------------------------------
if [[ $quick == 1 ]]; then
  [[ $threads_given == 1 ]] || threads="2"
  : "${threads2:=1 2}" "${reps:=5}" "${seconds:=0.05}" "${rounds:=2}" "${halo_reps:=2}"
  # openmp_halo iterations per tile size (tolerance 0: every run does them all)
  declare -A halo_iters=([8]=100 [256]=20 [1024]=4)
else
  : "${threads2:=1 2 4 7}" "${reps:=3}" "${seconds:=0.1}" "${rounds:=2}" "${halo_reps:=3}"
  declare -A halo_iters=([8]=2000 [256]=500 [1024]=50)
fi
# What a halo iteration costs at most on a 16-core node (us), for the time estimate.
declare -A halo_guess_us=([8]=300 [256]=500 [1024]=5000)

# The rows by layout (report_order below is README.md's order), their titles and units.
rows_1p=(rt64_1p rtvec_1p rate8_1p allreduce8_1p barrier_1p)
halo_1p=(halo_1p_8 halo_1p_256 halo_1p_1024)
rows_2p=(rate8_2p bw64k_2p barrier_2p allreduce8_2p allreduce1m_2p bcast8_2p bcast1m_2p
  alltoall64_2p dup_2p)
halo_2p=(halo_2p_8 halo_2p_256)
mt_rows=(rate8_2p bw64k_2p)  # MPI_THREAD_MULTIPLE is measured for these
all_rows=("${rows_1p[@]}" "${halo_1p[@]}" "${rows_2p[@]}" "${halo_2p[@]}")
declare -A title=(
  [rt64_1p]="1. 64 B round trip, contiguous (MPI_BYTE), T/2 pairs at once"
  [rtvec_1p]="2. 64 B round trip, MPI_Type_vector(8,1,2,MPI_DOUBLE), T/2 pairs at once"
  [rate8_1p]="3. 8 B message rate, T/2 pairs, windows of 64"
  [allreduce8_1p]="4. 8 B allreduce (MPI_SUM of a double) over the T endpoints"
  [barrier_1p]="5. barrier over the T endpoints"
  [halo_1p_8]="6a. openmp_halo 1xT, 8x8 tiles"
  [halo_1p_256]="6b. openmp_halo 1xT, 256x256 tiles"
  [halo_1p_1024]="6c. openmp_halo 1xT, 1024x1024 tiles"
  [rate8_2p]="7. 8 B message rate, T pairs across the 2 processes"
  [bw64k_2p]="8. 64 KiB bandwidth, T pairs across the 2 processes, windows of 16"
  [halo_2p_8]="9a. openmp_halo 2xT, 8x8 tiles"
  [halo_2p_256]="9b. openmp_halo 2xT, 256x256 tiles"
  [barrier_2p]="10. barrier"
  [allreduce8_2p]="11. 8 B allreduce"
  [allreduce1m_2p]="12. 1 MiB allreduce (MPI_SUM of doubles), time"
  [bcast8_2p]="13. 8 B bcast"
  [bcast1m_2p]="14. 1 MiB bcast"
  [alltoall64_2p]="15. alltoall, 64 B per pair of endpoints"
  [dup_2p]="16. dup + its first 8 B allreduce + free"
)
declare -A what=(
  [rt64_1p]="us per round trip, the median over the pairs (endpoint 2k with 2k+1)"
  [rtvec_1p]="us per round trip of one vector (64 B of payload over 128 B), the median over the pairs"
  [rate8_1p]="million messages/s, all pairs together (per pair after the semicolon)"
  [allreduce8_1p]="us per call (the slowest endpoint)"
  [barrier_1p]="us per call (the slowest endpoint)"
  [halo_1p_8]="us per iteration (halo exchange, Jacobi update, Allreduce MPI_MAX)"
  [halo_1p_256]="us per iteration"
  [halo_1p_1024]="us per iteration"
  [rate8_2p]="million messages/s, all pairs together (per pair after the semicolon); endpoint i of process 0 streams to endpoint i of process 1"
  [bw64k_2p]="MiB/s (1 MiB = 2^20 bytes), all pairs together"
  [halo_2p_8]="us per iteration"
  [halo_2p_256]="us per iteration"
  [barrier_2p]="us per call (the slowest endpoint)"
  [allreduce8_2p]="us per call (the slowest endpoint)"
  [allreduce1m_2p]="us per call (the slowest endpoint)"
  [bcast8_2p]="us per call from endpoint 0 (the slowest endpoint; n calls end with a barrier)"
  [bcast1m_2p]="us per call from endpoint 0 (the slowest endpoint; n calls end with a barrier)"
  [alltoall64_2p]="us per call (the slowest endpoint)"
  [dup_2p]="us per dup + allreduce + free (libep: EP_Comm_dup of the endpoints communicator; MPI: MPI_Comm_dup of MPI_COMM_WORLD)"
)
# Panel titles of the plots.
declare -A short=(
  [rt64_1p]="1. 64 B round trip, contiguous" [rtvec_1p]="2. 64 B round trip, vector type"
  [rate8_1p]="3. 8 B message rate, T/2 pairs" [allreduce8_1p]="4. 8 B allreduce, 1 process"
  [barrier_1p]="5. barrier, 1 process" [halo_1p_8]="6a. openmp_halo 1xT, 8x8"
  [halo_1p_256]="6b. openmp_halo 1xT, 256x256" [halo_1p_1024]="6c. openmp_halo 1xT, 1024x1024"
  [rate8_2p]="7. 8 B message rate, T pairs" [bw64k_2p]="8. 64 KiB bandwidth, T pairs"
  [halo_2p_8]="9a. openmp_halo 2xT, 8x8" [halo_2p_256]="9b. openmp_halo 2xT, 256x256"
  [barrier_2p]="10. barrier" [allreduce8_2p]="11. 8 B allreduce"
  [allreduce1m_2p]="12. 1 MiB allreduce" [bcast8_2p]="13. 8 B bcast" [bcast1m_2p]="14. 1 MiB bcast"
  [alltoall64_2p]="15. alltoall, 64 B per pair" [dup_2p]="16. dup + allreduce + free"
)
# README.md's order (the numbers of the titles).
report_order=("${rows_1p[@]}" "${halo_1p[@]}" rate8_2p bw64k_2p "${halo_2p[@]}" "${rows_2p[@]:2}")
is_in() { local x=$1; shift; local y; for y in "$@"; do [[ $x == "$y" ]] && return 0; done; return 1; }

# --rows: names and groups.
selected=()
for r in ${rows_arg//,/ }; do
  case "$r" in
    all) selected+=("${all_rows[@]}") ;;
    1p) selected+=("${rows_1p[@]}" "${halo_1p[@]}") ;;
    2p) selected+=("${rows_2p[@]}" "${halo_2p[@]}") ;;
    halo) selected+=("${halo_1p[@]}" "${halo_2p[@]}") ;;
    *) is_in "$r" "${all_rows[@]}" || { echo "node_report.sh: unknown row $r (rows: ${all_rows[*]})" >&2; exit 2; }
       selected+=("$r") ;;
  esac
done
pick() { local r; for r in "$@"; do is_in "$r" "${selected[@]}" && echo "$r"; done; true; }
mapfile -t sel_1p < <(pick "${rows_1p[@]}")
mapfile -t sel_h1 < <(pick "${halo_1p[@]}")
mapfile -t sel_2p < <(pick "${rows_2p[@]}")
mapfile -t sel_mt < <(pick "${mt_rows[@]}")
mapfile -t sel_h2 < <(pick "${halo_2p[@]}")

# ---- programs ------------------------------------------------------------------------------
mpiexec=${MPIEXEC:-mpiexec}
command -v "$mpiexec" >/dev/null || { echo "node_report.sh: no $mpiexec on PATH" >&2; exit 1; }
command -v gnuplot >/dev/null || { echo "node_report.sh: gnuplot is missing (tools/setup.sh)" >&2; exit 1; }
# nb_name, halo_name: how README.md names them (as on PATH, or bazel-bin/...).
nb=${NODE_BENCH:-$(command -v node_bench || true)}
halo=${OPENMP_HALO:-$(command -v openmp_halo || true)}
nb_name=${NODE_BENCH:-node_bench}
halo_name=${OPENMP_HALO:-openmp_halo}
if [[ (-z "$nb" || -z "$halo") && -f WORKSPACE ]] && ! command -v "${BAZEL:-bazel}" >/dev/null &&
  [[ -x bazel-bin/tools/bench/node_bench && -x bazel-bin/examples/openmp_halo/openmp_halo ]]; then
  # no bazel, but a build of them
  nb=${nb:-$PWD/bazel-bin/tools/bench/node_bench} nb_name=bazel-bin/tools/bench/node_bench
  halo=${halo:-$PWD/bazel-bin/examples/openmp_halo/openmp_halo}
  halo_name=bazel-bin/examples/openmp_halo/openmp_halo
fi
if [[ -z "$nb" || -z "$halo" ]]; then
  if ! command -v "${BAZEL:-bazel}" >/dev/null || [[ ! -f WORKSPACE ]]; then
    echo "node_report.sh: node_bench / openmp_halo not on PATH and no bazel to build them" >&2
    exit 1
  fi
  "${BAZEL:-bazel}" build --noshow_progress //tools/bench:node_bench //examples/openmp_halo >&2
  bin=$("${BAZEL:-bazel}" info --noshow_progress bazel-bin 2>/dev/null)
  nb=$bin/tools/bench/node_bench nb_name=bazel-bin/tools/bench/node_bench
  halo=$bin/examples/openmp_halo/openmp_halo halo_name=bazel-bin/examples/openmp_halo/openmp_halo
fi
[[ -x "$nb" && -x "$halo" ]] || { echo "node_report.sh: not executable: $nb $halo" >&2; exit 1; }
shown() {  # a command as README.md shows it
  local a out=()
  for a in "$@"; do
    case "$a" in "$nb") out+=("$nb_name") ;; "$halo") out+=("$halo_name") ;; *) out+=("$a") ;; esac
  done
  echo "${out[*]}"
}
export UCX_MEM_EVENTS=no  # MPICH's UCX memory hooks: not needed, and they slow every start

# ---- the machine and the plan --------------------------------------------------------------
model=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
host=$(uname -n)
commit_of_tree() {
  local c
  if command -v git >/dev/null && c=$(git rev-parse --short HEAD 2>/dev/null); then
    local out_rel
    out_rel=$(realpath -m --relative-to=. "$out_dir")
    [[ -n "$(git status --porcelain 2>/dev/null | awk -v o="$out_rel/" 'index($2, o) != 1')" ]] && c="$c+dirty"
    echo "$c"
  elif [[ -s .node/commit ]]; then
    head -c 40 .node/commit | tr -d '\n'; echo " (.node/commit)"
  else
    echo unknown
  fi
}
commit=$(commit_of_tree)
# libep's and MPI's versions, from ep_info (PATH, or bazel-bin) where there is one.
ep_info=$(command -v ep_info || true)
[[ -z "$ep_info" && -x bazel-bin/tools/ep_info ]] && ep_info=bazel-bin/tools/ep_info
versions=unknown
if [[ -n "$ep_info" ]]; then
  versions=$(timeout 30 "$ep_info" 2>/dev/null | awk '/^libep version:/ { v = $NF }
    /MPICH Version:/ { m = $NF } /MPICH Device:/ { d = $NF }
    END { print "libep " v ", MPICH " m " " d }') || versions=unknown
fi
ep_env=$(env | grep '^EP_' | sort | tr '\n' ' ' || true)

fits() { awk -v u="$1" -v c="$cores" -v m="$2" 'BEGIN { exit !(u <= c || u <= m) }'; }
t1=(); t2=(); skipped=()
for t in $threads; do if fits "$t" 2; then t1+=("$t"); else skipped+=("T=$t in-process"); fi; done
for t in $threads2; do if fits $((2 * t)) 4; then t2+=("$t"); else skipped+=("T=$t two-process"); fi; done
[[ ${#sel_1p[@]} -eq 0 && ${#sel_h1[@]} -eq 0 ]] && t1=()
[[ ${#sel_2p[@]} -eq 0 && ${#sel_h2[@]} -eq 0 ]] && t2=()

# Binding: every process gets cores / processes hardware threads, where all the units of a
# (layout, T) fit the cores; a launcher that cannot bind turns it off.
if [[ $bind != off && $dry_run == 0 ]] && ! timeout 30 "$mpiexec" -bind-to hwthread:1 -n 1 true >/dev/null 2>&1; then
  echo "node_report.sh: mpiexec -bind-to fails here: no binding" >&2
  bind=off
fi
bind_args() {  # UNITS PROCS: sets bargs, the -bind-to arguments of one run
  bargs=()
  if [[ $bind == on ]] || { [[ $bind == auto ]] && (($1 <= cores)); }; then
    bargs=(-bind-to "hwthread:$((cores / $2 > 0 ? cores / $2 : 1))")
  fi
}

# A run's time estimate (s): startup, then (reps + warm-up + calibration) x budget per row.
est_nb() { awk -v n="$1" -v r="$reps" -v s="$seconds" 'BEGIN { printf "%.1f", 1 + n * ((r + 1.5) * s + 0.05) }'; }
est_halo() { awk -v i="${halo_iters[$1]}" -v g="${halo_guess_us[$1]}" 'BEGIN { printf "%.1f", 0.6 + i * g / 1e6 }'; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
raw=$work/raw.txt
: >"$raw"
: >"$work/plan.txt"
: >"$work/commands.txt"
: >"$work/failures.txt"
estimate=0
phase=plan
add_est() { estimate=$(awk -v a="$estimate" -v b="$1" 'BEGIN { print a + b }'); }

# One node_bench run: LAYOUT T MODE ROUND ROWS...
nb_run() {
  local layout=$1 t=$2 mode=$3 round=$4
  shift 4
  [[ $# -eq 0 ]] && return 0
  local np th units
  if [[ $layout == 1p ]]; then units=$t; else units=$((2 * t)); fi
  case "$mode" in libep | mt) th=$t; np=$((units / t)) ;; mpi) th=1; np=$units ;; esac
  local est rows_csv limit text
  est=$(est_nb $#)
  rows_csv=$(IFS=,; echo "$*")
  limit=$(awk -v e="$est" 'BEGIN { l = int(5 * e + 30); print l }')
  bind_args "$units" "$np"
  local cmd=("$mpiexec" "${bargs[@]}" -n "$np" "$nb" --mode "$mode" --threads "$th"
    --rows "$rows_csv" --seconds "$seconds" --reps "$reps")
  text="timeout $limit $(shown "${cmd[@]}")"
  if [[ $phase == plan ]]; then add_est "$est"; echo "$text" >>"$work/plan.txt"; return 0; fi
  echo "$text" >>"$work/commands.txt"
  echo "node_report.sh: [$(date +%T)] $text" >&2
  local rc=0
  timeout -k 5 "$limit" "${cmd[@]}" >"$work/out" 2>"$work/err" || rc=$?
  sed -n "s/^row=.*/& round=$round/p" "$work/out" >>"$raw"
  if [[ $rc -ne 0 ]] || ! grep -qx 'checks_ok=1' "$work/out"; then
    { echo "- \`$text\`: exit status $rc$([[ $rc == 124 || $rc == 137 ]] && echo " (timed out after $limit s)")$(grep -q '^checks_ok=0' "$work/out" && echo ", payload checks FAILED")"
      tail -n 5 "$work/err" | sed 's/^/    /'; } >>"$work/failures.txt"
  fi
}

# One openmp_halo run: ROW LAYOUT T MODE ROUND (tolerance 0: exactly halo_iters iterations).
halo_run() {
  local row=$1 layout=$2 t=$3 mode=$4 round=$5
  local size=${row##*_} np units
  local iters=${halo_iters[$size]}
  if [[ $layout == 1p ]]; then units=$t; else units=$((2 * t)); fi
  local cmd omp
  if [[ $mode == libep ]]; then
    np=$((units / t)); omp=$t
    bind_args "$units" "$np"
    cmd=("$mpiexec" "${bargs[@]}" -n "$np" "$halo" "$size" "$size" "$iters" 0)
  else
    np=$units; omp=1
    bind_args "$units" "$np"
    cmd=("$mpiexec" "${bargs[@]}" -n "$np" "$halo" --mpi "$size" "$size" "$iters" 0)
  fi
  local limit
  limit=$(awk -v e="$(est_halo "$size")" 'BEGIN { l = int(10 * e); print l < 60 ? 60 : l }')
  local text
  text="OMP_NUM_THREADS=$omp timeout $limit $(shown "${cmd[@]}")"
  if [[ $phase == plan ]]; then add_est "$(est_halo "$size")"; echo "$text" >>"$work/plan.txt"; return 0; fi
  echo "$text" >>"$work/commands.txt"
  echo "node_report.sh: [$(date +%T)] $text" >&2
  local rc=0
  OMP_NUM_THREADS=$omp timeout -k 5 "$limit" "${cmd[@]}" >"$work/out" 2>"$work/err" || rc=$?
  # openmp_halo MODE: TXxTY tiles of NXxNY, I iterations, residual R, checksum C, time T s
  local line
  line=$(awk -v row="$row" -v mode="$mode" -v np="$np" -v th="$omp" -v t="$t" -v round="$round" '
    /^openmp_halo / { for (i = 1; i <= NF; i++) {
        if ($i ~ /^iterations/) it = $(i - 1)
        if ($i == "checksum") { c = $(i + 1); sub(/,$/, "", c) }
        if ($i == "time") s = $(i + 1) }
      if (it > 0 && s > 0) { v = s * 1e6 / it
        printf "row=%s mode=%s procs=%d threads=%d T=%d value=%.6g unit=us min=%.6g max=%.6g better=lower reps=1 values=%.6g checksum=%s round=%s\n",
          row, mode, np, th, t, v, v, v, v, c, round } }' "$work/out")
  if [[ $rc -ne 0 || -z "$line" ]]; then
    { echo "- \`$text\`: exit status $rc$([[ $rc == 124 || $rc == 137 ]] && echo " (timed out)")"
      tail -n 5 "$work/err" | sed 's/^/    /'; } >>"$work/failures.txt"
  else
    echo "$line" >>"$raw"
  fi
}

# The whole run: the modes alternate within each (layout, T), round by round.
schedule() {
  local t r h k modes
  for t in "${t1[@]}"; do
    for ((r = 1; r <= rounds; r++)); do
      if ((r % 2)); then modes=(libep mpi); else modes=(mpi libep); fi
      for m in "${modes[@]}"; do nb_run 1p "$t" "$m" "$r" "${sel_1p[@]}"; done
    done
    for h in "${sel_h1[@]}"; do
      for ((k = 1; k <= halo_reps; k++)); do
        halo_run "$h" 1p "$t" libep "$k"
        halo_run "$h" 1p "$t" mpi "$k"
      done
    done
  done
  for t in "${t2[@]}"; do
    for ((r = 1; r <= rounds; r++)); do
      if ((r % 2)); then modes=(libep mpi mt); else modes=(mt mpi libep); fi
      for m in "${modes[@]}"; do
        if [[ $m == mt ]]; then
          nb_run 2p "$t" mt "$r" "${sel_mt[@]}"
        else
          nb_run 2p "$t" "$m" "$r" "${sel_2p[@]}"
        fi
      done
    done
    for h in "${sel_h2[@]}"; do
      for ((k = 1; k <= halo_reps; k++)); do
        halo_run "$h" 2p "$t" libep "$k"
        halo_run "$h" 2p "$t" mpi "$k"
      done
    done
  done
}

schedule
started=$(date -u '+%Y-%m-%d %H:%M UTC')
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
echo "node_report.sh: $host, $cores cores ($model), commit $commit" >&2
echo "node_report.sh: in-process T: ${t1[*]:-none}; two-process T: ${t2[*]:-none}${skipped[*]:+ (skipped, more units than cores: ${skipped[*]})}" >&2
echo "node_report.sh: $(wc -l <"$work/plan.txt") runs, estimated time: $(awk -v e="$estimate" 'BEGIN { printf "%.0f s (%.1f min)", e, e / 60 }')" >&2
if [[ $dry_run == 1 ]]; then
  cat "$work/plan.txt"
  exit 0
fi
t_start=$(date +%s)
phase=run
schedule
elapsed=$(($(date +%s) - t_start))
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
echo "node_report.sh: done in $elapsed s (estimated $(printf '%.0f' "$estimate") s)" >&2

# ---- aggregation: one line per (row, mode, T) ----------------------------------------------
# agg.txt: ROW MODE T MEDIAN MIN MAX N CHECKSUMS(comma-separated, halo rows; else -)
awk '
  function kv(f,   p) { p = index(f, "="); return p ? substr(f, p + 1) : "" }
  /^row=/ { row = mode = t = vals = ck = ""
    for (i = 1; i <= NF; i++) {
      if ($i ~ /^row=/) row = kv($i); else if ($i ~ /^mode=/) mode = kv($i)
      else if ($i ~ /^T=/) t = kv($i); else if ($i ~ /^values=/) vals = kv($i)
      else if ($i ~ /^checksum=/) ck = kv($i) }
    k = row SUBSEP mode SUBSEP t
    if (!(k in all)) { keys[n++] = k; all[k] = vals } else all[k] = all[k] "," vals
    if (ck != "" && index("," cks[k] ",", "," ck ",") == 0) cks[k] = (cks[k] == "" ? ck : cks[k] "," ck) }
  END { for (j = 0; j < n; j++) { k = keys[j]; split(k, f, SUBSEP)
      m = split(all[k], v, ","); for (a = 1; a <= m; a++) v[a] += 0
      for (a = 2; a <= m; a++) { x = v[a]; for (b = a - 1; b >= 1 && v[b] > x; b--) v[b + 1] = v[b]; v[b + 1] = x }
      med = m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
      print f[1], f[2], f[3], med, v[1], v[m], m, (cks[k] == "" ? "-" : cks[k]) } }' "$raw" >"$work/agg.txt"

val() { awk -v r="$1" -v m="$2" -v t="$3" -v c="$4" '$1 == r && $2 == m && $3 == t { print $c }' "$work/agg.txt"; }
ts_of() { awk -v r="$1" '$1 == r { print $3 }' "$work/agg.txt" | sort -n | uniq; }
has_mode() { awk -v r="$1" -v m="$2" '$1 == r && $2 == m { f = 1 } END { exit !f }' "$work/agg.txt"; }
num() { awk -v x="$1" 'BEGIN { if (x == "") print "-"; else if (x >= 1000) printf "%.0f", x
  else if (x >= 100) printf "%.1f", x; else if (x >= 10) printf "%.2f", x; else printf "%.3g", x }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) { print "-"; exit }
  x = a / b; printf(x >= 10 ? "%.1fx" : x >= 0.1 ? "%.2fx" : "%.2gx", x) }'; }
pairs_of() { if [[ $1 == *_1p ]]; then echo $(($2 / 2)); else echo "$2"; fi; }
cell() {  # ROW MODE T: "median (min-max)" [; per pair]
  local med
  med=$(val "$1" "$2" "$3" 4)
  [[ -z "$med" ]] && { echo "-"; return; }
  local s
  s="$(num "$med") ($(num "$(val "$1" "$2" "$3" 5)")-$(num "$(val "$1" "$2" "$3" 6)"))"
  if [[ $1 == rate8_* ]]; then
    s="$s; $(num "$(awk -v a="$med" -v p="$(pairs_of "$1" "$3")" 'BEGIN { print a / p }')")"
  fi
  echo "$s"
}
unit_of() { case "$1" in rate8_*) echo "M msg/s" ;; bw64k_*) echo "MiB/s" ;; *) echo us ;; esac; }
better_of() { [[ $1 == rate8_* || $1 == bw64k_* ]] && echo higher || echo lower; }

# ---- plots ---------------------------------------------------------------------------------
# ROW.dat: T, then median / min / max of libep, mpi, mt ("-": not measured).
mkdir -p "$out_dir" "$work/dat"
for r in "${all_rows[@]}"; do
  [[ -n "$(ts_of "$r")" ]] || continue
  for t in $(ts_of "$r"); do
    line="$t"
    for m in libep mpi mt; do
      for c in 4 5 6; do v=$(val "$r" "$m" "$t" $c); line="$line ${v:--}"; done
    done
    echo "$line"
  done >"$work/dat/$r.dat"
done
stamp="$started, $host ($model), $cores cores, commit $commit"
plot_group() {  # PNG ROW...: one panel per row that has figures
  local png=$1
  shift
  local panels=() r
  for r in "$@"; do [[ -s "$work/dat/$r.dat" ]] && panels+=("$r"); done
  [[ ${#panels[@]} -eq 0 ]] && { rm -f "$out_dir/$png"; return 0; }
  local n=${#panels[@]} cols rows
  cols=$((n < 3 ? n : 3)); rows=$(((n + cols - 1) / cols))
  {
    echo "set terminal pngcairo size $((640 * cols)),$((430 * rows + 50)) font 'DejaVu Sans,10' noenhanced"
    echo "set output '$out_dir/$png'"
    echo "set datafile missing '-'"
    echo "set style line 1 lc rgb '#6a1b9a' lw 2 pt 7 ps 1.1"
    echo "set style line 2 lc rgb '#e65100' lw 2 pt 5 ps 1.1 dt 2"
    echo "set style line 3 lc rgb '#2e7d32' lw 2 pt 9 ps 1.3 dt 4"
    echo "set grid"
    echo "set key outside right top vertical Left reverse font ',9'"
    echo "set logscale x 2"
    echo "set logscale y 10"
    echo "set format y '%g'"
    echo "set multiplot layout $rows,$cols title '$stamp' font ',10'"
    for r in "${panels[@]}"; do
      local ts tics lo hi ylabel xlabel
      ts=$(ts_of "$r")
      tics=$(for t in $ts; do printf '"%s" %s, ' "$t" "$t"; done)
      lo=$(echo "$ts" | head -1); hi=$(echo "$ts" | tail -1)
      case "$r" in
        rate8_*) ylabel="million messages/s (all pairs)" ;;
        bw64k_*) ylabel="MiB/s (all pairs)" ;;
        rt*) ylabel="us per round trip" ;;
        halo_*) ylabel="us per iteration" ;;
        *) ylabel="us per call" ;;
      esac
      if [[ $r == *_1p* ]]; then
        xlabel="T: endpoints of 1 process (MPI: T processes)"
      else
        xlabel="T: endpoints per process, 2 processes (MPI: 2T)"
      fi
      echo "set title '${short[$r]} ($(better_of "$r") is better)' font ',10'"
      echo "set xtics (${tics%, })"
      echo "set xrange [$(awk -v a="$lo" -v b="$hi" 'BEGIN { print a / 1.5 ":" b * 1.5 }')]"
      echo "set xlabel '$xlabel'"
      echo "set ylabel '$ylabel'"
      # (the series are drawn a little apart along x, so that their bars do not hide each other)
      local f="'$work/dat/$r.dat'" parts=()
      if has_mode "$r" libep; then parts+=("$f using (\$1/1.06):2:3:4 with yerrorlines ls 1 title 'libep'"); fi
      if has_mode "$r" mpi; then parts+=("$f using 1:5:6:7 with yerrorlines ls 2 title 'MPI everywhere'"); fi
      if has_mode "$r" mt; then parts+=("$f using (\$1*1.06):8:9:10 with yerrorlines ls 3 title 'MPI_THREAD_MULTIPLE'"); fi
      echo "plot $(IFS=,; echo "${parts[*]}")"
    done
    echo "unset multiplot"
  } >"$work/$png.gp"
  gnuplot "$work/$png.gp" 2>"$work/gnuplot.err" || { cat "$work/gnuplot.err" >&2; return 1; }
}
plot_group latency.png rt64_1p rtvec_1p
plot_group rate.png rate8_1p rate8_2p bw64k_2p
plot_group collectives.png allreduce8_1p barrier_1p barrier_2p allreduce8_2p allreduce1m_2p \
  bcast8_2p bcast1m_2p alltoall64_2p dup_2p
plot_group halo.png "${halo_1p[@]}" "${halo_2p[@]}"

# ---- README.md -----------------------------------------------------------------------------
table() {  # ROW
  local r=$1 mt=0
  has_mode "$r" mt && mt=1
  echo "### ${title[$r]} (\`$r\`)"
  echo
  echo "${what[$r]}; **$(better_of "$r") is better**. Cells: median (min-max) over the repetitions."
  echo
  if [[ $mt == 1 ]]; then
    echo "| T | libep | MPI everywhere | libep / MPI | MPI_THREAD_MULTIPLE | libep / MT |"
    echo "|---:|---:|---:|---:|---:|---:|"
  else
    echo "| T | libep | MPI everywhere | libep / MPI |"
    echo "|---:|---:|---:|---:|"
  fi
  local t
  for t in $(ts_of "$r"); do
    local line
    line="| $t | $(cell "$r" libep "$t") | $(cell "$r" mpi "$t") | $(ratio "$(val "$r" libep "$t" 4)" "$(val "$r" mpi "$t" 4)") |"
    [[ $mt == 1 ]] && line="$line $(cell "$r" mt "$t") | $(ratio "$(val "$r" libep "$t" 4)" "$(val "$r" mt "$t" 4)") |"
    echo "$line"
  done
  if [[ $r == halo_* ]]; then
    local bad
    bad=$(awk -v r="$r" '$1 == r { c[$3] = c[$3] "," $8 } END { for (t in c) { n = split(substr(c[t], 2), x, ","); for (i = 2; i <= n; i++) if (x[i] != x[1]) print t } }' "$work/agg.txt" | sort -n | tr '\n' ' ')
    echo
    if [[ -z "$bad" ]]; then
      echo "Both modes printed the same checksum at every T."
    else
      echo "**The checksums of libep and MPI differ at T = $bad** (see raw.txt)."
    fi
  fi
  echo
}
summary() {  # one line per row: its largest T
  echo "| row | T | unit | libep | MPI everywhere | libep / MPI | better |"
  echo "|---|---:|---|---:|---:|---:|---|"
  local r
  for r in "${report_order[@]}"; do
    local t
    t=$(ts_of "$r" | tail -1)
    [[ -z "$t" ]] && continue
    echo "| ${title[$r]} | $t | $(unit_of "$r") | $(num "$(val "$r" libep "$t" 4)") | $(num "$(val "$r" mpi "$t" 4)") | $(ratio "$(val "$r" libep "$t" 4)" "$(val "$r" mpi "$t" 4)") | $(better_of "$r") |"
  done
}
md=$out_dir/README.md
{
  echo "# libep node report: endpoints per process against MPI everywhere"
  echo
  echo "Generated by \`$invocation\`; every figure below comes from that one run."
  if [[ $quick == 1 ]]; then
    echo "**A --quick run: short budgets, a check of the script and a first look.**"
  fi
  echo
  echo "- date: $started ($elapsed s; estimated $(printf '%.0f' "$estimate") s)"
  echo "- machine: $host, $cores cores ($model)"
  echo "- commit: $commit; $versions"
  echo "- EP_* environment: ${ep_env:-none}"
  echo "- load average at the start: $load_start, at the end: $load_end"
  echo "- in-process T: ${t1[*]:-none}; two-process T: ${t2[*]:-none}${skipped[*]:+; skipped (more units than cores): ${skipped[*]}}"
  echo "- node_bench: $reps recorded repetitions (+1 warm-up) of ${seconds} s per run, $rounds run(s) per mode (medians over all of them); openmp_halo: $halo_reps run(s) per mode and size"
  echo "- binding: $bind ($( [[ $bind == off ]] && echo "no -bind-to" || echo "-bind-to hwthread:K, K = cores / processes, where the units fit the cores"))"
  if [[ -n "$note" ]]; then echo "- conditions: $note"; fi
  echo
  echo "How to read: each row compares libep (endpoints, one thread each) with MPI"
  echo "everywhere (one single-threaded MPI process per endpoint, the same kernel on"
  echo "MPI_COMM_WORLD) and, for rows 7 and 8, with MPI_THREAD_MULTIPLE (2 processes x T"
  echo "threads, each thread on its own dup of MPI_COMM_WORLD). In-process rows (1-6) put T"
  echo "endpoints in one process against T processes; two-process rows (7-16) put T endpoints"
  echo "in each of 2 processes against 2T processes. The ratio is libep / baseline of the"
  echo "medians: for times (us) **lower is better** and a ratio above 1 means libep is slower;"
  echo "for rates and bandwidths **higher is better** and a ratio below 1 means libep is"
  echo "slower. Modes run one after the other (alternated round by round), so compare ratios"
  echo "from one report, not absolute figures across reports. Where units outnumber the"
  echo "cores, every busy-polling process or thread waits for a core and the figures measure"
  echo "the scheduler as much as the library."
  echo
  if [[ -s "$work/failures.txt" ]]; then
    echo "## Failed runs"
    echo
    cat "$work/failures.txt"
    echo
  fi
  echo "## Summary (the largest T of each row)"
  echo
  summary
  echo
  echo "## Plots"
  echo
  for p in latency rate collectives halo; do
    if [[ -f "$out_dir/$p.png" ]]; then echo "![$p]($p.png)"; echo; fi
  done
  echo "## In-process rows: 1 process x T endpoints against T MPI processes"
  echo
  for r in "${rows_1p[@]}" "${halo_1p[@]}"; do [[ -n "$(ts_of "$r")" ]] && table "$r"; done
  echo "## Two processes x T endpoints against 2T MPI processes (and MPI_THREAD_MULTIPLE)"
  echo
  for r in rate8_2p bw64k_2p "${halo_2p[@]}"; do [[ -n "$(ts_of "$r")" ]] && table "$r"; done
  echo "## Collectives: 2 processes x T endpoints against 2T MPI processes"
  echo
  for r in "${rows_2p[@]:2}"; do [[ -n "$(ts_of "$r")" ]] && table "$r"; done
  echo "## Commands"
  echo
  echo "Every command this report ran (repeated runs listed once; openmp_halo's arguments:"
  echo "tile_nx tile_ny iterations tolerance, tolerance 0 so that both modes do every"
  echo "iteration; us per iteration = the printed time / the iterations):"
  echo
  echo '```'
  awk '!seen[$0]++' "$work/commands.txt"
  echo '```'
  echo
  echo "[raw.txt](raw.txt): every measurement line (node_bench's format, head of"
  echo "tools/bench/node_bench.cc; openmp_halo's runs in the same format, with checksum=)."
  echo
  echo "To run it on a bare many-core node (../shared/tools/node/README.md): build here, then"
  echo "\`../shared/tools/node/pack.sh bazel-bin/tools/bench/node_bench bazel-bin/examples/openmp_halo/openmp_halo\`"
  echo "and \`git rev-parse --short HEAD >.node/commit\`; on the node, from a copy of the project"
  echo "root with .node/: \`tar xJf .node/node.tar.xz && source .node/env.sh && tools/bench/node_report.sh\`"
  echo "(\`--dry-run\` prints the runs and the time estimate first)."
} >"$md"
cp "$raw" "$out_dir/raw.txt"
echo "node_report.sh: wrote $md, $out_dir/raw.txt and the plots" >&2
[[ ! -s "$work/failures.txt" ]] || { echo "node_report.sh: some runs failed (README.md lists them)" >&2; exit 1; }
