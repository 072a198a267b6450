#!/usr/bin/env bash
# tsan_supp_test.sh SUPP - fails unless every suppression in SUPP (tools/tsan.supp) names
# MPICH or UCX code.
#
# ThreadSanitizer suppressions are for third-party MPI internals only: MPICH and UCX are
# not built with TSAN, so their own synchronization is invisible to it.  libep's code,
# and the queues it builds on (moodycamel, oneTBB), must be race-free as TSAN sees them;
# a suppression for them would hide libep's own races.  So each entry's pattern must be
# one MPICH or UCX function - a prefix of theirs (MPI_, PMPI_, MPIR_, MPID_, MPIDI_,
# MPII_, MPIU_, MPL_, yaksa*_; ucp_, uct_, ucs_, ucm_) and at least three more name
# characters, since TSAN matches a pattern anywhere in a frame's name ("uct_" alone
# would match construct_at) - or one of their libraries (called_from_lib:libmpich.so,
# libucp, libuct, libucs, libucm).  Wildcards and any other name fail.
# Checks itself on a few entries it must refuse, then checks SUPP.
set -uo pipefail

if [[ $# -ne 1 || ! -f $1 ]]; then
  echo "usage: $0 TSAN_SUPP_FILE" >&2
  exit 2
fi

function='(MPI_|PMPI_|MPIR_|MPID_|MPIDI_|MPII_|MPIU_|MPL_|yaksa[a-z]*_|ucp_|uct_|ucs_|ucm_)[A-Za-z0-9_]{3,}'
library='(libmpich|libucp|libuct|libucs|libucm)\.so[.0-9]*'
allowed='^((race|race_top|thread|mutex|signal|deadlock):\^?'"$function"'\$?|called_from_lib:'"$library"')$'

# check FILE: prints each entry that is not an MPICH/UCX one; returns 1 if any.
check() {
  local bad=0 line n=0
  while IFS= read -r line || [[ -n $line ]]; do
    n=$((n + 1))
    line=${line%%#*}
    line=${line//[[:space:]]/}
    [[ -z $line ]] && continue
    if ! grep -Eq "$allowed" <<<"$line"; then
      echo "$1:$n: '$line' is not an MPICH/UCX suppression"
      bad=1
    fi
  done <"$1"
  return "$bad"
}

tmp=$(mktemp -d "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/tsan_supp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
status=0
for entry in 'race:moodycamel::ConcurrentQueue' 'race:tbb::detail::d2::concurrent_queue_rep' \
  'race:ep::runtime::Matcher' 'race:EP_Send' 'race:*uct_cma_ep_tx' 'called_from_lib:libep.so' \
  'race:libtbb' 'race:MPI' 'race:uct_' 'race:MPIR_*' 'called_from_lib:libtbb.so.12'; do
  printf '%s\n' "$entry" >"$tmp/bad.supp"
  if check "$tmp/bad.supp" >/dev/null; then
    echo "tsan_supp_test: the check accepts '$entry'"
    status=1
  fi
done
printf 'race:uct_cma_ep_tx\n# comment\n\ncalled_from_lib:libucs.so.0\nrace:^MPIDI_progress_test$\n' \
  >"$tmp/good.supp"
if ! check "$tmp/good.supp"; then
  echo "tsan_supp_test: the check refuses MPICH/UCX entries"
  status=1
fi

if ! check "$1"; then
  echo "tsan_supp_test: $1 suppresses code other than MPICH's and UCX's: fix or annotate" \
    "the race instead (see the file's header)"
  status=1
fi
[[ $status -eq 0 ]] && echo "tsan_supp_test: every entry of $1 names MPICH or UCX"
exit "$status"
