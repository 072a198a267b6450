// comm.h - endpoints communicators, endpoints, groups and the context table.
//
// What it is: an endpoints communicator is represented in each process by one or
// more *fragments* (`CommShared`): a fragment holds this process's endpoints of the
// communicator (`local`, in rank order) and the addresses of all ranks.  An EP_Comm
// handle is an Endpoint*.  Every rank r has an address {proc: MPI_COMM_WORLD rank,
// ctx: the context id of the fragment holding it, local: its index in that
// fragment}; a packet header carries (ctx, local), so the receiving progress thread
// finds the endpoint with two array lookups - the cost does not grow with the number
// of communicators.  Communicators from EP_Comm_create_endpoints, dup and split have
// one fragment per process; a merged intercommunicator whose groups share a process
// has two fragments there (one per group), which is why collectives work on
// fragments, not processes (runtime/exchange.h).
//
// Intercommunicators: each group's fragment ("half") has `inter` set, `addr`/`ids`
// for its local group and `remote_addr`/`remote_ids` for the remote group; point-to-
// point addresses the remote group (peer()), and `remote_frag_*` describe the remote
// group's fragments (where collectives send).  `local_comm` is a hidden intracomm over
// the local group (same local indices) that carries the group-internal part of the
// creation calls on the intercommunicator (dup, split, merge, create).
//
// Each endpoint has an identity {origin, rank} fixed when EP_Comm_create_endpoints
// made it; dup, split and merge keep identities, so groups compare and translate by
// them.
//
// MPI resources: none per endpoints communicator.  Creation exchanges (dup, split,
// intercomm create/merge) run as libep point-to-point on hidden tags among fragment
// leaders (EP_Comm_create_group: among the group's members, runtime/comm_create.cc);
// point-to-point traffic of all communicators shares the progress engine's two MPI
// communicators.  EP_Comm_create_endpoints itself uses one MPI_Allgather on
// the parent.  A communicator costs a context id per fragment and O(size) memory.
//
// Lifetime: created collectively; each local endpoint's handle is freed by
// EP_Comm_free; when the last local handle of a fragment is freed its context id
// (and its hidden local_comm's) is unpublished and the objects are deleted on the
// progress thread once no matcher is active.
//
// Threading: CommShared is immutable after publication except `live_handles`
// (atomic) and the creation rendezvous (`mu_`).  An Endpoint is used by one thread at
// a time (enforced by `busy`); its matcher is concurrent (matching.h).  Inside
// local_round() the thread that runs `fn` may act for the fragment's leader endpoint
// (local[0]) while its own thread is blocked in the same local_round.  A nonblocking
// round (local_round_async: EP_Comm_idup) is carried by a worker thread of libep
// (comm_idup), which acts for the fragment's endpoints the same way while their own
// threads go on.
//
// Memory ordering: ContextTable::publish stores with release and lookup loads with
// acquire, so the progress thread sees a fully built CommShared.  Endpoint::busy is
// taken with an acquire exchange and released with a release store, so consecutive
// users of a handle (on different threads) are ordered.  local_round hands data
// between threads under mu_.
#ifndef EP_RUNTIME_COMM_H_
#define EP_RUNTIME_COMM_H_

#include <atomic>
#include <concurrentqueue/concurrentqueue.h>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/types.h"
#include "progress/engine.h"
#include "runtime/errhandler.h"
#include "runtime/matching.h"
#include "runtime/wait.h"

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
struct Request;
struct NodeEndpoint;
class CommShared;
// Gives back fragment c's rings of the node transport (runtime/node.h), if it has any.
void node_detach(CommShared* c);

