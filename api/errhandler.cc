// errhandler.cc - the C entry points of error handlers: a communicator's handler (set,
// get), the user's own handlers (create, call, free).
//
// A user handler is an ep_errhandler_s (runtime/errhandler.h), reference-counted: the
// handle EP_Comm_create_errhandler gives holds one reference, and so does every
// communicator handle that uses it and every request started on one.  Like MPI (and
// MPICH), EP_Comm_get_errhandler gives the caller a new reference to a user handler,
// to be released with EP_Errhandler_free; EP_Errhandler_free of a predefined handler
// releases nothing.  A handler runs in the thread of the failing call, with a pointer to
// a copy of the communicator handle and the code; the call returns that code.
#include "runtime/errhandler.h"

#include "api/entry.h"
#include "ep/ep.h"

namespace {

using namespace ep::api;  // NOLINT(build/namespaces): the shared entry-point helpers

EP_Errhandler as_user_errhandler(EP_Errhandler eh) {
  return (plausible_handle(eh) && eh->magic == ep_errhandler_s::kMagic) ? eh : nullptr;
}

bool is_predefined(EP_Errhandler eh) { return eh == EP_ERRORS_ARE_FATAL || eh == EP_ERRORS_RETURN; }

const char* describe(EP_Errhandler eh) {
  return eh == EP_ERRHANDLER_NULL ? "EP_ERRHANDLER_NULL" : "not a valid error handler";
}

}  // namespace

namespace ep::api {

int call_user_errhandler(EP_Errhandler eh, EP_Comm comm, int code) {
  EP_Comm c = comm;  // the handler may write both
  int k = code;
  eh->fn(&c, &k);
  return code;
}

}  // namespace ep::api

extern "C" {

int EP_Comm_set_errhandler(EP_Comm comm, EP_Errhandler eh) {
  const char* call = "EP_Comm_set_errhandler";
  EP_GET_COMM(ep, comm, call);
  if (!is_predefined(eh) && as_user_errhandler(eh) == nullptr) {
    return handle(ep, fail(EP_ERR_ARG, call,
                           "errhandler is %s (neither predefined nor made by "
                           "EP_Comm_create_errhandler)",
                           describe(eh)));
  }
  ep::runtime::errhandler_assign(&ep->errhandler, eh);
  return EP_SUCCESS;
}

int EP_Comm_get_errhandler(EP_Comm comm, EP_Errhandler* eh) {
  EP_GET_COMM(ep, comm, "EP_Comm_get_errhandler");
  if (eh == nullptr)
    return handle(ep, fail(EP_ERR_ARG, "EP_Comm_get_errhandler", "errhandler is NULL"));
  ep::runtime::errhandler_ref(ep->errhandler);  // the caller's reference (see the top)
  *eh = ep->errhandler;
  return EP_SUCCESS;
}

int EP_Comm_create_errhandler(EP_Comm_errhandler_function* fn, EP_Errhandler* errhandler) {
  const char* call = "EP_Comm_create_errhandler";
  EP_CHECK_INIT(call);
  if (fn == nullptr) return fail(EP_ERR_ARG, call, "comm_errhandler_fn is NULL");
  if (errhandler == nullptr) return fail(EP_ERR_ARG, call, "errhandler is NULL");
  auto* h = new ep_errhandler_s;
  h->fn = fn;
  *errhandler = h;
  return EP_SUCCESS;
}

int EP_Comm_call_errhandler(EP_Comm comm, int errorcode) {
  const char* call = "EP_Comm_call_errhandler";
  EP_GET_COMM(ep, comm, call);
  // MPI 3.1 section 8.3.6: the handler runs (EP_ERRORS_ARE_FATAL aborts); the call
  // returns EP_SUCCESS once it returned.  The code is the user's, any value: it is not
  // recorded as a libep failure.  EP_SUCCESS calls nothing.
  handle(ep, errorcode);
  return EP_SUCCESS;
}

int EP_Errhandler_free(EP_Errhandler* errhandler) {
  const char* call = "EP_Errhandler_free";
  EP_CHECK_INIT(call);
  if (errhandler == nullptr) return fail(EP_ERR_ARG, call, "errhandler is NULL");
  EP_Errhandler eh = *errhandler;
  if (!is_predefined(eh) && as_user_errhandler(eh) == nullptr) {
    return fail(EP_ERR_ARG, call, "*errhandler is %s", describe(eh));
  }
  *errhandler = EP_ERRHANDLER_NULL;
  ep::runtime::errhandler_unref(eh);  // the handle's reference; users keep theirs
  return EP_SUCCESS;
}

}  // extern "C"
