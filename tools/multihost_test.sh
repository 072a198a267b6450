#!/usr/bin/env bash
# multihost_test.sh - runs libep's MPI test programs as if on several hosts of one machine.
#
#   tools/multihost_test.sh [-l LAYOUTS] [-t TIMEOUT_S] [-g GRACE_S] [-o DIR] [-k] [-b]
#                           [TEST...]
#   tools/multihost_test.sh --setup 1,1,1 | --cleanup
#
# Each "host" is a Linux network namespace with its own veth interface (ep0, address
# 10.231.0.1N/24 for host N) on a bridge in a further namespace, where mpiexec runs.  Its
# processes also get their own UTS (hostname hostN), IPC, PID and mount namespaces, with a
# private /dev/shm: processes of two hosts share no memory, no /dev/shm and no /proc, and
# talk only over TCP.  MPICH's hydra starts one proxy per host through a fake ssh
# (-launcher ssh -launcher-exec) that runs the proxy inside that host's namespaces, so
# hydra's host list gives each process its node: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)
# at EP_Init groups the processes of one host.  UCX_TLS=tcp,self and UCX_NET_DEVICES=ep0
# make MPI's traffic between hosts go over the veth interfaces.
#
# What a run proves: libep's cross-node path (the progress engine's MPI traffic) between
# hosts, the node transport (runtime/node.h) only among processes of one host, and mixes
# of both.  For each test and layout it checks, besides the test's own result:
#   * EP_STATS=1: a process alone on its host moved no message through the node transport
#     (node_eager = node_rndv = 0); the summary shows each run's remote (MPI) and node
#     message counts;
#   * the bytes each host's ep0 sent (MPI over TCP, plus hydra's small PMI exchange).
# Before the tests, tools/ep_info runs in each layout and must report one node per host.
#
# LAYOUTS: space- or ';'-separated; each is the process count of each host, comma-
#   separated: "1,1" is two hosts with one process each, "2,1" two processes on host 1 and
#   one on host 2, "1,1,1" three hosts.  Default: "1,1;2,1".
# TEST: a bazel-bin path or a label of an ep_mpi_test's program (//tests/p2p:node_test_bin
#   or tests/p2p/node_test_bin), optionally followed by ":VAR=VALUE[,VAR=VALUE]" for that
#   run's environment.  Default: a set of p2p, node, coll, rma and comm tests (below).
# -b  builds the tests' programs and ep_info first (bazel build --jobs=2).
# -t  wall-clock limit of one run (default 300 s).
# -g  how long a run may go on after every process printed googletest's end of run
#     (default 20 s): past it the run counts as hung after its tests.
# -o  where the logs go (default: a new directory under /tmp); each run has NAME.LAYOUT.log
#     and, when it hung, NAME.LAYOUT.stacks (every remaining process's threads, by gdb).
# -k  keeps the namespaces at exit (--cleanup removes them).
#
# Results, one line per run: PASS; FAIL (a test failed, a process died, a check above
# failed); HANG-FINALIZE (every process printed its googletest results, all passed, and
# every process still alive was inside MPI_Finalize); HANG-AFTER-TESTS (tests passed but a
# process hung elsewhere, e.g. in EP_Finalize: the stacks file says where); TIMEOUT (the
# tests had not finished; the log names the test each process was running).
# Exit status: 0 when no run is FAIL, HANG-AFTER-TESTS or TIMEOUT; 1 otherwise; 2 for a
# usage or setup error.
#
# Why outside CI (and outside `bazel test //...`): it needs root (namespaces, mounts), and
# Debian's MPICH 4.0.2 over UCX's TCP transport can hang in MPI_Finalize, with or without
# libep (a plain MPI program that only calls MPI_Allreduce does it with layout 2,1): one
# process spins in ucp_worker_progress, flushing the endpoints MPI_Finalize disconnects,
# while its peers already wait in the PMI barrier and make no progress for it.  That is an
# MPICH bug fixed in later releases, not libep's; a hung run costs GRACE_S and is reported
# as HANG-FINALIZE rather than as a failure.
#
# tests/rma/shared_test makes its shared windows over each host's endpoints and expects
# EP_ERR_COMM for one over the world communicator; tests/p2p/node_test pairs endpoints of
# two processes of one host and skips its pair tests in every process when no two share
# a host (layouts 1,1 and 1,1,1).
set -uo pipefail

