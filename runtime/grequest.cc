#include "runtime/grequest.h"

namespace ep::runtime {
namespace {

void default_status(Status* st) {
  st->EP_SOURCE = kAnySource;
  st->EP_TAG = kAnyTag;
  st->EP_ERROR = EP_SUCCESS;
  st->ep_cancelled_ = 0;
  st->ep_bytes_ = 0;
}

int run_query(Request* r, Status* st) {
  default_status(st);
  return r->query_fn != nullptr ? r->query_fn(r->extra_state, st) : EP_SUCCESS;
}

int run_free(Request* r) { return r->free_fn != nullptr ? r->free_fn(r->extra_state) : EP_SUCCESS; }

}  // namespace

Request* grequest_start(GreqQueryFn* query_fn, GreqFreeFn* free_fn,
                        GreqCancelFn* cancel_fn, void* extra_state) {
  Request* r = request_new(RequestKind::kGrequest, /*user_handle=*/true);
  r->query_fn = query_fn;
  r->free_fn = free_fn;
  r->cancel_fn = cancel_fn;
  r->extra_state = extra_state;
  r->greq_flags.store(0, std::memory_order_relaxed);  // relaxed: not yet shared
  return r;
}

int grequest_complete(Request* r) {
  // acq_rel: pairs with the fetch_or in grequest_free (whichever comes second sees the
  // first one's bit and writes, and runs free_fn).
  const uint32_t before = r->greq_flags.fetch_or(kGreqCompleted, std::memory_order_acq_rel);
  int err = EP_SUCCESS;
  if ((before & kGreqFreed) != 0) err = run_free(r);  // the handle is gone: we are last
  request_complete(r);  // publishes kComplete, wakes a sleeping waiter, ends our hold
  return err;
}

int grequest_finish(Request* r, Status* st) {
  const int qerr = run_query(r, st);
  const int ferr = run_free(r);
  const int err = ferr != EP_SUCCESS ? ferr : qerr;
  st->EP_ERROR = err;
  request_unref(r);  // the user's handle
  return err;
}

int grequest_query(Request* r, Status* st) { return run_query(r, st); }

int grequest_free(Request* r) {
  // acq_rel: pairs with the fetch_or in grequest_complete.
  const uint32_t before = r->greq_flags.fetch_or(kGreqFreed, std::memory_order_acq_rel);
  int err = EP_SUCCESS;
  if ((before & kGreqCompleted) != 0) err = run_free(r);  // completed already: we are last
  request_unref(r);                                       // the user's handle
  return err;
}

int grequest_cancel(Request* r) {
  // acquire: pairs with the acq_rel fetch_or in grequest_complete.
  const bool complete = (r->greq_flags.load(std::memory_order_acquire) & kGreqCompleted) != 0;
  return r->cancel_fn != nullptr ? r->cancel_fn(r->extra_state, complete ? 1 : 0) : EP_SUCCESS;
}

}  // namespace ep::runtime
