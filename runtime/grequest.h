// grequest.h - generalized requests (MPI chapter 12.2): operations the user performs
// and completes, with the library's Wait/Test/Cancel/Request_free semantics.
//
// What it is: a Request of kind kGrequest that belongs to no endpoint.  It holds the
// user's query_fn, free_fn, cancel_fn and extra_state.  Two holders, as for every
// request (request.h, "Lifetime"): the user's handle (released by the completing Wait/Test or by
// EP_Request_free) and the "operation" (released by EP_Grequest_complete, which
// completes it through request_complete, so a thread sleeping in request_wait on the
// futex wakes at once).
//
// Callback rules (who runs what):
//   query_fn  grequest_finish (the Wait/Test that completes the request) and
//             grequest_query (EP_Request_get_status on a completed request, any
//             number of times);
//   free_fn   exactly once: grequest_finish after query_fn; or, for a handle freed
//             with EP_Request_free, whichever of grequest_free and grequest_complete
//             runs last (the kFreed/kCompleted handshake below decides);
//   cancel_fn grequest_cancel, with complete = EP_Grequest_complete already called.
// Callbacks run on the calling thread, never under a libep lock.
//
// Threading: grequest_complete may run on any thread, concurrently with a waiter on
// the request (grequest_finish runs only after the waiter saw kComplete) or with
// EP_Request_free of the handle.  The other calls follow MPI's rule that one request
// is waited/tested/freed by one thread at a time.
//
// Memory ordering: grequest_complete and grequest_free each fetch_or their bit into
// greq_flags with acq_rel; exactly one of them sees the other's bit and runs free_fn,
// after the other thread's writes (acquire half) - so free_fn runs once, after both
// calls happened.  request_complete's release publishes the completion to waiters
// (acquire in request_done/request_wait).
#ifndef EP_RUNTIME_GREQUEST_H_
#define EP_RUNTIME_GREQUEST_H_

#include "base/types.h"
#include "runtime/request.h"

namespace ep::runtime {

// Bits of Request::greq_flags.
inline constexpr uint32_t kGreqCompleted = 1;  // EP_Grequest_complete was called
inline constexpr uint32_t kGreqFreed = 2;      // EP_Request_free was called on the handle

// A new generalized request (held by the user handle + the operation, request.h "Lifetime").  Never
// fails.
Request* grequest_start(GreqQueryFn* query_fn, GreqFreeFn* free_fn,
                        GreqCancelFn* cancel_fn, void* extra_state);
// EP_Grequest_complete: marks it complete and wakes waiters.  If the handle was freed
// before, runs free_fn here and returns its code; else EP_SUCCESS.  Thread-safe.
int grequest_complete(Request* r);
// The Wait/Test call that completes r (request_done(r) is true): fills *st (never
// null) with query_fn, then runs free_fn; st->EP_ERROR and the result are free_fn's
// code if it failed, else query_fn's.  Releases the user handle.
int grequest_finish(Request* r, Status* st);
// EP_Request_get_status on a completed r: query_fn into *st (never null); its code.
int grequest_query(Request* r, Status* st);
// EP_Request_free: releases the user handle; runs free_fn now (returning its code)
// if EP_Grequest_complete was already called, else leaves that to grequest_complete.
int grequest_free(Request* r);
// EP_Cancel: cancel_fn(extra_state, complete); its code.
int grequest_cancel(Request* r);

}  // namespace ep::runtime

#endif  // EP_RUNTIME_GREQUEST_H_
