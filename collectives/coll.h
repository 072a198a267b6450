// coll.h - collectives over endpoints communicators: the interface api/ uses.
//
// What it is: every collective of API.md, blocking and nonblocking (each Kind below has
// both forms: the nonblocking call returns start()'s request, the blocking one waits for
// it), through one engine (engine.h: local arrival, an exchange among fragments, local
// finish).  On intracommunicators the families are in ops.cc and ops_reduce.cc; blocking
// calls start and wait, except barrier, bcast, reduce and allreduce, which meet on
// their fragment's tree (fast.h) and use the engine only to reach other fragments.
// So a nonblocking collective has the same hierarchical shape as its blocking form: one
// exchange among fragment leaders, progressed by the engine's pass hook (the progress
// thread, or a waiter); many may be outstanding on one or several communicators, each
// matched by its start order (Endpoint::coll_seq).  On intercommunicators (inter.cc)
// every family MPI 3.1 defines there - all but Scan and Exscan - runs on the same engine,
// data going only between the two groups (one round between the groups' fragments; the
// design, and why no hidden union intracommunicator is needed: inter.cc).
// Arguments are checked by api/.
//
// Parts and arguments on an intercommunicator (MPI 3.1 section 5.2.2):
//   args.root     each endpoint's own root argument: kRoot at the root, kProcNull at the
//                 rest of the root's group, the root's rank in the remote group at the
//                 other group's endpoints (start() keeps it per endpoint, Part::root);
//   scounts/sdispls, rcounts/rdispls  indexed by remote rank (Gatherv, Scatterv,
//                 Allgatherv, Alltoallv; the non-v forms fill them uniformly), except
//                 Reduce_scatter(_block)'s rcounts, which index the local group (how the
//                 other group's combination is scattered here);
//   args.count    reductions: elements of each input vector (Reduce_scatter: the sum of
//                 rcounts, which the other group's sum must equal);
//   EP_IN_PLACE   never (api/ refuses it).
// Each group receives what the other group sent: Allgather the other group's blocks,
// Allreduce and Reduce_scatter the combination of the other group's inputs (in that
// group's rank order, for non-commutative ops), Reduce at the root that of the other
// group.

// Which layouts take which path.  Data always travels tagged with its rank, so every
// layout is correct (grouped by process, reversed, interleaved, several fragments per
// process after a merge), for the data-movement families too:
//   - Gather(v), Allgather(v), Scatter(v), Alltoall(v,w), blocking or not, on any
//     layout: each fragment's blob carries (rank, bytes) records (Alltoall: (source,
//     destination, bytes)), packed with the sender's datatype (per peer for Alltoallw)
//     and unpacked with the receiver's, so no layout takes a different path;
//   - blocking barrier, bcast, reduce and allreduce meet on the fragment's tree (fast.h):
//     one fragment needs nothing else; among several, allreduces with a predefined op
//     exchange over pcomm and the rest run one engine operation per fragment; every
//     nonblocking collective, and every other blocking one, runs on the engine whatever
//     the layout.
// Reductions differ:
//   - op commutative, or layout grouped (each fragment's ranks contiguous): every
//     fragment combines its endpoints' inputs in rank order (in parallel chunks when
//     large, reduce_util.h), the fragments swap these partials and each combines them
//     in fragment (= rank) order: one value per fragment travels;
//   - non-commutative op on a non-grouped layout: every rank's input travels and
//     each fragment applies the op in rank order, x0 op (x1 op (... op x(n-1))).
// This holds for Reduce, Allreduce and Reduce_scatter(_block), blocking or not; Scan
// and Exscan always send every rank's input (each rank's result is its own prefix).
// Ops are applied with libep's loops or MPI_Reduce_local, so user ops and every
// datatype work.
//
// Threading: start and run_fast are collective over the endpoints of the communicator
// (of both groups on an intercommunicator), one thread each (any thread per endpoint).
// release_scratch runs in EP_Finalize, after every collective.
//
// Memory ordering: a started operation's outputs are released by request_complete and
// acquired by request_wait/test (engine.h); run_fast's outputs by the release of the
// fragment's tree (fast.h, tree.h).
#ifndef EP_COLLECTIVES_COLL_H_
#define EP_COLLECTIVES_COLL_H_

#include <mpi.h>

#include <vector>

#include "collectives/engine.h"
#include "runtime/comm.h"
#include "runtime/datatype.h"

namespace ep::collectives {

enum class Kind {
  kBarrier,
  kBcast,
  kReduce,
  kAllreduce,
  kGather,         // also Gatherv (counts and displacements in the part)
  kAllgather,      // also Allgatherv
  kScatter,        // also Scatterv
  kAlltoall,       // also Alltoallv
  kAlltoallw,      // per-peer datatypes (Part::stypes/rtypes), byte displacements
  kReduceScatter,  // also Reduce_scatter_block (rcounts in the part)
  kScan,
  kExscan,
};

// The kinds whose pattern depends on a root.
inline bool rooted(Kind k) {
  return k == Kind::kBcast || k == Kind::kReduce || k == Kind::kGather || k == Kind::kScatter;
}

// Starts a collective (intra or inter; not Scan or Exscan on an intercommunicator);
// `part.hole`: an erroneous endpoint's arrival (engine.h, "Erroneous endpoints");
// returns the endpoint's request (held by caller + operation).  `part` holds this
// endpoint's buffers; for the non-v forms the caller fills the per-rank counts and
// displacements too.
Request* start(Endpoint* ep, Kind kind, Part part, const OpArgs& args);
// A blocking barrier, bcast, reduce or allreduce on an intracommunicator, on the
// fragment's tree (fast.h): true if it took it (then *err holds the result), false if
// the call must go through start().
bool run_fast(Endpoint* ep, Kind kind, const Part& part, const OpArgs& args, int* err);
// One engine operation for all of c's local endpoints at once (`parts` by local index;
// intracommunicators), started by one thread acting for them all - each endpoint's
// hidden tag advances as if it had called start itself, which it must not do for this
// operation.  The operation writes every part's outputs, then calls done(done_arg) on
// the thread that finishes it (this one, or whichever runs the engine's pass: the
// progress thread or a driving waiter), once.
void start_fragment(CommShared* c, Kind kind, std::vector<Part> parts, const OpArgs& args,
                    void (*done)(void*), void* done_arg);
// Frees the scratch buffers reductions keep for reuse (EP_Finalize).
void release_scratch();

}  // namespace ep::collectives

#endif  // EP_COLLECTIVES_COLL_H_
