#!/usr/bin/env bash
# Runs an MPI test program under mpiexec (used by ep_mpi_test in tools/mpi_test.bzl).
#
#   mpirun_test.sh BINARY NP [TIMEOUT_S] [-- extra program args]
#
# Every rank's output goes to the test log, each line prefixed with "[rank] ". Fails if any
# rank fails (nonzero exit or signal), if mpiexec fails, or if the whole run exceeds
# TIMEOUT_S seconds (default 240). Extra arguments (e.g. bazel test --test_arg=...) are
# passed to every rank.
set -uo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 BINARY NP [TIMEOUT_S] [-- ARGS...]" >&2
  exit 2
fi
bin=$1
np=$2
timeout_s=${3:-240}
shift 2
if [[ $# -gt 0 && $1 != "--" ]]; then shift; fi
if [[ ${1:-} == "--" ]]; then shift; fi
case "$timeout_s" in
  '' | *[!0-9]*) timeout_s=240 ;;
esac

# Resolve the binary relative to the runfiles tree (the test's working directory).
case "$bin" in
  /*) ;;
  *) bin="$PWD/$bin" ;;
esac
if [[ ! -x "$bin" ]]; then
  echo "mpirun_test.sh: not an executable: $bin" >&2
  exit 2
fi

# Locate tools/tsan.supp in the runfiles (the test's cwd is the workspace's runfiles root).
supp=""
for cand in "$PWD/tools/tsan.supp" "${TEST_SRCDIR:-}/libep/tools/tsan.supp" \
  "${RUNFILES_DIR:-}/libep/tools/tsan.supp"; do
  if [[ -f "$cand" ]]; then
    supp=$cand
    break
  fi
done

# UCX's memory hooks crash sanitizer builds in MPI_Init; disabling them is harmless otherwise.
export UCX_MEM_EVENTS=no
# Sanitizer settings only take effect if the binary was built with that sanitizer.
# UCX leaks ~1 KiB at exit: no leak checking for MPI programs.
export ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}"
if [[ -n "$supp" ]]; then
  export TSAN_OPTIONS="suppressions=$supp halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
else
  export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
fi
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# Per-test scratch space (UCX/MPICH temp files, googletest output).
export TMPDIR="${TEST_TMPDIR:-${TMPDIR:-/tmp}}"

# Bazel's per-test files cannot be shared by NP processes: googletest would race on them
# (e.g. "Failed to remove premature exit filepath"). The log has everything.
unset XML_OUTPUT_FILE GTEST_OUTPUT TEST_PREMATURE_EXIT_FILE TEST_SHARD_STATUS_FILE
export GTEST_COLOR=no

echo "mpirun_test.sh: mpiexec -n $np $(basename "$bin") (timeout ${timeout_s}s)"
# Output: MPICH's MPI_Init makes stdout unbuffered, and hydra's -prepend-rank prefixes every
# write() chunk, so lines get shredded ("[0] [  OK ] [1] [  OK ] ..."). Instead each rank's
# stdout+stderr goes through a line-oriented `sed -u` that prefixes "[rank] " to whole lines.
# pipefail keeps the program's exit status (including deaths by signal, 128+N).
# timeout: SIGTERM after timeout_s, SIGKILL 10 s later if mpiexec ignores it.
# shellcheck disable=SC2016  # expanded by the per-rank bash, on purpose
timeout --kill-after=10 "$timeout_s" \
  mpiexec -n "$np" \
  bash -c 'set -o pipefail; "$@" 2>&1 | sed -u "s/^/[${PMI_RANK:-?}] /"' ep-rank "$bin" "$@"
rc=$?
if [[ $rc -eq 124 || $rc -eq 137 ]]; then
  echo "mpirun_test.sh: FAILED: timed out after ${timeout_s}s (np=$np)" >&2
  exit 1
elif [[ $rc -ne 0 ]]; then
  echo "mpirun_test.sh: FAILED: mpiexec exited with status $rc (np=$np)" >&2
  exit "$rc"
fi
echo "mpirun_test.sh: PASSED (np=$np)"
