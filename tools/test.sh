#!/usr/bin/env bash
# libep's full test run (what CI runs via .ci/run):
#   0. tools/check_layers.sh          (no file reaches across the layers)
#      tools/check_hygiene.sh         (no issue numbers or dated figures in the code, README)
#   1. tools/setup.sh                 (install missing Debian packages)
#   2. bazel test //...               (everything, default config)
#   2b. bazel test --test_env=EP_NODE_TRANSPORT=off --test_tag_filters=mpi //tests/...
#                                     (the MPI tests again with the node transport off: the
#                                     processes of this one node talk through MPI)
#   3. bazel test --config=tsan --test_tag_filters=stress //...   (stress tests under TSAN)
#   4. bazel test --config=asanubsan //...                         (everything under ASAN+UBSAN)
# Prints a final line "N passed, N failed" and exits non-zero on any failure.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

bash tools/setup.sh || {
  echo "test.sh: setup failed" >&2
  echo "0 passed, 1 failed"
  exit 1
}

layers_failed=0
bash tools/check_layers.sh || layers_failed=$((layers_failed + 1))
bash tools/check_hygiene.sh || layers_failed=$((layers_failed + 1))

logdir=$(mktemp -d "${TMPDIR:-/tmp}/libep-test.XXXXXX")
trap 'rm -rf "$logdir"' EXIT

bazel_flags=(--noshow_progress --keep_going)
passed=0
failed=0
status=0

# count_results LOG: add the per-test summary lines of a bazel test run to the counters.
# Summary lines look like "//pkg:name   PASSED in 0.3s", "(cached) PASSED", "FAILED in ...",
# "TIMEOUT in ...", "FLAKY, failed in 1 out of 2", "NO STATUS", "FAILED TO BUILD".
# Sets step_passed / step_failed.
count_results() {
  step_passed=$(grep -Ec '^//[^ ]+ +(\(cached\) )?(PASSED|FLAKY)' "$1")
  step_failed=$(grep -Ec '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|INCOMPLETE|REMOTE FAILURE)' "$1")
  passed=$((passed + step_passed))
  failed=$((failed + step_failed))
}

# run_step NAME ALLOW_NO_TESTS BAZEL_ARGS...
run_step() {
  local name=$1 allow_no_tests=$2
  shift 2
  local log="$logdir/$name.log"
  echo "=== test.sh: bazel $*"
  bazel "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  count_results "$log"
  if [[ $rc -eq 4 && $allow_no_tests == yes ]]; then
    echo "=== test.sh: $name: no matching tests (ok)"
  elif [[ $rc -ne 0 ]]; then
    echo "=== test.sh: $name: FAILED (bazel exit $rc)" >&2
    status=1
    # A build/analysis failure has no failing test lines: count the step itself.
    [[ $step_failed -eq 0 ]] && failed=$((failed + 1))
  fi
}

run_step all no test "${bazel_flags[@]}" //...
run_step node_off no test "${bazel_flags[@]}" --test_env=EP_NODE_TRANSPORT=off \
  --test_tag_filters=mpi //tests/...
run_step tsan_stress yes test "${bazel_flags[@]}" --config=tsan --test_tag_filters=stress \
  --build_tests_only //...
run_step asanubsan no test "${bazel_flags[@]}" --config=asanubsan --build_tests_only //...

failed=$((failed + layers_failed))
[[ $failed -gt 0 ]] && status=1
echo "$passed passed, $failed failed"
exit "$status"
