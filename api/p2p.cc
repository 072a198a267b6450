// p2p.cc - the C entry points of point-to-point: sends, receives, sendrecv, probes and
// matched probes, persistent requests (their init calls, EP_Start, EP_Startall), the
// buffered-send buffer, EP_Get_count and EP_Get_elements.
//
// The checks of every send and receive are inline, with their failures (the messages)
// out of line, so that a call that passes them runs only the comparisons.  EP_Send has
// a short way besides, on the critical path of every ping-pong (see EP_Send).
#include "runtime/p2p.h"

#include <climits>
#include <cstdio>
#include <cstring>
#include <vector>

#include "api/entry.h"
#include "api/request.h"
#include "base/mpi_calls.h"
#include "ep/ep.h"
#include "runtime/datatype.h"
#include "runtime/error.h"
#include "runtime/p2p_inline.h"
#include "runtime/request.h"
#include "runtime/runtime.h"

namespace {

using namespace ep::api;  // NOLINT(build/namespaces): the shared entry-point helpers

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
    if (!r->immortal) set_request_errhandler(r, ep);  // the shared one never fails
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

int irecv_impl(void* buf, int count, MPI_Datatype type, int source, int tag, EP_Comm comm,
               EP_Request* request, const char* call) {
  EP_GET_COMM(ep, comm, call);
  TypeInfo ti;
  int err = recv_checks(ep, buf, count, type, source, tag, &ti, call);
  if (err != EP_SUCCESS) return handle(ep, err);
  Request* r = ep::runtime::post_recv(buf, count, type, ti, source, tag, ep);
  set_request_errhandler(r, ep);
  *request = reinterpret_cast<EP_Request>(r);
  return EP_SUCCESS;
}

// EP_*_init: the checks and messages of EP_Isend/EP_Irecv under the call's own name,
// and the TypeInfo, once; then the inactive persistent request (runtime/p2p.h,
// "Persistent requests").  `send_mode` -1: a receive.
int persistent_init(void* buf, int count, MPI_Datatype type, int peer, int tag, EP_Comm comm,
                    int send_mode, EP_Request* request, const char* call) {
  EP_CHECK_INIT(call);
  if (request == nullptr) return fail(EP_ERR_ARG, call, "request is NULL");
  EP_GET_COMM(ep, comm, call);
  TypeInfo ti;
  int err = send_mode < 0 ? recv_checks(ep, buf, count, type, peer, tag, &ti, call)
                          : send_checks(ep, buf, count, type, peer, tag, &ti, call);
  if (err != EP_SUCCESS) return handle(ep, err);
  Request* p = ep::runtime::persistent_new(buf, count, type, ti, peer, tag, ep, send_mode);
  *request = reinterpret_cast<EP_Request>(p);
  return EP_SUCCESS;
}

// The message's name of the request checked: "request" (index -1) or "requests[i]".
struct RequestName {
  char text[32];
  explicit RequestName(int index) {
    if (index < 0) {
      std::snprintf(text, sizeof text, "request");
    } else {
      std::snprintf(text, sizeof text, "requests[%d]", index);
    }
  }
};

// The request EP_Start/EP_Startall may start: a live persistent request (else
// EP_ERR_REQUEST, with no handler to consult: the handle names no communicator).  An
// active one is EP_ERR_REQUEST through its communicator's handler.  `index`: its
// position in EP_Startall's array, -1 for EP_Start's.
[[gnu::cold, gnu::noinline]] int start_error(EP_Request h, const Request* p, const char* call,
                                             int index) {
  const RequestName what(index);
  if (p == nullptr || p->kind != ep::runtime::RequestKind::kPersistent) {
    return fail(EP_ERR_REQUEST, call, "%s is %s", what.text,
                h == EP_REQUEST_NULL ? "EP_REQUEST_NULL"
                : p == nullptr       ? "not a valid request handle"
                                     : "not a persistent request");
  }
  return handle(p->owner, fail(EP_ERR_REQUEST, call,
                               "%s is active (started and not yet completed by a Wait or Test "
                               "call)",
                               what.text));
}
[[gnu::always_inline]] inline Request* startable(EP_Request h) {
  Request* p = as_request(h);
  return p != nullptr && p->kind == ep::runtime::RequestKind::kPersistent && p->active == nullptr
             ? p
             : nullptr;
}

// EP_Startall's mark on the requests it has checked (see there): no request's address.
Request* listed_mark() {
  alignas(alignof(Request)) static char mark;  // never dereferenced as a Request
  return reinterpret_cast<Request*>(&mark);
}

// Starts a checked, inactive persistent request on its endpoint's thread: the entry
// guard, the communicator's current error handler, then the operation
// (runtime::persistent_start).
[[gnu::always_inline]] inline int start_checked(Request* p, const char* call) {
  Endpoint* ep = p->owner;
  Entry guard(ep);
  if (!guard.ok()) {
    return handle(
        ep, fail(EP_ERR_CONCURRENT, call,
                 "another thread is inside a call on endpoint %d of this communicator", ep->rank));
  }
  // The started operation answers to the handler the communicator has now, as an
  // EP_Isend's request does (its completing Wait/Test reads it from the handle).
  set_request_errhandler(p, ep);
  const int err = ep::runtime::persistent_start(p, call);
  return err == EP_SUCCESS ? err : handle(ep, err);
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
    wait_request(&rr, EP_STATUS_IGNORE, call);
    return err;
  }
  wait_request(&sr, EP_STATUS_IGNORE, call);
  return wait_request(&rr, status, call);
}

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

