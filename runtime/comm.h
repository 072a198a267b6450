// comm.h - endpoints communicators, endpoints, groups and the context table.
//
// What it is: an endpoints communicator is represented in each process by one
// `CommShared` (membership: where every rank lives) and one `Endpoint` per rank that
// lives in this process.  An EP_Comm handle is an Endpoint*.  Every rank r has an
// address {proc: MPI_COMM_WORLD rank, ctx: that process's context id for this
// communicator, local: index among that process's endpoints}; a packet header
// carries (ctx, local) so the receiving progress thread finds the endpoint with two
// array lookups - the cost does not grow with the number of communicators.
//
// Each endpoint has an identity {origin, rank} fixed when EP_Comm_create_endpoints
// made it; dup and split keep identities, so groups compare and translate by them.
//
// MPI resources: one endpoints communicator costs one MPI communicator
// (`proc_comm`, the processes that hold its endpoints), used for the creation of
// derived communicators; point-to-point traffic of all communicators shares the
// progress engine's two communicators.
//
// Lifetime: created collectively; each local endpoint's handle is freed by
// EP_Comm_free; when the last local handle is freed the context id is unpublished
// and the objects are deleted on the progress thread once no matcher is active.
//
// Threading: CommShared is immutable after publication except `live_handles`
// (atomic) and the creation rendezvous (`mu_`).  An Endpoint is used by one thread at
// a time (enforced by `busy`); its matcher is concurrent (matching.h).
//
// Memory ordering: ContextTable::publish stores with release and lookup loads with
// acquire, so the progress thread sees a fully built CommShared.  Endpoint::busy is
// taken with an acquire exchange and released with a release store, so consecutive
// users of a handle (on different threads) are ordered.
#ifndef EP_RUNTIME_COMM_H_
#define EP_RUNTIME_COMM_H_

#include <atomic>
#include <concurrentqueue/concurrentqueue.h>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "ep/ep.h"
#include "progress/engine.h"
#include "runtime/matching.h"

namespace ep::runtime {

struct EpAddr {
  int proc = 0;        // rank in MPI_COMM_WORLD
  uint32_t ctx = 0;    // the context id of this communicator in that process
  uint16_t local = 0;  // index among that process's endpoints of this communicator
};

struct Identity {
  uint64_t origin = 0;  // which EP_Comm_create_endpoints call made the endpoint
  int rank = 0;         // its rank in that call's communicator
  bool operator==(const Identity& o) const { return origin == o.origin && rank == o.rank; }
};

class Endpoint;

class CommShared {
 public:
  uint32_t ctx = 0;
  int size = 0;
  std::vector<EpAddr> addr;   // by rank
  std::vector<Identity> ids;  // by rank
  std::vector<std::unique_ptr<Endpoint>> local;  // this process's endpoints, rank order
  MPI_Comm proc_comm = MPI_COMM_NULL;
  std::atomic<int> live_handles{0};
  int tag_ub = 0;
  bool multi_process = false;  // some rank lives in another process

  // All local endpoints call this in the same order; the last to arrive runs `fn`
  // and every caller returns its result.
  void* local_once(const std::function<void*()>& fn);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;      // guarded by mu_
  uint64_t gen_ = 0;     // guarded by mu_
  void* result_ = nullptr;  // guarded by mu_
};

class Endpoint {
 public:
  static constexpr uint32_t kMagic = 0xe9c0ffee;
  Endpoint(CommShared* comm, int rank, int local_index);

  uint32_t magic = kMagic;
  CommShared* const comm;
  int rank;  // set by the creating thread before the handle is returned
  const int local_index;
  EP_Errhandler errhandler = EP_ERRORS_ARE_FATAL;
  Matcher matcher;
  std::atomic<int> busy{0};
  // One token per local destination inbox (this endpoint's messages to one
  // destination keep their order: moodycamel is FIFO per producer token).
  std::vector<std::unique_ptr<moodycamel::ProducerToken>> local_tokens;
  // The progress thread's token for this endpoint's inbox (only it touches this).
  std::unique_ptr<moodycamel::ProducerToken> progress_token;

  moodycamel::ProducerToken& token_for(Endpoint* dest);
};

// Maps context ids to communicators for the progress thread.
class ContextTable {
 public:
  ContextTable();
  ~ContextTable();
  uint32_t allocate();
  void publish(uint32_t id, CommShared* c);  // release
  void unpublish(uint32_t id);
  void recycle(uint32_t id);  // after the progress thread retired it
  CommShared* lookup(uint32_t id) const;  // acquire; nullptr if unknown
  std::vector<CommShared*> all() const;

 private:
  static constexpr uint32_t kChunk = 1024, kMaxChunks = 4096;
  std::atomic<CommShared*>* chunk(uint32_t id) const;
  std::atomic<std::atomic<CommShared*>*>* chunks_;
  mutable std::mutex mu_;
  std::vector<uint32_t> free_;  // guarded by mu_
  uint32_t next_ = 1;           // guarded by mu_
};

struct Group {
  std::vector<Identity> members;
  int my_rank = EP_UNDEFINED;
};

// Collective over the processes of parent (see ep.h).  Returns an EP_ERR_* code.
int comm_create_endpoints(MPI_Comm parent, int num_ep, EP_Comm comms[]);
int comm_dup(Endpoint* ep, Endpoint** out);
void comm_free(Endpoint* ep);
int comm_compare(Endpoint* a, Endpoint* b);
// Deletes every communicator still alive (EP_Finalize, after the engine stopped).
void comm_free_all();

}  // namespace ep::runtime

#endif  // EP_RUNTIME_COMM_H_
