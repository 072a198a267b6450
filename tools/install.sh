#!/usr/bin/env bash
# Builds libep with Bazel and installs it into PREFIX:
#   PREFIX/include/ep/ep.h, PREFIX/lib/libep.so, PREFIX/lib/pkgconfig/ep.pc,
#   PREFIX/lib/cmake/ep/ (CMake package: find_package(ep CONFIG) gives ep::ep),
#   PREFIX/bin/ep_info
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

# --- begin: ep_info: built with libep, installed as PREFIX/bin/ep_info -------------------------
bazel build --noshow_progress //:libep.so //tools:ep_info
bin=$(bazel info bazel-bin 2>/dev/null)
export EP_INFO_BIN="$bin/tools/ep_info"
# --- end: ep_info ---------------------------------------------------------------------------
bash tools/install_files.sh "$prefix" "$bin/libep.so" api/include/ep/ep.h
