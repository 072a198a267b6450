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
  std::string out;                  // this fragment's blob
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
// request (refs: caller + operation).  `make` builds the op on first arrival.
Request* arrive(Endpoint* ep, Part part, const std::function<std::unique_ptr<CollOp>()>& make);

// Registers the engine pass hook (once, from EP_Init).
void install();

}  // namespace ep::collectives

#endif  // EP_COLLECTIVES_ENGINE_H_
