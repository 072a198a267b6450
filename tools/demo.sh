#!/usr/bin/env bash
# Builds and runs the libep token-ring demo: 2 MPI processes x 3 endpoints.
# Usage: tools/demo.sh [laps [timed_laps]]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash tools/setup.sh
bazel build --noshow_progress //tools/demo:ring
bin=$(bazel info bazel-bin 2>/dev/null)
exec mpiexec -n 2 "$bin/tools/demo/ring" "$@"
