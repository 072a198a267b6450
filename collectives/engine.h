// engine.h - how a collective runs: local arrival, an exchange among fragments, local finish.
//
// What it is: every collective on an intracommunicator is one `CollOp` per fragment
// (comm.h: the endpoints of one process in the communicator, normally).  It has
// three phases:
//   1. Arrival.  Each local endpoint deposits its `Part` (buffers, counts, its
//      request) under the fragment's mutex.  The last to arrive *starts* the
//      operation: it reads every local input (reductions are combined here, in rank
//      order, in parallel chunks for large payloads with oneTBB) and builds the blobs
//      this fragment sends.  No endpoint waits for another to arrive; each just waits
//      on its own request (EP_Wait, or the blocking call's internal wait).
//   2. Exchange among fragment leaders, a nonblocking schedule of hidden messages on
//      the communicator's shadow (runtime/exchange.h) - one of:
//        allgather   every fragment sends its blob to every other (one round);
//        bcast       binomial tree from the root's fragment (receive, then forward);
//        gather      every fragment sends to the root's fragment;
//        scatter     the root's fragment sends each fragment its blob;
//        alltoall    each fragment sends every other fragment its own blob.
//      Whoever holds the engine baton advances it (progress/engine.h pass hook): the
//      progress thread, or an endpoint thread waiting on a collective request.  So a
//      nonblocking collective completes while the application computes.
//   3. Finish.  Whoever completes the schedule computes the results and writes every
//      local part's output buffer, then completes the parts' requests.
// A communicator with one fragment skips phase 2: the starter finishes at once.
//
// Ordering: endpoints number their collectives (Endpoint::coll_seq); the operation
// with number n uses one hidden tag derived from n (in every pattern two fragments
// exchange at most one message per direction per operation), so several outstanding
// collectives on one communicator never mix their messages, and each completes in the
// order MPI matching gives (by number, not by timing).
//
// Threading: arrival under `FragState::mu`; an operation is advanced by one thread
// at a time (FragState::advancing, try-lock); the starter hands it to the advancing
// threads through the fragment's `active` list (under mu).  Parts' buffers are touched
// only by the starter (inputs) and the finisher (outputs), as MPI allows: the user may
// not touch them before the request completes.
//
// Memory ordering: mu orders arrival, start and registration; request_complete
// releases the outputs to the waiting endpoint (acquire in request_wait/test).
#ifndef EP_COLLECTIVES_ENGINE_H_
#define EP_COLLECTIVES_ENGINE_H_

#include <mpi.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
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

// One endpoint's arguments.
struct Part {
  int rank = 0;
  const void* sbuf = nullptr;
  void* rbuf = nullptr;
  int scount = 0, rcount = 0;
  MPI_Datatype stype = MPI_BYTE, rtype = MPI_BYTE;
  TypeInfo sti, rti;
  std::vector<int> scounts, sdispls, rcounts, rdispls;  // v-variants (by peer rank)
  Request* req = nullptr;
};

enum class Pattern { kNone, kAllgather, kBcast, kGather, kScatter, kAlltoall };

class CollOp;
// The parts of a fragment, by local index; the op's common arguments.
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

  int missing = 0;  // local endpoints that have not arrived (under FragState::mu)
  // Schedule state (advancing thread only).
  int round = 0;
  std::vector<std::unique_ptr<runtime::HiddenSend>> sends;
  std::vector<std::unique_ptr<runtime::HiddenRecv>> recvs;
  std::vector<int> recv_from;  // fragment of each recv
};

// Runs `op` (with parts filled in by local index) once all local endpoints of its
// fragment arrived: called by every endpoint with its part; returns the endpoint's
// request (held by caller + operation).  `make` builds the op on first arrival.
Request* arrive(Endpoint* ep, Part part, const std::function<std::unique_ptr<CollOp>()>& make);

