#include "runtime/request.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "progress/fast_tls.h"
#include "runtime/bsend.h"
#include "runtime/error.h"
#include "runtime/runtime.h"

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

}  // namespace

constinit thread_local RequestCache* t_request_cache EP_FAST_TLS = nullptr;

// The requests this thread is blocked on (see "Completed by its waiter" in request.h).
constinit thread_local WaitSet t_waiting EP_FAST_TLS;

WaitScope::WaitScope(const EP_Request* handles, int n) : active_(t_waiting.n == 0 && n > 0) {
  if (active_) t_waiting = WaitSet{handles, n, 0};
}

WaitScope::WaitScope(Request* r)
    : single_(reinterpret_cast<EP_Request>(r)), active_(t_waiting.n == 0) {
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
  }
  r->kind = kind;
  if (!user_handle) {
    r->state.store(Request::kReleased, std::memory_order_relaxed);  // relaxed: not yet shared
  }
  r->status.EP_SOURCE = EP_ANY_SOURCE;
  r->status.EP_TAG = EP_ANY_TAG;
  r->op.req = r;
  return r;
}

Request* completed_send_request() {
  static Request* const shared = [] {
    Request* r = new Request;  // never deleted: handles to it may outlive EP_Finalize
    r->kind = RequestKind::kSend;
    r->immortal = true;
    r->state.store(Request::kComplete, std::memory_order_relaxed);  // published by the static init
    r->status.EP_SOURCE = EP_ANY_SOURCE;
    r->status.EP_TAG = EP_ANY_TAG;
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
  if (r->kind == RequestKind::kBsend && r->bsend != nullptr) r->bsend->release(r->segment);
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
  if (r->needs_engine && runtime()->engine.try_progress()) return request_done(r);
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

// Rounds of the tight polling loop between two steps of the back-off: about 550
// cycles here (`pause` takes 34), so the back-off, which reads the clock at every 16th
// step, still sees its yield slices (Backoff::kSliceNs) within about 3 us.  64 rounds
// measured the same round trip but stretched that to 13 us.
constexpr int kLightSpins = 16;

void request_wait(Request* r, progress::Policy policy) {
  // Already complete (the common case in EP_Waitall over a window of receives that one
  // pass delivered): return before announcing ourselves as a helper, which costs two
  // RMWs on the engine's shared counter and a clock read.
  if (request_done(r)) return;
  WaitScope scope(r);  // unless the caller's scope covers r already (EP_Waitall)
  progress::Backoff b(policy);
  // Only a transfer with another process involves the engine.
  progress::Engine* engine = r->needs_engine ? &runtime()->engine : nullptr;
  // While we help, the progress thread stands aside (see Engine::helper_enter).
  bool helping = r->needs_engine;
  if (helping) engine->helper_enter();
  // A blocking receive from this process: its message may arrive on the line.
  Matcher* line = r->op.line_wait ? &r->owner->matcher : nullptr;
  for (;;) {
    uint32_t s = r->state.load(std::memory_order_acquire);  // pairs: request_complete
    if ((s & Request::kComplete) != 0) {
      if ((s & Request::kInline) != 0 && !r->inline_taken) request_take_inline(r);
      if (helping) engine->helper_leave(/*wake_now=*/false);
      return;
    }
    if (line != nullptr && take_from_line(r, *line)) return;  // (never helping: no engine)
    // A transfer with another process: drive MPI ourselves rather than wait for the
    // progress thread to be scheduled (see "The progress baton" in engine.h).
    if (r->needs_engine && !helping && b.spinning()) {
      engine->helper_enter();
      helping = true;
    }
    if (r->needs_engine && engine->try_progress(&r->state, Request::kComplete)) {
      // A pass that made progress keeps a point-to-point waiter hot.  A collective
      // waiter's passes mostly serve other traffic (window operations, other
      // communicators) while its operation waits for slower endpoints: it backs off
      // to sleep as usual and leaves the passes to the progress thread.
      if (r->kind != RequestKind::kColl) b.reset();
      continue;
    }
    if (engine == nullptr && policy != progress::Policy::kYield && b.spinning()) {
      // A completion by a thread of this process: poll in a tight loop (a load and a
      // `pause` per round) between the back-off's steps (see "Spinning lightly").
      bool done = false;
      for (int k = 0; k < kLightSpins && !done; ++k) {
        progress::cpu_relax();
        done = (r->state.load(std::memory_order_relaxed) & Request::kComplete) != 0 ||
               (line != nullptr && line->delivered_hint());
      }
      if (done) continue;  // the loop's head re-reads it with acquire
    }
    // A helper's failed pass ran an MPI probe, a longer pause than `pause` itself.
    int64_t ns = b.pause(/*relax=*/!helping);
    if (ns == 0) {
      // A collective has several endpoint threads of this process waiting at once,
      // usually more threads than cores: spinning would keep the one thread that can
      // finish the operation off its core for a whole time slice.  Likewise while
      // another thread of this process holds the baton: it completes our request, and
      // it may need our core to do so.
      if (r->kind == RequestKind::kColl || (r->needs_engine && engine->baton_held())) {
        sched_yield();
      }
      continue;
    }
    if (line != nullptr) {            // nobody wakes a sleeper on the line: stop polling it first
      if (!line->withdraw_line(r)) {  // another thread is matching: it will not be long
        sched_yield();
        continue;
      }
      if (take_from_line(r, *line)) return;  // delivered before we withdrew
      line = nullptr;
      continue;  // recheck the state before sleeping
    }
    if (helping) {  // we stop helping before sleeping: the progress thread takes over
      engine->helper_leave(/*wake_now=*/true);
      helping = false;
    }
    uint32_t expected = Request::kPending;
    // relaxed on failure: we re-read with acquire at the top of the loop.
    if (s == Request::kPendingWaited ||
        r->state.compare_exchange_strong(expected, Request::kPendingWaited,
                                         std::memory_order_relaxed)) {
      progress::futex_wait(r->state, Request::kPendingWaited, ns);
    }
  }
}

void generation_wait(std::atomic<uint32_t>& word, uint32_t seen, std::atomic<int>& sleepers) {
  const progress::Policy policy = runtime()->config.progress_policy;
  progress::Backoff b(policy);
  while (word.load(std::memory_order_acquire) == seen) {  // pairs: generation_advance
    int64_t ns = b.pause();
    if (ns == 0) {
      if (policy != progress::Policy::kSpin) sched_yield();
      continue;
    }
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    if (word.load(std::memory_order_seq_cst) == seen) progress::futex_wait(word, seen, ns);
    sleepers.fetch_sub(1, std::memory_order_relaxed);  // relaxed: only spares a wake
  }
}

void generation_advance(std::atomic<uint32_t>& word, std::atomic<int>& sleepers) {
  word.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers.load(std::memory_order_seq_cst) > 0) progress::futex_wake_all(word);
}

int wait_mpi(MPI_Request* reqs, int n) {
  const progress::Policy policy = runtime()->config.progress_policy;
  progress::Engine& engine = runtime()->engine;
  progress::Backoff b(policy);
  bool polling = false;  // the progress thread was asked to keep polling
  int err = MPI_SUCCESS;
  for (;;) {
    int flag = 0;
    err = MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE);
    if (flag != 0 || err != MPI_SUCCESS) break;
    const int64_t ns = b.pause();
    if (!polling && !b.spinning()) {  // a long wait: the progress thread serves the rest
      engine.keep_polling_enter();
      polling = true;
    }
    if (ns == 0) continue;  // pause() yields once the wait is past its spin phase
    struct timespec ts = {static_cast<time_t>(ns / 1'000'000'000),
                          static_cast<long>(ns % 1'000'000'000)};
    nanosleep(&ts, nullptr);
  }
  if (polling) engine.keep_polling_leave();
  return err;
}

void Request::on_complete(const MPI_Status& st, int mpi_error) {
  if (kind == RequestKind::kRecv || kind == RequestKind::kDrain) {
    if (mpi_error != MPI_SUCCESS) {
      status.EP_ERROR = from_mpi(mpi_error);
    } else if (drain_buf != nullptr) {
      // Truncated rendezvous: the whole payload arrived in drain_buf; keep the prefix.
      unpack(drain_buf, drain_bytes, buf, count, type, ti);
      status.ep_bytes_ = ti.size * count < drain_bytes ? ti.size * count : drain_bytes;
    } else {
      MPI_Count n = 0;
      MPI_Get_elements_x(&st, MPI_BYTE, &n);
      status.ep_bytes_ = n;
    }
  } else if (mpi_error != MPI_SUCCESS) {
    status.EP_ERROR = from_mpi(mpi_error);
  }
  request_complete(this);
}

}  // namespace ep::runtime
