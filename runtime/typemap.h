// typemap.h - libep's datatype engine: where the bytes of one element of a datatype
// lie, in typemap order, and packing and unpacking with it.  No MPI.
//
// What it is: a TypeNode describes one element of a datatype as the byte runs MPI_Pack
// visits, in the order it visits them, offsets relative to the element's address:
//   kRuns  a flat list of (offset, length) runs, adjacent runs merged;
//   kLoop  `count` copies of one child, `stride` bytes apart, from `offset`: a vector
//          of any count costs one node, and a child that is a single run is copied
//          by a strided loop;
//   kList  children at their own displacements (a struct, an indexed type whose
//          blocks are too many to flatten).
// The builders (make_*) normalize as they go: a repetition of a run as long as its
// stride is one longer run, a repetition or list of few runs is flattened into one
// kRuns node (at most kMaxFlatRuns runs), so that small derived types - the usual
// halo column, a struct of a few fields - pack from one flat list.  Runs are never
// reordered: the packed form is MPI_Pack's, byte for byte.
//
// pack_elements/unpack_elements move `count` elements (each `extent` bytes after the
// previous one) between a buffer and their packed bytes with memcpy.
//
// Ownership: nodes are immutable once built and shared between parents through
// shared_ptr (an indexed type's blocks share their element's node); a TypeDesc
// (runtime/datatype.h) owns its root.
//
// Threading: building is single-threaded; a built tree is read-only, so any number of
// threads may pack and unpack with it at once.
//
// Memory ordering: none of its own: whoever publishes a tree to other threads does so
// with a release store that their acquire load pairs with (runtime/datatype.cc).
#ifndef EP_RUNTIME_TYPEMAP_H_
#define EP_RUNTIME_TYPEMAP_H_

#include <cstdint>
#include <memory>
#include <vector>

namespace ep::runtime {

struct Run {
  int64_t off = 0;  // bytes from the element's address
  int64_t len = 0;
};

struct TypeNode;
using NodePtr = std::shared_ptr<const TypeNode>;

struct TypeNode {
  enum Kind : uint8_t { kRuns, kLoop, kList };
  Kind kind = kRuns;
  int64_t size = 0;               // packed bytes of one element
  int64_t lo = 0, hi = 0;         // lowest byte, one past the highest (0, 0 when size is 0)
  int64_t nruns = 0;              // runs a full flattening would have (at most kMaxRunCount)
  std::vector<Run> runs;          // kRuns
  int64_t count = 0;              // kLoop: copies of children[0] ...
  int64_t stride = 0;             // ... `stride` bytes apart ...
  int64_t offset = 0;             // ... the first at `offset`
  std::vector<int64_t> disps;     // kList: children[i] at disps[i]
  std::vector<NodePtr> children;  // kLoop: one; kList: as many as disps

  // The single run of a kRuns node of one run, else nullptr.
  const Run* single() const { return kind == kRuns && runs.size() == 1 ? &runs[0] : nullptr; }
};

// A list of runs longer than this stays a loop or a list.
constexpr int64_t kMaxFlatRuns = 256;
// nruns saturates here (it only decides whether flattening is worth it).
constexpr int64_t kMaxRunCount = int64_t{1} << 40;

// `len` bytes at `off` (an empty node if len is 0).
NodePtr make_run(int64_t off, int64_t len);
// Runs as given (merged where adjacent); empty runs are dropped.
NodePtr make_runs(std::vector<Run> runs);
// `count` copies of `child`, the i-th at offset + i * stride.
NodePtr make_loop(int64_t count, int64_t stride, const NodePtr& child, int64_t offset = 0);
// children[i] at disps[i], in this order.
NodePtr make_list(const std::vector<int64_t>& disps, const std::vector<NodePtr>& children);
// `node` moved by `by` bytes.
NodePtr shift(const NodePtr& node, int64_t by);

// Packs `count` elements of `root` (the i-th at buf + i * extent) into `out`
// (count * root.size bytes).
void pack_elements(const TypeNode& root, int64_t extent, const char* buf, int64_t count, char* out);
// The reverse: `count` elements' packed bytes from `in` into the buffer.
void unpack_elements(const TypeNode& root, int64_t extent, const char* in, int64_t count,
                     char* buf);

}  // namespace ep::runtime

#endif  // EP_RUNTIME_TYPEMAP_H_
