// ep.cc - the C entry points of libep: argument checks, error handlers, dispatch.
//
// Every function checks that libep is initialized, checks its arguments (each
// failure names the call, the argument and its value, see runtime/error.h), guards
// the endpoint against concurrent entry (EP_ERR_CONCURRENT), and then calls the
// runtime.  Errors on a valid communicator go through its error handler.
#include "ep/ep.h"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "api/entry.h"
#include "collectives/coll.h"
#include "collectives/engine.h"
#include "rma/window.h"
#include "runtime/comm.h"
#include "runtime/datatype.h"
#include "runtime/error.h"
#include "runtime/exchange.h"
#include "runtime/grequest.h"
#include "runtime/p2p.h"
#include "runtime/p2p_inline.h"
#include "runtime/request.h"
#include "runtime/runtime.h"

namespace {

using namespace ep::api;  // NOLINT(build/namespaces): the shared entry-point helpers

// The checks of every send and receive: inline, with their failures (the messages)
// out of line, so that a call that passes them runs only the comparisons.
// A rank of the communicator (of its remote group for an intercommunicator), and a
// tag a send may carry: the comparisons themselves, shared with EP_Send's glance.
inline bool is_peer_rank(const Endpoint* ep, int rank) {
  return rank >= 0 && rank < ep->comm->peer_size();
}
inline bool is_send_tag(const Endpoint* ep, int tag) { return tag >= 0 && tag <= ep->comm->tag_ub; }

[[gnu::cold, gnu::noinline]] int dest_error(Endpoint* ep, int dest, const char* call) {
  if (dest == EP_ANY_SOURCE) {
    return fail(EP_ERR_RANK, call, "dest EP_ANY_SOURCE is not allowed on a send");
  }
  return fail(EP_ERR_RANK, call, "dest %d is not a rank of the %s (size %d)", dest,
              ep->comm->inter ? "remote group" : "communicator", ep->comm->peer_size());
}

inline int check_dest(Endpoint* ep, int dest, const char* call) {
  if (dest == EP_PROC_NULL || is_peer_rank(ep, dest)) return EP_SUCCESS;
  return dest_error(ep, dest, call);
}

[[gnu::cold, gnu::noinline]] int send_tag_error(Endpoint* ep, int tag, const char* call) {
  if (tag == EP_ANY_TAG) return fail(EP_ERR_TAG, call, "tag EP_ANY_TAG is not allowed on a send");
  if (tag < 0) return fail(EP_ERR_TAG, call, "tag %d is negative", tag);
  return fail(EP_ERR_TAG, call, "tag %d is above EP_Comm_tag_ub (%d)", tag, ep->comm->tag_ub);
}

inline int check_send_tag(Endpoint* ep, int tag, const char* call) {
  if (is_send_tag(ep, tag)) return EP_SUCCESS;
  return send_tag_error(ep, tag, call);
}

[[gnu::cold, gnu::noinline]] int source_error(Endpoint* ep, int source, const char* call) {
  return fail(EP_ERR_RANK, call, "source %d is not a rank of the %s (size %d)", source,
              ep->comm->inter ? "remote group" : "communicator", ep->comm->peer_size());
}

inline int check_source(Endpoint* ep, int source, const char* call) {
  if (source == EP_PROC_NULL || source == EP_ANY_SOURCE || is_peer_rank(ep, source)) {
    return EP_SUCCESS;
  }
  return source_error(ep, source, call);
}

[[gnu::cold, gnu::noinline]] int recv_tag_error(Endpoint* ep, int tag, const char* call) {
  if (tag < 0) return fail(EP_ERR_TAG, call, "tag %d is negative (and not EP_ANY_TAG)", tag);
  return fail(EP_ERR_TAG, call, "tag %d is above EP_Comm_tag_ub (%d)", tag, ep->comm->tag_ub);
}

inline int check_recv_tag(Endpoint* ep, int tag, const char* call) {
  if (tag == EP_ANY_TAG || is_send_tag(ep, tag)) return EP_SUCCESS;
  return recv_tag_error(ep, tag, call);
}

void copy_status(const Request* r, EP_Status* st) { write_status(st, r->status); }

[[gnu::always_inline]] inline int send_checks(Endpoint* ep, const void* buf, int count,
                                              MPI_Datatype type, int dest, int tag, TypeInfo* ti,
                                              const char* call) {
  int err = check_buffer(buf, count, type, ti, call);
  if (err == EP_SUCCESS) err = check_dest(ep, dest, call);
  if (err == EP_SUCCESS) err = check_send_tag(ep, tag, call);
  return err;
}

// `burst`: see ep::runtime::send (an application's nonblocking send).
int send_common(const void* buf, int count, MPI_Datatype type, int dest, int tag, EP_Comm comm,
                SendMode mode, EP_Request* request, const char* call, bool burst = true) {
  EP_GET_COMM(ep, comm, call);
  TypeInfo ti;
  int err = send_checks(ep, buf, count, type, dest, tag, &ti, call);
  if (err != EP_SUCCESS) return handle(ep, err);
  Request* r = nullptr;
  err = ep::runtime::send(buf, count, type, ti, dest, tag, ep, mode,
                          request != nullptr ? &r : nullptr, call, burst);
  if (err == EP_SUCCESS && request != nullptr) {
    if (!r->immortal) r->errhandler = ep->errhandler;  // the shared one never fails
    *request = reinterpret_cast<EP_Request>(r);
  }
  return handle(ep, err);
}

[[gnu::always_inline]] inline int recv_checks(Endpoint* ep, void* buf, int count, MPI_Datatype type,
                                              int source, int tag, TypeInfo* ti, const char* call) {
  int err = check_buffer(buf, count, type, ti, call);
  if (err == EP_SUCCESS) err = check_source(ep, source, call);
  if (err == EP_SUCCESS) err = check_recv_tag(ep, tag, call);
  return err;
}

// Completes a finished request: status out, reference dropped, handle nulled.  A
// generalized request runs its query_fn and free_fn here (the completing call).
// The caller's EP_ERROR is left alone (write_status); the multi-completion calls
// write it themselves when they return EP_ERR_IN_STATUS.
int finish(EP_Request* handle_ptr, EP_Status* st, const char* call) {
  Request* r = reinterpret_cast<Request*>(*handle_ptr);
  if (r->kind == ep::runtime::RequestKind::kGrequest) {
    ep::Status local;
    int err = ep::runtime::grequest_finish(r, &local);
    write_status(st, local);
    *handle_ptr = EP_REQUEST_NULL;
    if (err != EP_SUCCESS) {
      fail(err, call, "a callback of a generalized request returned %d", err);
    }
    return err;
  }
  copy_status(r, st);
  int err = r->status.EP_ERROR;
  if (r->mpi_error != MPI_SUCCESS) ep::runtime::report_mpi_failure(r, call);
  ep::runtime::request_unref(r);
  *handle_ptr = EP_REQUEST_NULL;
  return err;
}

// A handle the caller checked with as_request (or a validated array's entry).
Request* req_of(EP_Request h) { return reinterpret_cast<Request*>(h); }

[[gnu::cold]] int request_error(EP_Request h, const char* call, const char* arg) {
  return fail(EP_ERR_REQUEST, call, "%s is %s", arg,
              h == EP_REQUEST_NULL ? "EP_REQUEST_NULL" : "not a valid request handle");
}

// An array argument of the Wait/Test family: its length, the array, every handle in it
// (EP_REQUEST_NULL allowed).
int check_requests(int n, EP_Request reqs[], const char* call) {
  if (n < 0) return fail(EP_ERR_COUNT, call, "count %d is negative", n);
  if (n > 0 && reqs == nullptr) return fail(EP_ERR_ARG, call, "array of requests is NULL");
  for (int i = 0; i < n; ++i) {
    if (reqs[i] != EP_REQUEST_NULL && as_request(reqs[i]) == nullptr) {
      return fail(EP_ERR_REQUEST, call, "requests[%d] is not a valid request handle", i);
    }
  }
  return EP_SUCCESS;
}

// The communicator queries: validate, then write one int.
template <class Get>
int query_int(EP_Comm comm, int* out, const char* call, const char* arg, Get&& get) {
  EP_GET_COMM(ep, comm, call);
  if (out == nullptr) return handle(ep, fail(EP_ERR_ARG, call, "%s is NULL", arg));
  *out = get(ep);
  return EP_SUCCESS;
}

int irecv_impl(void* buf, int count, MPI_Datatype type, int source, int tag, EP_Comm comm,
               EP_Request* request, const char* call) {
  EP_GET_COMM(ep, comm, call);
  TypeInfo ti;
  int err = recv_checks(ep, buf, count, type, source, tag, &ti, call);
  if (err != EP_SUCCESS) return handle(ep, err);
  Request* r = ep::runtime::post_recv(buf, count, type, ti, source, tag, ep);
  r->errhandler = ep->errhandler;
  *request = reinterpret_cast<EP_Request>(r);
  return EP_SUCCESS;
}

// `block`: EP_Probe, which waits (runtime/wait.h) until a message matches.
int iprobe_impl(int source, int tag, EP_Comm comm, int* flag, EP_Status* status, const char* call,
                bool block = false) {
  EP_GET_COMM(ep, comm, call);
  int err = check_source(ep, source, call);
  if (err == EP_SUCCESS) err = check_recv_tag(ep, tag, call);
  if (err == EP_SUCCESS && flag == nullptr) err = fail(EP_ERR_ARG, call, "flag is NULL");
  if (err != EP_SUCCESS) return handle(ep, err);
  if (source == EP_PROC_NULL) {
    *flag = 1;
    empty_status(status);
    if (status) status->EP_SOURCE = EP_PROC_NULL;
    return EP_SUCCESS;
  }
  ep::Status found;
  *flag = block ? ep::runtime::probe_wait(source, tag, ep, &found, nullptr)
                : ep::runtime::probe(source, tag, ep, &found, nullptr);
  if (*flag) write_status(status, found);
  return EP_SUCCESS;
}

int improbe_impl(int source, int tag, EP_Comm comm, int* flag, EP_Message* message,
                 EP_Status* status, const char* call, bool block = false) {
  EP_GET_COMM(ep, comm, call);
  int err = check_source(ep, source, call);
  if (err == EP_SUCCESS) err = check_recv_tag(ep, tag, call);
  if (err == EP_SUCCESS && (flag == nullptr || message == nullptr)) {
    err = fail(EP_ERR_ARG, call, "flag or message is NULL");
  }
  if (err != EP_SUCCESS) return handle(ep, err);
  if (source == EP_PROC_NULL) {
    *flag = 1;
    *message = EP_MESSAGE_NO_PROC;
    empty_status(status);
    if (status) status->EP_SOURCE = EP_PROC_NULL;
    return EP_SUCCESS;
  }
  ep::runtime::Envelope* env = nullptr;
  ep::Status found;
  *flag = block ? ep::runtime::probe_wait(source, tag, ep, &found, &env)
                : ep::runtime::probe(source, tag, ep, &found, &env);
  if (*flag) write_status(status, found);
  if (*flag) env->magic = ep::runtime::Envelope::kMessageMagic;
  *message = *flag ? reinterpret_cast<EP_Message>(env) : EP_MESSAGE_NULL;
  return EP_SUCCESS;
}

int imrecv_impl(void* buf, int count, MPI_Datatype type, EP_Message* message, EP_Request* request,
                const char* call) {
  EP_CHECK_INIT(call);
  if (request == nullptr) return fail(EP_ERR_ARG, call, "request is NULL");
  if (message == nullptr) return fail(EP_ERR_ARG, call, "message is NULL");
  auto* env = reinterpret_cast<ep::runtime::Envelope*>(*message);
  if (*message != EP_MESSAGE_NO_PROC &&
      (!plausible_handle(env) || env->magic != ep::runtime::Envelope::kMessageMagic)) {
    return fail(EP_ERR_REQUEST, call, "message is %s",
                *message == EP_MESSAGE_NULL ? "EP_MESSAGE_NULL" : "not a valid message handle");
  }
  TypeInfo ti;
  int err = check_buffer(buf, count, type, &ti, call);
  if (err != EP_SUCCESS) return err;
  Request* r;
  if (*message == EP_MESSAGE_NO_PROC) {
    r = ep::runtime::post_recv(buf, count, type, ti, EP_PROC_NULL, EP_ANY_TAG, nullptr);
  } else {
    env->magic = 0;  // taken: the handle is spent
    r = ep::runtime::post_mrecv(buf, count, type, ti, env);
  }
  *message = EP_MESSAGE_NULL;
  *request = reinterpret_cast<EP_Request>(r);
  return EP_SUCCESS;
}

int waitall_impl(int count, EP_Request requests[], EP_Status statuses[], const char* call) {
  EP_CHECK_INIT(call);
  int err = check_requests(count, requests, call);
  if (err != EP_SUCCESS) return err;
  bool any_error = false;
  std::vector<int> codes(static_cast<size_t>(count), EP_SUCCESS);
  {
    // The array's requests are ours until we return (see "Completed by its waiter" in
    // runtime/request.h).
    ep::runtime::WaitScope scope(requests, count);
    for (int i = 0; i < count; ++i) {
      EP_Status* st = statuses != EP_STATUSES_IGNORE ? &statuses[i] : EP_STATUS_IGNORE;
      if (requests[i] == EP_REQUEST_NULL) {
        empty_status(st);
      } else {
        ep::runtime::request_wait(req_of(requests[i]));
        codes[i] = finish(&requests[i], st, call);
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
  bool all_null = true;
  for (int i = 0; i < count; ++i) {
    if (requests[i] == EP_REQUEST_NULL) continue;
    all_null = false;
    Request* r = req_of(requests[i]);
    if (!ep::runtime::request_test(r)) continue;
    *index = i;
    *flag = 1;
    EP_Errhandler eh = r->errhandler;
    return handle(eh, finish(&requests[i], status, call));
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
    if (requests[i] == EP_REQUEST_NULL) continue;
    all_null = false;
    if (!ep::runtime::request_test(req_of(requests[i]))) continue;
    codes.push_back(finish(&requests[i], statuses != EP_STATUSES_IGNORE ? &statuses[n] : nullptr,
                           call));
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

int wait_impl(EP_Request* request, EP_Status* status, const char* call) {
  EP_CHECK_INIT(call);
  if (request == nullptr) return fail(EP_ERR_ARG, call, "request is NULL");
  if (*request == EP_REQUEST_NULL) {
    empty_status(status);
    return EP_SUCCESS;
  }
  Request* r = as_request(*request);
  if (r == nullptr) return request_error(*request, call, "request");
  ep::runtime::request_wait(r);
  EP_Errhandler eh = r->errhandler;
  const bool mpi_failed = r->kind != ep::runtime::RequestKind::kGrequest && r->mpi_error != 0;
  int err = finish(request, status, call);
  if (err == EP_ERR_TRUNCATE && !mpi_failed) {
    fail(err, call, "the message was longer than the receive buffer");
  }
  return handle(eh, err);
}

// Sendrecv: the receive is posted first, so that two endpoints exchanging with each
// other cannot deadlock; errors are reported as `call`.
int sendrecv_impl(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                  void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                  EP_Comm comm, EP_Status* status, const char* call) {
  EP_Request rr = EP_REQUEST_NULL, sr = EP_REQUEST_NULL;
  int err = irecv_impl(recvbuf, recvcount, recvtype, source, recvtag, comm, &rr, call);
  if (err != EP_SUCCESS) return err;
  err = send_common(sendbuf, sendcount, sendtype, dest, sendtag, comm, SendMode::kStandard, &sr,
                    call, /*burst=*/false);
  if (err != EP_SUCCESS) {
    EP_Cancel(&rr);
    wait_impl(&rr, EP_STATUS_IGNORE, call);
    return err;
  }
  wait_impl(&sr, EP_STATUS_IGNORE, call);
  return wait_impl(&rr, status, call);
}

}  // namespace

extern "C" {

// ---- Environment -------------------------------------------------------------------

int EP_Init(void) {
  if (runtime() != nullptr) return fail(EP_ERR_OTHER, "EP_Init", "libep is already initialized");
  int err = ep::runtime::runtime_init();
  if (err == EP_SUCCESS) {
    ep::collectives::install();  // collective schedules run in passes
    ep::rma::rma_init();         // one-sided packets reach the window handler
  }
  return err;
}

int EP_Finalize(void) {
  EP_CHECK_INIT("EP_Finalize");
  int err = ep::runtime::runtime_finalize();
  ep::collectives::release_scratch();  // no collective runs any more
  ep::collectives::uninstall();
  ep::runtime::release_blobs();
  return err;
}

int EP_Initialized(int* flag) {
  if (flag == nullptr) return fail(EP_ERR_ARG, "EP_Initialized", "flag is NULL");
  *flag = runtime() != nullptr;
  return EP_SUCCESS;
}

int EP_Query_thread(int* provided) {
  EP_CHECK_INIT("EP_Query_thread");
  if (provided == nullptr) return fail(EP_ERR_ARG, "EP_Query_thread", "provided is NULL");
  *provided = MPI_THREAD_MULTIPLE;
  return EP_SUCCESS;
}

int EP_Is_thread_main(int* flag) {
  EP_CHECK_INIT("EP_Is_thread_main");
  if (flag == nullptr) return fail(EP_ERR_ARG, "EP_Is_thread_main", "flag is NULL");
  MPI_Is_thread_main(flag);
  return EP_SUCCESS;
}

double EP_Wtime(void) { return MPI_Wtime(); }

int EP_Comm_set_errhandler(EP_Comm comm, EP_Errhandler eh) {
  EP_GET_COMM(ep, comm, "EP_Comm_set_errhandler");
  if (eh != EP_ERRORS_ARE_FATAL && eh != EP_ERRORS_RETURN) {
    return handle(ep, fail(EP_ERR_ARG, "EP_Comm_set_errhandler",
                           "errhandler is neither EP_ERRORS_ARE_FATAL nor EP_ERRORS_RETURN"));
  }
  ep->errhandler = eh;
  return EP_SUCCESS;
}

int EP_Comm_get_errhandler(EP_Comm comm, EP_Errhandler* eh) {
  EP_GET_COMM(ep, comm, "EP_Comm_get_errhandler");
  if (eh == nullptr)
    return handle(ep, fail(EP_ERR_ARG, "EP_Comm_get_errhandler", "errhandler is NULL"));
  *eh = ep->errhandler;
  return EP_SUCCESS;
}

int EP_Error_string(int code, char* string, int* resultlen) {
  if (string == nullptr || resultlen == nullptr) {
    return fail(EP_ERR_ARG, "EP_Error_string", "string or resultlen is NULL");
  }
  if (code < EP_SUCCESS || code >= EP_ERR_LASTCODE) {
    return fail(EP_ERR_ARG, "EP_Error_string", "code %d is not an EP_* error code", code);
  }
  std::string s = ep::runtime::error_string(code);
  size_t n = s.size() < EP_MAX_ERROR_STRING - 1 ? s.size() : EP_MAX_ERROR_STRING - 1;
  std::memcpy(string, s.data(), n);
  string[n] = '\0';
  *resultlen = static_cast<int>(n);
  return EP_SUCCESS;
}

// ---- Communicators -------------------------------------------------------------------

int EP_Comm_create_endpoints(MPI_Comm parent, int num_ep, MPI_Info info, EP_Comm comms[]) {
  (void)info;
  EP_CHECK_INIT("EP_Comm_create_endpoints");
  if (parent == MPI_COMM_NULL) {
    return fail(EP_ERR_COMM, "EP_Comm_create_endpoints", "parent is MPI_COMM_NULL");
  }
  int inter = 0;
  if (MPI_Comm_test_inter(parent, &inter) != MPI_SUCCESS) {
    return fail(EP_ERR_COMM, "EP_Comm_create_endpoints", "parent is not a valid MPI communicator");
  }
  if (inter) {
    return fail(EP_ERR_COMM, "EP_Comm_create_endpoints", "parent is an intercommunicator");
  }
  if (num_ep > 0 && comms == nullptr) {
    // Still take part in the collective so that no other process hangs.
    std::vector<EP_Comm> tmp(static_cast<size_t>(num_ep));
    int err = ep::runtime::comm_create_endpoints(parent, num_ep, tmp.data());
    if (err == EP_SUCCESS) {
      for (EP_Comm& c : tmp) EP_Comm_free(&c);
    }
    return fail(EP_ERR_ARG, "EP_Comm_create_endpoints", "comms is NULL but num_ep is %d", num_ep);
  }
  if (num_ep > 65535) {
    return fail(EP_ERR_ARG, "EP_Comm_create_endpoints", "num_ep %d is above 65535", num_ep);
  }
  return ep::runtime::comm_create_endpoints(parent, num_ep, comms);
}

int EP_Comm_rank(EP_Comm comm, int* rank) {
  return query_int(comm, rank, "EP_Comm_rank", "rank", [](Endpoint* ep) { return ep->rank; });
}

int EP_Comm_size(EP_Comm comm, int* size) {
  return query_int(comm, size, "EP_Comm_size", "size", [](Endpoint* ep) { return ep->comm->size; });
}

int EP_Comm_local_rank(EP_Comm comm, int* rank) {
  return query_int(comm, rank, "EP_Comm_local_rank", "rank",
                   [](Endpoint* ep) { return ep->proc_local_rank; });
}

int EP_Comm_local_size(EP_Comm comm, int* size) {
  return query_int(comm, size, "EP_Comm_local_size", "size",
                   [](Endpoint* ep) { return ep->comm->proc_local_size; });
}

int EP_Comm_dup(EP_Comm comm, EP_Comm* newcomm) {
  EP_GET_COMM(ep, comm, "EP_Comm_dup");
  if (newcomm == nullptr) return handle(ep, fail(EP_ERR_ARG, "EP_Comm_dup", "newcomm is NULL"));
  Endpoint* n = nullptr;
  int err = ep::runtime::comm_dup(ep, &n);
  if (err == EP_SUCCESS) *newcomm = reinterpret_cast<EP_Comm>(n);
  return handle(ep, err);
}

int EP_Comm_free(EP_Comm* comm) {
  EP_CHECK_INIT("EP_Comm_free");
  if (comm == nullptr) return fail(EP_ERR_ARG, "EP_Comm_free", "comm is NULL");
  Endpoint* ep = as_endpoint(*comm);
  if (ep == nullptr) {
    return fail(EP_ERR_COMM, "EP_Comm_free", "communicator is %s",
                *comm == EP_COMM_NULL ? "EP_COMM_NULL" : "not a valid endpoint handle");
  }
  {
    Entry guard(ep);
    if (!guard.ok()) {
      return handle(ep, fail(EP_ERR_CONCURRENT, "EP_Comm_free",
                             "another thread is inside a call on endpoint %d", ep->rank));
    }
  }
  ep::runtime::comm_free(ep);
  *comm = EP_COMM_NULL;
  return EP_SUCCESS;
}

int EP_Comm_compare(EP_Comm comm1, EP_Comm comm2, int* result) {
  EP_CHECK_INIT("EP_Comm_compare");
  Endpoint* a = as_endpoint(comm1);
  Endpoint* b = as_endpoint(comm2);
  if (a == nullptr || b == nullptr) {
    return fail(EP_ERR_COMM, "EP_Comm_compare", "%s is not a valid communicator",
                a == nullptr ? "comm1" : "comm2");
  }
  if (result == nullptr) return handle(a, fail(EP_ERR_ARG, "EP_Comm_compare", "result is NULL"));
  *result = ep::runtime::comm_compare(a, b);
  return EP_SUCCESS;
}

int EP_Comm_test_inter(EP_Comm comm, int* flag) {
  return query_int(comm, flag, "EP_Comm_test_inter", "flag",
                   [](Endpoint* ep) { return ep->comm->inter ? 1 : 0; });
}

int EP_Comm_remote_size(EP_Comm comm, int* size) {
  const char* call = "EP_Comm_remote_size";
  EP_GET_COMM(ep, comm, call);
  if (!ep->comm->inter) {
    return handle(ep, fail(EP_ERR_COMM, call, "comm is not an intercommunicator"));
  }
  if (size == nullptr) return handle(ep, fail(EP_ERR_ARG, call, "size is NULL"));
  *size = ep->comm->remote_size;
  return EP_SUCCESS;
}

int EP_Comm_split(EP_Comm comm, int color, int key, EP_Comm* newcomm) {
  const char* call = "EP_Comm_split";
  EP_GET_COMM(ep, comm, call);
  if (ep->comm->inter) {
    // Every endpoint sees this, so none waits for the others.
    return handle(ep, fail(EP_ERR_COMM, call, "splitting an intercommunicator is not supported"));
  }
  // A NULL newcomm or a bad colour still takes part in the exchange (nobody hangs);
  // a bad colour makes every endpoint fail with EP_ERR_ARG.
  Endpoint* n = nullptr;
  int err = ep::runtime::comm_split(ep, color, key, &n);
  if (err == EP_SUCCESS && newcomm == nullptr) {
    if (n != nullptr) ep::runtime::comm_free(n);
    err = fail(EP_ERR_ARG, call, "newcomm is NULL");
  }
  if (err == EP_SUCCESS) *newcomm = n == nullptr ? EP_COMM_NULL : reinterpret_cast<EP_Comm>(n);
  return handle(ep, err);
}

int EP_Intercomm_create(EP_Comm local_comm, int local_leader, EP_Comm peer_comm, int remote_leader,
                        int tag, EP_Comm* newintercomm) {
  const char* call = "EP_Intercomm_create";
  EP_GET_COMM(ep, local_comm, call);
  if (ep->comm->inter) {
    return handle(ep, fail(EP_ERR_COMM, call, "local_comm is an intercommunicator"));
  }
  // Checks every endpoint of local_comm makes alike, so all fail together.
  if (local_leader < 0 || local_leader >= ep->comm->size) {
    return handle(ep,
                  fail(EP_ERR_RANK, call, "local_leader %d is not a rank of local_comm (size %d)",
                       local_leader, ep->comm->size));
  }
  if (newintercomm == nullptr) {
    return handle(ep, fail(EP_ERR_ARG, call, "newintercomm is NULL"));
  }
  // peer_comm, remote_leader and tag matter at the leader only; its verdict on them
  // reaches the whole group (see runtime/comm.cc).
  Endpoint* peer = ep->rank == local_leader ? as_endpoint(peer_comm) : nullptr;
  Endpoint* n = nullptr;
  int err = ep::runtime::intercomm_create(ep, local_leader, peer, remote_leader, tag, &n);
  if (err == EP_SUCCESS) *newintercomm = reinterpret_cast<EP_Comm>(n);
  return handle(ep, err);
}

int EP_Intercomm_merge(EP_Comm intercomm, int high, EP_Comm* newintracomm) {
  const char* call = "EP_Intercomm_merge";
  EP_GET_COMM(ep, intercomm, call);
  if (!ep->comm->inter) {
    return handle(ep, fail(EP_ERR_COMM, call, "intercomm is not an intercommunicator"));
  }
  if (newintracomm == nullptr) return handle(ep, fail(EP_ERR_ARG, call, "newintracomm is NULL"));
  Endpoint* n = nullptr;
  int err = ep::runtime::intercomm_merge(ep, high != 0, &n);
  if (err == EP_SUCCESS) *newintracomm = reinterpret_cast<EP_Comm>(n);
  return handle(ep, err);
}

int EP_Comm_tag_ub(EP_Comm comm, int* tag_ub) {
  return query_int(comm, tag_ub, "EP_Comm_tag_ub", "tag_ub",
                   [](Endpoint* ep) { return ep->comm->tag_ub; });
}

int EP_Comm_group(EP_Comm comm, EP_Group* group) {
  EP_GET_COMM(ep, comm, "EP_Comm_group");
  if (group == nullptr) return handle(ep, fail(EP_ERR_ARG, "EP_Comm_group", "group is NULL"));
  auto* g = new ep_group_s;
  g->g.members = ep->comm->ids;
  g->g.my_rank = ep->rank;
  *group = g;
  return EP_SUCCESS;
}

int EP_Group_size(EP_Group group, int* size) {
  EP_CHECK_INIT("EP_Group_size");
  ep_group_s* g = as_group(group);
  if (g == nullptr) return group_error(group, "EP_Group_size", "group");
  if (size == nullptr) return fail(EP_ERR_ARG, "EP_Group_size", "size is NULL");
  *size = static_cast<int>(g->g.members.size());
  return EP_SUCCESS;
}

int EP_Group_rank(EP_Group group, int* rank) {
  EP_CHECK_INIT("EP_Group_rank");
  ep_group_s* g = as_group(group);
  if (g == nullptr) return group_error(group, "EP_Group_rank", "group");
  if (rank == nullptr) return fail(EP_ERR_ARG, "EP_Group_rank", "rank is NULL");
  *rank = g->g.my_rank;
  return EP_SUCCESS;
}

int EP_Group_free(EP_Group* group) {
  EP_CHECK_INIT("EP_Group_free");
  if (group == nullptr) return fail(EP_ERR_ARG, "EP_Group_free", "group is NULL");
  ep_group_s* g = as_group(*group);
  if (g == nullptr) return group_error(*group, "EP_Group_free", "group");
  g->magic = 0;
  delete g;
  *group = EP_GROUP_NULL;
  return EP_SUCCESS;
}

int EP_Group_translate_ranks(EP_Group group1, int n, const int ranks1[], EP_Group group2,
                             int ranks2[]) {
  const char* call = "EP_Group_translate_ranks";
  EP_CHECK_INIT(call);
  if (as_group(group1) == nullptr) return group_error(group1, call, "group1");
  if (as_group(group2) == nullptr) return group_error(group2, call, "group2");
  if (n < 0) return fail(EP_ERR_COUNT, call, "n %d is negative", n);
  if (n > 0 && (ranks1 == nullptr || ranks2 == nullptr)) {
    return fail(EP_ERR_ARG, call, "ranks1 or ranks2 is NULL");
  }
  const auto& m1 = group1->g.members;
  const auto& m2 = group2->g.members;
  for (int i = 0; i < n; ++i) {
    int r = ranks1[i];
    if (r != EP_PROC_NULL && (r < 0 || r >= static_cast<int>(m1.size()))) {
      return fail(EP_ERR_RANK, call, "ranks1[%d] = %d is not a rank of group1 (size %zu)", i, r,
                  m1.size());
    }
  }
  std::unordered_map<uint64_t, std::vector<std::pair<int, int>>> index;  // origin -> (rank, pos)
  for (size_t j = 0; j < m2.size(); ++j) {
    index[m2[j].origin].push_back({m2[j].rank, static_cast<int>(j)});
  }
  for (int i = 0; i < n; ++i) {
    int r = ranks1[i];
    if (r == EP_PROC_NULL) {
      ranks2[i] = EP_PROC_NULL;
      continue;
    }
    ranks2[i] = EP_UNDEFINED;
    auto it = index.find(m1[r].origin);
    if (it == index.end()) continue;
    for (auto [orank, pos] : it->second) {
      if (orank == m1[r].rank) ranks2[i] = pos;
    }
  }
  return EP_SUCCESS;
}

// ---- Point-to-point -------------------------------------------------------------------

namespace {

// EP_Send of everything but the short way (below): the checks, with their messages,
// then runtime::send.
[[gnu::noinline]] int send_general(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                                   EP_Comm comm) {
  EP_GET_COMM(ep, comm, "EP_Send");
  TypeInfo ti;
  int err = send_checks(ep, buf, count, type, dest, tag, &ti, "EP_Send");
  if (err != EP_SUCCESS) return handle(ep, err);
  return handle(ep, ep::runtime::send(buf, count, type, ti, dest, tag, ep, SendMode::kStandard,
                                      nullptr, "EP_Send"));
}

}  // namespace

// EP_Send's short way: a call whose arguments all pass at a glance - a live endpoint
// handle, a builtin type already described, a rank and a tag in range, a buffer - and
// whose message is small, contiguous and for another process (a ping-pong's, a
// reply's: runtime::send_small_remote) runs only those comparisons, the entry guard,
// the packet on the stack and MPI_Send.  Every other call, each invalid one included,
// takes send_general, whose checks name what is wrong; a call that passes here passes
// them too.  The short way is on the critical path of every 2-process ping-pong (see
// "The receiver's critical path" in runtime/p2p.h).
int EP_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, EP_Comm comm) {
  Endpoint* ep = nullptr;
  const TypeInfo* ti = nullptr;
  if (runtime() != nullptr && (ep = as_endpoint(comm)) != nullptr && count >= 0 &&
      (ti = ep::runtime::described_builtin(type)) != nullptr &&
      (buf != nullptr || count == 0) && buf != EP_IN_PLACE &&
      is_peer_rank(ep, dest) && is_send_tag(ep, tag)) {
    Entry guard(ep);
    if (guard.ok()) {
      const int rc = ep::runtime::send_small_remote(buf, count, *ti, dest, tag, ep);
      if (rc != ep::runtime::kNotShort) return rc == EP_SUCCESS ? rc : handle(ep, rc);
    }
  }
  return send_general(buf, count, type, dest, tag, comm);
}
int EP_Bsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, EP_Comm comm) {
  return send_common(buf, count, type, dest, tag, comm, SendMode::kBuffered, nullptr, "EP_Bsend");
}
int EP_Ssend(const void* buf, int count, MPI_Datatype type, int dest, int tag, EP_Comm comm) {
  return send_common(buf, count, type, dest, tag, comm, SendMode::kSynchronous, nullptr,
                     "EP_Ssend");
}
int EP_Rsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, EP_Comm comm) {
  return send_common(buf, count, type, dest, tag, comm, SendMode::kReady, nullptr, "EP_Rsend");
}

#define EP_CHECK_REQUEST_OUT(request, call) \
  EP_CHECK_INIT(call);                      \
  if ((request) == nullptr) return fail(EP_ERR_ARG, call, "request is NULL")

int EP_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, EP_Comm comm,
             EP_Request* request) {
  EP_CHECK_REQUEST_OUT(request, "EP_Isend");
  return send_common(buf, count, type, dest, tag, comm, SendMode::kStandard, request, "EP_Isend");
}
int EP_Ibsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, EP_Comm comm,
              EP_Request* request) {
  EP_CHECK_REQUEST_OUT(request, "EP_Ibsend");
  return send_common(buf, count, type, dest, tag, comm, SendMode::kBuffered, request, "EP_Ibsend");
}
int EP_Issend(const void* buf, int count, MPI_Datatype type, int dest, int tag, EP_Comm comm,
              EP_Request* request) {
  EP_CHECK_REQUEST_OUT(request, "EP_Issend");
  return send_common(buf, count, type, dest, tag, comm, SendMode::kSynchronous, request,
                     "EP_Issend");
}
int EP_Irsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, EP_Comm comm,
              EP_Request* request) {
  EP_CHECK_REQUEST_OUT(request, "EP_Irsend");
  return send_common(buf, count, type, dest, tag, comm, SendMode::kReady, request, "EP_Irsend");
}

