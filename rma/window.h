// window.h - one-sided communication over endpoints (EP_Win_*, EP_Put, ...): what api/
// calls.
//
// What it is: a window spans the endpoints of an intracommunicator.  Each endpoint
// has its own `Win` (the EP_Win handle): its exposed memory (base, size,
// disp_unit), its target-side state (the accumulate lock and the passive-target
// lock, rma/lock.h) and its origin-side state (epochs, per-target completion
// counters).  A window holds a private duplicate of the communicator for its
// collective steps (creation exchange, fence, free), so it never mixes with the
// user's traffic.
//
// Addressing.  Creation gathers every endpoint's {window id, size, disp_unit}; the
// window id names the endpoint's Win in its process's window table (rma/table.h).  An
// origin therefore checks range errors itself, and an operation to another process is
// addressed (process, window id) - no MPI window exists.  Each target is reached by the
// first path that works, chosen at creation (rma/ops.cc does the operations):
//   this process   the origin thread works on the target's memory: no MPI;
//   this node      the origin thread works in a mapping of the target's shared segment,
//                  or copies by cross-memory attach (rma/segment.h);
//   otherwise      remote handler calls: packets served by the target process's
//                  progress engine (rma/wire.h; the handler is rma/serve.cc).
//
// Flavors (EP_WIN_CREATE_FLAVOR).  create/allocate: as above.  dynamic: size 0 at
// creation, memory attached later; displacements are target addresses, checked against
// the target's regions where the access happens ("Dynamic windows" below).  shared: one
// segment for the whole window, mapped by every endpoint, so every target is `mapped`
// (rma/shared.cc).  Every flavor keeps the accumulate lock and the unified model.
//
// Synchronization.  Fence and passive target (lock, lock_all, flush, flush_local) as
// below; general active target (post/start/complete/wait/test) by zero-byte notices on
// the window's private communicator (rma/pscw.cc).  Request-based operations are valid
// in passive epochs only; their request completes locally: at once for put and
// accumulate (the data was copied into the target or a packet), when the last reply's
// data is in place for get and get_accumulate served by handler calls.
//
// Completion.  The first two paths complete when the call returns.  For the third the
// origin counts the chunks it sent to each target rank (`issued`, origin thread only)
// and their replies (`acked`, incremented by the baton holder that handled the reply);
// flush(t) waits until acked[t] == issued[t], driving the progress engine meanwhile
// (runtime/wait.h).  Replies from one target come in request order (rma/wire.h), so
// kUnlock's ack also means that every earlier operation on that target was applied.
//   fence  = flush_all, then a barrier on the window's communicator;
//   complete (PSCW) = flush of each target of the start group, then its notice;
//   unlock = flush(t), then kUnlock and wait for its ack;
//   free   = flush_all, barrier, unregister (nobody can address the window then).
//
// Lifetime: the packet handler finishes every access to a Win before it submits the
// reply that lets the origin go on (an origin may free its window, or pass the barrier
// in free, as soon as it sees the last reply); a freed Win is deleted in a later pass.
//
// Threading: the EP_Win handle is used by one thread at a time (the endpoint's rule,
// checked by the entry guard of its communicator endpoint), and the functions below run
// on that thread (rma_init: once, in EP_Init).  The handler runs on the progress-baton
// holder; the members below say who writes them.
//
// Memory ordering: `acked` and `grants` are incremented with release by the handler
// after it wrote the reply's data into the origin's buffers, and loaded with acquire by
// the waiting origin thread, so the data happens-before the count is seen.  Window memory
// written by the handler becomes visible to the target's own threads through whatever
// libep synchronization follows (a barrier or message is delivered through the same
// progress engine, whose baton and queues order it).
#ifndef EP_RMA_WINDOW_H_
#define EP_RMA_WINDOW_H_

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "base/types.h"
#include "rma/layout.h"
#include "runtime/comm.h"
#include "runtime/request.h"

