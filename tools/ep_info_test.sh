#!/usr/bin/env bash
# Usage: ep_info_test.sh EP_INFO   (bazel test //tools:ep_info_test)
# Runs ep_info standalone (singleton MPI, EP_PROGRESS_CPUS unset) and under
# `mpiexec -n 3` with EP_PROGRESS_CPUS=1,0, and checks every section of its output:
# version, MPI library and thread level, the configuration table with its effective
# values, and the node layout (node-local process i takes CPU entry i mod n).  Then the
# placement under binding: `taskset -c 0` with EP_PROGRESS_CPUS=1 (the progress thread
# on CPU 1) and without it (sharing CPU 0), hydra's `-bind-to user:0,1` with
# EP_PROGRESS_CPUS=1,0, and a CPU the kernel refuses (4000).  Needs CPUs 0 and 1.
# Then `mpiexec -n 2` with EP_NODE_TRANSPORT=off: the transport line of each node.
set -euo pipefail
# Each case sets the variables it checks (a run with --test_env=EP_NODE_TRANSPORT=off too).
unset EP_NODE_TRANSPORT

ep_info=$1
case "$ep_info" in
  /*) ;;
  *) ep_info="$PWD/$ep_info" ;;
esac
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/ep_info_test.XXXXXX")
export UCX_MEM_EVENTS=no TMPDIR="$work"
fail=0

# expect FILE COUNT LINE: FILE has exactly COUNT lines equal to LINE.
expect() {
  local n
  n=$(grep -cxF -- "$3" "$1" || true)
  if [[ $n -ne $2 ]]; then
    echo "FAIL: $1: expected $2 line(s) '$3', found $n"
    fail=1
  fi
}
# expect_re FILE REGEX: at least one line matches REGEX.
expect_re() {
  grep -Eq -- "$2" "$1" || { echo "FAIL: $1: no line matches '$2'"; fail=1; }
}

# check_common FILE: the sections world rank 0 prints.
check_common() {
  local f=$1
  for section in '[version]' '[mpi]' '[configuration]' '[node layout]'; do
    expect "$f" 1 "$section"
  done
  expect_re "$f" '^libep version: [0-9]+\.[0-9]+\.[0-9]+$'
  expect_re "$f" '^  MPICH Version:[[:space:]]*4\.'
  expect_re "$f" '^built against: MPI [0-9]+\.[0-9]+ headers of MPICH 4\.'
  expect "$f" 1 "thread level: MPI_THREAD_MULTIPLE (asked for MPI_THREAD_MULTIPLE)"
  expect_re "$f" '^variable +default +meaning$'
  for var in EP_PROGRESS_CPUS EP_PROGRESS_POLICY EP_EAGER_LIMIT EP_STATS EP_VERBOSE \
    EP_NODE_TRANSPORT; do
    expect_re "$f" "^$var "
  done
  expect "$f" 1 "effective values in this environment:"
  expect_re "$f" '^EP_PROGRESS_POLICY=yield  # '
  expect_re "$f" '^EP_EAGER_LIMIT=16384  # '
}

# The CPUs this test may run on (the standalone runs inherit them), as ep_info writes them.
allowed=$(sed -nE 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
case ",$allowed," in
  *,0-*|*,0,*) ;;
  *) echo "FAIL: needs CPU 0 and CPU 1 (allowed: $allowed)"; exit 1 ;;
esac

echo "--- standalone (singleton MPI)"
(unset EP_PROGRESS_CPUS; EP_PROGRESS_POLICY=yield timeout --kill-after=10 60 "$ep_info") \
  >"$work/single.txt" 2>&1 || { cat "$work/single.txt"; echo "FAIL: ep_info exited with $?"; exit 1; }
cat "$work/single.txt"
check_common "$work/single.txt"
expect "$work/single.txt" 1 "EP_PROGRESS_CPUS=(not pinned)  # CPU list for progress threads (e.g. 3, 7,15 or 0-3); the i-th node-local process takes entry i mod n"
expect "$work/single.txt" 1 "1 process(es) on 1 node(s)"
expect_re "$work/single.txt" '^node 0 \(.+\): 1 process\(es\) per node$'
expect "$work/single.txt" 1 "  node-local process 0 (world rank 0): allowed CPUs $allowed; progress thread not pinned (runs on CPUs $allowed)"
expect "$work/single.txt" 1 "  transport between them: none needed (one process)"

echo "--- mpiexec -n 3, EP_PROGRESS_CPUS=1,0"
EP_PROGRESS_CPUS=1,0 EP_PROGRESS_POLICY=yield timeout --kill-after=10 120 \
  mpiexec -n 3 "$ep_info" >"$work/three.txt" 2>&1 || {
  cat "$work/three.txt"
  echo "FAIL: mpiexec -n 3 ep_info failed"
  exit 1
}
cat "$work/three.txt"
check_common "$work/three.txt"
expect_re "$work/three.txt" '^EP_PROGRESS_CPUS=1,0  # '
expect "$work/three.txt" 1 "3 process(es) on 1 node(s)"
expect_re "$work/three.txt" '^node 0 \(.+\): 3 process\(es\) per node$'
expect "$work/three.txt" 1 "  node-local process 0 (world rank 0): allowed CPUs $allowed; progress thread on CPU 1"
expect "$work/three.txt" 1 "  node-local process 1 (world rank 1): allowed CPUs $allowed; progress thread on CPU 0"
expect "$work/three.txt" 1 "  node-local process 2 (world rank 2): allowed CPUs $allowed; progress thread on CPU 1"
expect_re "$work/three.txt" '^  transport between them: shared memory; large messages (by cross-memory attach|through staging buffers)'

# run_ep_info NAME ENV... -- COMMAND...: runs COMMAND (ep_info, maybe under taskset or
# mpiexec) with the ENV assignments, its output in $work/NAME.txt; fails if it fails.
run_ep_info() {
  local name=$1
  shift
  local envs=()
  while [[ $1 != "--" ]]; do envs+=("$1"); shift; done
  shift
  echo "--- ${envs[*]} $*"
  env -u EP_PROGRESS_CPUS "${envs[@]}" EP_PROGRESS_POLICY=yield timeout --kill-after=10 120 "$@" \
    >"$work/$name.txt" 2>&1 || { cat "$work/$name.txt"; echo "FAIL: $* failed"; exit 1; }
  cat "$work/$name.txt"
}

run_ep_info bound EP_PROGRESS_CPUS=1 -- taskset -c 0 "$ep_info"
expect "$work/bound.txt" 1 "  node-local process 0 (world rank 0): allowed CPUs 0; progress thread on CPU 1"

run_ep_info shared -- taskset -c 0 "$ep_info"
expect "$work/shared.txt" 1 "  node-local process 0 (world rank 0): allowed CPUs 0; progress thread not pinned (runs on CPUs 0): shares the application's only CPU"

run_ep_info hydra EP_PROGRESS_CPUS=1,0 -- mpiexec -n 2 -bind-to user:0,1 "$ep_info"
expect "$work/hydra.txt" 1 "  node-local process 0 (world rank 0): allowed CPUs 0; progress thread on CPU 1"
expect "$work/hydra.txt" 1 "  node-local process 1 (world rank 1): allowed CPUs 1; progress thread on CPU 0"

run_ep_info refused EP_PROGRESS_CPUS=4000 -- "$ep_info"
expect_re "$work/refused.txt" "^  node-local process 0 \(world rank 0\): allowed CPUs $allowed; progress thread unpinned: the kernel refuses CPU 4000 \(.+\); runs on CPUs $allowed\$"

run_ep_info off EP_NODE_TRANSPORT=off -- mpiexec -n 2 "$ep_info"
expect "$work/off.txt" 1 "  transport between them: MPI (EP_NODE_TRANSPORT=off)"

echo "--- a malformed value is rejected (exit 1, the variable named)"
rc=0
EP_EAGER_LIMIT=lots timeout --kill-after=10 60 "$ep_info" >"$work/bad.txt" 2>&1 || rc=$?
cat "$work/bad.txt"
[[ $rc -eq 1 ]] || { echo "FAIL: ep_info with EP_EAGER_LIMIT=lots exited with $rc, want 1"; fail=1; }
expect_re "$work/bad.txt" '^the current environment is rejected: EP_EAGER_LIMIT: '

[[ $fail -eq 0 ]] || exit 1
echo "PASS"
