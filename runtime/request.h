// request.h - the completion object behind an EP_Request.
//
// What it is: a Request tracks one operation (send, receive, or an internal
// transfer).  It is created by the endpoint thread that starts the operation and
// completed exactly once by whichever thread finishes it: the matcher of the
// receiving endpoint (request_complete from Matcher), or the progress thread (as the
// progress::Completion of an MPI transfer).  The user's handle and the operation each
// hold one reference; the object is deleted when both are released.
//
// Threading: `state` is the one atomic word of the protocol; the operation fields are
// written before publication and read-only afterwards; `status` is written by the
// completer before the release that sets kComplete and read by waiters after the
// acquire that sees it.
//
// Lifetime (one word, no reference count): the two holders are the user's handle and
// the operation.  The operation lets go by completing - request_complete() sets the
// kComplete bit and touches nothing of the request afterwards, except a futex wake
// on `state` (harmless if the object was reused meanwhile: futex waiters recheck
// their word).  The user lets go with request_unref(): on a complete request that
// recycles it at once, with no atomic write; on a pending one it sets kReleased, and
// whichever of the two RMWs comes second (it sees the other's bit) recycles.  A
// request nobody holds a handle to (an internal buffered send) starts with kReleased.
// So a completion costs one RMW on the request's line, and a wait that finds the
// request complete none - on the local ping-pong path every RMW on that line is a
// transfer between cores while the waiter spins on it.
//
// Inline payload: a matcher that delivers an eager message of at most kInlineBytes
// into a contiguous receive buffer does not write the user's buffer: it copies the
// bytes into inline_data, on line 0 with the status, and completes with kComplete |
// kInline.  The first observer of completion - request_done()/request_wait(), on the
// thread that tests or waits, which has just read line 0 anyway - copies them to the
// buffer and sets inline_taken, a plain field of the waiter's own (MPI forbids
// concurrent tests of one request; later observers are ordered after it).  A request
// nobody observes (the user freed it) gets its copy from whichever side recycles it.  So a small
// local message costs the receiver no transfer of its buffer's cache line between cores: the
// matcher writes one line of the request, the waiter reads it.  A matcher that is the
// waiter itself (below) has nothing to save: it writes the buffer at once
// (runtime::deliver_inline in p2p.h).
//
// Completed by its waiter.  Most completions run on the very thread that is blocked on
// the request: a waiter holding the baton delivers its own message (a ping-pong), or
// a run of a bundle's records into the receives it waits for in EP_Waitall.  MPI forbids using one request from two
// threads at once, so while a thread is blocked on a request nobody else may wait on
// it or free it: its state word has no other writer than its completer.  Such a
// completion is a plain store (no locked RMW) and wakes nobody.
// The thread knows which requests it is blocked on through a WaitScope (thread-local:
// the request of EP_Wait or a blocking call, or the array of EP_Waitall, scanned from
// a cursor because deliveries usually follow the array's order; a request not found
// within a few entries takes the RMW, which is always correct).
//
// Spinning lightly.  A waiter whose request another thread of this process completes
// (no engine to drive) polls its state word with one load and one `pause` per round,
// 16 rounds between two steps of the back-off, as the atomic-flag baseline of the local
// ping-pong does; a blocking receive's waiter polls the matcher's line in the same loop
// ("Delivered on the line" in matching.h).  The loop is runtime/wait.h's.
//
// Memory ordering: request_complete() writes `status` then fetch_or(kComplete) with
// acq_rel; request_wait()/request_done() load `state` with acquire (pairs with that
// release), so a waiter that sees kComplete sees the status.  A waiter that wants to
// sleep first CASes kPending -> kPendingWaited (runtime/wait.h); the completer's RMW
// returns the kPendingWaited bit and then it calls futex_wake_all.  The kReleased fetch_or is
// acq_rel too, so whichever side recycles has seen the other's writes.
#ifndef EP_RUNTIME_REQUEST_H_
#define EP_RUNTIME_REQUEST_H_

#include <atomic>
#include <cstdint>
#include <cstdlib>

#include "base/types.h"
#include "progress/backoff.h"
#include "progress/engine.h"
#include "progress/fast_tls.h"
#include "runtime/datatype.h"
#include "runtime/errhandler.h"
#include "runtime/wait.h"

