// internal.h - declarations shared among the collectives' own files; not for api/.
//
// What it is: the few helpers that more than one file of this package needs and no
// other header owns: the engine's pass hook (engine.cc, installed by process.cc), the
// per-rank blob format and part lookups of the operation families (ops.cc,
// ops_reduce.cc, inter.cc), the constructors of the reduction families (ops_reduce.cc,
// used by make_op in ops.cc) and the intercommunicator entry (inter.cc, used by start).
//
// Threading: poll_schedules runs only on the engine baton holder (one pass at a time).
// The rest are plain functions on the calling thread's data: an op's starter or
// finisher, or a tree round's completer (fast.h).
//
// Memory ordering: nothing here publishes anything itself; poll_schedules follows the
// engine's order (engine.h).
#ifndef EP_COLLECTIVES_INTERNAL_H_
#define EP_COLLECTIVES_INTERNAL_H_

#include <memory>
#include <string>
#include <vector>

#include "base/types.h"
#include "collectives/coll.h"
#include "collectives/engine.h"
#include "runtime/exchange.h"

namespace ep::collectives {

// Runs `op` (its `done` set) for all of c's local endpoints (`parts` by local index;
// start_fragment).
void run_for_fragment(CommShared* c, std::vector<Part> parts, std::unique_ptr<CollOp> op);

// The engine pass hook (runtime/transport.h PassHook): advances every fragment with
// active operations; sets *pending while some remain.  True if it made progress.
bool poll_schedules(bool* pending);

// The input buffer of a part (its receive buffer under EP_IN_PLACE).
inline const void* input_of(const Part& p) { return p.sbuf == in_place() ? p.rbuf : p.sbuf; }

// The part of `rank` if it belongs to this fragment, else nullptr.
Part* part_of_rank(CollOp& op, int rank);

// Per-rank blobs: (rank, bytes) pairs.
inline void put_ranked(runtime::BlobWriter& w, int rank, const std::string& bytes) {
  w.put<int>(rank);
  w.put_bytes(bytes);
}
template <class F>
void for_ranked(const std::string& blob, F&& f) {
  runtime::BlobReader rd(blob);
  while (!rd.done()) {
    int r = rd.get<int>();
    std::string b = rd.get_bytes();
    f(r, b);
  }
}

// All-to-all blocks (ops.cc; the intra- and intercommunicator Alltoall(v,w)): peer d's
// block of a part, packed - its send side, or its receive side (EP_IN_PLACE) - with the
// part's datatype (`w`: Alltoallw, the peer's datatype at a byte displacement); and the
// unpacking of every received (source, destination, bytes) record into the parts.
std::string pack_peer_block(const Part& p, bool receive_side, bool w, int d);
void unpack_peer_blocks(CollOp& op, bool w);

// The reduction families (ops_reduce.cc): Reduce, Allreduce, Reduce_scatter(_block)
// for `kind`; Scan (exclusive: Exscan).
std::unique_ptr<CollOp> make_reduce_op(Kind kind);
std::unique_ptr<CollOp> make_scan_op(bool exclusive);

// start() on an intercommunicator (inter.cc): every family but Scan and Exscan.
Request* inter_start(Endpoint* ep, Kind kind, Part part, const OpArgs& args);

}  // namespace ep::collectives

#endif  // EP_COLLECTIVES_INTERNAL_H_