class CommShared {
 public:
  uint32_t ctx = 0;
  int size = 0;                // of the (local) group
  std::vector<EpAddr> addr;    // by rank (local group)
  std::vector<Identity> ids;   // by rank (local group)
  std::vector<std::unique_ptr<Endpoint>> local;  // this fragment's endpoints, rank order
  std::atomic<int> live_handles{0};
  int tag_ub = 0;
  bool multi_process = false;  // some peer lives in another process
  // Fragments (set by finish): the lowest rank of each (proc, ctx), ascending; the
  // fragment of every rank; this fragment's index; ranks of this comm in this process.
  std::vector<int> frag_leaders;
  std::vector<int> frag_of;
  int my_frag = 0;
  int proc_local_size = 0;
  // Every fragment's ranks are contiguous (then fragment order is rank order, and
  // partial reductions per fragment may be combined in fragment order).
  bool grouped = true;
  // Collective operations of this fragment (collectives/engine.h); opaque here.
  // Created once under the collectives' own lock, then read lock-free: release store,
  // acquire load (collectives/engine.cc).
  std::atomic<void*> coll_state{nullptr};
  std::atomic<int> coll_active{0};  // started, unfinished collectives (retire waits)
  void (*coll_state_free)(void*) = nullptr;
  // True while coll_state must stay (another process may still read it; retire waits).
  bool (*coll_state_busy)(void*) = nullptr;
  // Intercommunicators only:
  bool inter = false;
  int remote_size = 0;
  std::vector<EpAddr> remote_addr;
  std::vector<Identity> remote_ids;
  CommShared* local_comm = nullptr;  // hidden intracomm over the local group
  // The remote group's fragments, as frag_leaders / frag_of / grouped are the local
  // group's (set by finish from remote_addr): where collectives send to the other group.
  std::vector<int> remote_frag_leaders;
  std::vector<int> remote_frag_of;
  bool remote_grouped = true;
  // The shadow: same membership, context id ctx + 1, its own endpoints.  libep's own
  // traffic on this communicator (creation exchanges, collectives) goes there, never
  // through the user's endpoints; a thread uses the shadow's endpoints only while it
  // holds `shadow_lock` (see ShadowLock).
  CommShared* coll = nullptr;  // owned
  bool is_shadow = false;
  std::atomic<bool> shadow_lock{false};
  // The node transport (runtime/node.h), set by finish() when it is on: some peer lives
  // in another process of this node (node_peers) or on another node (off_node); each
  // peer rank's route (node_route: decided once, kept here); the first of this
  // fragment's rings, -1 for none (set by begin()).
  bool node_peers = false;
  bool off_node = false;
  std::unique_ptr<std::atomic<uint64_t>[]> node_routes;
  int node_first_ring = -1;

  CommShared() = default;
  ~CommShared() {
    if (coll_state_free != nullptr) coll_state_free(coll_state.load(std::memory_order_relaxed));
    if (node_first_ring >= 0) node_detach(this);
    delete coll;
  }
  CommShared(const CommShared&) = delete;
  CommShared& operator=(const CommShared&) = delete;

  // Addresses that point-to-point uses: the remote group on an intercommunicator.
  const EpAddr& peer(int r) const { return inter ? remote_addr[r] : addr[r]; }
  int peer_size() const { return inter ? remote_size : size; }

  // Rounds: every endpoint of this fragment joins rounds in the same order; its n-th
  // call of local_round or local_round_async joins round n (so a nonblocking round and
  // later blocking ones never mix).
  //
  // Blocking: joins with `mine`; the last to arrive runs fn(contributions by local
  // index) and every caller returns fn's result.
  using RoundFn = std::function<std::shared_ptr<void>(std::vector<std::string>&)>;
  std::shared_ptr<void> local_round(int local_index, std::string mine, const RoundFn& fn);
  // Nonblocking: joins with `part` and returns at once; the last to arrive calls
  // launch(parts by local index), which must not wait for other endpoints (it hands
  // the round's work to another thread).
  using LaunchFn = std::function<void(std::vector<std::shared_ptr<void>>&)>;
  void local_round_async(int local_index, std::shared_ptr<void> part, const LaunchFn& launch);

 private:
  struct Round {
    int arrived = 0;
    int departed = 0;  // blocking callers that took the result
    bool done = false;
    std::vector<std::string> contrib;
    std::vector<std::shared_ptr<void>> parts;
    std::shared_ptr<void> result;
  };
  // The round `local_index` joins next (mu_ held).
  Round& join_round(int local_index, uint64_t* n);
  std::mutex mu_;
  Event round_done_;                  // notified when a round's result is ready
  std::map<uint64_t, Round> rounds_;  // guarded by mu_; rounds not yet left by all
  std::vector<uint64_t> joined_;      // guarded by mu_; rounds joined, by local index
};

