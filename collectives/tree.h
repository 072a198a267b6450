// tree.h - a combining tree over the members of a group: n threads meet in O(log n)
// steps, and no cache line is written by all of them.
//
// What it is: the members of a group (the endpoints of one fragment, fast.h) are
// numbered 0..n-1 in rank order and form a binomial tree rooted at 0: the parent of i
// is i minus its lowest set bit, its children are i+1, i+2, i+4, ... below that bit
// (and below n).  So every subtree is a contiguous range of members, and a node's
// children cover, in increasing order, the members after it.  A *round* is one meeting
// of all members.  Each member arrives at its own node; a node is complete when its
// member and every child subtree have arrived, and whichever thread completes it
// combines it (`combine(node)`: the member's contribution, then the children's partials
// in increasing order - rank order, so non-commutative operations hold) and arrives at
// the parent for it.  The thread that completes the root is the round's *completer*:
// it acts for the group (exchanges with other groups, decides the next rounds), then
// releases the round; every other member waits for the release.  A thread that does
// not complete a node goes straight to waiting: the work moves with the last arrivals,
// and no member waits for one particular thread to be scheduled (with more threads
// than cores, a tree whose parents combine on their own threads pays a hand-off per
// level).
//
// Storage: what another member reads lives in one TreeSlot per member (its node) and
// one TreeRelease per group, reached through a TreeTable of addresses rather than
// through C++ objects, so that the same code can run over slots in a segment several
// processes map.  Slots and release hold no pointers: contributions, partials and
// results travel by value (up to kTreeInline bytes).  A caller's process-private state
// (what each member passed) lives in its own arrays beside the table and says so.
// What would change for a group spanning processes: runtime::Event sleeps on a
// process-private futex.
//
// Ownership: tree.h owns nothing; the caller owns the slots, the release and the table
// (fast.h: FastState, one per fragment) and keeps them for as long as rounds run.  In a
// round, a slot's `own` and `in` are its member's until it arrives, then read-only to
// the node's completer; `sub` and `acc` are written by the node's completer only, and
// read by the parent's; the release's fields (err, plan, bytes, data) are written by
// the round's completer only, before tree_release, and read by the members after
// tree_wait until they arrive again.
//
// Cost: a round takes one RMW per node with children on the way from the last arrival
// to the root (at most ceil(log2 n) + 1); a node's counter is written by its member and
// its children's completers (the root's by 1 + ceil(log2 n) threads).  The release is
// one store that every waiter reads (a flat fan-out): for the group sizes of one node's
// cores the waiters' misses on that line overlap, where a tree of releases would add a
// miss per level.
//
// Waiting: tree_wait is the only wait (runtime/wait.h's loop, sleeping on the release's
// Event, which tree_release notifies).
//
// Threading: each member arrives once per round, from any thread; a member's next
// arrival follows its return from the previous round (its wait, or its release as the
// completer).  combine runs on the thread that completes the node.  The completer may
// hand the release to another thread (one that finishes work it started), which then
// calls tree_release for it; the completer then waits like the others.
//
// Memory ordering: a member writes its slot (own flags, contribution) and its private
// state, then arrives.  Arriving at a node with children is an acq_rel fetch_add on
// the node's counter; the RMWs of one round on it form a release sequence, so the one
// that completes the node sees what every other arrival wrote before its RMW (the
// member's contribution, the children's partials, which their completers wrote before
// theirs); what it writes while combining, it releases with its own RMW at the parent.
// It resets the counter (relaxed) before that RMW: the next round's arrivals follow
// this round's release, which the RMW chain orders after the reset.  A leaf (no
// children) needs no RMW of its own: its member combines it.  The completer writes the
// release's fields, then stores round + 1 (release: pairs with the acquire loads of
// tree_round and tree_wait).  Only the next round's completer rewrites those fields,
// and it completes only after every member arrived again, i.e. after each read them.
// Event::notify follows runtime/wait.h's protocol, so no wake-up is lost.
#ifndef EP_COLLECTIVES_TREE_H_
#define EP_COLLECTIVES_TREE_H_

#include <atomic>
#include <cstdint>

#include "runtime/wait.h"

