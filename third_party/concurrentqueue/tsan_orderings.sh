#!/usr/bin/env bash
# tsan_orderings.sh IN OUT - writes moodycamel's concurrentqueue.h (IN) to OUT with the
# orderings that ThreadSanitizer can see, for --config=tsan builds only.
#
# The queue hands a block back to its explicit producer for reuse when is_empty() finds
# every slot dequeued: relaxed loads of the slots' empty flags (or of the dequeued
# counter), then std::atomic_thread_fence(acquire), which pairs with the consumers'
# release stores in set_empty() (and, for bulk dequeues, with the release fence before
# the relaxed stores in set_many_empty()).  TSAN does not model fences, so it sees the
# producer's write of a new element into a reused slot race with the consumer's read of
# the old one.  Here those accesses carry the fences' orderings themselves: the loads
# in is_empty() acquire and the stores in set_many_empty() release - the same
# happens-before the fences give, now visible to TSAN.  The fences stay.  The other
# acquire fences (the four dequeue paths) order only counter reads against other
# counters; TSAN has no report to make about atomics, so they are left as they are.
#
# Each edit must apply exactly as often as listed, or the build fails: a different
# concurrentqueue.h needs this file read again, not a silent partial patch.
set -euo pipefail
in=$1
out=$2

edit() {  # edit COUNT FROM TO
  local count=$1 from=$2 to=$3 found
  found=$(grep -cF -- "$from" "$out" || true)
  if [[ $found -ne $count ]]; then
    echo "tsan_orderings.sh: expected $count x '$from' in $in, found $found" >&2
    exit 1
  fi
  FROM=$from TO=$to perl -0pi -e 's/\Q$ENV{FROM}\E/$ENV{TO}/g' "$out"
}

cp "$in" "$out"
chmod u+w "$out"
# Block::is_empty(): the loads that the acquire fence after them orders.
edit 1 'if (!emptyFlags[i].load(std::memory_order_relaxed)) {' \
  'if (!emptyFlags[i].load(std::memory_order_acquire)) {'
edit 1 'if (elementsCompletelyDequeued.load(std::memory_order_relaxed) == BLOCK_SIZE) {' \
  'if (elementsCompletelyDequeued.load(std::memory_order_acquire) == BLOCK_SIZE) {'
# Block::set_many_empty(): the stores that the release fence before them orders.
edit 1 'emptyFlags[i + j].store(true, std::memory_order_relaxed);' \
  'emptyFlags[i + j].store(true, std::memory_order_release);'
