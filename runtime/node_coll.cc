// node_coll.cc - the node way of blocking collectives (node_coll.h).
#include "runtime/node_coll.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "base/cross_process.h"
#include "progress/backoff.h"
#include "runtime/comm.h"
#include "runtime/runtime.h"
#include "runtime/wait.h"

namespace ep::runtime {
namespace {

// wait()'s side of runtime/wait.h's loop: the condition is every fragment's arrival;
// the waiter sleeps on its own cell's bell (see "Memory ordering").
struct ArrivalWait : PlainWait<ArrivalWait> {
  ArrivalWait(const NodeGroup* g, node::CollCell* m) : group(g), mine(m) {}
  const NodeGroup* group;
  node::CollCell* mine;
  bool ready() { return group->all_arrived(); }
  bool sleep(int64_t ns) {
    // seq_cst: Dekker with arrive()'s store of `arrive` and load of `asleep`.
    mine->asleep.fetch_add(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const uint32_t seen = mine->bell.load(std::memory_order_seq_cst);
    bool timed_out = false;
    if (!ready()) timed_out = progress::futex_wait_shared(mine->bell, seen, ns);
    mine->asleep.fetch_sub(1, std::memory_order_seq_cst);
    return timed_out;
  }
};

}  // namespace

std::unique_ptr<NodeGroup> NodeGroup::make(CommShared* c) {
  Runtime* rt = runtime();
  const int n = static_cast<int>(c->frag_leaders.size());
  if (c->inter || n < 2 || !rt->node.on()) return nullptr;
  // Every fragment in its own process of this node: the same answer everywhere (the node
  // transport maps all of a node's peers or none).
  std::vector<int> procs(static_cast<size_t>(n));
  for (int f = 0; f < n; ++f) {
    const int proc = c->addr[c->frag_leaders[f]].proc;
    if (proc != rt->world_rank && rt->node.peer(proc) == nullptr) return nullptr;
    procs[f] = proc;
  }
  std::sort(procs.begin(), procs.end());
  if (std::adjacent_find(procs.begin(), procs.end()) != procs.end()) return nullptr;

  // Every fragment has a cell, and each finds every other's (their rings were published
  // before their addresses reached this process: comm.cc's begin): the same answer in
  // every fragment, with no exchange.  Each cell's base was recorded when its ring was
  // assigned (published with it).
  if (c->node_first_ring < 0) return nullptr;
  auto g = std::unique_ptr<NodeGroup>(new NodeGroup);
  g->me_ = c->my_frag;
  g->cells_.resize(static_cast<size_t>(n));
  for (int f = 0; f < n; ++f) {
    const EpAddr& a = c->addr[c->frag_leaders[f]];
    node::CollCell* cell = nullptr;
    if (f == g->me_) {
      cell = rt->node.segment().cell(c->node_first_ring + a.local);
    } else {
      node::PeerSegment* peer = rt->node.peer(a.proc);
      uint32_t generation = 0;
      const int ring = peer->resolve(a.ctx, a.local, &generation);
      if (ring < 0) return nullptr;  // no rings there (none were free)
      cell = peer->cell(ring);
    }
    // relaxed: ordered by resolve()'s acquire of the directory entry (or our own write).
    g->cells_[f] = Cell{cell, cell->base.load(std::memory_order_relaxed)};
  }
  return g;
}

void NodeGroup::arrive() {
  ++k_;
  const Cell& m = cells_[me_];
  base::cross_process_release();
  // seq_cst: publishes the slot (pairs with wait()'s acquire) and is Dekker's store.
  m.cell->arrive.store(m.base + k_, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (int f = 0; f < size(); ++f) {
    if (f == me_) continue;
    node::CollCell* cell = cells_[f].cell;
    if (cell->asleep.load(std::memory_order_seq_cst) != 0) {
      cell->bell.fetch_add(1, std::memory_order_seq_cst);
      progress::futex_wake_shared(cell->bell);
    }
  }
}

bool NodeGroup::all_arrived() const {
  for (int f = 0; f < size(); ++f) {
    // acquire: pairs with the arriver's store (its slot is visible).
    if (cells_[f].cell->arrive.load(std::memory_order_acquire) - cells_[f].base < k_) return false;
  }
  return true;
}

void NodeGroup::wait() {
  ArrivalWait w(this, cells_[me_].cell);
  wait_loop(w, Drive::kNo);
  base::cross_process_acquire();
}

void NodeGroup::finish() {
  const Cell& m = cells_[me_];
  // release: pairs with busy()'s acquire in the other fragments.
  m.cell->done.store(m.base + k_, std::memory_order_release);
}

bool NodeGroup::busy() const {
  for (int f = 0; f < size(); ++f) {
    // acquire: pairs with finish()'s release (its reads of our slots are over).
    if (cells_[f].cell->done.load(std::memory_order_acquire) - cells_[f].base < k_) return true;
  }
  return false;
}

}  // namespace ep::runtime
