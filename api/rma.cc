// rma.cc - the C entry points of one-sided communication: argument checks that need
// no window state, the window's error handler, the concurrent-entry guard.  The
// window itself is rma/window.h.
#include <cstring>

#include "api/entry.h"
#include "ep/ep.h"
#include "rma/window.h"

namespace {

using namespace ep::api;  // NOLINT(build/namespaces): the shared entry-point helpers
using ep::rma::OpArgs;
using ep::rma::OpKind;
using ep::rma::Win;

Win* as_win(EP_Win h) {
  auto* w = reinterpret_cast<Win*>(h);
  return (plausible_handle(w) && w->magic == Win::kMagic) ? w : nullptr;
}

// Windows take the predefined handlers only (EP_Win_set_errhandler): no communicator
// handle is ever passed to a user's function.
int handle_win(Win* w, int code) { return handle(w->errhandler, EP_COMM_NULL, code); }

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
int check_create(MPI_Aint size, int disp_unit, bool base_needed, const void* base, const void* out,
                 Endpoint* ep, const char* call) {
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
int check_data(const void* buf, int count, MPI_Datatype type, const char* call,
               const char* count_arg, const char* type_arg, const char* buf_arg) {
  if (count < 0) return fail(EP_ERR_COUNT, call, "%s %d is negative", count_arg, count);
  if (buf == EP_IN_PLACE) return fail(EP_ERR_BUFFER, call, "%s is EP_IN_PLACE", buf_arg);
  TypeInfo ti;
  int err = check_type(type, &ti, call, type_arg);
  if (err != EP_SUCCESS) return err;
  if (buf == nullptr && count > 0 && ti.size > 0 && is_builtin(type)) {
    return fail(EP_ERR_BUFFER, call, "%s is NULL but %s is %d", buf_arg, count_arg, count);
  }
  return EP_SUCCESS;
}

// The info key "ep_shared_memory" = "false" turns off the node's direct paths to this
// endpoint's window (shared segment, cross-memory attach): handler calls only.
bool node_paths(MPI_Info info) {
  if (info == MPI_INFO_NULL) return true;
  char value[16] = {0};
  int flag = 0;
  MPI_Info_get(info, "ep_shared_memory", static_cast<int>(sizeof(value)) - 1, value, &flag);
  return !(flag && std::strcmp(value, "false") == 0);
}

OpArgs op_args(OpKind kind, const void* obuf, int ocount, MPI_Datatype otype, void* rbuf,
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

int run_op(EP_Win win, const OpArgs& a, const char* call) {
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
  if (err == EP_SUCCESS && a.kind == OpKind::kCas &&
      (a.cbuf == nullptr || a.cbuf == EP_IN_PLACE)) {
    err = fail(EP_ERR_BUFFER, call, "compare_addr is %s",
               a.cbuf == nullptr ? "NULL" : "EP_IN_PLACE");
  }
  if (err == EP_SUCCESS && a.tcount < 0) {
    err = fail(EP_ERR_COUNT, call, "target_count %d is negative", a.tcount);
  }
  TypeInfo tti;
  if (err == EP_SUCCESS) err = check_type(a.ttype, &tti, call, "target_datatype");
  if (err == EP_SUCCESS) err = ep::rma::rma_op(w, a, call);
  return handle_win(w, err);
}

}  // namespace

extern "C" {

int EP_Win_create(void* base, MPI_Aint size, int disp_unit, MPI_Info info, EP_Comm comm,
                  EP_Win* win) {
  EP_GET_COMM(ep, comm, "EP_Win_create");
  int err = check_create(size, disp_unit, true, base, win, ep, "EP_Win_create");
  if (err != EP_SUCCESS && ep->comm->inter) return handle(ep, err);  // every endpoint fails
  Win* w = nullptr;
  err = ep::rma::win_create(ep, base, size, disp_unit, false, node_paths(info), err, &w,
                            "EP_Win_create");
  if (err != EP_SUCCESS) return handle(ep, err);
  *win = reinterpret_cast<EP_Win>(w);  // not NULL: check_create passed everywhere
  return EP_SUCCESS;
}

int EP_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, EP_Comm comm, void* baseptr,
                    EP_Win* win) {
  EP_GET_COMM(ep, comm, "EP_Win_allocate");
  int err = check_create(size, disp_unit, false, nullptr, win, ep, "EP_Win_allocate");
  if (err == EP_SUCCESS && baseptr == nullptr) {
    err = fail(EP_ERR_ARG, "EP_Win_allocate", "baseptr is NULL");
  }
  if (err != EP_SUCCESS && ep->comm->inter) return handle(ep, err);  // every endpoint fails
  Win* w = nullptr;
  err = ep::rma::win_create(ep, nullptr, size, disp_unit, true, node_paths(info), err, &w,
                            "EP_Win_allocate");
  if (err != EP_SUCCESS) return handle(ep, err);
  *static_cast<void**>(baseptr) = w->base;
  *win = reinterpret_cast<EP_Win>(w);
  return EP_SUCCESS;
}

int EP_Win_free(EP_Win* win) {
  EP_CHECK_INIT("EP_Win_free");
  if (win == nullptr) return fail(EP_ERR_ARG, "EP_Win_free", "win is NULL");
  Win* w = as_win(*win);
  if (w == nullptr) {
    return fail(EP_ERR_WIN, "EP_Win_free", "*win is %s",
                *win == EP_WIN_NULL ? "EP_WIN_NULL" : "not a valid window handle");
  }
  EP_Errhandler eh = w->errhandler;
  int err;
  {
    Entry guard(w->ep);
    if (!guard.ok()) {
      return handle(eh, EP_COMM_NULL,
                    fail(EP_ERR_CONCURRENT, "EP_Win_free",
                         "another thread is inside a call on this window's endpoint"));
    }
    err = ep::rma::win_free_prepare(w, "EP_Win_free");
  }
  if (err == EP_SUCCESS) {
    ep::rma::win_free(w);
    *win = EP_WIN_NULL;
  }
  return handle(eh, EP_COMM_NULL, err);
}

int EP_Win_set_errhandler(EP_Win win, EP_Errhandler errhandler) {
  EP_GET_WIN(w, win, "EP_Win_set_errhandler");
  if (errhandler != EP_ERRORS_ARE_FATAL && errhandler != EP_ERRORS_RETURN) {
    return handle_win(w, fail(EP_ERR_ARG, "EP_Win_set_errhandler",
                              "errhandler is neither EP_ERRORS_ARE_FATAL nor EP_ERRORS_RETURN"));
  }
  w->errhandler = errhandler;
  return EP_SUCCESS;
}

int EP_Win_get_attr(EP_Win win, int win_keyval, void* attribute_val, int* flag) {
  EP_GET_WIN(w, win, "EP_Win_get_attr");
  if (attribute_val == nullptr || flag == nullptr) {
    return handle_win(w, fail(EP_ERR_ARG, "EP_Win_get_attr", "%s is NULL",
                              flag == nullptr ? "flag" : "attribute_val"));
  }
  if (win_keyval == EP_WIN_BASE) {
    *static_cast<void**>(attribute_val) = w->base;
  } else if (win_keyval == EP_WIN_SIZE) {
    *static_cast<MPI_Aint**>(attribute_val) = &w->size;
  } else if (win_keyval == EP_WIN_DISP_UNIT) {
    *static_cast<int**>(attribute_val) = &w->disp_unit;
  } else {
    return handle_win(
        w, fail(EP_ERR_ARG, "EP_Win_get_attr",
                "win_keyval %d is not EP_WIN_BASE, EP_WIN_SIZE or EP_WIN_DISP_UNIT", win_keyval));
  }
  *flag = 1;
  return EP_SUCCESS;
}

int EP_Win_get_group(EP_Win win, EP_Group* group) {
  EP_GET_WIN(w, win, "EP_Win_get_group");
  if (group == nullptr) return handle_win(w, fail(EP_ERR_ARG, "EP_Win_get_group", "group is NULL"));
  auto* g = new ep_group_s;
  g->g.members = w->ep->comm->ids;
  g->g.my_rank = w->ep->rank;
  g->g.has_self = true;
  g->g.self = w->ep->comm->ids[w->ep->rank];
  *group = g;
  return EP_SUCCESS;
}

int EP_Win_fence(int assert_flags, EP_Win win) {
  EP_GET_WIN(w, win, "EP_Win_fence");
  constexpr int kModes = MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE |
                         MPI_MODE_NOSUCCEED;
  if ((assert_flags & ~kModes) != 0) {
    return handle_win(w, fail(EP_ERR_ARG, "EP_Win_fence",
                              "assert %#x has bits that are no EP_MODE_* flag", assert_flags));
  }
  return handle_win(w, ep::rma::win_fence(w, assert_flags, "EP_Win_fence"));
}

int EP_Win_lock(int lock_type, int rank, int assert_flags, EP_Win win) {
  EP_GET_WIN(w, win, "EP_Win_lock");
  if (lock_type != EP_LOCK_SHARED && lock_type != EP_LOCK_EXCLUSIVE) {
    return handle_win(
        w, fail(EP_ERR_ARG, "EP_Win_lock",
                "lock_type %d is neither EP_LOCK_SHARED nor EP_LOCK_EXCLUSIVE", lock_type));
  }
  if ((assert_flags & ~MPI_MODE_NOCHECK) != 0) {
    return handle_win(w, fail(EP_ERR_ARG, "EP_Win_lock",
                              "assert %#x: only EP_MODE_NOCHECK applies to a lock", assert_flags));
  }
  return handle_win(w, ep::rma::win_lock(w, lock_type, rank, assert_flags, "EP_Win_lock"));
}

int EP_Win_unlock(int rank, EP_Win win) {
  EP_GET_WIN(w, win, "EP_Win_unlock");
  return handle_win(w, ep::rma::win_unlock(w, rank, "EP_Win_unlock"));
}

int EP_Win_lock_all(int assert_flags, EP_Win win) {
  EP_GET_WIN(w, win, "EP_Win_lock_all");
  if ((assert_flags & ~MPI_MODE_NOCHECK) != 0) {
    return handle_win(w, fail(EP_ERR_ARG, "EP_Win_lock_all",
                              "assert %#x: only EP_MODE_NOCHECK applies to a lock", assert_flags));
  }
  return handle_win(w, ep::rma::win_lock_all(w, assert_flags, "EP_Win_lock_all"));
}

int EP_Win_unlock_all(EP_Win win) {
  EP_GET_WIN(w, win, "EP_Win_unlock_all");
  return handle_win(w, ep::rma::win_unlock_all(w, "EP_Win_unlock_all"));
}

int EP_Win_flush(int rank, EP_Win win) {
  EP_GET_WIN(w, win, "EP_Win_flush");
  return handle_win(w, ep::rma::win_flush(w, rank, "EP_Win_flush"));
}

int EP_Win_flush_all(EP_Win win) {
  EP_GET_WIN(w, win, "EP_Win_flush_all");
  return handle_win(w, ep::rma::win_flush_all(w, "EP_Win_flush_all"));
}

int EP_Put(const void* origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
           MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, EP_Win win) {
  return run_op(win,
                op_args(OpKind::kPut, origin_addr, origin_count, origin_datatype, nullptr, 0,
                        MPI_DATATYPE_NULL, target_rank, target_disp, target_count, target_datatype,
                        MPI_REPLACE),
                "EP_Put");
}

int EP_Get(void* origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
           MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, EP_Win win) {
  return run_op(win,
                op_args(OpKind::kGet, nullptr, 0, MPI_DATATYPE_NULL, origin_addr, origin_count,
                        origin_datatype, target_rank, target_disp, target_count, target_datatype,
                        MPI_REPLACE),
                "EP_Get");
}

int EP_Accumulate(const void* origin_addr, int origin_count, MPI_Datatype origin_datatype,
                  int target_rank, MPI_Aint target_disp, int target_count,
                  MPI_Datatype target_datatype, MPI_Op op, EP_Win win) {
  return run_op(
      win,
      op_args(OpKind::kAcc, origin_addr, origin_count, origin_datatype, nullptr, 0,
              MPI_DATATYPE_NULL, target_rank, target_disp, target_count, target_datatype, op),
      "EP_Accumulate");
}

int EP_Get_accumulate(const void* origin_addr, int origin_count, MPI_Datatype origin_datatype,
                      void* result_addr, int result_count, MPI_Datatype result_datatype,
                      int target_rank, MPI_Aint target_disp, int target_count,
                      MPI_Datatype target_datatype, MPI_Op op, EP_Win win) {
  return run_op(win,
                op_args(OpKind::kGetAcc, origin_addr, origin_count, origin_datatype, result_addr,
                        result_count, result_datatype, target_rank, target_disp, target_count,
                        target_datatype, op),
                "EP_Get_accumulate");
}

int EP_Fetch_and_op(const void* origin_addr, void* result_addr, MPI_Datatype datatype,
                    int target_rank, MPI_Aint target_disp, MPI_Op op, EP_Win win) {
  return run_op(win,
                op_args(OpKind::kGetAcc, origin_addr, 1, datatype, result_addr, 1, datatype,
                        target_rank, target_disp, 1, datatype, op),
                "EP_Fetch_and_op");
}

int EP_Compare_and_swap(const void* origin_addr, const void* compare_addr, void* result_addr,
                        MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, EP_Win win) {
  OpArgs a = op_args(OpKind::kCas, origin_addr, 1, datatype, result_addr, 1, datatype, target_rank,
                     target_disp, 1, datatype, MPI_REPLACE);
  a.cbuf = compare_addr;
  return run_op(win, a, "EP_Compare_and_swap");
}

}  // extern "C"
