#!/usr/bin/env bash
# Installs the Debian packages libep's build and tests need. Idempotent and silent when
# everything is already installed; otherwise apt-get update + install (non-interactive).
# Works as root (CI) or via sudo.
set -euo pipefail

packages=(
  mpich libmpich-dev              # MPI (mpiexec/hydra, mpicc, libmpich)
  libtbb-dev                      # oneTBB
  libconcurrentqueue-dev          # moodycamel::ConcurrentQueue
  libgtest-dev libgmock-dev googletest
  libbenchmark-dev                # Google Benchmark
  bazel-bootstrap bazel-platforms bazel-rules-java
  pkg-config g++
  cmake make gfortran python3     # tests/cmake; the Fortran binding: mpifort, its generator (fortran/)
  gnuplot-nox                     # the plots of tools/bench/report.sh
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "setup.sh: installing missing packages: ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo_cmd=(sudo -n)
  else
    echo "setup.sh: not root and no sudo; please install: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq </dev/null
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
echo "setup.sh: done"
