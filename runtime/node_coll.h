// node_coll.h - the node way of a communicator's blocking collectives: the fragments of
// a communicator that all live in different processes of this node meet in shared
// memory, without MPI and without the progress thread.
//
// What it is.  Every fragment has a cell (node/segment.h's CollCell: the cell of the ring
// of its first endpoint, in its process's segment).  A NodeGroup is one fragment's view
// of all of them, in fragment order.  One collective operation k (the k-th through the
// group, 1-based; every fragment runs the same sequence) is:
//   slot()    the fragment's data slot for k (slot k % 2 of its cell): it writes what
//             the others must read (at most node::kCellData bytes);
//   arrive()  publishes it: `arrive` = base + k, then wakes the fragments whose waiter
//             sleeps;
//   wait()    until every fragment's `arrive` reached its base + k (runtime/wait.h's
//             discipline: spin, yield, then sleep on its own cell's shared futex);
//   data(f)   fragment f's slot for k, read in place;
//   finish()  `done` = base + k: it read every slot of k.
// A fragment writes slot k % 2 again only in operation k + 2, after operation k + 1
// completed, that is after every fragment arrived at k + 1 and so finished reading k.
// After its last operation a fragment's slots may still be read by slower fragments:
// busy() is true until every fragment's `done` reached this fragment's last k, and the
// fragment (with its ring and cell) retires only after that (runtime's retire()).
// Counters are never reset: a cell's next owner starts from the `arrive` its last one
// left (its base, recorded when the ring was assigned), which every member reads at
// make().
// Trust.  A peer's cell is reached through its segment's validated layout and directory
// (PeerSegment::resolve) only; what a peer writes there is bounded (a slot's size) and
// read as data; counters or a directory a peer corrupts can make its group's collectives
// wrong or wait, never read or write outside the mappings.
//
// Threading: a group belongs to its fragment's blocking collectives, which never overlap
// (collectives/fast.h): one thread at a time calls slot/arrive/wait/data/finish; busy()
// is for the retiring thread after the last of them.
//
// Memory ordering: a cell's `base` is written before its ring's directory entry is
// published (release) and read after resolve()'s acquire of it.  The slot is written,
// then `arrive` stored with seq_cst (a release); wait()'s acquire loads of the others'
// `arrive` pair with it, so data(f) reads what f wrote.  `done` is stored with release after the reads and loaded with acquire by
// busy() (and, implicitly, reuse follows the next arrivals).  Sleeping is Dekker's: the
// waiter increments `asleep` (seq_cst), fences, then re-checks the counters before the
// futex wait on `bell`; an arriver stores `arrive` (seq_cst), fences, then loads each
// other cell's `asleep` (seq_cst) and, if set, bumps `bell` and wakes it.
#ifndef EP_RUNTIME_NODE_COLL_H_
#define EP_RUNTIME_NODE_COLL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "node/segment.h"

namespace ep::runtime {

class CommShared;

class NodeGroup {
 public:
  // For c's fragment (an intracommunicator's), called by its completer in the first
  // operation: a group when the node transport is on and every fragment lives in its own
  // process of this node with a cell, else nullptr.  Each fragment decides alone, from
  // the segments' directories, and all decide alike: a fragment without rings publishes
  // none, so no fragment finds it.
  static std::unique_ptr<NodeGroup> make(CommShared* c);

  int size() const { return static_cast<int>(cells_.size()); }
  int me() const { return me_; }
  static constexpr int64_t kSlotBytes = node::kCellData;

  char* slot() const { return cells_[me_].cell->data[(k_ + 1) % 2]; }
  void arrive();
  void wait();
  const char* data(int f) const { return cells_[f].cell->data[k_ % 2]; }
  void finish();
  bool busy() const;
  // Every fragment arrived at the current operation (wait()'s condition; acquire).
  bool all_arrived() const;

 private:
  struct Cell {
    node::CollCell* cell;
    uint64_t base;  // its `arrive` before this group's first operation
  };
  std::vector<Cell> cells_;  // by fragment
  int me_ = 0;
  uint64_t k_ = 0;  // operations arrived at
};

}  // namespace ep::runtime

#endif  // EP_RUNTIME_NODE_COLL_H_
