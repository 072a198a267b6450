// engine.h - how a collective runs: local arrival, an exchange among fragments, local
// finish; and the process-level state of the collectives.
//
// What it is: every collective is one `CollOp` per fragment (comm.h: the endpoints of
// one process in the communicator, normally; on an intercommunicator, of one group),
// in three phases:
//   1. Arrival (engine.cc: arrive).  Each local endpoint deposits its `Part` (buffers,
//      counts, its request).  The last to arrive *starts* the op: it reads every local
//      input (reductions combine here, reduce_util.h) and builds the blobs this fragment
//      sends.  No endpoint waits for another; each waits on its own request.
//   2. Exchange among fragment leaders: a nonblocking schedule (`Pattern`) of hidden
//      messages on the communicator's shadow (runtime/exchange.h):
//        allgather   every fragment sends its blob to every other (one round);
//        bcast       binomial tree from the root's fragment (receive, then forward);
//        gather      every fragment sends to the root's fragment;
//        scatter     the root's fragment sends each fragment its blob;
//        alltoall    each fragment sends every other fragment its own blob;
//        peers       (intercommunicators) one round of sends to and receives from
//                    listed fragments of the remote group (collectives/inter.cc).
//   3. Finish.  Whoever completes the schedule computes the results, writes every local
//      part's output buffer and completes the parts' requests.
// A communicator with one fragment skips phase 2: the starter finishes at once.
// Endpoints number their collectives (Endpoint::coll_seq); operation n uses one hidden
// tag derived from n (two fragments exchange at most one message per direction per
// operation), so outstanding collectives on one communicator never mix their messages,
// and each completes in the order MPI matching gives (by number, not by timing).
//
// The blocking fast path.  Blocking allreduces with a predefined op (small, or large on
// a contiguous type) skip this engine: the fragment's endpoints meet at one arrival
// counter and the last exchanges over a process-level MPI communicator - the one place
// the collectives call MPI for traffic themselves.  Which calls take it, its protocol,
// communicators, vote and fallback: fast.h.
//
// Threading: arrival runs under the fragment's mutex (FragState::mu, engine.cc).  A
// started op's schedule is advanced by one thread at a time (FragState::advancing, a
// try-lock): the starter, then whoever holds the engine baton - the progress thread or
// an endpoint waiting on a collective request - in the pass hook (poll_schedules), so a
// nonblocking collective completes while the application computes.  The starter hands
// the op over through the fragment's `active` list (under mu).  Parts' buffers are
// touched only by the starter (inputs) and the finisher (outputs), as MPI allows.
// install/uninstall run once, in EP_Init/EP_Finalize, before and after every collective.
//
// Erroneous endpoints (API.md: an argument error found at some endpoints of a collective
// makes those endpoints return it, the others complete the call, none hangs and the
// communicator stays usable).  An endpoint whose arguments failed api's checks still
// arrives, as a *hole*: its Part has `hole` set and no buffers; it contributes nothing and
// receives nothing, and its request completes like the others'.  Part::knows says what
// it knows of the operation's shared arguments: kAll (its OpArgs are usable: its error
// was in its own buffers or counts), kRoot (the root, hence the pattern, not a
// reduction's op, count or datatype), kNothing (not even the root of a rooted kind).  An
// operation takes its OpArgs from its fragment's best-informed arrival (CollOp::knows; a
// valid endpoint knows all), and the families skip holes: a fragment of holes only sends
// empty blobs, and receivers skip empty blobs (what a hole would have contributed is
// unspecified).  A fragment of holes that does not know the root of a rooted kind
// cannot know its role in the pattern: it skips the exchange (Pattern::kNone), and the
// other fragments may then wait for it (README, "Known limits").
//
// Memory ordering: FragState::mu orders arrival, start and registration on `active`.
// The advancing flag's acquire exchange pairs with the previous holder's release store,
// so each advancing thread sees the schedule state the last one left.  request_complete
// releases a part's outputs to its endpoint (acquire in request_wait/test).  A fragment's
// FragState is published once (release store of CommShared::coll_state, acquire loads);
// CommShared::coll_active's release store of 0 follows the fragment's last finished op
// and pairs with the acquire in runtime's retire().  The process-level counters are
// relaxed (each says why, process.cc).
#ifndef EP_COLLECTIVES_ENGINE_H_
#define EP_COLLECTIVES_ENGINE_H_

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/comm.h"
#include "runtime/datatype.h"
#include "runtime/exchange.h"
#include "runtime/request.h"
#include "runtime/team.h"

