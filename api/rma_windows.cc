// rma_windows.cc - the C entry points of dynamic and shared windows: EP_Win_create_dynamic,
// EP_Win_attach, EP_Win_detach, EP_Win_allocate_shared, EP_Win_shared_query.  The window
// itself is rma/window.h; the shared checks api/rma_entry.h.
#include "api/rma_entry.h"

namespace {

using namespace ep::api;  // NOLINT(build/namespaces): the shared entry-point helpers

}  // namespace

extern "C" {

int EP_Win_create_dynamic(MPI_Info info, EP_Comm comm, EP_Win* win) {
  EP_GET_COMM(ep, comm, "EP_Win_create_dynamic");
  int err = check_create(0, 1, false, nullptr, win, ep, "EP_Win_create_dynamic");
  if (err != EP_SUCCESS && ep->comm->inter) return handle(ep, err);  // every endpoint fails
  Win* w = nullptr;
  err = ep::rma::win_create(ep, nullptr, 0, 1, ep::rma::Flavor::kDynamic, node_paths(info), err, &w,
                            "EP_Win_create_dynamic");
  if (err != EP_SUCCESS) return handle(ep, err);
  *win = reinterpret_cast<EP_Win>(w);
  return EP_SUCCESS;
}

int EP_Win_attach(EP_Win win, void* base, MPI_Aint size) {
  EP_GET_WIN(w, win, "EP_Win_attach");
  return handle_win(w, ep::rma::win_attach(w, base, size, "EP_Win_attach"));
}

int EP_Win_detach(EP_Win win, const void* base) {
  EP_GET_WIN(w, win, "EP_Win_detach");
  return handle_win(w, ep::rma::win_detach(w, base, "EP_Win_detach"));
}

int EP_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, EP_Comm comm, void* baseptr,
                           EP_Win* win) {
  (void)info;  // alloc_shared_noncontig permits gaps; the segments are contiguous anyway
  EP_GET_COMM(ep, comm, "EP_Win_allocate_shared");
  int err = check_create(size, disp_unit, false, nullptr, win, ep, "EP_Win_allocate_shared");
  if (err == EP_SUCCESS && baseptr == nullptr) {
    err = fail(EP_ERR_ARG, "EP_Win_allocate_shared", "baseptr is NULL");
  }
  if (err != EP_SUCCESS && ep->comm->inter) return handle(ep, err);  // every endpoint fails
  Win* w = nullptr;
  err = ep::rma::win_create_shared(ep, size, disp_unit, err, &w, "EP_Win_allocate_shared");
  if (err != EP_SUCCESS) return handle(ep, err);
  *static_cast<void**>(baseptr) = w->base;
  *win = reinterpret_cast<EP_Win>(w);
  return EP_SUCCESS;
}

int EP_Win_shared_query(EP_Win win, int rank, MPI_Aint* size, int* disp_unit, void* baseptr) {
  EP_GET_WIN(w, win, "EP_Win_shared_query");
  if (size == nullptr || disp_unit == nullptr || baseptr == nullptr) {
    return handle_win(w, fail(EP_ERR_ARG, "EP_Win_shared_query", "%s is NULL",
                              size == nullptr        ? "size"
                              : disp_unit == nullptr ? "disp_unit"
                                                     : "baseptr"));
  }
  return handle_win(
      w, ep::rma::win_shared_query(w, rank, size, disp_unit, static_cast<void**>(baseptr),
                                   "EP_Win_shared_query"));
}

}  // extern "C"
