// request.cc - the C entry points of requests: the Wait/Test family, EP_Request_free,
// EP_Cancel, EP_Test_cancelled, EP_Request_get_status.  A generalized request
// (RequestKind::kGrequest) is completed, freed, cancelled and queried here through
// runtime/grequest.h; its own calls are grequest.cc.
//
// A persistent request (RequestKind::kPersistent; runtime/p2p.h, "Persistent requests")
// is waited for through its started operation's request (awaited()): every call here
// treats an inactive one as EP_REQUEST_NULL - the empty status at once, EP_UNDEFINED
// from the any/some forms when all are null or inactive - but keeps its handle; the
// call that completes an active one releases the operation's request and leaves it
// inactive.  For the other requests this costs one comparison of the kind.
//
// The call that finds a request complete completes it (finish()).  Only the
// multi-completion calls write a status's EP_ERROR, when they return EP_ERR_IN_STATUS
// (API.md; MPI 3.1 section 3.2.5).
#include "api/request.h"

#include <vector>

#include "api/entry.h"
#include "ep/ep.h"
#include "runtime/grequest.h"
#include "runtime/p2p.h"
#include "runtime/request.h"

namespace {

using namespace ep::api;  // NOLINT(build/namespaces): the shared entry-point helpers

// A handle the caller checked with as_request (or a validated array's entry).
Request* req_of(EP_Request h) { return reinterpret_cast<Request*>(h); }

// The request a Wait/Test of the request r waits for: r itself, or the operation a
// persistent request started.  False (r untouched) for an inactive persistent request.
[[gnu::always_inline]] inline bool awaited(Request*& r) {
  if (r->kind == ep::runtime::RequestKind::kPersistent) [[unlikely]] {
    if (r->active == nullptr) return false;
    r = r->active;
  }
  return true;
}

[[gnu::cold]] int request_error(EP_Request h, const char* call, const char* arg) {
  return fail(EP_ERR_REQUEST, call, "%s is %s", arg,
              h == EP_REQUEST_NULL ? "EP_REQUEST_NULL" : "not a valid request handle");
}

// An array argument of the Wait/Test family: its length, the array, every handle in it
// (EP_REQUEST_NULL allowed).  *persistent: whether one of them is a persistent request.
int check_requests(int n, EP_Request reqs[], const char* call, bool* persistent = nullptr) {
  if (n < 0) return fail(EP_ERR_COUNT, call, "count %d is negative", n);
  if (n > 0 && reqs == nullptr) return fail(EP_ERR_ARG, call, "array of requests is NULL");
  bool any_persistent = false;
  for (int i = 0; i < n; ++i) {
    if (reqs[i] == EP_REQUEST_NULL) continue;
    const Request* r = as_request(reqs[i]);
    if (r == nullptr) {
      return fail(EP_ERR_REQUEST, call, "requests[%d] is not a valid request handle", i);
    }
    any_persistent |= r->kind == ep::runtime::RequestKind::kPersistent;
  }
  if (persistent != nullptr) *persistent = any_persistent;
  return EP_SUCCESS;
}

// The handles of the requests the entries of `reqs` wait for (awaited(); null for a null
// or inactive entry): what a WaitScope or request_wait_any watches when some entries are
// persistent requests.
std::vector<EP_Request> awaited_handles(int n, const EP_Request reqs[]) {
  std::vector<EP_Request> v(static_cast<size_t>(n), EP_REQUEST_NULL);
  for (int i = 0; i < n; ++i) {
    Request* r = req_of(reqs[i]);
    if (r != nullptr && awaited(r)) v[static_cast<size_t>(i)] = reinterpret_cast<EP_Request>(r);
  }
  return v;
}

// request_wait_any over the requests the entries of `reqs` wait for (at least one
// entry is neither null nor inactive).
void wait_any(int n, EP_Request reqs[]) {
  bool persistent = false;
  for (int i = 0; i < n; ++i) {
    persistent |= reqs[i] != EP_REQUEST_NULL &&
                  req_of(reqs[i])->kind == ep::runtime::RequestKind::kPersistent;
  }
  if (!persistent) {
    ep::runtime::request_wait_any(reinterpret_cast<Request* const*>(reqs), n);
    return;
  }
  const std::vector<EP_Request> ops = awaited_handles(n, reqs);
  ep::runtime::request_wait_any(reinterpret_cast<Request* const*>(ops.data()), n);
}

// finish() of a generalized or a persistent request.
[[gnu::noinline]] int finish_special(EP_Request* handle_ptr, EP_Status* st, const char* call) {
  Request* r = reinterpret_cast<Request*>(*handle_ptr);
  if (r->kind == ep::runtime::RequestKind::kPersistent) {
    // The operation's request is released; the handle stays, inactive.
    Request* op = r->active;
    copy_status(op, st);
    const int err = op->status.EP_ERROR;
    if (op->mpi_error != MPI_SUCCESS) ep::runtime::report_mpi_failure(op, call);
    ep::runtime::request_unref(op);
    r->active = nullptr;
    return err;
  }
  ep::Status local;
  int err = ep::runtime::grequest_finish(r, &local);
  write_status(st, local);
  *handle_ptr = EP_REQUEST_NULL;
  if (err != EP_SUCCESS) {
    fail(err, call, "a callback of a generalized request returned %d", err);
  }
  return err;
}

// Completes a finished request: status out, reference dropped, handle nulled.  A
// generalized request runs its query_fn and free_fn here (the completing call); an
// active persistent request whose operation finished becomes inactive, its handle kept.
// The caller's EP_ERROR is left alone (write_status); the multi-completion calls
// write it themselves when they return EP_ERR_IN_STATUS.
int finish(EP_Request* handle_ptr, EP_Status* st, const char* call) {
  Request* r = reinterpret_cast<Request*>(*handle_ptr);
  // kGrequest and kPersistent (the last kinds): one comparison.
  if (r->kind >= ep::runtime::RequestKind::kGrequest) [[unlikely]] {
    return finish_special(handle_ptr, st, call);
  }
  copy_status(r, st);
  int err = r->status.EP_ERROR;
  if (r->mpi_error != MPI_SUCCESS) ep::runtime::report_mpi_failure(r, call);
  ep::runtime::request_unref(r);
  *handle_ptr = EP_REQUEST_NULL;
  return err;
}

// finish() of the completed operation `op` that the handle *h waits for, under the error
// handler of the request *h names (a persistent request's own, not its operation's): the
// handler and communicator are read, and the handler held, before finish() may release
// them.  A truncation that no failed MPI call explains gets its message here.
int finish_handled(EP_Request* h, const Request* op, EP_Status* st, const char* call) {
  const Request* owner = req_of(*h);
  const EP_Errhandler eh = owner->errhandler;
  const EP_Comm comm = owner->errcomm;
  const bool mpi_failed = op->kind != ep::runtime::RequestKind::kGrequest && op->mpi_error != 0;
  ep::runtime::errhandler_ref(eh);
  int err = finish(h, st, call);
  if (err == EP_ERR_TRUNCATE && !mpi_failed) {
    fail(err, call, "the message was longer than the receive buffer");
  }
  err = handle(eh, comm, err);
  ep::runtime::errhandler_unref(eh);
  return err;
}

int waitall_impl(int count, EP_Request requests[], EP_Status statuses[], const char* call) {
  EP_CHECK_INIT(call);
  bool persistent = false;
  int err = check_requests(count, requests, call, &persistent);
  if (err != EP_SUCCESS) return err;
  bool any_error = false;
  std::vector<int> codes(static_cast<size_t>(count), EP_SUCCESS);
  // With persistent requests the scope holds the requests their operations complete;
  // an entry is nulled once finished, as finish() nulls a handle (request.h, WaitScope).
  std::vector<EP_Request> ops;
  if (persistent) [[unlikely]] {
    ops = awaited_handles(count, requests);
  }
  {
    // The array's requests are ours until we return (see "Completed by its waiter" in
    // runtime/request.h).
    ep::runtime::WaitScope scope(persistent ? ops.data() : requests, count);
    for (int i = 0; i < count; ++i) {
      EP_Status* st = statuses != EP_STATUSES_IGNORE ? &statuses[i] : EP_STATUS_IGNORE;
      Request* r = req_of(requests[i]);
      if (r == nullptr || !awaited(r)) {
        empty_status(st);
      } else {
        ep::runtime::request_wait(r);
        codes[i] = finish(&requests[i], st, call);
        if (persistent) ops[static_cast<size_t>(i)] = EP_REQUEST_NULL;
        any_error |= codes[i] != EP_SUCCESS;
      }
    }
  }
  if (!any_error) return EP_SUCCESS;
  if (statuses != EP_STATUSES_IGNORE) {
    for (int i = 0; i < count; ++i) statuses[i].EP_ERROR = codes[i];
  }
  return fail(EP_ERR_IN_STATUS, call, "a request failed; see its status");
}

int testany_impl(int count, EP_Request requests[], int* index, int* flag, EP_Status* status,
                 const char* call) {
  EP_CHECK_INIT(call);
  int err = check_requests(count, requests, call);
  if (err != EP_SUCCESS) return err;
  if (index == nullptr || flag == nullptr) return fail(EP_ERR_ARG, call, "index or flag is NULL");
  bool all_null = true;  // every entry null or inactive
  for (int i = 0; i < count; ++i) {
    Request* r = req_of(requests[i]);
    if (r == nullptr || !awaited(r)) continue;
    all_null = false;
    if (!ep::runtime::request_test(r)) continue;
    *index = i;
    *flag = 1;
    return finish_handled(&requests[i], r, status, call);
  }
  *index = EP_UNDEFINED;
  *flag = all_null ? 1 : 0;
  if (all_null) empty_status(status);
  return EP_SUCCESS;
}

int testsome_impl(int incount, EP_Request requests[], int* outcount, int indices[],
                  EP_Status statuses[], const char* call) {
  EP_CHECK_INIT(call);
  int err = check_requests(incount, requests, call);
  if (err != EP_SUCCESS) return err;
  if (outcount == nullptr || (incount > 0 && indices == nullptr)) {
    return fail(EP_ERR_ARG, call, "outcount or indices is NULL");
  }
  bool all_null = true, any_error = false;
  int n = 0;
  std::vector<int> codes;
  for (int i = 0; i < incount; ++i) {
    Request* r = req_of(requests[i]);
    if (r == nullptr || !awaited(r)) continue;  // null or inactive
    all_null = false;
    if (!ep::runtime::request_test(r)) continue;
    codes.push_back(
        finish(&requests[i], statuses != EP_STATUSES_IGNORE ? &statuses[n] : nullptr, call));
    any_error |= codes.back() != EP_SUCCESS;
    indices[n++] = i;
  }
  *outcount = all_null ? EP_UNDEFINED : n;
  if (!any_error) return EP_SUCCESS;
  if (statuses != EP_STATUSES_IGNORE) {
    for (int k = 0; k < n; ++k) statuses[k].EP_ERROR = codes[k];
  }
  return fail(EP_ERR_IN_STATUS, call, "a request failed; see its status");
}

}  // namespace

