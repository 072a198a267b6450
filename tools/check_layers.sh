#!/usr/bin/env bash
# check_layers.sh - fails when a source file reaches across libep's layers.
#
# The layers, bottom up: base -> {progress, node} -> runtime -> {collectives, rma} -> api
# -> mpi.  mpi (libep_mpi, the MPI_ names) sits on the public API alone: it includes
# ep/ep.h, its own headers and <mpi.h>, nothing of the layers below.
# For every file of those packages:
#   1. an #include "pkg/..." names its own package or a lower layer (progress and node
#      are peers, as are collectives and rma: neither of a pair includes the other);
#   2. the package's BUILD.bazel depends on that package (a //pkg label in it);
#   3. progress headers are included only by progress and runtime, node headers only by
#      node, runtime and rma (rma's windows share node's segments and cross-memory
#      attach), and the public header ep/ep.h only by api and mpi: the layers below
#      api use base/types.h;
#   4. only progress and runtime name the engine (progress:: or runtime::engine());
#   5. a file defines only its own layer's functions: it opens no namespace of another
#      layer (`namespace ep::runtime` in api/) and defines no `ep::<layer>::name(...)`
#      of another layer, so whatever a layer's header declares is implemented in that
#      layer (or inline in the header), and a lower layer never needs a higher one to link.
#   6. outside progress, every MPI call is counted: written EP_MPI(MPI_Xxx(...))
#      (base/mpi_calls.h; EP_STATS and the tests read the count).  mpi is exempt: it
#      defines the application's MPI_ functions and hands what is not libep's to PMPI_
#      (the application's calls, not libep's), and reaches nothing below the public API.
# Prints every violation; exits 1 if there is one.  Run by tools/test.sh.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2

declare -A layer=([base]=0 [progress]=1 [node]=1 [runtime]=2 [collectives]=3 [rma]=3 [api]=4 [mpi]=5)
violations=0
report() {
  echo "check_layers: $1" >&2
  violations=$((violations + 1))
}

for pkg in "${!layer[@]}"; do
  build="$pkg/BUILD.bazel"
  [[ -f $build ]] || { report "$build is missing"; continue; }
  while IFS= read -r -d '' file; do
    while IFS= read -r line; do
      inc=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]+"([^"]+)".*/\1/' <<<"$line")
      if [[ $inc == ep/ep.h ]]; then
        [[ $pkg == api || $pkg == mpi ]] ||
          report "$file includes ep/ep.h (layers below api use base/types.h)"
        continue
      fi
      dep=${inc%%/*}
      [[ -n ${layer[$dep]+x} ]] || continue  # a system or third-party header
      [[ $dep == "$pkg" ]] && continue
      if [[ $pkg == mpi ]]; then
        report "$file includes $inc: mpi uses libep through ep/ep.h alone"
        continue
      fi
      if ((layer[$dep] >= layer[$pkg])); then
        report "$file includes $inc: $dep is not below $pkg"
      fi
      if ! grep -Eq "\"//$dep(:[A-Za-z0-9_]+)?\"" "$build"; then
        report "$file includes $inc, but $build does not depend on //$dep"
      fi
      if [[ $dep == progress && $pkg != runtime ]]; then
        report "$file includes $inc: only runtime reaches the progress engine"
      fi
      if [[ $dep == node && $pkg != runtime && $pkg != rma ]]; then
        report "$file includes $inc: only runtime and rma reach node/"
      fi
    done < <(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' "$file")
    if [[ $pkg != progress && $pkg != base && $pkg != mpi && $file != api/include/* ]]; then
      # A call is MPI_ and a capitalized word then '('; types (MPI_Aint(...)) are not calls.
      if sed -E 's://.*$::' "$file" |
        grep -E '\bMPI_[A-Z][a-z_]*\(' |
        grep -Ev '\bMPI_(Aint|Count|Offset|Datatype|Comm|Op|Request|Status|Info|Group|Win|Errhandler|Fint|Message|File)\(' |
        grep -Evq 'EP_MPI\(MPI_[A-Z][a-z_]*\(' ; then
        report "$file calls MPI without EP_MPI (base/mpi_calls.h): $(sed -E 's://.*$::' "$file" | grep -nE '\bMPI_[A-Z][a-z_]*\(' | grep -v 'EP_MPI(' | head -1)"
      fi
    fi
    if [[ $pkg != progress && $pkg != runtime ]]; then
      # Code only (comments may name them): strip // comments first.
      if sed -E 's://.*$::' "$file" | grep -Eq '\bprogress::|\bruntime::engine\(|\bengine\(\)\.'; then
        report "$file names the progress engine (use runtime/transport.h, runtime/wait.h)"
      fi
    fi
    # Rule 5 (code only: // comments stripped).  base's namespace is plain `ep`.
    while IFS= read -r other; do
      [[ $other == "$pkg" ]] && continue
      report "$file defines code of $other (namespace ep::$other): implement it in $other/"
    done < <(sed -E 's://.*$::' "$file" |
      sed -nE -e 's/^[[:space:]]*namespace[[:space:]]+ep::([a-z_]+).*/\1/p' \
        -e 's/^[A-Za-z_][^;(]*[[:space:]*&]ep::([a-z_]+)::[A-Za-z_~][A-Za-z0-9_:~]*\(.*/\1/p' |
      sort -u | while IFS= read -r ns; do [[ -n ${layer[$ns]+x} ]] && echo "$ns"; done)
  done < <(find "$pkg" \( -name "*.h" -o -name "*.cc" \) | tr '\n' '\0')
done

if ((violations > 0)); then
  echo "check_layers: $violations violation(s)" >&2
  exit 1
fi
echo "check_layers: every include and definition of ${!layer[*]} respects the layers"