int EP_Irecv(void* buf, int count, MPI_Datatype type, int source, int tag, EP_Comm comm,
             EP_Request* request) {
  EP_CHECK_REQUEST_OUT(request, "EP_Irecv");
  return irecv_impl(buf, count, type, source, tag, comm, request, "EP_Irecv");
}

int EP_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, EP_Comm comm,
            EP_Status* status) {
  EP_GET_COMM(ep, comm, "EP_Recv");
  TypeInfo ti;
  int err = recv_checks(ep, buf, count, type, source, tag, &ti, "EP_Recv");
  if (err != EP_SUCCESS) return handle(ep, err);
  Request* r = ep::runtime::post_recv(buf, count, type, ti, source, tag, ep, /*line_wait=*/true);
  ep::runtime::request_wait(r);
  // finish() for a receive request that request_wait saw complete.
  err = r->status.EP_ERROR;
  copy_status(r, status);
  if (r->mpi_error != MPI_SUCCESS) ep::runtime::report_mpi_failure(r, "EP_Recv");
  ep::runtime::request_recycle(r);
  if (err == EP_ERR_TRUNCATE) {
    fail(err, "EP_Recv", "the message is longer than the receive buffer (count %d, %lld bytes)",
         count, static_cast<long long>(ti.size * count));
  }
  return handle(ep, err);
}

