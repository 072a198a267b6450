// grequest.cc - the C entry points of generalized requests and the status helpers
// (MPI chapter 12.2/12.3).  The Wait/Test family, EP_Request_free, EP_Cancel and
// EP_Request_get_status dispatch kGrequest requests to runtime/grequest.h (api/request.cc).
#include "runtime/grequest.h"

#include <cstring>

#include "api/entry.h"
#include "base/mpi_calls.h"
#include "ep/ep.h"

namespace {
using namespace ep::api;  // NOLINT(build/namespaces): the shared entry-point helpers

// The application's callbacks and extra_state, behind the runtime's callback types
// (runtime/request.h): created by EP_Grequest_start, deleted after free_fn ran (free_fn
// runs exactly once, runtime/grequest.h).
struct UserGreq {
  EP_Grequest_query_function* query;
  EP_Grequest_free_function* free_fn;
  EP_Grequest_cancel_function* cancel;
  void* extra_state;
};
int query_adapter(void* u, ep::Status* st) {
  auto* g = static_cast<UserGreq*>(u);
  EP_Status s;
  std::memcpy(&s, st, sizeof s);  // (the layouts agree: api/entry.h)
  const int err = g->query(g->extra_state, &s);
  std::memcpy(st, &s, sizeof s);
  return err;
}
int free_adapter(void* u) {
  auto* g = static_cast<UserGreq*>(u);
  const int err = g->free_fn(g->extra_state);
  delete g;
  return err;
}
int cancel_adapter(void* u, int complete) {
  auto* g = static_cast<UserGreq*>(u);
  return g->cancel(g->extra_state, complete);
}
}  // namespace

extern "C" {

int EP_Grequest_start(EP_Grequest_query_function* query_fn, EP_Grequest_free_function* free_fn,
                      EP_Grequest_cancel_function* cancel_fn, void* extra_state,
                      EP_Request* request) {
  const char* call = "EP_Grequest_start";
  EP_CHECK_INIT(call);
  if (request == nullptr) return fail(EP_ERR_ARG, call, "request is NULL");
  if (query_fn == nullptr || free_fn == nullptr || cancel_fn == nullptr) {
    return fail(EP_ERR_ARG, call, "%s is NULL",
                query_fn == nullptr  ? "query_fn"
                : free_fn == nullptr ? "free_fn"
                                     : "cancel_fn");
  }
  Request* r = ep::runtime::grequest_start(&query_adapter, &free_adapter, &cancel_adapter,
                                           new UserGreq{query_fn, free_fn, cancel_fn, extra_state});
  *request = reinterpret_cast<EP_Request>(r);
  return EP_SUCCESS;
}

int EP_Grequest_complete(EP_Request request) {
  const char* call = "EP_Grequest_complete";
  EP_CHECK_INIT(call);
  if (request == EP_REQUEST_NULL) return fail(EP_ERR_REQUEST, call, "request is EP_REQUEST_NULL");
  Request* r = as_request(request);
  if (r == nullptr || r->kind != ep::runtime::RequestKind::kGrequest) {
    return fail(EP_ERR_REQUEST, call, "request is not a generalized request");
  }
  if ((r->greq_flags.load(std::memory_order_relaxed) & ep::runtime::kGreqCompleted) != 0) {
    // relaxed: a diagnostic only; completing twice is erroneous in any interleaving.
    return fail(EP_ERR_REQUEST, call, "the generalized request was already completed");
  }
  int err = ep::runtime::grequest_complete(r);
  if (err != EP_SUCCESS) {
    return fail(err, call, "free_fn of the freed generalized request returned %d", err);
  }
  return EP_SUCCESS;
}

int EP_Status_set_elements(EP_Status* status, MPI_Datatype datatype, int count) {
  const char* call = "EP_Status_set_elements";
  EP_CHECK_INIT(call);
  if (status == nullptr) return fail(EP_ERR_ARG, call, "status is NULL");
  if (count < 0) return fail(EP_ERR_COUNT, call, "count %d is negative", count);
  ep::runtime::TypeInfo ti;
  int err = check_type(datatype, &ti, call, "datatype");
  if (err != EP_SUCCESS) return err;
  // MPI's own rule for elements of a (derived) datatype, read back as bytes: the
  // representation EP_Get_elements/EP_Get_count decode.
  MPI_Status st;
  std::memset(&st, 0, sizeof(st));
  EP_MPI(MPI_Status_set_elements(&st, datatype, count));
  MPI_Count bytes = 0;
  EP_MPI(MPI_Get_elements_x(&st, MPI_BYTE, &bytes));
  status->ep_bytes_ = bytes;
  return EP_SUCCESS;
}

int EP_Status_set_cancelled(EP_Status* status, int flag) {
  const char* call = "EP_Status_set_cancelled";
  EP_CHECK_INIT(call);
  if (status == nullptr) return fail(EP_ERR_ARG, call, "status is NULL");
  status->ep_cancelled_ = flag != 0 ? 1 : 0;
  return EP_SUCCESS;
}

}  // extern "C"