namespace ep::rma {

class Win;

// How the window's memory came to be (EP_WIN_CREATE_FLAVOR).
enum class Flavor : uint8_t { kCreate, kAllocate, kDynamic, kShared };

// A region attached to a dynamic window: [base, base + len) in the owner's address space.
struct Region {
  uintptr_t base = 0;
  uint64_t len = 0;
};

// A dynamic window's regions as published in its shared segment (after the header), for
// the origins of other processes of the node: a seqlock.  The owner's thread writes it
// (attach/detach, under regions_mu): version odd (relaxed store, then a release fence),
// the entries (relaxed), version even (release).  A reader loads version (acquire),
// reads entries (relaxed), an acquire fence, and version again (relaxed): equal and even
// means a consistent snapshot (it pairs with the writer's release store / fence).
// Lock-free atomics only, so it works across processes.
struct RegionTable {
  static constexpr uint32_t kMax = 254;
  std::atomic<uint64_t> version{0};
  std::atomic<uint32_t> count{0};  // kMax + 1: too many regions, use handler calls
  struct Entry {
    std::atomic<uint64_t> base{0}, len{0};
  } entries[kMax];  // sorted by base
};

// What an origin knows about each rank of the window.
struct Target {
  int proc = 0;      // MPI_COMM_WORLD rank
  uint32_t id = 0;   // window id in that process
  int64_t size = 0;  // bytes
  int disp_unit = 1;
  Win* local = nullptr;  // the Win itself if it lives in this process
  // Another process of this node: our mapping of its Win's shared segment (header with
  // the accumulate lock, then for EP_Win_allocate the window memory, at `mapped`).
  char* segment = nullptr;
  size_t segment_len = 0;
  char* mapped = nullptr;
  std::atomic<uint32_t>* mapped_lock = nullptr;  // its accumulate lock (AccGuard, rma/lock.h)
  // Another process of this node whose window memory is its own (EP_Win_create):
  // operations copy with process_vm_writev/readv into its address space, the
  // accumulate family under mapped_lock (cma_pid 0: not possible; the origin thread
  // clears it if a copy fails and falls back to handler calls).
  int cma_pid = 0;
  uint64_t remote_base = 0;
  // A dynamic window of another process of the node: its published regions (in the
  // mapped segment), checked by the origin thread before a cross-memory copy.
  const RegionTable* regions = nullptr;
};

struct LockWaiter {
  bool exclusive = false;
  int proc = -1;                     // remote origin's process, or -1: local
  uint32_t reply_id = 0;             // remote: the origin's window id
  int32_t origin_target = 0;         // remote: this rank as the origin numbers it
  runtime::Flag* granted = nullptr;  // local: set when granted
};

class Win {
 public:
  static constexpr uint32_t kMagic = 0x77e1d0c5;
  uint32_t magic = kMagic;
  runtime::Endpoint* ep = nullptr;  // this endpoint of the window's private communicator
  uint32_t id = 0;                  // in this process's window table
  char* base = nullptr;
  MPI_Aint size = 0;
  int disp_unit = 1;
  bool allocated = false;  // EP_Win_allocate: base is ours to free
  Flavor flavor = Flavor::kCreate;
  Errhandler errhandler = errors_are_fatal();
  std::vector<Target> targets;  // by rank; written at creation, then by this thread only
  uint64_t cookie = 0;          // random; another process reads it to prove it can copy to us

  // Target side.  The accumulate lock is a spin word, taken with an acquire exchange and
  // released with a release store (AccGuard, rma/lock.h): in the shared segment's header
  // when there is a segment, else own_lock.
  std::atomic<uint32_t> own_lock{0};
  std::atomic<uint32_t>* acc_lock = &own_lock;
  char* seg = nullptr;  // the shared segment: header (+ memory for EP_Win_allocate)
  size_t seg_len = 0;
  int memfd = -1;
  bool mem_in_seg = false;  // EP_Win_allocate: base points into seg
  std::mutex lock_mu;
  int lock_shared = 0;                  // guarded by lock_mu
  bool lock_excl = false;               // guarded by lock_mu
  std::deque<LockWaiter> lock_waiters;  // guarded by lock_mu
  // Dynamic windows: the attached regions, sorted by base, disjoint.  Written by the
  // owner's thread (attach/detach) under the exclusive lock; every access to the
  // regions' memory by another thread of this process (an origin thread, the handler on
  // the baton holder) holds the shared lock from its range check to its last byte, so a
  // detach waits for the accesses in flight and an access never touches detached memory.
  std::shared_mutex regions_mu;
  std::vector<Region> regions;       // guarded by regions_mu
  RegionTable* published = nullptr;  // in seg, if the node's processes may read it