int EP_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                EP_Comm comm, EP_Status* status) {
  return sendrecv_impl(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                       source, recvtag, comm, status, "EP_Sendrecv");
}

int EP_Sendrecv_replace(void* buf, int count, MPI_Datatype type, int dest, int sendtag, int source,
                        int recvtag, EP_Comm comm, EP_Status* status) {
  const char* call = "EP_Sendrecv_replace";
  EP_CHECK_INIT(call);
  TypeInfo ti;
  int err = check_buffer(buf, count, type, &ti, call);
  if (err != EP_SUCCESS) {
    Endpoint* ep = as_endpoint(comm);
    return ep != nullptr ? handle(ep, err) : err;
  }
  // Send a packed copy, receive into the buffer itself.
  std::vector<char> packed(static_cast<size_t>(ti.size * count));
  ep::runtime::pack(buf, count, type, ti, packed.data());
  return sendrecv_impl(packed.data(), static_cast<int>(packed.size()), MPI_PACKED, dest, sendtag,
                       buf, count, type, source, recvtag, comm, status, call);
}

int EP_Iprobe(int source, int tag, EP_Comm comm, int* flag, EP_Status* status) {
  return iprobe_impl(source, tag, comm, flag, status, "EP_Iprobe");
}

int EP_Probe(int source, int tag, EP_Comm comm, EP_Status* status) {
  int flag = 0;
  return iprobe_impl(source, tag, comm, &flag, status, "EP_Probe", /*block=*/true);
}

