#!/usr/bin/env bash
# check_hygiene.sh [ROOT] - fails when the tree carries its history where a newcomer reads.
#
# The rules (ROOT defaults to the repository this script is in):
#   1. No issue numbers: the word "issue" followed by a number (any case; a space, "-",
#      "_" or "#" may stand between) appears in no file of the library (api base
#      collectives progress rma runtime), the tools, fortran, examples, cmake, README.md,
#      or any BUILD.bazel, WORKSPACE or .bazelrc.  History goes in commit messages, docs/.
#   2. Files are named after what they hold: no source file of those folders is named
#      *_more.*, *_misc.*, *_extra.*, *_new.*, *_old.* or *_tmp.*.
#   3. README.md has at most 220 lines: a newcomer's page (lab logs go to docs/).
#   4. At most 5 comment lines of those folders and top-level files carry a measured
#      figure: a ratio (a number followed by "x"), a rate (msg/s, ops/s, B/s and KiB/s,
#      MiB/s, GiB/s, KB/s, MB/s, GB/s), a percentage, or a date (YYYY-MM-DD).  A line that
#      states a target ("target <=", "target >=") is a contract, not a measurement.
#      Comments are what follows // or starts a line with /* or * (C, C++), what follows #
#      (shell, Starlark, Python, CMake, .bazelrc), what follows ! (Fortran).  Measurements
#      go to docs/performance.md with the command that made them.
#   5. Every line of README.md's headline table (the first table under "## Benchmarks")
#      appears, as it is, in docs/performance.md.
# Prints every violation; exits 1 if there is one.  Run by tools/test.sh; tested by
# tools/check_hygiene_test.sh.
set -uo pipefail
root=${1:-"$(dirname "${BASH_SOURCE[0]}")/.."}
cd "$root" || exit 2

readonly kDirs=(api base collectives progress rma runtime tools fortran examples cmake)
readonly kMaxReadmeLines=220
readonly kMaxMeasurementLines=5
violations=0
report() {
  echo "check_hygiene: $1" >&2
  violations=$((violations + 1))
}

# The files rules 1, 2 and 4 look at: text files of kDirs, the top-level build files and
# README.md, and every BUILD.bazel (outside Bazel's output links).
files=()
while IFS= read -r -d '' f; do files+=("$f"); done < <(
  {
    for d in "${kDirs[@]}"; do [[ -d $d ]] && find "$d" -type f -print0; done
    for f in README.md BUILD.bazel WORKSPACE .bazelrc; do [[ -f $f ]] && printf '%s\0' "$f"; done
    find . -path './bazel-*' -prune -o -path ./third_party -prune -o -name BUILD.bazel \
      -type f -print0 | sed -z 's|^\./||'
  } | sort -zu)

# Rule 1.
for f in "${files[@]}"; do
  while IFS= read -r hit; do
    report "$f:$hit: an issue number (history belongs in the commit message)"
  done < <(grep -IinE -- 'issue[ _-]?#?[0-9]+' "$f")
done

# Rule 2.
for f in "${files[@]}"; do
  base=${f##*/}
  if [[ $base =~ _(more|misc|extra|new|old|tmp)\.[A-Za-z0-9]+$ ]]; then
    report "$f: name it after what it holds (not _${BASH_REMATCH[1]})"
  fi
done

# Rule 3.
if [[ -f README.md ]]; then
  lines=$(wc -l <README.md)
  if ((lines > kMaxReadmeLines)); then
    report "README.md has $lines lines (at most $kMaxReadmeLines: move lab logs to docs/)"
  fi
else
  report "README.md is missing"
fi

# Rule 4: comment lines with a measured figure.
measure='[0-9]x([^A-Za-z0-9_]|$)|[0-9] ?[kMG]? ?(msg/s|ops/s|B/s|KiB/s|MiB/s|GiB/s|KB/s|MB/s|GB/s)|[0-9] ?%|20[0-9][0-9]-[01][0-9]-[0-3][0-9]'
target='target *(<=|>=|<|>)'
measured=()
for f in "${files[@]}"; do
  case "$f" in
    *.cc | *.h | *.c | *.cpp | *.hpp) mode=c ;;
    *.sh | *.bzl | *.py | *.cmake | */BUILD.bazel | BUILD.bazel | WORKSPACE | .bazelrc) mode=sh ;;
    *.f90) mode=f ;;
    *) continue ;;
  esac
  while IFS= read -r hit; do measured+=("$hit"); done < <(
    awk -v mode="$mode" -v measure="$measure" -v target="$target" '{
      c = ""
      if (mode == "c") {
        i = index($0, "//")
        if (i > 0) c = substr($0, i + 2)
        else if ($0 ~ /^[ \t]*(\/\*|\*)/) c = $0
      } else {
        i = index($0, mode == "sh" ? "#" : "!")
        if (i > 0) c = substr($0, i + 1)
      }
      if (c != "" && c ~ measure && c !~ target) print FILENAME ":" FNR ":" $0
    }' "$f")
done
if ((${#measured[@]} > kMaxMeasurementLines)); then
  report "${#measured[@]} comment lines carry measured figures (at most $kMaxMeasurementLines; move them to docs/performance.md):"
  printf '  %s\n' "${measured[@]}" >&2
fi

# Rule 5.
if [[ -f README.md ]]; then
  headline=()
  while IFS= read -r line; do headline+=("$line"); done < <(
    awk '/^## / { in_section = ($0 == "## Benchmarks") }
         in_section && /^\|/ { print; seen = 1; next }
         seen { exit }' README.md)
  if ((${#headline[@]} == 0)); then
    report "README.md has no headline table under '## Benchmarks'"
  elif [[ ! -f docs/performance.md ]]; then
    report "docs/performance.md is missing (it must repeat README.md's headline table)"
  else
    for line in "${headline[@]}"; do
      grep -qxF -- "$line" docs/performance.md ||
        report "docs/performance.md lacks README.md's headline row: $line"
    done
  fi
fi

if ((violations > 0)); then
  echo "check_hygiene: $violations violation(s)" >&2
  exit 1
fi
echo "check_hygiene: no issue numbers, README $lines lines, ${#measured[@]} measurement comment(s), headline in docs/performance.md"