readonly kPrefix=epmh          # namespaces: epmh-net (bridge, mpiexec), epmh-h1, epmh-h2, ...
readonly kNet=10.231.0         # host N is $kNet.(10+N), the bridge $kNet.1
readonly kLock=/run/lock/libep-multihost.lock
readonly kDefaultTests=(
  //tests/p2p:p2p_basic_test_bin
  //tests/p2p:p2p_semantics_test_bin
  //tests/p2p:rendezvous_test_bin
  //tests/p2p:rendezvous_test_bin:EP_EAGER_LIMIT=0
  //tests/p2p:short_send_test_bin
  //tests/p2p:persistent_test_bin
  //tests/p2p:p2p_stress_test_bin
  //tests/p2p:node_test_bin
  //tests/coll:coll_test_bin
  //tests/coll:nonblocking_test_bin
  //tests/rma:win_test_bin
  //tests/rma:lock_test_bin
  //tests/rma:atomic_test_bin
  //tests/rma:shared_test_bin
  //tests/comm:split_test_bin
)

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
layouts="1,1;2,1"
timeout_s=300
grace_s=20
outdir=""
keep=0
build=0
mode=run
setup_layout=""

usage() {
  sed -n '2,5p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

while [[ $# -gt 0 ]]; do
  case $1 in
    -l) layouts=$2; shift 2 ;;
    -t) timeout_s=$2; shift 2 ;;
    -g) grace_s=$2; shift 2 ;;
    -o) outdir=$2; shift 2 ;;
    -k) keep=1; shift ;;
    -b) build=1; shift ;;
    --setup) mode=setup; setup_layout=$2; keep=1; shift 2 ;;
    --cleanup) mode=cleanup; shift ;;
    -h | --help) usage ;;
    -*) echo "multihost_test.sh: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
