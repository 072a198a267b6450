// rma.cc - the C entry points of one-sided communication: argument checks that need
// no window state, the window's error handler, the concurrent-entry guard.  The
// window itself is rma/window.h.
#include "api/rma_entry.h"

namespace {

using namespace ep::api;  // NOLINT(build/namespaces): the shared entry-point helpers

}  // namespace

extern "C" {

int EP_Win_create(void* base, MPI_Aint size, int disp_unit, MPI_Info info, EP_Comm comm,
                  EP_Win* win) {
  EP_GET_COMM(ep, comm, "EP_Win_create");
  int err = check_create(size, disp_unit, true, base, win, ep, "EP_Win_create");
  if (err != EP_SUCCESS && ep->comm->inter) return handle(ep, err);  // every endpoint fails
  Win* w = nullptr;
  err = ep::rma::win_create(ep, base, size, disp_unit, ep::rma::Flavor::kCreate, node_paths(info),
                            err, &w, "EP_Win_create");
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
  err = ep::rma::win_create(ep, nullptr, size, disp_unit, ep::rma::Flavor::kAllocate,
                            node_paths(info), err, &w, "EP_Win_allocate");
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
  } else if (win_keyval == EP_WIN_CREATE_FLAVOR) {
    // Process-wide constants, by Flavor: the attribute is a pointer to one.
    static int flavors[] = {EP_WIN_FLAVOR_CREATE, EP_WIN_FLAVOR_ALLOCATE, EP_WIN_FLAVOR_DYNAMIC,
                            EP_WIN_FLAVOR_SHARED};
    *static_cast<int**>(attribute_val) = &flavors[static_cast<int>(w->flavor)];
  } else if (win_keyval == EP_WIN_MODEL) {
    static int unified = EP_WIN_UNIFIED;
    *static_cast<int**>(attribute_val) = &unified;
  } else {
    return handle_win(w, fail(EP_ERR_ARG, "EP_Win_get_attr",
                              "win_keyval %d is not EP_WIN_BASE, EP_WIN_SIZE, EP_WIN_DISP_UNIT, "
                              "EP_WIN_CREATE_FLAVOR or EP_WIN_MODEL",
                              win_keyval));
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