int EP_Improbe(int source, int tag, EP_Comm comm, int* flag, EP_Message* message,
               EP_Status* status) {
  return improbe_impl(source, tag, comm, flag, message, status, "EP_Improbe");
}

int EP_Mprobe(int source, int tag, EP_Comm comm, EP_Message* message, EP_Status* status) {
  int flag = 0;
  return improbe_impl(source, tag, comm, &flag, message, status, "EP_Mprobe", /*block=*/true);
}

int EP_Imrecv(void* buf, int count, MPI_Datatype type, EP_Message* message, EP_Request* request) {
  return imrecv_impl(buf, count, type, message, request, "EP_Imrecv");
}

int EP_Mrecv(void* buf, int count, MPI_Datatype type, EP_Message* message, EP_Status* status) {
  EP_Request r = EP_REQUEST_NULL;
  int err = imrecv_impl(buf, count, type, message, &r, "EP_Mrecv");
  if (err != EP_SUCCESS) return err;
  return wait_impl(&r, status, "EP_Mrecv");
}

int EP_Buffer_attach(void* buffer, int size) {
  EP_CHECK_INIT("EP_Buffer_attach");
  if (size < 0) return fail(EP_ERR_BUFFER, "EP_Buffer_attach", "size %d is negative", size);
  if (buffer == nullptr && size > 0) {
    return fail(EP_ERR_BUFFER, "EP_Buffer_attach", "buffer is NULL but size is %d", size);
  }
  if (buffer == EP_IN_PLACE) return fail(EP_ERR_BUFFER, "EP_Buffer_attach", "buffer is EP_IN_PLACE");
  if (!runtime()->bsend.attach(buffer, size)) {
    return fail(EP_ERR_BUFFER, "EP_Buffer_attach", "a buffer is already attached");
  }
  return EP_SUCCESS;
}