namespace ep::runtime {

class Endpoint;
struct Envelope;
class BsendBuffer;

// Where a receive's data goes when its buffer is contiguous: the first byte of its
// data, how many bytes fit, and the element size (only whole elements are written).
// elem 0: not contiguous - the Request's type description applies.
struct RecvTarget {
  char* dst = nullptr;
  int64_t cap = 0;
  uint32_t elem = 0;
};

// The leading bytes of an n-byte message that make whole elements of `elem` bytes
// (elem > 0).  Element sizes are mostly powers of two: a mask then, not a 64-bit
// division.
inline int64_t whole_elements(int64_t n, uint32_t elem) {
  return (elem & (elem - 1)) == 0 ? n & -static_cast<int64_t>(elem) : n - n % elem;
}

// A generalized request's callbacks as the runtime calls them (api/grequest.cc adapts
// the application's EP_Grequest_* functions to these).
using GreqQueryFn = int(void* extra_state, Status* status);
using GreqFreeFn = int(void* extra_state);
using GreqCancelFn = int(void* extra_state, int complete);

// A unit of work for an endpoint's matcher (see matching.h).
// The first 48 bytes are all a matcher reads to match an arrival against a posted
// receive and, for a contiguous receive buffer, to deliver it (one cache line of the
// Request, see there) - and for the first posted receive not even those: the matcher
// keeps a copy of them on its own line (Matcher::Line).  The probe results follow.
// A posted receive's op is its Request's `op` (op.req == the request).
struct MatchOp {
  enum Kind : uint8_t { kRecv, kProbe, kMprobe, kCancel };
  int source = 0;
  int tag = 0;
  MatchOp* next = nullptr;        // matcher's private list link (see Matcher::Line)
  struct Request* req = nullptr;  // kRecv, kCancel
  RecvTarget target;              // kRecv
  Kind kind = kRecv;
  bool found = false;  // probe/mprobe/cancel result
  // kRecv: the waiter also polls the matcher's line (see "Delivered on the line" in
  // matching.h); written by the owner before posting and, withdrawn, under the line.
  bool line_wait = false;
  uint8_t indexed = 0;  // kRecv: PostedIndex::kOut, kListed or kBinned (match_index.h)
  Flag done;                      // probes/cancel: set by the matcher once answered
  Envelope* env = nullptr;        // mprobe result
  Status status{};             // probe result
  // kRecv: the matcher's posted index (match_index.h; `next` above is its post-order
  // link): the other link, the bin link and the post number, which the index sets when
  // the op joins it (unset before: a receive matched at once never needs them).
  // Matcher-private.
  MatchOp* prev;
  MatchOp* bin_next;
  uint64_t seq;
};

// kGrequest and kPersistent come last: a completing call tells both from the others with
// one comparison (api/request.cc).  A kPersistent request is completed by nobody: the
// Wait/Test family waits for its current operation's request (`active`, below).
// kRma: a request-based one-sided operation whose result travels (rma/wire.h's Pending).
enum class RequestKind : uint8_t {
  kSend,
  kRecv,
  kBsend,
  kDrain,
  kColl,
  kRma,
  kGrequest,
  kPersistent
};

// Cache lines: a sender of this process that matches a posted receive with a contiguous
// buffer in place touches at most two lines of its Request (64-byte aligned), each once:
// it reads line 1 (the MatchOp's first 48 bytes: match fields, destination, capacity),
// which the poster wrote - unless the receive is the first one posted, whose fields
// the matcher's own line holds (Matcher::Line), the usual case - and writes line 0
// (status, then state), on which the waiter spins.  The matcher never reads line 0, so
// it needs no second transfer of the line the waiter keeps pulling back.  Each transfer
// between cores is part of the local latency, so this layout is too.
struct alignas(64) Request final : progress::Completion {
  // Bits of `state`: 0 is pending; a sleeping waiter sets kPendingWaited, the completer
  // kComplete (and kInline when the payload waits in inline_data), the user's release
  // of a pending request kReleased.
  static constexpr uint32_t kPending = 0, kPendingWaited = 1, kComplete = 2, kReleased = 4,
                            kInline = 8;
  static constexpr int kInlineBytes = 24;