extern "C" {

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
      (ti = ep::runtime::described_builtin(type)) != nullptr && (buf != nullptr || count == 0) &&
      buf != EP_IN_PLACE && is_peer_rank(ep, dest) && is_send_tag(ep, tag)) {
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

int EP_Send_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, EP_Comm comm,
                 EP_Request* request) {
  return persistent_init(const_cast<void*>(buf), count, type, dest, tag, comm,
                         static_cast<int>(SendMode::kStandard), request, "EP_Send_init");
}
int EP_Bsend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, EP_Comm comm,
                  EP_Request* request) {
  return persistent_init(const_cast<void*>(buf), count, type, dest, tag, comm,
                         static_cast<int>(SendMode::kBuffered), request, "EP_Bsend_init");
}
int EP_Ssend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, EP_Comm comm,
                  EP_Request* request) {
  return persistent_init(const_cast<void*>(buf), count, type, dest, tag, comm,
                         static_cast<int>(SendMode::kSynchronous), request, "EP_Ssend_init");
}
int EP_Rsend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, EP_Comm comm,
                  EP_Request* request) {
  return persistent_init(const_cast<void*>(buf), count, type, dest, tag, comm,
                         static_cast<int>(SendMode::kReady), request, "EP_Rsend_init");
}
int EP_Recv_init(void* buf, int count, MPI_Datatype type, int source, int tag, EP_Comm comm,
                 EP_Request* request) {
  return persistent_init(buf, count, type, source, tag, comm, -1, request, "EP_Recv_init");
}

// A start checks only the handle (its arguments were checked at init) and runs what
// EP_Isend/EP_Irecv run after their checks.
int EP_Start(EP_Request* request) {
  EP_CHECK_INIT("EP_Start");
  if (request == nullptr) return fail(EP_ERR_ARG, "EP_Start", "request is NULL");
  Request* p = startable(*request);
  if (p == nullptr) return start_error(*request, as_request(*request), "EP_Start", -1);
  return start_checked(p, "EP_Start");
}

// Every request is checked before the first start: an invalid or active one, or one
// listed twice, starts none.  While checking, each listed request's `active` holds the
// mark listed_mark() (a second listing then looks active); every mark is cleared before
// the call starts anything or returns.  A start that fails (a buffered send with no room)
// stops there: the requests before it are active, it and those after it are not.
int EP_Startall(int count, EP_Request requests[]) {
  const char* call = "EP_Startall";
  EP_CHECK_INIT(call);
  if (count < 0) return fail(EP_ERR_COUNT, call, "count %d is negative", count);
  if (count > 0 && requests == nullptr) return fail(EP_ERR_ARG, call, "array of requests is NULL");
  Request* const mark = listed_mark();
  int listed = 0, err = EP_SUCCESS;
  for (; listed < count; ++listed) {
    Request* p = startable(requests[listed]);
    if (p == nullptr) {
      Request* q = as_request(requests[listed]);
      err = q != nullptr && q->kind == ep::runtime::RequestKind::kPersistent && q->active == mark
                ? handle(q->owner, fail(EP_ERR_REQUEST, call,
                                        "requests[%d] appears twice in the array", listed))
                : start_error(requests[listed], q, call, listed);
      break;
    }
    p->active = mark;
  }
  for (int i = 0; i < listed; ++i) reinterpret_cast<Request*>(requests[i])->active = nullptr;
  for (int i = 0; i < count && err == EP_SUCCESS; ++i) {
    err = start_checked(reinterpret_cast<Request*>(requests[i]), call);
  }
  return err;
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
  ep::runtime::pack(buf, count, ti, packed.data());
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
  return wait_request(&r, status, "EP_Mrecv");
}

int EP_Buffer_attach(void* buffer, int size) {
  EP_CHECK_INIT("EP_Buffer_attach");
  if (size < 0) return fail(EP_ERR_BUFFER, "EP_Buffer_attach", "size %d is negative", size);
  if (buffer == nullptr && size > 0) {
    return fail(EP_ERR_BUFFER, "EP_Buffer_attach", "buffer is NULL but size is %d", size);
  }
  if (buffer == EP_IN_PLACE)
    return fail(EP_ERR_BUFFER, "EP_Buffer_attach", "buffer is EP_IN_PLACE");
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
  EP_MPI(MPI_Status_set_elements_x(&st, MPI_BYTE, status->ep_bytes_));
  EP_MPI(MPI_Get_elements(&st, type, count));
  return EP_SUCCESS;
}

}  // extern "C"
