#!/usr/bin/env bash
# Usage: generator_test.sh GEN_MPI_WRAPPERS_PY MPI_PROTO_H MPIO_H EP_H EP_ADDITIONS_H
#                          MPI_SOURCE_DIR
# mpi/gen_mpi_wrappers.py picks up what ep.h gains: with EP_ADDITIONS_H's prototypes
# appended to ep.h, the MPI calls of the same names map onto them (partitioned calls,
# dup_with_info through the hand-written wrapper's EP_MPI_HAVE_ test, _c twins,
# Isendrecv, remote_group), and the generated wrappers and the hand-written files that
# test EP_MPI_HAVE_* compile against that header.  Also: with ep.h as it is, the same
# calls are answered (no libep counterpart), and a prototype the rules cannot map stops
# the generator.
set -euo pipefail
gen=$1
proto=$2
mpio=$3
ep_h=$4
additions=$5
src=$(cd "$6" && pwd)  # the mpi/ folder: layer.h, handles.h, status.h, comm.cc, ...

work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/generator_test.XXXXXX")
mkdir -p "$work/inc/ep" "$work/inc/mpi"
# ep.h with the additions before its closing lines.
python3 - "$ep_h" "$additions" "$work/inc/ep/ep.h" <<'PY'
import sys
ep, add, out = sys.argv[1:]
s = open(ep).read()
i = s.rindex("#ifdef __cplusplus")
open(out, "w").write(s[:i] + open(add).read() + "\n" + s[i:])
PY
fail=0
python3 "$gen" "$proto" "$mpio" "$work/inc/ep/ep.h" "$work/w.cc" "$work/inc/mpi/wrappers.h" \
  --report >"$work/report.txt"
for m in "MPI_Psend_init -> EP_Psend_init" "MPI_Precv_init -> EP_Precv_init" \
  "MPI_Pready -> EP_Pready" "MPI_Pready_list -> EP_Pready_list" \
  "MPI_Parrived -> EP_Parrived" "MPI_Send_c -> EP_Send_c" \
  "MPI_Ialltoallv_c -> EP_Ialltoallv_c" "MPI_Win_allocate_c -> EP_Win_allocate_c" \
  "MPI_Isendrecv -> EP_Isendrecv" "MPI_Comm_remote_group -> EP_Comm_remote_group"; do
  grep -qxF "  $m" "$work/report.txt" || { echo "FAIL: not mapped: $m"; fail=1; }
done
grep -q '^#define EP_MPI_HAVE_EP_Comm_dup_with_info 1$' "$work/inc/mpi/wrappers.h" ||
  { echo "FAIL: no EP_MPI_HAVE_EP_Comm_dup_with_info"; fail=1; }
# The layer's headers next to the generated one, as Bazel lays them out.
cp "$src"/*.h "$work/inc/mpi/"
mkdir -p "$work/inc/ep"
cp "$src/include/ep/mpi_endpoints.h" "$work/inc/ep/"
for f in "$work/w.cc" "$src/comm.cc" "$src/win.cc"; do
  g++ -std=c++20 -fsyntax-only -Wall -Wextra -Werror -I"$work/inc" \
    -I/usr/include/x86_64-linux-gnu/mpich "$f" || { echo "FAIL: $f does not compile"; fail=1; }
done

# ep.h as it is: the same calls have no counterpart yet.
python3 "$gen" "$proto" "$mpio" "$ep_h" "$work/now.cc" "$work/now.h" --report >"$work/now.txt"
sed -n '/^no libep counterpart/,$p' "$work/now.txt" | grep -qx "  MPI_Psend_init" ||
  { echo "FAIL: MPI_Psend_init should have no counterpart in ep.h as it is"; fail=1; }

# A counterpart whose arguments do not correspond stops the generator.
python3 - "$ep_h" "$work/bad.h" <<'PY'
import sys
s = open(sys.argv[1]).read()
i = s.rindex("#ifdef __cplusplus")
open(sys.argv[2], "w").write(s[:i] + "int EP_Cart_create(EP_Comm comm, double x);\n" + s[i:])
PY
if python3 "$gen" "$proto" "$mpio" "$work/bad.h" "$work/bad.cc" "$work/bad_h.h" 2>"$work/err.txt"; then
  echo "FAIL: an unmappable EP_Cart_create was accepted"
  fail=1
elif ! grep -q "MPI_Cart_create has EP_Cart_create" "$work/err.txt"; then
  echo "FAIL: the generator's message does not name the call:"
  cat "$work/err.txt"
  fail=1
fi
[[ $fail -eq 0 ]] || exit 1
echo "PASS: $(grep -c ' -> ' "$work/report.txt") MPI calls mapped with the additions"