  // Line 0 (after the vtable pointer): what the completion writes and the waiter reads.
  std::atomic<uint32_t> state{kPending};
  RequestKind kind = RequestKind::kSend;
  bool needs_engine = false;  // completes through MPI: a waiter may drive the engine
  // Completes through the node transport's rings (runtime/node.h): a waiter drains
  // `owner`'s ring (the receiving endpoint's, or a rendezvous sender's for its kNodeAck).
  bool needs_node = false;
  // The shared, always complete request (completed_send_request): never freed, never
  // written after its construction, so any number of threads may hold it.
  bool immortal = false;
  Status status{};
  alignas(8) char inline_data[kInlineBytes];  // see "Inline payload"
  // Line 1: the receive's post in the matcher (op.req == this); see MatchOp.
  alignas(64) MatchOp op;
  // The inline payload was copied to the buffer (first observer; "Inline payload").  A
  // field of the waiter's own, apart from line 0: writing line 0 after observing the
  // completion would pull it back from the matcher's core once more.
  bool inline_taken = false;
  Endpoint* owner = nullptr;                    // the receiving endpoint (for cancel)
  // The error handler of the communicator that started it (a reference: see
  // runtime/errhandler.h) and that communicator's handle, for a user handler's call.
  Errhandler errhandler = errors_return();
  CommHandle errcomm = nullptr;
  // Receive description (kRecv): the general delivery path reads these.  Also a
  // rendezvous send's buffer (its payload leaves later) and a persistent request's.
  void* buf = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_BYTE;
  TypeInfo ti;
  // ti holds a reference on its description (request_hold_type): an operation that
  // outlives the call that started it (datatype.h, "Lifetime"); released by recycling.
  bool holds_type = false;
  // Truncated rendezvous receive: the payload lands here first (error path only).
  char* drain_buf = nullptr;
  int64_t drain_bytes = 0;
  // kBsend: the segment of the attached buffer to release on completion.
  BsendBuffer* bsend = nullptr;
  void* segment = nullptr;
  bool payload_leaving = false;  // its rendezvous payload was started (BsendBuffer::sending)
  // kGrequest (runtime/grequest.h): the user's callbacks, written before publication;
  // greq_flags is the free/complete handshake (Grequest bits, acq_rel RMWs).
  GreqQueryFn* query_fn = nullptr;
  GreqFreeFn* free_fn = nullptr;
  GreqCancelFn* cancel_fn = nullptr;
  void* extra_state = nullptr;
  std::atomic<uint32_t> greq_flags{0};

  // A call of this request's transfer failed: an MPI call (on_complete: its error and
  // name), or a system call of the node transport (os_error: process_vm_readv's errno;
  // mpi_error is MPI_ERR_OTHER then, so that every completing call reports it).
  int mpi_error = MPI_SUCCESS;
  progress::MpiCall mpi_call = progress::MpiCall::kSendData;
  int os_error = 0;
  // A node rendezvous send's staging block (runtime/node.h), freed by its kNodeAck; -1.
  int64_t node_stage = -1;

  // kPersistent (runtime/p2p.h, "Persistent requests"): a start repeats the operation
  // described by owner, buf, count, type, ti, op.source (the dest of a send), op.tag (the
  // persistent request's op is never posted) and send_mode.  `active` is the request of
  // the current start (nullptr while inactive); only the handle's user reads or writes
  // it.  (op's fields serve again so that these fit the tail of the last cache line.)
  int8_t send_mode = -1;  // the SendMode of a send (p2p.h); -1 for a receive
  Request* active = nullptr;

  ~Request() {
    errhandler_unref(errhandler);
    if (holds_type) type_release(ti);
  }

