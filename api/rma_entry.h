// rma_entry.h - what the one-sided entry points share (api/rma.cc, rma_windows.cc,
// rma_requests.cc, rma_sync.cc): the window handle's check and guard, the window's error
// handler, the argument checks that need no window state, and run_op (every data-moving
// call ends there).
//
// Internal to api/; the functions run on the calling endpoint's thread.
//
// Memory ordering: none of its own (the window's state is the endpoint thread's; see
// rma/window.h).
#ifndef EP_API_RMA_ENTRY_H_
#define EP_API_RMA_ENTRY_H_

#include <cstring>

#include "api/entry.h"
#include "base/mpi_calls.h"
#include "ep/ep.h"
#include "rma/window.h"

namespace ep::api {

using ep::rma::OpArgs;
using ep::rma::OpKind;
using ep::rma::Win;

using ep::rma::OpArgs;
using ep::rma::OpKind;
using ep::rma::Win;

inline Win* as_win(EP_Win h) {
  auto* w = reinterpret_cast<Win*>(h);
  return (plausible_handle(w) && w->magic == Win::kMagic) ? w : nullptr;
}

// Windows take the predefined handlers only (EP_Win_set_errhandler): no communicator
// handle is ever passed to a user's function.
inline int handle_win(Win* w, int code) { return handle(w->errhandler, EP_COMM_NULL, code); }

#define EP_GET_WIN(w, win, call)                                                     \
  EP_CHECK_INIT(call);                                                               \
  Win* w = as_win(win);                                                              \
  if (w == nullptr) {                                                                \
    return fail(EP_ERR_WIN, call, "window is %s",                                    \
                (win) == EP_WIN_NULL ? "EP_WIN_NULL" : "not a valid window handle"); \
  }                                                                                  \
  Entry entry_guard(w->ep);                                                          \
  if (!entry_guard.ok()) {                                                           \
    return handle_win(w, fail(EP_ERR_CONCURRENT, call,                               \
                              "another thread is inside a call on this window's "    \
                              "endpoint %d",                                         \
                              w->ep->rank));                                         \
  }

// The local verdict on a window's creation arguments (reported through fail()).
inline int check_create(MPI_Aint size, int disp_unit, bool base_needed, const void* base,
                        const void* out, Endpoint* ep, const char* call) {
  if (out == nullptr) return fail(EP_ERR_ARG, call, "win is NULL");
  if (ep->comm->inter) {
    return fail(EP_ERR_COMM, call,
                "comm is an intercommunicator; windows need an intracommunicator");
  }
  if (size < 0)
    return fail(EP_ERR_ARG, call, "size %lld is negative", static_cast<long long>(size));
  if (disp_unit <= 0) return fail(EP_ERR_ARG, call, "disp_unit %d is not positive", disp_unit);
  if (base_needed && base == EP_IN_PLACE) return fail(EP_ERR_BUFFER, call, "base is EP_IN_PLACE");
  if (base_needed && base == nullptr && size > 0) {
    return fail(EP_ERR_BUFFER, call, "base is NULL but size is %lld", static_cast<long long>(size));
  }
  return EP_SUCCESS;
}

// Checks the arguments of a buffer that carries data (count, datatype, pointer).
inline int check_data(const void* buf, int count, MPI_Datatype type, const char* call,
                      const char* count_arg, const char* type_arg, const char* buf_arg) {
  if (count < 0) return fail(EP_ERR_COUNT, call, "%s %d is negative", count_arg, count);
  if (buf == EP_IN_PLACE) return fail(EP_ERR_BUFFER, call, "%s is EP_IN_PLACE", buf_arg);
  TypeInfo ti;
  int err = check_type(type, &ti, call, type_arg);
  if (err != EP_SUCCESS) return err;
  if (buf == nullptr && count > 0 && ti.size > 0 && ti.named) {
    return fail(EP_ERR_BUFFER, call, "%s is NULL but %s is %d", buf_arg, count_arg, count);
  }
  return EP_SUCCESS;
}

// The info key "ep_shared_memory" = "false" turns off the node's direct paths to this
// endpoint's window (shared segment, cross-memory attach): handler calls only.
inline bool node_paths(MPI_Info info) {
  if (info == MPI_INFO_NULL) return true;
  char value[16] = {0};
  int flag = 0;
  EP_MPI(MPI_Info_get(info, "ep_shared_memory", static_cast<int>(sizeof(value)) - 1, value, &flag));
  return !(flag && std::strcmp(value, "false") == 0);
}

inline OpArgs op_args(OpKind kind, const void* obuf, int ocount, MPI_Datatype otype, void* rbuf,
                      int rcount, MPI_Datatype rtype, int target, MPI_Aint tdisp, int tcount,
                      MPI_Datatype ttype, MPI_Op op) {
  OpArgs a;
  a.kind = kind;
  a.obuf = obuf;
  a.ocount = ocount;
  a.otype = otype;
  a.rbuf = rbuf;
  a.rcount = rcount;
  a.rtype = rtype;
  a.target = target;
  a.tdisp = tdisp;
  a.tcount = tcount;
  a.ttype = ttype;
  a.op = op;
  return a;
}

// `req`: a request-based operation's request (written only on success).
inline int run_op(EP_Win win, const OpArgs& a, const char* call, EP_Request* req = nullptr) {
  EP_GET_WIN(w, win, call);
  int err = EP_SUCCESS;
  if (a.op == MPI_OP_NULL) err = fail(EP_ERR_OP, call, "op is MPI_OP_NULL");
  if (err == EP_SUCCESS && a.has_origin()) {
    err = check_data(a.obuf, a.ocount, a.otype, call, "origin_count", "origin_datatype",
                     "origin_addr");
  }
  if (err == EP_SUCCESS && a.has_result()) {
    const bool get = a.kind == OpKind::kGet;
    err = check_data(a.rbuf, a.rcount, a.rtype, call, get ? "origin_count" : "result_count",
                     get ? "origin_datatype" : "result_datatype",
                     get ? "origin_addr" : "result_addr");
  }
  if (err == EP_SUCCESS && a.kind == OpKind::kCas && (a.cbuf == nullptr || a.cbuf == EP_IN_PLACE)) {
    err =
        fail(EP_ERR_BUFFER, call, "compare_addr is %s", a.cbuf == nullptr ? "NULL" : "EP_IN_PLACE");
  }
  if (err == EP_SUCCESS && a.tcount < 0) {
    err = fail(EP_ERR_COUNT, call, "target_count %d is negative", a.tcount);
  }
  TypeInfo tti;
  if (err == EP_SUCCESS) err = check_type(a.ttype, &tti, call, "target_datatype");
  if (err == EP_SUCCESS && req == nullptr) err = ep::rma::rma_op(w, a, call);
  if (err == EP_SUCCESS && req != nullptr) {
    ep::runtime::Request* r = nullptr;
    err = ep::rma::rma_op(w, a, call, &r);
    if (err == EP_SUCCESS) *req = reinterpret_cast<EP_Request>(r);
  }
  return handle_win(w, err);
}

}  // namespace ep::api

#endif  // EP_API_RMA_ENTRY_H_