tests=("$@")
[[ ${#tests[@]} -eq 0 ]] && tests=("${kDefaultTests[@]}")
for v in "$timeout_s" "$grace_s"; do
  [[ $v =~ ^[0-9]+$ ]] || { echo "multihost_test.sh: not a number of seconds: $v" >&2; exit 2; }
done

if [[ $(id -u) -ne 0 ]]; then
  echo "multihost_test.sh: needs root (network, PID and mount namespaces)" >&2
  exit 2
fi
for cmd in ip unshare mpiexec; do
  command -v "$cmd" > /dev/null || { echo "multihost_test.sh: $cmd not found" >&2; exit 2; }
done

# One run of this script at a time on the machine: the namespaces have fixed names.
exec 9> "$kLock"
if ! flock -n 9; then
  echo "multihost_test.sh: another run holds $kLock" >&2
  exit 2
fi

# ---- Namespaces --------------------------------------------------------------------------

host_ns() { echo "$kPrefix-h$1"; }

kill_host_processes() {
  local ns pids
  for ns in $(ip netns list | awk '{print $1}' | grep "^$kPrefix-h[0-9]*$"); do
    pids=$(ip netns pids "$ns" 2> /dev/null)
    [[ -n $pids ]] && kill -KILL $pids 2> /dev/null
  done
}

remove_namespaces() {
  kill_host_processes
  local ns
  for ns in $(ip netns list | awk '{print $1}' | grep "^$kPrefix-\(net\|h[0-9]*\)$"); do
    ip netns del "$ns"
  done
}

# setup_namespaces N: the bridge namespace and hosts 1..N, from scratch (idempotent).
setup_namespaces() {
  local n=$1 i ns
  remove_namespaces
  ip netns add "$kPrefix-net" || return 1
  ip -n "$kPrefix-net" link set lo up
  ip -n "$kPrefix-net" link add br0 type bridge
  ip -n "$kPrefix-net" addr add "$kNet.1/24" dev br0
  ip -n "$kPrefix-net" link set br0 up
  for ((i = 1; i <= n; i++)); do
    ns=$(host_ns "$i")
    ip netns add "$ns" || return 1
    ip -n "$ns" link set lo up
    ip -n "$ns" link add ep0 type veth peer name "h$i" netns "$kPrefix-net" || return 1
    ip -n "$ns" addr add "$kNet.$((10 + i))/24" dev ep0
    ip -n "$ns" link set ep0 up
    ip -n "$kPrefix-net" link set "h$i" master br0
    ip -n "$kPrefix-net" link set "h$i" up
  done
}

tmp=$(mktemp -d /tmp/multihost.XXXXXX)
cleanup() {
  if [[ $keep -eq 0 ]]; then
    remove_namespaces
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ $mode == cleanup ]]; then
  keep=0
  exit 0
fi

# The launcher hydra runs as `ssh -x HOST COMMAND...`: runs COMMAND in HOST's namespaces,
# with the control port's host name replaced by the bridge's address (hydra gives its own
# host name, which a host namespace cannot resolve to the bridge).
fake_ssh=$tmp/fake_ssh
cat > "$fake_ssh" << EOF
#!/usr/bin/env bash
while [[ \$1 == -* ]]; do shift; done
host=\$1; shift
i=\${host##*.}; i=\$((i - 10))
cmd=\$(sed -E 's/--control-port [^ :]+:/--control-port $kNet.1:/' <<< "\$*")
exec ip netns exec "$kPrefix-h\$i" unshare --uts --ipc --pid --fork --mount-proc \\
  bash -c "hostname host\$i && mount -t tmpfs -o mode=1777 tmpfs /dev/shm && exec \$cmd"
EOF
chmod +x "$fake_ssh"

max_hosts=0
for layout in ${layouts//;/ }; do
  IFS=, read -r -a counts <<< "$layout"
  for c in "${counts[@]}"; do
    [[ $c =~ ^[1-9][0-9]*$ ]] || { echo "multihost_test.sh: bad layout $layout" >&2; exit 2; }
  done
  ((${#counts[@]} > max_hosts)) && max_hosts=${#counts[@]}
done
if [[ $mode == setup ]]; then
  IFS=, read -r -a counts <<< "$setup_layout"
  max_hosts=${#counts[@]}
fi
if ! setup_namespaces "$max_hosts"; then
  echo "multihost_test.sh: could not make the namespaces (ip netns/veth/bridge)" >&2
  exit 2
fi
if [[ $mode == setup ]]; then
  echo "multihost_test.sh: namespaces kept (remove them with --cleanup):"
  ip netns list | grep "^$kPrefix"
  exit 0
fi

# ---- Tests -------------------------------------------------------------------------------

# spec_target SPEC: the program's path (the part before the first ":VAR=" of a label or path).
spec_target() { sed -E 's/:[A-Za-z_][A-Za-z0-9_]*=.*$//' <<< "$1"; }
spec_env() { sed -nE 's/^.*:([A-Za-z_][A-Za-z0-9_]*=.*)$/\1/p' <<< "$1"; }
target_path() {
  local t=$1
  t=${t#//}
  t=${t/://}
  [[ $t == bazel-bin/* || $t == /* ]] || t=bazel-bin/$t
  echo "$t"
}

cd "$root" || exit 2
if [[ $build -eq 1 ]]; then
  labels=(//tools:ep_info)
  for spec in "${tests[@]}"; do
    t=$(spec_target "$spec")
    [[ $t == //* ]] && labels+=("$t")
  done
  mapfile -t labels < <(printf '%s\n' "${labels[@]}" | sort -u)
  bazel build --jobs=2 "${labels[@]}" || exit 2
fi
missing=0
for spec in "${tests[@]}" //tools:ep_info; do
  p=$(target_path "$(spec_target "$spec")")
  if [[ ! -x $p ]]; then
    echo "multihost_test.sh: not built: $p (run with -b, or bazel build it)" >&2
    missing=1
  fi
done
[[ $missing -eq 0 ]] || exit 2

[[ -n $outdir ]] || outdir=$(mktemp -d /tmp/multihost-logs.XXXXXX)
mkdir -p "$outdir"

export UCX_TLS=tcp,self UCX_NET_DEVICES=ep0 UCX_MEM_EVENTS=no GTEST_COLOR=no EP_STATS=1
unset XML_OUTPUT_FILE GTEST_OUTPUT TEST_PREMATURE_EXIT_FILE TEST_SHARD_STATUS_FILE

# hosts_of LAYOUT: hydra's host list, "10.231.0.11:2,10.231.0.12:1".
hosts_of() {
  local IFS=, i=0 out=() c
  read -r -a cs <<< "$1"
  for c in "${cs[@]}"; do
    i=$((i + 1))
    out+=("$kNet.$((10 + i)):$c")
  done
  echo "${out[*]}"
}
np_of() { local s=0 c; for c in ${1//,/ }; do s=$((s + c)); done; echo "$s"; }

tx_bytes() {  # tx_bytes N: bytes host N's ep0 has sent
  ip netns exec "$(host_ns "$1")" cat /sys/class/net/ep0/statistics/tx_bytes 2> /dev/null || echo 0
}

# capture_stacks FILE BIN: every test process still alive (in any host namespace), all threads.
capture_stacks() {
  local file=$1 bin=$2 ns pid
  : > "$file"
  for ns in $(ip netns list | awk '{print $1}' | grep "^$kPrefix-h[0-9]*$"); do
    for pid in $(ip netns pids "$ns"); do
      [[ $(readlink "/proc/$pid/exe" 2> /dev/null) == "$bin" ]] || continue
      echo "=== $ns pid $pid" >> "$file"
      if command -v gdb > /dev/null; then
        timeout 30 gdb -p "$pid" -batch -ex 'thread apply all bt 30' 2>&1 \
          | grep -E '^(Thread|#)' >> "$file"
      else
        cat "/proc/$pid/stack" >> "$file" 2> /dev/null
      fi
    done
  done
}

# run_one NAME LAYOUT BIN ENV...: one mpiexec; sets `result` and `detail`.
run_one() {
  local name=$1 layout=$2 bin=$3
  shift 3
  local np hosts log pid start now done_at="" ndone nhosts i rc=""
  np=$(np_of "$layout")
  hosts=$(hosts_of "$layout")
  log=$outdir/$name.${layout//,/+}.log
  IFS=, read -r -a counts <<< "$layout"
  nhosts=${#counts[@]}
  : > "$log"
  local -a tx0=()
  for ((i = 1; i <= nhosts; i++)); do tx0[i]=$(tx_bytes "$i"); done
  {
    echo "multihost_test.sh: layout $layout: mpiexec -hosts $hosts -n $np $bin ($*)"
    # shellcheck disable=SC2016  # expanded by the per-rank bash
    setsid env "$@" ip netns exec "$kPrefix-net" mpiexec -launcher ssh -launcher-exec "$fake_ssh" \
      -hosts "$hosts" -n "$np" \
      bash -c 'set -o pipefail; "$@" 2>&1 | sed -u "s/^/[${PMI_RANK:-?}@$(hostname)] /"' \
      ep-rank "$bin" < /dev/null &
    pid=$!
    echo "$pid" > "$tmp/pid"
    wait "$pid"
    echo "multihost_test.sh: mpiexec exit status $?"
  } > "$log" 2>&1 &
  local wrapper=$!
  start=$SECONDS
  result=""
  while kill -0 "$wrapper" 2> /dev/null; do
    now=$SECONDS
    ndone=$(grep -cE '^\[[0-9]+@host[0-9]+\] \[==========\] .* ran\.' "$log")
    if [[ $ndone -ge $np && -z $done_at ]]; then done_at=$now; fi
    if [[ -n $done_at && $((now - done_at)) -ge $grace_s ]]; then
      result=hang
      break
    fi
    if [[ $((now - start)) -ge $timeout_s ]]; then
      result=timeout
      break
    fi
    sleep 1
  done
  local elapsed=$((SECONDS - start))
  if [[ -n $result ]]; then
    capture_stacks "${log%.log}.stacks" "$(readlink -f "$bin")"
    pid=$(cat "$tmp/pid")
    kill -TERM -- "-$pid" 2> /dev/null
    sleep 2
    kill -KILL -- "-$pid" 2> /dev/null
    kill_host_processes
    wait "$wrapper" 2> /dev/null
  else
    wait "$wrapper"
    rc=$(sed -nE 's/^multihost_test.sh: mpiexec exit status ([0-9]+)$/\1/p' "$log" | tail -1)
  fi

  # googletest's verdicts, per process.
  local passed failed skipped ran
  passed=$(grep -cE '^\[[0-9]+@host[0-9]+\] \[       OK \]' "$log")
  skipped=$(grep -cE '^\[[0-9]+@host[0-9]+\] \[  SKIPPED \] [A-Za-z_0-9]+\.[A-Za-z_0-9/]+ \(' "$log")
  failed=$(grep -E '^\[[0-9]+@host[0-9]+\] \[  FAILED  \] [A-Za-z_0-9]+\.' "$log" \
    | grep -vc ' listed below')
  ran=$(grep -E '^\[0@host[0-9]+\] \[==========\] .* ran\.' "$log" | sed -E 's/.*\] ([0-9]+) tests?.*/\1/')
  # EP_STATS: traffic per process and the hosts' shares.
  local remote=0 node=0 alone_node=0 h line re rr ne nr
  local -A per_host=()
  while IFS= read -r line; do
    h=$(sed -E 's/^\[[0-9]+@(host[0-9]+)\].*/\1/' <<< "$line")
    per_host[$h]=$((${per_host[$h]:-0} + 1))
  done < <(grep -E '^\[[0-9]+@host[0-9]+\] \[==========\] Running' "$log")
  while IFS= read -r line; do
    h=$(sed -E 's/^\[[0-9]+@(host[0-9]+)\].*/\1/' <<< "$line")
    re=$(sed -E 's/.* remote_eager=([0-9]+).*/\1/' <<< "$line")
    rr=$(sed -E 's/.* remote_rndv=([0-9]+).*/\1/' <<< "$line")
    ne=$(sed -E 's/.* node_eager=([0-9]+).*/\1/' <<< "$line")
    nr=$(sed -E 's/.* node_rndv=([0-9]+).*/\1/' <<< "$line")
    remote=$((remote + re + rr))
    node=$((node + ne + nr))
    if [[ ${per_host[$h]:-0} -eq 1 && $((ne + nr)) -gt 0 ]]; then
      alone_node=$((alone_node + ne + nr))
    fi
  done < <(grep -E '^\[[0-9]+@host[0-9]+\] libep stats \(process' "$log")
  local tx=""
  for ((i = 1; i <= nhosts; i++)); do
    tx+="h$i:$(( ($(tx_bytes "$i") - tx0[i]) / 1024 ))K "
  done

  detail="gtest ${passed} OK/${failed} FAILED/${skipped} SKIPPED (${ran:-?} tests per process), ${elapsed}s, msgs remote=$remote node=$node, ep0 sent ${tx% }"
  if [[ $alone_node -gt 0 ]]; then
    result=FAIL
    detail+="; a process alone on its host counted $alone_node node-transport messages"
  elif [[ $result == timeout ]]; then
    result=TIMEOUT
    detail+="; running: $(awk -F'] ' '/\[ RUN      \]/{run[$1]=$3} /\[       OK \]|\[  FAILED  \]/{delete run[$1]} END{for (r in run) printf "%s] %s; ", r, run[r]}' "$log")"
  elif [[ $result == hang ]]; then
    if [[ $failed -gt 0 ]]; then
      result=FAIL
      detail+="; then hung after the tests"
    elif grep -q '^===' "${log%.log}.stacks" && ! awk '/^===/{if (n && !f) bad=1; n=1; f=0} /PMPI_Finalize/{f=1} END{if (n && !f) bad=1; exit bad}' "${log%.log}.stacks"; then
      result=HANG-AFTER-TESTS
      detail+="; a process hung outside MPI_Finalize (see .stacks)"
    elif grep -q '^===' "${log%.log}.stacks"; then
      result=HANG-FINALIZE
    else
      result=HANG-AFTER-TESTS
      detail+="; no process left to inspect"
    fi
  elif [[ $rc == 0 && $failed -eq 0 ]]; then
    result=PASS
  else
    result=FAIL
    detail+="; mpiexec status ${rc:-?}"
  fi
}

# ---- Main --------------------------------------------------------------------------------

declare -A count=()
summary=()
echo "multihost_test.sh: logs in $outdir"
for layout in ${layouts//;/ }; do
  np=$(np_of "$layout")
  IFS=, read -r -a counts <<< "$layout"
  # The layout as EP_Init sees it: ep_info's node count must be the host count.
  log=$outdir/ep_info.${layout//,/+}.log
  timeout 60 ip netns exec "$kPrefix-net" mpiexec -launcher ssh -launcher-exec "$fake_ssh" \
    -hosts "$(hosts_of "$layout")" -n "$np" bazel-bin/tools/ep_info < /dev/null > "$log" 2>&1
  kill_host_processes
  want="$np process(es) on ${#counts[@]} node(s)"
  if grep -qF "$want" "$log"; then
    line="PASS  ep_info  $layout  ($want)"
    count[PASS]=$((${count[PASS]:-0} + 1))
  else
    line="FAIL  ep_info  $layout  (wanted \"$want\"; see $log)"
    count[FAIL]=$((${count[FAIL]:-0} + 1))
  fi
  echo "$line"
  summary+=("$line")
  for spec in "${tests[@]}"; do
    target=$(spec_target "$spec")
    bin=$(target_path "$target")
    envs=()
    e=$(spec_env "$spec")
    [[ -n $e ]] && IFS=, read -r -a envs <<< "$e"
    name=$(basename "$bin")
    name=${name%_bin}
    label=$name
    for v in "${envs[@]}"; do
      name+=".${v//[^A-Za-z0-9_]/_}"
      label+=" $v"
    done
    run_one "$name" "$layout" "$bin" "${envs[@]}"
    count[$result]=$((${count[$result]:-0} + 1))
    line=$(printf '%-16s %-40s %-6s %s' "$result" "$label" "$layout" "$detail")
    echo "$line"
    summary+=("$line")
  done
done

echo
echo "==== multihost_test.sh summary (logs: $outdir)"
printf '%s\n' "${summary[@]}"
totals=""
for k in PASS HANG-FINALIZE HANG-AFTER-TESTS TIMEOUT FAIL; do
  totals+="$k=${count[$k]:-0} "
done
echo "totals: $totals"
if [[ ${count[FAIL]:-0} -gt 0 || ${count[TIMEOUT]:-0} -gt 0 || ${count[HANG-AFTER-TESTS]:-0} -gt 0 ]]; then
  exit 1
fi
exit 0