  // progress::Completion: an MPI transfer of this request finished (progress thread).
  void on_complete(const MPI_Status& status, int mpi_error, progress::MpiCall call) override;
};

// A pending request; `user_handle` false: nobody will release it but its completion.
Request* request_new(RequestKind kind, bool user_handle);
// The request of a send that completed in the call that started it (an eager send,
// whose data was copied, a buffered send, a send to EP_PROC_NULL): one shared object
// per process, always complete with an empty status, that request_unref never frees.
// An eager EP_Isend then costs no allocation and no atomic operation on a request,
// and its EP_Wait only reads a line every thread shares.
Request* completed_send_request();
// Publishes `status` and completes: the operation's hold ends (see "Lifetime").
// `inline_payload`: the data waits in inline_data (see "Inline payload").
void request_complete(Request* r, bool inline_payload = false);
// Copies an inline payload to the receive buffer (first observer; see "Inline payload").
void request_take_inline(Request* r);
// The user's handle lets go (pending or complete; see "Lifetime").
void request_unref(Request* r);
// Deletes a Request made by request_new (its cache's or its recycler's last step).
void request_delete(Request* r);
// How many Request objects are on the heap: made by an allocation of request_new (or
// completed_send_request) and not yet deleted.  Counted on those two paths only - a
// request recycled through a thread's cache counts once.  A tally (relaxed): exact for
// a reader ordered after the threads that allocated and deleted (joined them).
int64_t requests_live();
// r keeps `ti`'s description until it is recycled (an operation that outlives the call
// that started it; datatype.h, "Lifetime").  Sets r->ti.
inline void request_hold_type(Request* r, const TypeInfo& ti) {
  type_hold(ti);
  if (r->holds_type) type_release(r->ti);
  r->ti = ti;
  r->holds_type = ti.desc != nullptr;
}
// A small per-thread cache of Request objects: receives and sends allocate one each.
// It lives on the heap, reached through a pointer in fast TLS (progress/fast_tls.h:
// 520 bytes are too many for initial-exec space); request.cc frees it when the thread
// exits (then the pointer is null again).
struct RequestCache {
  Request* items[64];
  int n = 0;
  ~RequestCache() {
    for (int i = 0; i < n; ++i) request_delete(items[i]);
  }
};
extern constinit thread_local RequestCache* t_request_cache EP_FAST_TLS;
// Both holders let go and any inline payload reached the buffer: back to this thread's
// cache (see "Lifetime").  Also the user's release of a request that request_wait()
// saw complete on this thread (request_unref() without its questions); not for the
// shared complete request or a generalized request.
inline void request_recycle(Request* r) {
  if (r->drain_buf != nullptr) std::free(r->drain_buf);
  if (r->holds_type) {
    type_release(r->ti);
    r->holds_type = false;
  }
  RequestCache* cache = t_request_cache;  // nullptr once this thread's cache is gone
  if (cache != nullptr && cache->n < 64) {
    cache->items[cache->n++] = r;
  } else {
    request_delete(r);
  }
}
inline bool request_done(Request* r) {
  // acquire: pairs with the acq_rel fetch_or in request_complete.
  const uint32_t s = r->state.load(std::memory_order_acquire);
  if ((s & Request::kComplete) == 0) return false;
  if ((s & Request::kInline) != 0 && !r->inline_taken) request_take_inline(r);
  return true;
}
// Completion check that also drives the engine once if the request needs it.
bool request_test(Request* r);
// The requests the calling thread is blocked on, from construction to destruction
// (see "Completed by its waiter"): the handles of EP_Waitall (`n` entries,
// EP_REQUEST_NULL allowed; the array must stay valid meanwhile, and the thread may
// null entries whose requests completed), or one request.  An inner scope while one is
// active changes nothing (the outer one covers it).
class WaitScope {
 public:
  WaitScope(const RequestHandle* handles, int n);
  explicit WaitScope(Request* r);
  ~WaitScope();
  WaitScope(const WaitScope&) = delete;
  WaitScope& operator=(const WaitScope&) = delete;

 private:
  RequestHandle single_ = nullptr;  // the one request's handle
  bool active_;
};
// The requests this thread is blocked on (WaitScope's state).
struct WaitSet {
  const RequestHandle* reqs = nullptr;
  int n = 0;     // 0: no scope is active
  int next = 0;  // where the next completion is likely found
};
extern constinit thread_local WaitSet t_waiting EP_FAST_TLS;
// True if the calling thread's WaitScope holds `r` within a few entries of its cursor
// (and moves the cursor past it).  request_complete() asks; tests too.  It looks at a
// few entries from the cursor only: a miss costs the completion its RMW, never its
// correctness.  Inline: every delivery asks.
inline bool waited_here(const Request* r) {
  WaitSet& w = t_waiting;
  const RequestHandle h = reinterpret_cast<RequestHandle>(const_cast<Request*>(r));
  if (w.next < w.n && w.reqs[w.next] == h) {  // the usual case: at the cursor
    ++w.next;
    return true;
  }
  const int end = w.next + 4 < w.n ? w.next + 4 : w.n;
  for (int i = w.next + 1; i < end; ++i) {
    if (w.reqs[i] == h) {
      w.next = i + 1;
      return true;
    }
  }
  return false;
}
// request_complete() of a pending request by the thread blocked on it (waited_here(r)
// said so): nobody else touches its state meanwhile (see "Completed by its waiter") -
// no RMW, no wake (we are the waiter, awake).  Not for a buffered send's request.
inline void request_complete_waited(Request* r, uint32_t bits = Request::kComplete) {
  // relaxed load: only our own writes can be there (a kPendingWaited we set before a
  // sleep); release: publishes the status, pairs with the acquire loads of `state` in
  // request_wait() and request_done() (as request_complete's fetch_or).
  r->state.store(r->state.load(std::memory_order_relaxed) | bits, std::memory_order_release);
}
// Records (fail()) for `call` the message of r's failed MPI call - its name and MPI's
// error string - or of its failed system call, and returns r's error code.  For a
// request with r->mpi_error set.
int report_mpi_failure(const Request* r, const char* call);
// Blocks until complete (runtime/wait.h: spin - driving the engine if the request
// needs MPI -, yield, then sleep on `state` until the completer wakes it).
void request_wait(Request* r);
// Blocks until one of the n requests (nullptr entries skipped; at least one not) is
// complete: EP_Waitany, EP_Waitsome.
void request_wait_any(Request* const* reqs, int n);

}  // namespace ep::runtime

#endif  // EP_RUNTIME_REQUEST_H_
