#include "runtime/request.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "base/mpi_calls.h"
#include "progress/fast_tls.h"
#include "runtime/bsend.h"
#include "runtime/error.h"
#include "runtime/node.h"
#include "runtime/runtime.h"
#include "runtime/wait.h"

namespace ep::runtime {

namespace {
// `t_request_cache_owner` (ordinary TLS, touched once per thread) frees this thread's
// RequestCache when the thread exits.
struct RequestCacheOwner {
  ~RequestCacheOwner() {
    delete t_request_cache;
    t_request_cache = nullptr;  // a request recycled after this is deleted instead
  }
};
thread_local RequestCacheOwner t_request_cache_owner;

RequestCache* request_cache() {
  if (t_request_cache == nullptr) {
    static_cast<void>(&t_request_cache_owner);  // constructed here: registers the exit hook
    t_request_cache = new RequestCache;
  }
  return t_request_cache;
}

// Requests on the heap (see requests_live()).  relaxed: a tally that orders nothing;
// its exact readers are ordered after the counting threads by a join.
std::atomic<int64_t> g_requests_live{0};

}  // namespace

void request_delete(Request* r) {
  delete r;
  g_requests_live.fetch_sub(1, std::memory_order_relaxed);  // relaxed: a tally (above)
}

int64_t requests_live() { return g_requests_live.load(std::memory_order_relaxed); }

constinit thread_local RequestCache* t_request_cache EP_FAST_TLS = nullptr;

// The requests this thread is blocked on (see "Completed by its waiter" in request.h).
constinit thread_local WaitSet t_waiting EP_FAST_TLS;

WaitScope::WaitScope(const RequestHandle* handles, int n) : active_(t_waiting.n == 0 && n > 0) {
  if (active_) t_waiting = WaitSet{handles, n, 0};
}

WaitScope::WaitScope(Request* r)
    : single_(reinterpret_cast<RequestHandle>(r)), active_(t_waiting.n == 0) {
  if (active_) t_waiting = WaitSet{&single_, 1, 0};
}

WaitScope::~WaitScope() {
  if (active_) t_waiting = WaitSet{};
}

Request* request_new(RequestKind kind, bool user_handle) {
  Request* r;
  RequestCache* cache = request_cache();
  if (cache->n > 0) {
    r = cache->items[--cache->n];
    r->~Request();
    new (r) Request;
  } else {
    r = new Request;
    g_requests_live.fetch_add(1, std::memory_order_relaxed);  // relaxed: a tally (above)
  }
  r->kind = kind;
  if (!user_handle) {
    r->state.store(Request::kReleased, std::memory_order_relaxed);  // relaxed: not yet shared
  }
  r->status.EP_SOURCE = kAnySource;
  r->status.EP_TAG = kAnyTag;
  r->op.req = r;
  return r;
}

Request* completed_send_request() {
  static Request* const shared = [] {
    Request* r = new Request;  // never deleted: handles to it may outlive EP_Finalize
    g_requests_live.fetch_add(1, std::memory_order_relaxed);  // relaxed: a tally (above)
    r->kind = RequestKind::kSend;
    r->immortal = true;
    r->state.store(Request::kComplete, std::memory_order_relaxed);  // published by the static init
    r->status.EP_SOURCE = kAnySource;
    r->status.EP_TAG = kAnyTag;
    r->op.req = r;
    return r;
  }();
  return shared;
}

void request_take_inline(Request* r) {
  const int64_t n = r->status.ep_bytes_;
  copy_bytes(r->op.target.dst, r->inline_data,
             static_cast<size_t>(whole_elements(n, r->op.target.elem)));
  r->inline_taken = true;  // read by later observers of this request (same thread or ordered)
}

namespace {
// Both holders let go (see "Lifetime" in request.h): back to this thread's cache.  An
// inline payload nobody observed still reaches the buffer (a freed receive).
void recycle(Request* r, uint32_t state) {
  if ((state & Request::kInline) != 0 && !r->inline_taken) request_take_inline(r);
  request_recycle(r);
}
}  // namespace

void request_unref(Request* r) {
  if (r->immortal) return;  // the shared complete request (plain read: never written)
  // acquire: pairs with the completer's acq_rel fetch_or; once kComplete is seen the
  // completer no longer touches the request (but a futex wake), so no write is needed.
  uint32_t s = r->state.load(std::memory_order_acquire);
  if ((s & Request::kComplete) == 0) {
    // acq_rel: pairs with the completer's fetch_or - whichever comes second recycles.
    s = r->state.fetch_or(Request::kReleased, std::memory_order_acq_rel);
    if ((s & Request::kComplete) == 0) return;  // still pending: the completion recycles it
  }
  recycle(r, s);
}

void request_complete(Request* r, bool inline_payload) {
  if (r->kind == RequestKind::kBsend && r->bsend != nullptr) {
    r->bsend->release(r->segment, r->payload_leaving);
  }
  const uint32_t bits = inline_payload ? Request::kComplete | Request::kInline : Request::kComplete;
  if (waited_here(r)) {
    request_complete_waited(r, bits);
    return;
  }
  // acq_rel: release publishes status (pairs with the acquire in request_done() and
  // request_wait()); acquire pairs with a user's kReleased fetch_or before we recycle.
  const uint32_t old = r->state.fetch_or(bits, std::memory_order_acq_rel);
  if ((old & Request::kReleased) != 0) {
    recycle(r, old | bits);  // nobody holds a handle: nobody waits either
    return;
  }
  // From here on the user may already have recycled r: only the futex wake may follow
  // (at most a spurious wake of the word's next user, who rechecks).
  if ((old & Request::kPendingWaited) != 0) progress::futex_wake_all(r->state);
}

bool request_test(Request* r) {
  if (request_done(r)) return true;
  if (r->needs_node && node_poll_request(r) > 0 && request_done(r)) return true;
  if (r->needs_engine && engine().try_progress()) return request_done(r);
  return false;
}

namespace {
// A delivery on the matcher's line (see "Delivered on the line" in matching.h): the
// waiter completes its own request - no other thread touches it any more.
bool take_from_line(Request* r, Matcher& m) {
  Matcher::LineResult res;
  if (!m.collect(r, &res)) return false;
  r->status.EP_SOURCE = res.source;
  r->status.EP_TAG = res.tag;
  r->status.EP_ERROR = EP_SUCCESS;
  r->status.ep_bytes_ = res.bytes;
  // (never more than kLineBytes: the bound tells the compiler so too)
  copy_bytes(r->op.target.dst, res.data,
             std::min(static_cast<size_t>(res.bytes), static_cast<size_t>(Matcher::kLineBytes)));
  // relaxed load: only our own writes can be there; release: as any completion.
  r->state.store(r->state.load(std::memory_order_relaxed) | Request::kComplete,
                 std::memory_order_release);
  return true;
}
}  // namespace

namespace {
// request_wait's side of the wait loop (wait.h).  A blocking receive from this process
// also polls the matcher's line ("Delivered on the line" in matching.h) and withdraws
// from it before it sleeps: nobody wakes a sleeper on the line.  A request that needs
// node traffic drains its endpoint's ring in every poll, attending it until the sleep
// (NodeWatch, runtime/node.h).
struct RequestWait {
  RequestWait(Request* req, Matcher* m) : r(req), line(m), node(req) {}
  Request* r;
  Matcher* line;
  NodeWatch node;
  bool poll() { return node.active() && node.poll(); }
  bool ready() {
    const uint32_t s = r->state.load(std::memory_order_acquire);  // pairs: request_complete
    if ((s & Request::kComplete) != 0) {
      if ((s & Request::kInline) != 0 && !r->inline_taken) request_take_inline(r);
      return true;
    }
    return line != nullptr && take_from_line(r, *line);
  }
  bool sleep(int64_t ns) {
    uint32_t expected = Request::kPending;
    // relaxed: the futex re-checks the word and ready() re-reads it with acquire.
    if (r->state.load(std::memory_order_relaxed) != Request::kPendingWaited &&
        !r->state.compare_exchange_strong(expected, Request::kPendingWaited,
                                          std::memory_order_relaxed)) {
      return false;
    }
    return progress::futex_wait(r->state, Request::kPendingWaited, ns);
  }
  bool before_sleep() {
    if (line == nullptr) return !withdraw_node();
    if (!line->withdraw_line(r)) {  // another thread is matching: it will not be long
      sched_yield();
      return false;
    }
    Matcher* m = line;
    line = nullptr;
    take_from_line(r, *m);  // a delivery that came before the withdrawal completes r now
    return false;           // ready() looks again before we sleep
  }
  // The ring too: from now on its records ring the doorbell (ready() looks again).
  bool withdraw_node() { return node.withdraw(); }
  const std::atomic<uint32_t>* watch() const { return &r->state; }
  uint32_t mask() const { return Request::kComplete; }
  // A completion by a thread of this process: one load and one `pause` per round, as the
  // atomic-flag baseline of the local ping-pong does.  Not for a request that needs node
  // traffic: its ring is polled every round (poll()), not once per 16 of them.
  bool spin_lightly() {
    if (node.active()) return false;
    for (int k = 0; k < 16; ++k) {
      progress::cpu_relax();
      // relaxed: ready() re-reads with acquire.
      if ((r->state.load(std::memory_order_relaxed) & Request::kComplete) != 0 ||
          (line != nullptr && line->delivered_hint())) {
        return true;
      }
    }
    return false;
  }
};
}  // namespace

void request_wait(Request* r) {
  // Already complete (the common case in EP_Waitall over a window of receives that one
  // pass delivered): no scope, no clock.
  if (request_done(r)) return;
  WaitScope scope(r);  // unless the caller's scope covers r already (EP_Waitall)
  RequestWait w(r, r->op.line_wait ? &r->owner->matcher : nullptr);
  wait_loop(w, r->needs_engine ? Drive::kYes : Drive::kNo,
            r->kind == RequestKind::kColl ? Crowd::kYes : Crowd::kNo);
}

namespace {
// request_wait_any's side of the wait loop: it sleeps on every pending request's state
// at once (futex_wait_any), each armed as request_wait arms one.
struct AnyWait {
  Request* const* reqs;
  int n;
  // Drains the rings of the requests that need node traffic (without attending them:
  // their records ring the doorbell, whose pass completes and wakes).
  bool poll() {
    bool got = false;
    for (int i = 0; i < n; ++i) {
      if (reqs[i] != nullptr && reqs[i]->needs_node) got |= node_poll_request(reqs[i]) > 0;
    }
    return got;
  }
  bool ready() {
    for (int i = 0; i < n; ++i) {
      if (reqs[i] != nullptr && request_done(reqs[i])) return true;
    }
    return false;
  }
  bool sleep(int64_t ns) {
    std::atomic<uint32_t>* words[progress::kMaxWaitWords];
    uint32_t expected[progress::kMaxWaitWords];
    int k = 0;
    for (int i = 0; i < n; ++i) {
      if (reqs[i] == nullptr) continue;
      std::atomic<uint32_t>& st = reqs[i]->state;
      uint32_t s = Request::kPending;
      // relaxed: ready() below re-reads with acquire, the kernel compares the words.
      if (st.load(std::memory_order_relaxed) != Request::kPendingWaited &&
          !st.compare_exchange_strong(s, Request::kPendingWaited, std::memory_order_relaxed)) {
        return false;  // it changed: look again
      }
      if (k < progress::kMaxWaitWords) {
        words[k] = &st;
        expected[k++] = Request::kPendingWaited;
      }
    }
    if (k == 0 || ready()) return false;
    // Beyond kMaxWaitWords requests the others are polled once a millisecond.
    const int64_t timeout = k < n_pending() ? std::min<int64_t>(ns, 1'000'000) : ns;
    return progress::futex_wait_any(words, expected, k, timeout);
  }
  int n_pending() const {
    int m = 0;
    for (int i = 0; i < n; ++i) m += reqs[i] != nullptr;
    return m;
  }
  bool before_sleep() { return true; }
  const std::atomic<uint32_t>* watch() const { return nullptr; }
  uint32_t mask() const { return 0; }
  bool spin_lightly() {
    for (int k = 0; k < 4; ++k) {
      progress::cpu_relax();
      if (ready()) return true;
    }
    return false;
  }
};
}  // namespace

void request_wait_any(Request* const* reqs, int n) {
  AnyWait w{reqs, n};
  bool engine = false;
  for (int i = 0; i < n; ++i) engine |= reqs[i] != nullptr && reqs[i]->needs_engine;
  wait_loop(w, engine ? Drive::kYes : Drive::kNo);
}

void Request::on_complete(const MPI_Status& st, int mpi_error, progress::MpiCall call) {
  if (mpi_error != MPI_SUCCESS) {
    status.EP_ERROR = from_mpi(mpi_error);
    this->mpi_error = mpi_error;
    mpi_call = call;
  } else if (kind == RequestKind::kRecv || kind == RequestKind::kDrain) {
    if (drain_buf != nullptr) {
      // Truncated rendezvous: the whole payload arrived in drain_buf; keep the prefix.
      unpack(drain_buf, drain_bytes, buf, count, ti);
      status.ep_bytes_ = ti.size * count < drain_bytes ? ti.size * count : drain_bytes;
    } else {
      MPI_Count n = 0;
      EP_MPI(MPI_Get_elements_x(&st, MPI_BYTE, &n));
      status.ep_bytes_ = n;
    }
  }
  request_complete(this);
}

int report_mpi_failure(const Request* r, const char* call) {
  if (r->os_error != 0) {
    return fail(r->status.EP_ERROR, call,
                "process_vm_readv failed: %s (the payload could not be read from the sending "
                "process, which may have ended)",
                std::strerror(r->os_error));
  }
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  EP_MPI(MPI_Error_string(r->mpi_error, text, &len));
  return fail(r->status.EP_ERROR, call, "%s failed: %s", progress::mpi_call_name(r->mpi_call),
              text);
}

}  // namespace ep::runtime