int EP_Buffer_detach(void* buffer_addr, int* size) {
  EP_CHECK_INIT("EP_Buffer_detach");
  if (buffer_addr == nullptr || size == nullptr) {
    return fail(EP_ERR_ARG, "EP_Buffer_detach", "buffer_addr or size is NULL");
  }
  void* b = nullptr;
  int64_t s = 0;
  if (!runtime()->bsend.detach(&b, &s)) {
    return fail(EP_ERR_BUFFER, "EP_Buffer_detach", "no buffer is attached");
  }
  *static_cast<void**>(buffer_addr) = b;
  *size = static_cast<int>(s);
  return EP_SUCCESS;
}

int EP_Get_count(const EP_Status* status, MPI_Datatype type, int* count) {
  EP_CHECK_INIT("EP_Get_count");
  if (status == nullptr || count == nullptr) {
    return fail(EP_ERR_ARG, "EP_Get_count", "status or count is NULL");
  }
  TypeInfo ti;
  int err = check_type(type, &ti, "EP_Get_count", "datatype");
  if (err != EP_SUCCESS) return err;
  if (ti.size == 0) {
    *count = status->ep_bytes_ == 0 ? 0 : EP_UNDEFINED;
  } else if (status->ep_bytes_ % ti.size != 0) {
    *count = EP_UNDEFINED;
  } else {
    long long c = status->ep_bytes_ / ti.size;
    *count = c > INT_MAX ? EP_UNDEFINED : static_cast<int>(c);
  }
  return EP_SUCCESS;
}

