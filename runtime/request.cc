#include "runtime/request.h"

#include <time.h>

#include <cstdlib>
#include <cstring>

#include "runtime/bsend.h"
#include "runtime/error.h"

namespace ep::runtime {

Request* request_new(RequestKind kind, int refs) {
  Request* r = new Request;
  r->kind = kind;
  r->refs.store(refs, std::memory_order_relaxed);  // relaxed: not yet shared
  r->status.EP_SOURCE = EP_ANY_SOURCE;
  r->status.EP_TAG = EP_ANY_TAG;
  r->op.req = r;
  return r;
}

void request_unref(Request* r) {
  // acq_rel: the last release sees every other holder's writes before deleting.
  if (r->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    std::free(r->drain_buf);
    delete r;
  }
}

void request_complete(Request* r) {
  if (r->kind == RequestKind::kBsend && r->bsend != nullptr) r->bsend->release(r->segment);
  // release: publishes status; pairs with the acquire in request_done()/request_wait().
  uint32_t old = r->state.exchange(Request::kComplete, std::memory_order_acq_rel);
  if (old == Request::kPendingWaited) progress::futex_wake_all(r->state);
  request_unref(r);
}

void request_wait(Request* r, progress::Policy policy) {
  progress::Backoff b(policy);
  for (;;) {
    uint32_t s = r->state.load(std::memory_order_acquire);  // pairs: request_complete
    if (s == Request::kComplete) return;
    int64_t ns = b.pause();
    if (ns == 0) continue;
    uint32_t expected = Request::kPending;
    // relaxed on failure: we re-read with acquire at the top of the loop.
    if (s == Request::kPendingWaited ||
        r->state.compare_exchange_strong(expected, Request::kPendingWaited,
                                         std::memory_order_relaxed)) {
      progress::futex_wait(r->state, Request::kPendingWaited, ns);
    }
  }
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
