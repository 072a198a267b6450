#!/usr/bin/env bash
# Builds libep with Bazel and installs it into PREFIX:
#   PREFIX/include/ep/ep.h, PREFIX/lib/libep.so, PREFIX/lib/pkgconfig/ep.pc
# Usage: tools/install.sh PREFIX
# Then: mpicc app.c $(PKG_CONFIG_PATH=PREFIX/lib/pkgconfig pkg-config --cflags --libs ep)
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 PREFIX" >&2
  exit 2
fi
prefix=$1
case "$prefix" in
  /*) ;;
  *) prefix="$PWD/$prefix" ;;
esac

cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash tools/setup.sh

bazel build --noshow_progress //:libep.so
bin=$(bazel info bazel-bin 2>/dev/null)
bash tools/install_files.sh "$prefix" "$bin/libep.so" api/include/ep/ep.h