int EP_Get_elements(const EP_Status* status, MPI_Datatype type, int* count) {
  EP_CHECK_INIT("EP_Get_elements");
  if (status == nullptr || count == nullptr) {
    return fail(EP_ERR_ARG, "EP_Get_elements", "status or count is NULL");
  }
  TypeInfo ti;
  int err = check_type(type, &ti, "EP_Get_elements", "datatype");
  if (err != EP_SUCCESS) return err;
  MPI_Status st;
  std::memset(&st, 0, sizeof(st));
  MPI_Status_set_elements_x(&st, MPI_BYTE, status->ep_bytes_);
  MPI_Get_elements(&st, type, count);
  return EP_SUCCESS;
}

// ---- Requests -----------------------------------------------------------------------------

int EP_Wait(EP_Request* request, EP_Status* status) {
  return wait_impl(request, status, "EP_Wait");
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
  *flag = ep::runtime::request_test(r);
  if (!*flag) return EP_SUCCESS;
  EP_Errhandler eh = r->errhandler;
  return handle(eh, finish(request, status, "EP_Test"));
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
    if (requests[i] != EP_REQUEST_NULL && !ep::runtime::request_test(req_of(requests[i]))) {
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
    ep::runtime::request_wait_any(reinterpret_cast<Request* const*>(requests), count);
  }
}

int EP_Testsome(int incount, EP_Request requests[], int* outcount, int indices[],
                EP_Status statuses[]) {
  return testsome_impl(incount, requests, outcount, indices, statuses, "EP_Testsome");
}

int EP_Waitsome(int incount, EP_Request requests[], int* outcount, int indices[],
                EP_Status statuses[]) {
  for (;;) {
    const int err =
        testsome_impl(incount, requests, outcount, indices, statuses, "EP_Waitsome");
    if (err != EP_SUCCESS || *outcount != 0) return err;
    ep::runtime::request_wait_any(reinterpret_cast<Request* const*>(requests), incount);
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