namespace ep::collectives {

// Bytes a slot carries by value (a member's contribution, a subtree's partial, a result).
constexpr int kTreeInline = 256;

// Flags of TreeSlot::own and TreeSlot::sub.  kTreeData: own - the contribution is in
// `in`; sub - the subtree has a partial.  kTreeInAcc: sub - the partial is in `acc` (else
// it is the member's own, in `in`).
constexpr uint32_t kTreeData = 1;
constexpr uint32_t kTreeInAcc = 2;

// A member's node.  Written by its member (own, in) before it arrives, and by the
// node's completer (sub, acc) before it arrives at the parent.
struct TreeSlot {
  alignas(64) std::atomic<uint32_t> arrived{0};  // this round's arrivals at the node
  uint32_t own = 0;
  uint32_t sub = 0;
  alignas(64) unsigned char in[kTreeInline];   // the member's contribution
  alignas(64) unsigned char acc[kTreeInline];  // the subtree's partial
};

// A group's release.  Written by each round's completer before the store of `round`.
struct TreeRelease {
  alignas(64) std::atomic<uint32_t> round{0};   // rounds released so far (wraps)
  int32_t err = 0;                              // the round's outcome (the caller's codes)
  uint32_t plan = 0;                            // what the members do next (the caller's)
  int64_t bytes = 0;                            // of `data`, when the caller needs it
  alignas(64) runtime::Event event;             // notified after each release
  alignas(64) unsigned char data[kTreeInline];  // a result by value
};

// Where a group's tree lives.
struct TreeTable {
  int n = 0;                        // members
  TreeSlot* const* slot = nullptr;  // by member
  TreeRelease* release = nullptr;
  // How waiters wait (runtime/wait.h): kYes makes them yield at every poll, so that
  // members still working get a core when the group's threads may share cores.
  runtime::Crowd crowd = runtime::Crowd::kNo;
};

inline int tree_parent(int i) { return i & (i - 1); }

// Calls fn(child) for node i's children, in increasing order.
template <class Fn>
inline void tree_for_children(int i, int n, Fn&& fn) {
  const int below = i == 0 ? n : (i & -i);
  for (int d = 1; d < below && i + d < n; d <<= 1) fn(i + d);
}

inline int tree_children(int i, int n) {
  int k = 0;
  tree_for_children(i, n, [&k](int) { ++k; });
  return k;
}

// The round a member is about to join.  Read before it writes its slot; acquire: pairs
// with tree_release's store (the previous round's fields, and the counters' resets).
inline uint32_t tree_round(const TreeTable& t) {
  return t.release->round.load(std::memory_order_acquire);
}

// Member `me` arrives; combine(node) runs for every node this thread completes, from
// `me` upwards.  True if this thread completed the root: it then acts for the group
// and calls tree_release; false: another thread will, and this one calls tree_wait.
// Never blocks.
template <class Combine>
bool tree_arrive(const TreeTable& t, int me, Combine&& combine) {
  int node = me;
  for (;;) {
    const int need = 1 + tree_children(node, t.n);
    if (need > 1) {
      std::atomic<uint32_t>& arrived = t.slot[node]->arrived;
      // acq_rel: releases what this thread wrote for the node; the last one acquires all.
      if (arrived.fetch_add(1, std::memory_order_acq_rel) + 1 != static_cast<uint32_t>(need)) {
        return false;
      }
      // relaxed: ordered before the next round's arrivals by the RMW at the parent and
      // the release that follows (see Memory ordering).
      arrived.store(0, std::memory_order_relaxed);
    }
    combine(node);
    if (node == 0) return true;
    node = tree_parent(node);
  }
}

// The completer of round `round` releases it: everything it wrote before becomes
// visible to the members that tree_wait for it.
inline void tree_release(const TreeTable& t, uint32_t round) {
  t.release->round.store(round + 1, std::memory_order_release);  // pairs: tree_round/tree_wait
  t.release->event.notify();  // (the completer itself may wait, when another thread releases)
}

// Waits until round `round` is released (runtime/wait.h).  `drive`: the release comes
// from an operation that needs the engine's passes (the waiter runs them meanwhile).
inline void tree_wait(const TreeTable& t, uint32_t round,
                      runtime::Drive drive = runtime::Drive::kNo) {
  TreeRelease* r = t.release;
  runtime::wait_until(
      r->event,
      // acquire: pairs with tree_release's store.
      [r, round] { return r->round.load(std::memory_order_acquire) != round; }, drive, t.crowd);
}

// One round with nothing to combine: `at_root` runs on the completer before the release.
template <class AtRoot>
void tree_sync(const TreeTable& t, int me, AtRoot&& at_root) {
  const uint32_t round = tree_round(t);
  if (tree_arrive(t, me, [](int) {})) {
    at_root();
    tree_release(t, round);
  } else {
    tree_wait(t, round);
  }
}

}  // namespace ep::collectives

#endif  // EP_COLLECTIVES_TREE_H_
