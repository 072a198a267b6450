#!/usr/bin/env bash
# Usage: check_hygiene_test.sh CHECK_HYGIENE   (bazel test //tools:check_hygiene_test)
# Builds a small clean tree, checks that tools/check_hygiene.sh passes it, then breaks
# each rule in turn on a fresh copy and checks that the script fails naming the cause.
# (The bad text is assembled at run time, so this file breaks no rule itself.)
set -euo pipefail

checker=$1
case "$checker" in
  /*) ;;
  *) checker="$PWD/$checker" ;;
esac
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/check_hygiene_test.XXXXXX")
fail=0

# A clean tree: a library file, a tool, a README with its headline table, and
# docs/performance.md repeating the table.
make_tree() {
  local t=$1
  rm -rf "$t"
  mkdir -p "$t/api" "$t/runtime" "$t/tools" "$t/docs"
  printf '// a.cc - the entry points.\nint f() { return 1; }  // returns one\n' >"$t/api/a.cc"
  printf '# BUILD.bazel of api\n' >"$t/api/BUILD.bazel"
  printf '#!/usr/bin/env bash\n# Runs the thing (target <= 1.5%s).\necho ok\n' x >"$t/tools/run.sh"
  {
    echo "# project"
    echo
    echo "## Benchmarks"
    echo
    echo "| measurement | value |"
    echo "|---|---:|"
    echo "| latency | 0.5 us |"
    echo
    echo "## Tests"
  } >"$t/README.md"
  {
    echo "# performance"
    echo
    echo "| measurement | value |"
    echo "|---|---:|"
    echo "| latency | 0.5 us |"
  } >"$t/docs/performance.md"
}

# expect_fail NAME WHAT: the checker fails on tree $work/NAME and names WHAT.
expect_fail() {
  local out rc=0
  out=$(bash "$checker" "$work/$1" 2>&1) || rc=$?
  if [[ $rc -eq 0 ]]; then
    echo "FAIL: $1: check_hygiene.sh passed a tree that breaks a rule"
    fail=1
  elif ! grep -qF -- "$2" <<<"$out"; then
    echo "FAIL: $1: the message does not name '$2':"
    echo "$out"
    fail=1
  else
    echo "ok: $1: $(grep -F -- "$2" <<<"$out" | head -1)"
  fi
}

make_tree "$work/clean"
if ! bash "$checker" "$work/clean"; then
  echo "FAIL: check_hygiene.sh rejects a clean tree"
  fail=1
fi

word=issue
make_tree "$work/issue_in_code"
echo "// the fix of $word 12" >>"$work/issue_in_code/runtime/r.h"
expect_fail issue_in_code "runtime/r.h:1:"

make_tree "$work/issue_in_readme"
echo "See ${word^}-7." >>"$work/issue_in_readme/README.md"
expect_fail issue_in_readme "README.md:"

make_tree "$work/issue_in_build"
mkdir -p "$work/issue_in_build/tests/x"
echo "# tests of $word #3" >"$work/issue_in_build/tests/x/BUILD.bazel"
expect_fail issue_in_build "tests/x/BUILD.bazel:1:"

make_tree "$work/vague_name"
echo "int g();" >"$work/vague_name/api/rma_more.cc"
expect_fail vague_name "api/rma_more.cc: name it after what it holds"

make_tree "$work/long_readme"
for _ in $(seq 1 220); do echo "more" >>"$work/long_readme/README.md"; done
expect_fail long_readme "README.md has 229 lines"

make_tree "$work/measurements"
n=7
for i in 1 2 3 4 5 6; do
  case $i in
    1) line="// runs ${n}x faster" ;;
    2) line="// 6.3 M msg/s with it" ;;
    3) line="// it was ${n}% of the core" ;;
    4) line="// measured 20$((20 + n))-11-2$n" ;;
    5) line="// 512 MiB/s in that run" ;;
    6) line="// 1.${n}x again" ;;
  esac
  echo "$line" >>"$work/measurements/runtime/m.cc"
done
echo "# 9${n} ops/s" >>"$work/measurements/tools/run.sh"
expect_fail measurements "7 comment lines carry measured figures"

make_tree "$work/five_measurements"
for i in 1 2 3 4 5; do echo "// ${i}${n}% of it" >>"$work/five_measurements/runtime/m.cc"; done
if ! bash "$checker" "$work/five_measurements" >/dev/null; then
  echo "FAIL: five measurement lines are allowed"
  fail=1
fi

make_tree "$work/headline"
sed -i 's/| latency | 0.5 us |/| latency | 0.6 us |/' "$work/headline/docs/performance.md"
expect_fail headline "lacks README.md's headline row: | latency | 0.5 us |"

make_tree "$work/no_headline"
sed -i '/^## Benchmarks/d' "$work/no_headline/README.md"
expect_fail no_headline "no headline table"

[[ $fail -eq 0 ]] || exit 1
echo "PASS"
