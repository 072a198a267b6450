# build_bench.sh - sourced by the tools/bench/*run.sh scripts: builds one benchmark
# target and sets `exe` to its path.
#
# Usage (from the workspace root): source tools/bench/build_bench.sh; build_bench NAME
# Environment:
#   BAZEL_OUTPUT_BASE  if set, every bazel command uses --output_base=$BAZEL_OUTPUT_BASE
#                      (a separate Bazel server); default: the workspace's usual one.
#   BAZEL              the bazel executable (default: bazel).
build_bench() {
  local bazel_cmd=("${BAZEL:-bazel}")
  # Same flags for build and info, so that info names the tree the build wrote.
  local flags=(--noshow_progress)
  if [[ -n "${BAZEL_OUTPUT_BASE:-}" ]]; then
    bazel_cmd+=("--output_base=${BAZEL_OUTPUT_BASE}")
    # A private output base must not repoint the workspace's bazel-* symlinks.
    flags+=(--symlink_prefix=/)
  fi
  "${bazel_cmd[@]}" build "${flags[@]}" "//tools/bench:$1" >&2
  exe="$("${bazel_cmd[@]}" info "${flags[@]}" bazel-bin 2>/dev/null)/tools/bench/$1"
  [[ -x "$exe" ]] || { echo "build_bench: $exe was not built" >&2; return 1; }
}