// ---- The blocking fast path (allreduce) -------------------------------------------------
//
// What it is: a blocking EP_Allreduce with a predefined op - of at most kFastBytes, or
// larger on a contiguous datatype - skips the engine above.  The design card's shape,
// literally: the endpoints of a fragment combine through one arrival counter (no lock,
// no request, no operation object), the last to arrive exchanges with one leader per
// other fragment over a process-level MPI communicator (`pcomm`), and releases the
// others.  Which calls take it depends only on arguments MPI requires to agree at
// every rank (the op, the count and datatype - MPI requires a predefined op to get the
// same datatype everywhere -, the communicator), so all fragments of one operation
// take the same path; blocking and nonblocking collectives never match each other
// (MPI 3.1 section 5.12), so a nonblocking call never meets a fast one.  Predefined
// ops are commutative, so any rank layout may take it; user ops (possibly
// non-commutative) keep the engine's rank-ordered path.
//
// Protocol, per fragment (FastState):
//   arrival  each endpoint writes its slot (plain stores), reads `gen` (acquire), then
//            arrived.fetch_add(1, acq_rel).  The fetch_adds form one release sequence,
//            so the one that reaches n (the last) sees every slot.
//   last     combines the slots' inputs in local rank order, runs the exchange, writes
//            every slot's output, stores err, resets arrived to 0 (relaxed), then
//            gen.fetch_add(1, seq_cst) - the release that publishes all of it - and
//            wakes sleepers if any.
//   others   wait until gen differs from what they read (acquire: pairs with that
//            fetch_add): yield while it is young, then sleep on the futex.  A sleeper
//            counts itself in `sleepers` (seq_cst) before re-checking gen; the last
//            reads `sleepers` (seq_cst) after its fetch_add: one of them sees the other.
// Operations of one fragment on one communicator cannot overlap: an endpoint's next
// arrival follows its return from the previous operation, which follows the gen
// increment.  The exchange:
//   pcomm    recursive doubling with MPI_Isend/MPI_Irecv among the fragments (ranks in
//            fragment order, coll.cc: exchange), waited for by runtime::wait_mpi -
//            never a blocking MPI call, which holds MPICH's global lock against the
//            progress thread for the whole wait.  Made with MPI_Comm_create_group by
//            the first fast operation when every fragment lives in its own process
//            and every process has one of its kMaxProcessComms left (MPICH has about
//            2000 context ids per process, and the application needs its own): the
//            fragments first agree on that with a vote (MPI messages on the base
//            communicator, so that no vote waits for a progress thread while its
//            process blocks in MPI_Comm_create_group), so all of them make it or
//            none.  Freed when the fragment retires.  A new communicator's dup,
//            first allreduce and free took 80 us on 2 x 2 with this vote and 740 us
//            with the vote as libep messages (a program looping over the three);
//            tools/bench/coll_run.sh row 5 measures it against MPI.
//   large    above kFastBytes the exchange on pcomm is a ring reduce-scatter, then a
//            ring allgather (coll.cc: ring_exchange), with the local combine folded
//            into it: each input is read once, each output written once, and each
//            fragment's own-block total goes to every local output as it is made.
//            1 MiB on 2 x 2 (tools/bench/coll_bench, 3 alternating runs): 0.82-0.92x
//            of MPI_Allreduce on 2 processes, against 0.59-0.64x through the engine
//            (combine, swap whole partials as hidden messages, combine, copy).  A
//            helper team's waiting members take chunks of the combine, as on the
//            engine's path.
//   fallback otherwise (two fragments in one process - a merged intercommunicator -
//            or MPI refused the communicator): runtime::frag_allgather on the
//            reserved hidden tag kFastTag; the fragments' operations are sequential,
//            so per-pair message order matches them.
//
// Why not barriers.  The same path made EP_Barrier 7x faster (1.0 us instead of 7 on
// 2 x 2), but a barrier is where a passive target's endpoints wait while other
// processes work on its window, and while a pcomm message waited there unmatched, this
// process's window requests served by handler calls slowed down 10-50x
// (tools/bench/rma_run.sh rows 5-6: 11,000 instead of 330,000 puts/s; 35-90 us
// instead of 3.5 us per fetch-and-op) although the progress thread kept polling; the
// engine's path (hidden messages through the engine) has no such effect.  The cause
// inside MPICH is not known.  An allreduce that waits long while its process serves
// such requests is exposed the same way.  Carrying the exchange as engine packets
// into a per-fragment mailbox would remove both (not done).
constexpr int64_t kFastBytes = 4096;  // recursive doubling up to here, the ring above
constexpr int kMaxProcessComms = 64;
constexpr int kFastTag = -2;  // and -3 (frag_allgather's broadcast); see runtime/exchange.h

struct FastState {
  // An endpoint's buffers.  A predefined op takes the same datatype and count at every
  // rank (MPI 3.1 section 5.9.2), so the last arrival's describe every slot.
  struct Slot {
    const void* in = nullptr;
    void* out = nullptr;
  };
  alignas(64) std::atomic<int> arrived{0};
  alignas(64) std::atomic<uint32_t> gen{0};
  runtime::Event released;  // notified after each increment of gen
  std::vector<Slot> slots;  // by local index; see the protocol above
  int err = 0;              // EP_* result of the last operation (published by gen)
  // Last arrivals only (operations are sequential); pcomm_tried once made or refused.
  bool pcomm_tried = false;
  MPI_Comm pcomm = MPI_COMM_NULL;
  ~FastState();
};

// The fast path's state of c's fragment (created on first use, freed with it).
FastState* fast_state(CommShared* c);
// Process-level communicators alive or reserved in this process (tests).
int process_comms_alive();
// Reserves one of kMaxProcessComms (false: none left); release_process_comm undoes it
// (a refused or freed communicator).
bool reserve_process_comm();
void release_process_comm();

// Registers the engine pass hook and makes the base of process-level communicators
// (once, from EP_Init: collective over MPI_COMM_WORLD); uninstall frees the base
// (EP_Finalize).
void install();
void uninstall();
// The base communicator (a private duplicate of MPI_COMM_WORLD).
MPI_Comm base_comm();
// The cores this process can count on, at least 1, measured by EP_Init: each CPU of
// its affinity mask counts 1/k when k processes of its node may run there (2
// unbound processes on 2 cores: 1 each).  Reductions split a payload over oneTBB's
// threads only when it is 2 or more: with one core's share, parallel chunks only
// contend with the node's other processes (the 1 MiB allreduce on 2 x 2 ran at
// 0.62-0.80x of MPI with them, 0.79-0.80x without).
int process_cores();
// Whitebox for tests: process_cores() returns n from now on (n <= 0: the measured count
// again), as on a node with cores to spare.  Call between operations.
void override_process_cores(int n);

}  // namespace ep::collectives

#endif  // EP_COLLECTIVES_ENGINE_H_