// Holds a fragment's shadow endpoints (CommShared::coll) for one thread.
class ShadowLock {
 public:
  explicit ShadowLock(CommShared* c) : c_(c) {
    // acquire: pairs with the release in the destructor of the previous holder.
    while (c_->shadow_lock.exchange(true, std::memory_order_acquire)) cpu_pause();
  }
  ~ShadowLock() { c_->shadow_lock.store(false, std::memory_order_release); }
  ShadowLock(const ShadowLock&) = delete;
  ShadowLock& operator=(const ShadowLock&) = delete;

 private:
  static void cpu_pause() { progress::cpu_relax(); }
  CommShared* c_;
};

class Endpoint {
 public:
  static constexpr uint32_t kMagic = 0xe9c0ffee;
  Endpoint(CommShared* comm, int rank, int local_index);
  ~Endpoint() {
    outbox->unref();
    errhandler_unref(errhandler);
    if (attrs_free != nullptr) attrs_free(attrs);
  }
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  uint32_t magic = kMagic;
  CommShared* const comm;
  int rank;  // set by the creating thread before the handle is returned
  const int local_index;  // in comm->local
  int proc_local_rank = 0;  // among this comm's ranks in this process (all fragments)
  std::string name;         // EP_Comm_set_name; this handle's own (written by its user only)
  uint32_t coll_seq = 0;    // collectives started on this endpoint (hidden tags)
  Errhandler errhandler = errors_are_fatal();  // holds a reference (runtime/errhandler.h)
  Matcher matcher;
  // Notified when an arrival becomes unexpected: what a blocking probe sleeps on.
  Event arrivals;
  std::atomic<int> busy{0};
  // One token per local destination inbox (this endpoint's messages to one
  // destination keep their order: moodycamel is FIFO per producer token).
  std::vector<std::unique_ptr<moodycamel::ProducerToken>> local_tokens;
  // The same for destinations in other fragments of this process.
  std::unordered_map<Endpoint*, std::unique_ptr<moodycamel::ProducerToken>> other_tokens;
  // The progress thread's token for this endpoint's inbox (only it touches this).
  std::unique_ptr<moodycamel::ProducerToken> progress_token;
  // Small packets to other processes wait here for the engine (progress/outbox.h);
  // the endpoint holds one reference.
  progress::Outbox* outbox = new progress::Outbox;

  // Attribute caching (api/attr.h): this handle's attribute values, owned by the api
  // layer, used by the endpoint's own thread only; attrs_free (set with attrs) frees
  // them if the endpoint is deleted with them (EP_Finalize), without callbacks.
  void* attrs = nullptr;
  void (*attrs_free)(void*) = nullptr;
  // Its ring and state of the node transport (runtime/node.h), or nullptr (off, or no
  // ring was free): owned, set before the handle is published, freed with the fragment.
  NodeEndpoint* node = nullptr;

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
  // acquire; nullptr if unknown.  Inline: every packet from another process is routed
  // by it.
  CommShared* lookup(uint32_t id) const {
    std::atomic<CommShared*>* c = chunk(id);
    return c == nullptr ? nullptr : c[id % kChunk].load(std::memory_order_acquire);
  }
  std::vector<CommShared*> all() const;

 private:
  static constexpr uint32_t kChunk = 1024, kMaxChunks = 4096;
  std::atomic<CommShared*>* chunk(uint32_t id) const {
    if (id / kChunk >= kMaxChunks) return nullptr;
    // acquire: pairs with the release store of a new chunk in allocate().
    return chunks_[id / kChunk].load(std::memory_order_acquire);
  }
  std::atomic<std::atomic<CommShared*>*>* chunks_;
  mutable std::mutex mu_;
  std::vector<uint32_t> free_;  // guarded by mu_
  uint32_t next_ = 2;           // guarded by mu_; even: id + 1 is the shadow's
};

