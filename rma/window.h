// window.h - one-sided communication over endpoints (EP_Win_*, EP_Put, ...).
//
// What it is: a window spans the endpoints of an intracommunicator.  Each endpoint
// has its own `Win` (the EP_Win handle): its exposed memory (base, size,
// disp_unit), its target-side state (the accumulate lock and the passive-target
// lock) and its origin-side state (epochs, per-target completion counters).  A
// window holds a private duplicate of the communicator for its collective steps
// (creation exchange, fence, free), so it never mixes with the user's traffic.
//
// Addressing.  Creation gathers every endpoint's {window id, size, disp_unit}; the
// window id names the endpoint's Win in its process's window table.  An origin
// therefore checks range errors itself, and an operation to another process is a
// packet addressed (process, window id) - no MPI window exists.
//
// Within a process, an operation is done by the calling thread on the target's
// memory (memcpy, or a reduction under the target's accumulate lock): no MPI.
//
// Within a node, EP_Win_allocate windows are shared memory: each endpoint's memory is
// a memfd segment (a 64-byte header holding the accumulate lock and a random cookie,
// then the memory; EP_Win_create windows have the header alone); at creation every process of the
// node maps the segments of the others (open /proc/<pid>/fd/<fd>, checked against the cookie, so a
// segment of the wrong node or process is never used), and operations to those targets are done by
// the origin thread in the mapping, like local ones - complete when the call
// returns, no target involvement.  If mapping fails (another node, no permission),
// the target is served by remote handler calls as below.  EP_Win_create windows
// expose user memory, which cannot be mapped, but their segment still holds the
// accumulate lock: to another process of the node, put and get are one
// process_vm_writev/readv by the origin thread (cross-memory attach: a kernel copy,
// complete when the call returns), and the accumulate family reads, combines and
// writes back the same way while holding the target's lock through the mapping.
// Cross-memory attach is enabled per target at creation by reading the target Win's
// random cookie through it, which proves the permission and that the process is the
// one announced.
//
// Between processes: remote handler calls served by the target process's progress
// engine (the MPICH one-sided design note), so the target endpoint need not call
// libep (passive target progress).  The packets travel on the progress engine's
// packet communicator (runtime::WireHeader with kind kRma, ctx = the destination
// window id) followed by an RmaHeader, the target blocks and the payload:
//   origin -> target: kPut, kAcc (ack'ed), kGet, kGetAcc, kCas (answered by kData),
//                     kLock (answered by kGrant when granted), kUnlock (ack'ed);
//   target -> origin: kAck, kData, kGrant.
// An operation's stream is cut into chunks of at most EP_EAGER_LIMIT payload bytes
// (whole elements for the accumulate family); each chunk is one packet, carries its
// own target blocks, and gets exactly one reply, so the target never buffers more
// than one chunk and never needs the origin's datatype.
//
// Completion.  The origin counts the chunks it sent to each target rank (`issued`,
// origin thread only) and the replies (`acked`, incremented by the baton holder that
// handled the reply).  Flush(t) waits until acked[t] == issued[t]; meanwhile it drives
// the progress engine itself (Engine::try_progress).  Replies to one origin arrive
// in order because packets between two processes are FIFO (one MPI communicator and
// tag) and a target handles packets in arrival order; so kUnlock's ack also means
// that every earlier operation of this origin on that target has been applied.
//   fence  = flush_all, then a barrier on the window's communicator;
//   unlock = flush(t), then kUnlock and wait for its ack;
//   free   = flush_all, barrier, unregister (nobody can address the window then).
//
// Passive-target locks.  Each Win has a lock word (shared holders, exclusive flag) and
// a FIFO of waiters, under `lock_mu`.  A request is granted at once if compatible and
// nobody waits; otherwise it queues, and each release grants from the front: one
// exclusive, or every shared request up to the next exclusive one.  A waiter is a
// remote origin (granted with a kGrant packet) or a local thread (granted by storing
// its flag).  EP_MODE_NOCHECK skips the lock.
//
// Accumulate atomicity: every accumulate-family operation on a Win - by a local
// origin thread, by an origin of another process of the node through the mapping, or
// by the baton holder serving a remote one - runs under the target's accumulate lock,
// a spin word taken with an acquire exchange and released with a release store (it
// can live in shared memory, which a std::mutex cannot); MPI guarantees atomicity
// only among accumulates, so put and get do not take it.
//
// Lifetime of a Win against the packet handler: the handler finishes every access to
// a Win before it submits the reply that lets the origin go on (an origin may free
// its window, or pass the barrier in free, as soon as it sees the last reply).
//
// Threading: the EP_Win handle is used by one thread at a time (the endpoint's rule,
// checked by the entry guard of its communicator endpoint); the handler runs on the
// progress-baton holder; the members below say who writes them.
//
// Memory ordering: `acked` and `grants` are incremented with release by the
// handler after it wrote the reply's data into the origin's buffers, and loaded with
// acquire by the waiting origin thread, so the data is visible when the count is.
// A local lock waiter's flag is stored with release by the granting thread and loaded
// with acquire by the waiter.  Window memory written by the handler becomes visible
// to the target's own threads through whatever libep synchronization follows (a
// barrier or message is delivered through the same progress engine, whose baton and
// queues order it).
#ifndef EP_RMA_WINDOW_H_
#define EP_RMA_WINDOW_H_

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "base/types.h"
#include "rma/layout.h"
#include "runtime/comm.h"