namespace ep::api {

int wait_request(EP_Request* request, EP_Status* status, const char* call) {
  EP_CHECK_INIT(call);
  if (request == nullptr) return fail(EP_ERR_ARG, call, "request is NULL");
  if (*request == EP_REQUEST_NULL) {
    empty_status(status);
    return EP_SUCCESS;
  }
  Request* r = as_request(*request);
  if (r == nullptr) return request_error(*request, call, "request");
  if (!awaited(r)) {  // an inactive persistent request
    empty_status(status);
    return EP_SUCCESS;
  }
  ep::runtime::request_wait(r);
  return finish_handled(request, r, status, call);
}

}  // namespace ep::api

extern "C" {

int EP_Wait(EP_Request* request, EP_Status* status) {
  return wait_request(request, status, "EP_Wait");
}

int EP_Test(EP_Request* request, int* flag, EP_Status* status) {
  EP_CHECK_INIT("EP_Test");
  if (request == nullptr || flag == nullptr) {
    return fail(EP_ERR_ARG, "EP_Test", "request or flag is NULL");
  }
  if (*request == EP_REQUEST_NULL) {
    *flag = 1;
    empty_status(status);
    return EP_SUCCESS;
  }
  Request* r = as_request(*request);
  if (r == nullptr) return request_error(*request, "EP_Test", "request");
  if (!awaited(r)) {  // an inactive persistent request
    *flag = 1;
    empty_status(status);
    return EP_SUCCESS;
  }
  *flag = ep::runtime::request_test(r);
  if (!*flag) return EP_SUCCESS;
  return finish_handled(request, r, status, "EP_Test");
}

int EP_Waitall(int count, EP_Request requests[], EP_Status statuses[]) {
  return waitall_impl(count, requests, statuses, "EP_Waitall");
}

int EP_Testall(int count, EP_Request requests[], int* flag, EP_Status statuses[]) {
  const char* call = "EP_Testall";
  EP_CHECK_INIT(call);
  int err = check_requests(count, requests, call);
  if (err != EP_SUCCESS) return err;
  if (flag == nullptr) return fail(EP_ERR_ARG, call, "flag is NULL");
  for (int i = 0; i < count; ++i) {
    Request* r = req_of(requests[i]);
    if (r != nullptr && awaited(r) && !ep::runtime::request_test(r)) {
      *flag = 0;
      return EP_SUCCESS;
    }
  }
  *flag = 1;
  return waitall_impl(count, requests, statuses, call);
}

int EP_Testany(int count, EP_Request requests[], int* index, int* flag, EP_Status* status) {
  return testany_impl(count, requests, index, flag, status, "EP_Testany");
}

int EP_Waitany(int count, EP_Request requests[], int* index, EP_Status* status) {
  for (;;) {
    int flag = 0;
    const int err = testany_impl(count, requests, index, &flag, status, "EP_Waitany");
    if (err != EP_SUCCESS || flag != 0) return err;
    wait_any(count, requests);
  }
}

int EP_Testsome(int incount, EP_Request requests[], int* outcount, int indices[],
                EP_Status statuses[]) {
  return testsome_impl(incount, requests, outcount, indices, statuses, "EP_Testsome");
}

int EP_Waitsome(int incount, EP_Request requests[], int* outcount, int indices[],
                EP_Status statuses[]) {
  for (;;) {
    const int err = testsome_impl(incount, requests, outcount, indices, statuses, "EP_Waitsome");
    if (err != EP_SUCCESS || *outcount != 0) return err;
    wait_any(incount, requests);
  }
}

int EP_Request_free(EP_Request* request) {
  EP_CHECK_INIT("EP_Request_free");
  if (request == nullptr) return fail(EP_ERR_ARG, "EP_Request_free", "request is NULL");
  Request* r = as_request(*request);
  if (r == nullptr) return request_error(*request, "EP_Request_free", "request");
  *request = EP_REQUEST_NULL;
  if (r->kind == ep::runtime::RequestKind::kGrequest) {
    int err = ep::runtime::grequest_free(r);  // free_fn now if already complete
    if (err != EP_SUCCESS) {
      return fail(err, "EP_Request_free", "free_fn of the generalized request returned %d", err);
    }
    return EP_SUCCESS;
  }
  if (r->kind == ep::runtime::RequestKind::kPersistent) {
    ep::runtime::persistent_free(r);  // an active operation completes on its own
    return EP_SUCCESS;
  }
  ep::runtime::request_unref(r);  // the operation keeps its own reference
  return EP_SUCCESS;
}

int EP_Cancel(EP_Request* request) {
  EP_CHECK_INIT("EP_Cancel");
  if (request == nullptr) return fail(EP_ERR_ARG, "EP_Cancel", "request is NULL");
  Request* r = as_request(*request);
  if (r == nullptr) return request_error(*request, "EP_Cancel", "request");
  if (r->kind == ep::runtime::RequestKind::kGrequest) {
    int err = ep::runtime::grequest_cancel(r);
    if (err != EP_SUCCESS) {
      return fail(err, "EP_Cancel", "cancel_fn of the generalized request returned %d", err);
    }
    return EP_SUCCESS;
  }
  // An active persistent request cancels its operation; an inactive one has none to
  // cancel (erroneous in MPI): EP_ERR_REQUEST through its communicator's handler.
  if (!awaited(r)) {
    return handle(r->owner, fail(EP_ERR_REQUEST, "EP_Cancel",
                                 "request is an inactive persistent request (nothing to cancel)"));
  }
  ep::runtime::cancel_recv(r);
  return EP_SUCCESS;
}

int EP_Test_cancelled(const EP_Status* status, int* flag) {
  EP_CHECK_INIT("EP_Test_cancelled");
  if (status == nullptr || flag == nullptr) {
    return fail(EP_ERR_ARG, "EP_Test_cancelled", "status or flag is NULL");
  }
  *flag = status->ep_cancelled_;
  return EP_SUCCESS;
}

int EP_Request_get_status(EP_Request request, int* flag, EP_Status* status) {
  EP_CHECK_INIT("EP_Request_get_status");
  if (flag == nullptr) return fail(EP_ERR_ARG, "EP_Request_get_status", "flag is NULL");
  if (request == EP_REQUEST_NULL) {
    *flag = 1;
    empty_status(status);
    return EP_SUCCESS;
  }
  Request* r = as_request(request);
  if (r == nullptr) return request_error(request, "EP_Request_get_status", "request");
  if (!awaited(r)) {  // an inactive persistent request
    *flag = 1;
    empty_status(status);
    return EP_SUCCESS;
  }
  *flag = ep::runtime::request_done(r);
  if (*flag && r->kind == ep::runtime::RequestKind::kGrequest) {
    // query_fn on every call that finds it complete; the request stays alive.
    ep::Status local;
    int err = ep::runtime::grequest_query(r, &local);
    write_status(status, local);
    if (err != EP_SUCCESS) {
      return fail(err, "EP_Request_get_status", "query_fn of the generalized request returned %d",
                  err);
    }
    return EP_SUCCESS;
  }
  if (*flag) copy_status(r, status);
  return EP_SUCCESS;
}

}  // extern "C"