// A process object: a copy of member identities.  `self` is the endpoint whose handle
// produced the group (EP_Comm_group, EP_Win_get_group) or the groups it was built from;
// my_rank is its position in `members` (kUndefined if it is not one).
struct Group {
  std::vector<Identity> members;
  int my_rank = kUndefined;
  bool has_self = false;
  Identity self;
};

// Collective over the processes of parent (see ep.h).  Returns an EP_ERR_* code.
int comm_create_endpoints(MPI_Comm parent, int num_ep, CommHandle comms[]);
// Collective over the endpoints of ep's communicator (intra or inter).
int comm_dup(Endpoint* ep, Endpoint** out);
// What an idup does for one endpoint once the new communicator exists: `made` is that
// endpoint's new handle (runs on the idup's worker thread, before its request
// completes; the endpoint's own thread may be anywhere meanwhile).
using IdupDone = std::function<void(Endpoint* made)>;
// Nonblocking dup (intra or inter), collective over the endpoints of ep's communicator:
// joins the fragment's next round (an intercommunicator's: its local_comm's) and
// returns at once.  The last local endpoint to join hands
// the creation to a worker thread, which calls each endpoint's `done` and completes
// its request `r` (a pending kColl request, of a user handle or not).  Takes the hidden
// tag in the calling thread, so idups match in the order each endpoint started its
// collectives; the parent stays alive until the worker is done with it.
void comm_idup(Endpoint* ep, Request* r, IdupDone done);
// Waits for the idup workers to end (EP_Finalize, before the engine stops).
void comm_join_workers();
// Collective over ep's (intra)communicator; *out is nullptr for EP_UNDEFINED.
int comm_split(Endpoint* ep, int color, int key, Endpoint** out);
// EP_Comm_split of an intercommunicator (collective over both groups): *out is the
// intercommunicator between the endpoints of each group with ep's colour, ordered by
// (key, old rank) within each group; nullptr for EP_UNDEFINED or a colour that only
// one group uses.  A negative colour other than EP_UNDEFINED anywhere in either group
// fails at every endpoint with EP_ERR_ARG.
int intercomm_split(Endpoint* ep, int color, int key, Endpoint** out);
// Collective over local_comm; `peer` and `remote_leader` matter at the local leader.
int intercomm_create(Endpoint* ep, int local_leader, Endpoint* peer, int remote_leader, int tag,
                     Endpoint** out);
int intercomm_merge(Endpoint* ep, bool high, Endpoint** out);
// EP_Comm_create on an intercommunicator (collective over both groups): each group
// passes its members (a subset of its local group) and ep's position among them (-1:
// not a member).  *out is the intercommunicator between the two sets, or nullptr for
// a non-member or when either set is empty.
int intercomm_create_from_group(Endpoint* ep, const std::vector<Identity>& members, int pos,
                                Endpoint** out);
// Collective over the endpoints whose identities are `members` (ep is one of them; all
// are members of ep's intracommunicator): the new communicator's ranks are `members`'
// order.  `tag` (0..tag_ub) tells apart creations on one parent running at once.
int comm_create_group(Endpoint* ep, const std::vector<Identity>& members, int tag, Endpoint** out);
// The building blocks of a creation (comm.cc): fragment_begin makes and publishes this
// process's fragment of a new communicator with `num_local` endpoints (context ids
// allocated, membership still empty); fragment_finish fills in its membership (every
// rank's address and identity) before any of its handles reaches the user.
CommShared* fragment_begin(int num_local);
void fragment_finish(CommShared* c, std::vector<EpAddr> addr, std::vector<Identity> ids);
// Where a rank of ep's peer group lives in this process (nullptr: another process).
Endpoint* local_peer(Endpoint* ep, int rank);
void comm_free(Endpoint* ep);
int comm_compare(Endpoint* a, Endpoint* b);
// Deletes every communicator still alive (EP_Finalize, after the engine stopped).
void comm_free_all();

}  // namespace ep::runtime

#endif  // EP_RUNTIME_COMM_H_