namespace ep::rma {

// EP_Win_allocate windows: the header in front of the memory in the shared segment.
constexpr size_t kSegHeader = 64;

class Win;

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
  std::atomic<uint32_t>* mapped_lock = nullptr;
  // Another process of this node whose window memory is its own (EP_Win_create):
  // operations copy with process_vm_writev/readv into its address space, the
  // accumulate family under mapped_lock (cma_pid 0: not possible; the origin thread
  // clears it if a copy fails and falls back to handler calls).
  int cma_pid = 0;
  uint64_t remote_base = 0;
};

struct LockWaiter {
  bool exclusive = false;
  int proc = -1;                        // remote origin's process, or -1: local
  uint32_t reply_id = 0;                // remote: the origin's window id
  int32_t origin_target = 0;            // remote: this rank as the origin numbers it
  runtime::Flag* granted = nullptr;     // local: set when granted
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
  Errhandler errhandler = errors_are_fatal();
  std::vector<Target> targets;  // by rank; written at creation, then by this thread only
  uint64_t cookie = 0;          // random; another process reads it to prove it can copy to us

  // Target side.  The accumulate lock is a spin word (see "Accumulate atomicity"):
  // in the shared segment's header for EP_Win_allocate windows, else own_lock.
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

  // Origin side (the endpoint's thread, except the atomics).
  std::vector<uint64_t> issued;                    // chunks sent, by target rank
  std::unique_ptr<std::atomic<uint64_t>[]> acked;  // replies received, by target rank
  std::atomic<uint64_t> grants{0};                 // kGrant replies received
  runtime::Event event;  // notified after each increment of acked[] or grants
  bool fence_open = false;                         // after a fence without NOSUCCEED
  bool lock_all = false;
  bool lock_all_nocheck = false;
  std::vector<uint8_t> locked;  // by target rank: 0, or kLocked | kNocheck | kExclusive
  int nlocked = 0;
  static constexpr uint8_t kLocked = 1, kNocheck = 2, kExclusive = 4;
};

// Installs the packet handler into the runtime (EP_Init, after runtime_init).
void rma_init();

// Collective over ep's intracommunicator.  `base` is ignored when `allocate`.
// `local_error` is the caller's verdict on its own arguments (EP_SUCCESS or an error
// already reported with fail()); if any endpoint's is an error, every endpoint returns
// an error and no window is created.  Without `node_paths` (info key
// "ep_shared_memory" = "false") this endpoint's window is reached by the node's other
// processes through handler calls only.
int win_create(runtime::Endpoint* ep, void* base, MPI_Aint size, int disp_unit, bool allocate,
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
int rma_op(Win* w, const OpArgs& a, const char* call);

}  // namespace ep::rma

#endif  // EP_RMA_WINDOW_H_