namespace ep::collectives {

using runtime::CommShared;
using runtime::Endpoint;
using runtime::Request;
using runtime::TypeInfo;

// What an arrival knows of its operation's shared arguments (see "Erroneous endpoints").
enum class Knows : uint8_t { kNothing, kRoot, kAll };

// One endpoint's arguments.
struct Part {
  int rank = 0;
  // An erroneous endpoint's arrival: no buffers, nothing sent or received for it.
  bool hole = false;
  Knows knows = Knows::kAll;
  // Intercommunicators: this endpoint's root argument (kRoot, kProcNull or a remote
  // rank), which differs among the endpoints of the root's group (coll.h).
  int root = 0;
  const void* sbuf = nullptr;
  void* rbuf = nullptr;
  int scount = 0, rcount = 0;
  MPI_Datatype stype = MPI_BYTE, rtype = MPI_BYTE;
  TypeInfo sti, rti;
  // v-variants (by peer rank).  Displacements are 64-bit: a uniform form's are
  // rank * count, which need not fit in an int.
  std::vector<int> scounts, rcounts;
  std::vector<int64_t> sdispls, rdispls;
  // Alltoallw only (by peer rank): each peer's datatype and its description; the
  // displacements above are then in bytes, as MPI 3.1 section 5.8 says.
  std::vector<MPI_Datatype> stypes, rtypes;
  std::vector<TypeInfo> stis, rtis;
  Request* req = nullptr;
  // References on the descriptions above (runtime/datatype.h, "Lifetime"), taken when
  // the part joins its operation (hold_types): the endpoint's call may return before
  // the operation is done, and the application may free its datatypes then.
  std::vector<runtime::TypeRef> held;
  void hold_types();
};

// kPeers (intercommunicators only): one round in which this fragment sends to the
// remote group's fragments listed in CollOp::peer_sends (out_for[f] if out_for is not
// empty, else the shared `out`) and receives from those in peer_recvs; `in` is then
// indexed by remote fragment.
enum class Pattern { kNone, kAllgather, kBcast, kGather, kScatter, kAlltoall, kPeers };

// An operation's common arguments (each endpoint's own are in its Part).
struct OpArgs {
  int root = 0;  // rooted operations
  MPI_Op op = MPI_OP_NULL;
  int count = 0;  // reductions: elements per rank (reduce_scatter: of the whole vector)
  MPI_Datatype type = MPI_BYTE;
  TypeInfo ti;
  // The helper team of a member that arrived (runtime/team.h), or nullptr: its threads
  // waiting in EP_Team_leave/sync take chunks of the combine and copy steps.  The op
  // holds a reference (dropped by ~CollOp).
  runtime::Team* team = nullptr;
  // The operation's own references (see Part::held): on ti's description, and, for a
  // reduction over a derived type, on the type itself: MPI_Reduce_local and a user op
  // take `type`, the application's handle, which the application may free before the
  // reduction runs.  MPICH keeps a type - and its handle - alive while a type built on
  // it lives: `keeper` is such a type (a duplicate, never used otherwise; freed by
  // ~CollOp).
  runtime::TypeRef held;
  MPI_Datatype keeper = MPI_DATATYPE_NULL;
};

// What a collective does in phases 1 and 3 (phase 2 is the pattern).
class CollOp {
 public:
  virtual ~CollOp();
  // Phase 1 (starter): build this fragment's outgoing blob(s) from the parts' inputs.
  // For kScatter/kAlltoall, fill out_for (by fragment); otherwise out.
  virtual void start() = 0;
  // Phase 3 (finisher): compute outputs from in (by fragment) and write the parts.
  virtual void finish() = 0;

  CommShared* c = nullptr;
  std::vector<Part> parts;  // by local index
  OpArgs args;
  Pattern pattern = Pattern::kNone;
  int root_frag = 0;
  int tag = 0;
  std::string out;                   // this fragment's blob
  std::vector<std::string> out_for;  // by destination fragment
  std::vector<std::string> in;       // received, by source fragment (own blob included)
  std::vector<int> peer_sends, peer_recvs;  // kPeers: remote fragments

  // What args rests on: the best-informed arrival so far (see "Erroneous endpoints").
  Knows knows = Knows::kAll;
  // Some part is not a hole: the op has inputs or outputs here.
  bool has_data() const {
    for (const Part& p : parts) {
      if (!p.hole) return true;
    }
    return false;
  }
  int missing = 0;  // local endpoints that have not arrived (under FragState::mu)
  // Schedule state (advancing thread only).
  int round = 0;
  std::vector<std::unique_ptr<runtime::HiddenSend>> sends;
  std::vector<std::unique_ptr<runtime::HiddenRecv>> recvs;
  std::vector<int> recv_from;  // fragment of each recv
};

// Runs `op` (with parts filled in by local index) once all local endpoints of its
// fragment arrived: called by every endpoint with its part; returns the endpoint's
// request (held by caller + operation).  `make` builds the op (with this arrival's
// OpArgs) on the first arrival, and again on a later one that knows more (part.knows).
Request* arrive(Endpoint* ep, Part part, const std::function<std::unique_ptr<CollOp>()>& make);

// ---- Process-level state (process.cc) -------------------------------------------------

// Process-level communicators (fast.h, pcomm) this process may hold at once: MPICH has
// about 2000 context ids per process, and the application needs its own.
constexpr int kMaxProcessComms = 64;
// Process-level communicators alive or reserved in this process (tests).
int process_comms_alive();
// Reserves one of kMaxProcessComms (false: none left); release_process_comm undoes it
// (a refused or freed communicator).
bool reserve_process_comm();
void release_process_comm();

// Registers the engine pass hook (poll_schedules), makes the base of process-level
// communicators and counts the cores (once, from EP_Init: collective over
// MPI_COMM_WORLD, blocking); uninstall frees the base (EP_Finalize).
void install();
void uninstall();
// The base communicator (a private duplicate of MPI_COMM_WORLD).
MPI_Comm base_comm();
// The cores this process can count on, at least 1, measured by EP_Init: each CPU of
// its affinity mask counts 1/k when k processes of its node may run there (2
// unbound processes on 2 cores: 1 each).  Reductions split a payload over oneTBB's
// threads (or a helper team's) only when it is 2 or more: with one core's share,
// parallel chunks only contend with the node's other processes.  Set by install
// before any collective; read anywhere.
int process_cores();
// Whitebox for tests: process_cores() returns n from now on (n <= 0: the measured count
// again), as on a node with cores to spare.  Call between operations.
void override_process_cores(int n);

}  // namespace ep::collectives

#endif  // EP_COLLECTIVES_ENGINE_H_