  // Origin side (the endpoint's thread, except the atomics).
  std::vector<uint64_t> issued;  // chunks sent, by target rank
  // Replies received, by target rank, and kGrant replies received: incremented with
  // release by the reply handler (rma/serve.cc), loaded with acquire by the waits in
  // window.cc (wait_acked, wait_grants).
  std::unique_ptr<std::atomic<uint64_t>[]> acked;
  // The same for the chunks whose replies carry data (get, get_accumulate, cas): the
  // part of issued/acked that local completion (flush_local) waits for.
  std::vector<uint64_t> issued_reads;
  std::unique_ptr<std::atomic<uint64_t>[]> acked_reads;
  std::atomic<uint64_t> grants{0};
  runtime::Event event;     // notified after each increment of acked[] or grants
  bool fence_open = false;  // after a fence without NOSUCCEED
  bool lock_all = false;
  bool lock_all_nocheck = false;
  std::vector<uint8_t> locked;  // by target rank: 0, or kLocked | kNocheck | kExclusive
  int nlocked = 0;
  // An error a target's handler reported for an operation of ours (EP_ERR_RMA_RANGE:
  // detached memory), by target rank: stored relaxed by the reply handler before its
  // release increment of acked[] (so the wait that sees the count sees it), taken
  // (exchange, relaxed, after that acquire) by the next flush, unlock or fence.
  std::unique_ptr<std::atomic<int>[]> remote_error;
  // General active target (rma/pscw.cc), this thread only.  Access epoch: the targets of
  // EP_Win_start (in_start by rank).  Exposure epoch: the origins of EP_Win_post and the
  // receives of their completion notices.
  bool started = false;
  std::vector<int> start_group;
  std::vector<uint8_t> in_start;
  bool posted = false;
  std::vector<runtime::Request*> post_waits;
  static constexpr uint8_t kLocked = 1, kNocheck = 2, kExclusive = 4;
};

// Installs the packet handler into the runtime (EP_Init, after runtime_init).
void rma_init();

// Collective over ep's intracommunicator, for the flavors kCreate, kAllocate and kDynamic
// (size 0, no node paths).  `base` is ignored unless kCreate.
// `local_error` is the caller's verdict on its own arguments (EP_SUCCESS or an error
// already reported with fail()); if any endpoint's is an error, every endpoint returns
// an error and no window is created.  Without `node_paths` (info key
// "ep_shared_memory" = "false") this endpoint's window is reached by the node's other
// processes through handler calls only.
int win_create(runtime::Endpoint* ep, void* base, MPI_Aint size, int disp_unit, Flavor flavor,
               bool node_paths, int local_error, Win** out, const char* call);
// EP_Win_free: the local checks, then the collective free (deletes w and its endpoint).
int win_free_prepare(Win* w, const char* call);
void win_free(Win* w);
int win_fence(Win* w, int assert_flags, const char* call);
int win_lock(Win* w, int lock_type, int rank, int assert_flags, const char* call);
int win_unlock(Win* w, int rank, const char* call);
int win_lock_all(Win* w, int assert_flags, const char* call);
int win_unlock_all(Win* w, const char* call);
int win_flush(Win* w, int rank, const char* call);
int win_flush_all(Win* w, const char* call);
// Local completion: put and accumulate data are copied when the call returns (into the
// target, or into packets), so only operations whose results are still travelling are
// waited for.  Costs the same as a flush when gets are outstanding.
int win_flush_local(Win* w, int rank, const char* call);
int win_flush_local_all(Win* w, const char* call);

// Dynamic windows (rma/dynamic.cc).  Creation is win_create with size 0 and flavor
// kDynamic.  How an origin learns the target's regions without the target's thread:
//   this process   it reads the target Win's region list under its shared lock;
//   this node      the target publishes its regions in its shared segment (RegionTable,
//                  a seqlock); the origin maps it at creation, checks the range there
//                  and copies by cross-memory attach (rma/segment.h): no target thread
//                  at all;
//   other process  (another node, a full table, or ep_shared_memory=false) the packet's
//                  blocks are checked by the target's handler, on the target process's
//                  baton holder, under the same lock; a miss writes nothing, and the
//                  reply carries EP_ERR_RMA_RANGE (remote_error), reported by the next
//                  flush/unlock/fence of that target.
// Cost: per operation one uncontended shared-mutex acquisition, or two loads of the
// version word, plus a binary search of the regions; per attach/detach one rewrite of
// the published table (O(regions)); no message, no copy of the table to the origins.
// Between the origin's check and its copy the target may detach (a race the user's
// synchronization must exclude, as in MPI): the copy then lands in memory that is no
// longer attached, or fails and the handler path takes over.
int win_attach(Win* w, void* base, MPI_Aint size, const char* call);
int win_detach(Win* w, const void* base, const char* call);
// True if [addr, addr + len) lies inside one attached region of w (caller holds
// regions_mu, shared or exclusive).
bool attached(const Win* w, uintptr_t addr, uint64_t len);
// The same against another process's published regions: 1 attached, 0 not, -1 the table
// overflowed (ask the target's handler instead).
int attached_published(const RegionTable* t, uintptr_t addr, uint64_t len);

// Shared windows (rma/shared.cc): one memfd segment for the whole window, created by
// rank 0 and mapped by every endpoint (within a process too, one mapping per endpoint);
// the accumulate locks of every rank live at its front.  Every endpoint of ep's
// communicator must be on this node (else EP_ERR_COMM everywhere).
int win_create_shared(runtime::Endpoint* ep, MPI_Aint size, int disp_unit, int local_error,
                      Win** out, const char* call);
// EP_Win_shared_query: rank's segment (EP_PROC_NULL: the first non-empty one).
int win_shared_query(Win* w, int rank, MPI_Aint* size, int* disp_unit, void** base,
                     const char* call);

// General active-target synchronization (rma/pscw.cc); ranks are checked by the caller.
int win_post(Win* w, std::vector<int> ranks, int assert_flags, const char* call);
int win_start(Win* w, std::vector<int> ranks, int assert_flags, const char* call);
int win_complete(Win* w, const char* call);
int win_wait(Win* w, const char* call);
int win_test(Win* w, bool* flag, const char* call);

// The operations; arguments are checked by the caller except those that need the
// window (rank, epoch, range, layouts, op/type compatibility).
enum class OpKind : uint8_t { kPut, kGet, kAcc, kGetAcc, kCas };
struct OpArgs {
  OpKind kind = OpKind::kPut;
  const void* obuf = nullptr;  // put/acc/get_acc/cas: the origin data
  int ocount = 0;
  MPI_Datatype otype = MPI_DATATYPE_NULL;
  void* rbuf = nullptr;  // get: the origin buffer; get_acc/cas: the result buffer
  int rcount = 0;
  MPI_Datatype rtype = MPI_DATATYPE_NULL;
  const void* cbuf = nullptr;  // cas: the compare value
  int target = 0;
  MPI_Aint tdisp = 0;
  int tcount = 0;
  MPI_Datatype ttype = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_REPLACE;

  // What the operation involves (derived from kind and op, in one place).
  bool accumulate() const {
    return kind == OpKind::kAcc || kind == OpKind::kGetAcc || kind == OpKind::kCas;
  }
  bool has_origin() const {
    return kind != OpKind::kGet && !(kind == OpKind::kGetAcc && op == MPI_NO_OP);
  }
  bool has_result() const {
    return kind == OpKind::kGet || kind == OpKind::kGetAcc || kind == OpKind::kCas;
  }
};
// `req`: a request-based operation (EP_Rput, ...): valid in a passive-target epoch
// only; *req receives a request that completes locally.
int rma_op(Win* w, const OpArgs& a, const char* call, runtime::Request** req = nullptr);

}  // namespace ep::rma

#endif  // EP_RMA_WINDOW_H_
