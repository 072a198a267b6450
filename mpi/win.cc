// win.cc - the window calls that ep.h has no counterpart of: freeing (with the
// attributes' delete callbacks), attributes and keyvals, names and info.  libep_mpi
// keeps a libep window's attributes and name itself; its predefined attributes
// (MPI_WIN_BASE, ...) are libep's (EP_Win_get_attr).
#include <mpi.h>

#include <cstring>
#include <string>

#include "ep/ep.h"
#include "mpi/layer.h"
#include "mpi/wrappers.h"

using ep::mpi::is_kind;
using ep::mpi::Kind;
using ep::mpi::Win;

namespace ep::mpi {
namespace {

bool is_win(MPI_Win w) { return is_kind<Kind::kWin>(w); }

bool predefined_win_keyval(int keyval) {
  return keyval == MPI_WIN_BASE || keyval == MPI_WIN_SIZE || keyval == MPI_WIN_DISP_UNIT ||
         keyval == MPI_WIN_CREATE_FLAVOR || keyval == MPI_WIN_MODEL;
}

int delete_one(Win* w, const Attr& a, const char* call) {
  const Keyval* k = find_keyval(a.keyval, true);
  if (k == nullptr || k->delete_fn == nullptr) return MPI_SUCCESS;
  auto* del = reinterpret_cast<MPI_Win_delete_attr_function*>(k->delete_fn);
  const int rc = del(w->handle, a.keyval, a.value, k->extra_state);
  if (rc != MPI_SUCCESS) return raise_win_class(w, rc, call, "an attribute delete callback failed");
  return MPI_SUCCESS;
}

}  // namespace
}  // namespace ep::mpi

using namespace ep::mpi;  // NOLINT(build/namespaces): the helpers of this layer

extern "C" {

int MPI_Win_free(MPI_Win* win) {
  if (win == nullptr || !is_win(*win)) return PMPI_Win_free(win);
  int err;
  Win* w = window(*win, "MPI_Win_free", &err);
  if (w == nullptr) return err;
  while (!w->attrs.empty()) {
    const int rc = delete_one(w, w->attrs.back(), "MPI_Win_free");
    if (rc != MPI_SUCCESS) return rc;
    w->attrs.pop_back();
  }
  const int rc = EP_Win_free(&w->ep);
  if (rc != EP_SUCCESS) return raise_win(w, rc, "MPI_Win_free");
  table(Kind::kWin).release(*win);
  delete w;
  *win = MPI_WIN_NULL;
  return MPI_SUCCESS;
}

int MPI_Win_create_keyval(MPI_Win_copy_attr_function* copy_fn,
                          MPI_Win_delete_attr_function* delete_fn, int* keyval, void* extra_state) {
  const int rc = PMPI_Win_create_keyval(copy_fn, delete_fn, keyval, extra_state);
  if (rc == MPI_SUCCESS) {
    register_keyval(*keyval, true, reinterpret_cast<void*>(copy_fn),
                    reinterpret_cast<void*>(delete_fn), extra_state);
  }
  return rc;
}

int MPI_Win_free_keyval(int* keyval) { return PMPI_Win_free_keyval(keyval); }

int MPI_Win_set_attr(MPI_Win win, int keyval, void* attribute_val) {
  const char* call = "MPI_Win_set_attr";
  if (!is_win(win)) return PMPI_Win_set_attr(win, keyval, attribute_val);
  int err;
  Win* w = window(win, call, &err);
  if (w == nullptr) return err;
  if (predefined_win_keyval(keyval) || find_keyval(keyval, true) == nullptr) {
    return raise_win_class(w, MPI_ERR_KEYVAL, call, "keyval %#x is not a window keyval %s",
                           static_cast<unsigned>(keyval),
                           predefined_win_keyval(keyval) ? "the application may set" : "");
  }
  for (Attr& a : w->attrs) {
    if (a.keyval != keyval) continue;
    const int rc = delete_one(w, a, call);
    if (rc != MPI_SUCCESS) return rc;
    a.value = attribute_val;
    return MPI_SUCCESS;
  }
  w->attrs.push_back({keyval, attribute_val});
  return MPI_SUCCESS;
}

int MPI_Win_get_attr(MPI_Win win, int keyval, void* attribute_val, int* flag) {
  const char* call = "MPI_Win_get_attr";
  if (!is_win(win)) return PMPI_Win_get_attr(win, keyval, attribute_val, flag);
  int err;
  Win* w = window(win, call, &err);
  if (w == nullptr) return err;
  if (attribute_val == nullptr || flag == nullptr) {
    return raise_win_class(w, MPI_ERR_ARG, call, "attribute_val or flag is NULL");
  }
  if (predefined_win_keyval(keyval)) {
    const int rc = EP_Win_get_attr(w->ep, keyval, attribute_val, flag);
    return rc == EP_SUCCESS ? MPI_SUCCESS : raise_win(w, rc, call);
  }
  if (find_keyval(keyval, true) == nullptr) {
    return raise_win_class(w, MPI_ERR_KEYVAL, call, "keyval %#x is not a window keyval",
                           static_cast<unsigned>(keyval));
  }
  *flag = 0;
  for (const Attr& a : w->attrs) {
    if (a.keyval == keyval) {
      *static_cast<void**>(attribute_val) = a.value;
      *flag = 1;
      break;
    }
  }
  return MPI_SUCCESS;
}

int MPI_Win_delete_attr(MPI_Win win, int keyval) {
  const char* call = "MPI_Win_delete_attr";
  if (!is_win(win)) return PMPI_Win_delete_attr(win, keyval);
  int err;
  Win* w = window(win, call, &err);
  if (w == nullptr) return err;
  if (find_keyval(keyval, true) == nullptr) {
    return raise_win_class(w, MPI_ERR_KEYVAL, call, "keyval %#x is not a window keyval",
                           static_cast<unsigned>(keyval));
  }
  for (size_t i = 0; i < w->attrs.size(); ++i) {
    if (w->attrs[i].keyval != keyval) continue;
    const int rc = delete_one(w, w->attrs[i], call);
    if (rc != MPI_SUCCESS) return rc;
    w->attrs.erase(w->attrs.begin() + static_cast<long>(i));
    break;
  }
  return MPI_SUCCESS;
}

int MPI_Win_set_name(MPI_Win win, const char* win_name) {
  if (!is_win(win)) return PMPI_Win_set_name(win, win_name);
  int err;
  Win* w = window(win, "MPI_Win_set_name", &err);
  if (w == nullptr) return err;
  if (win_name == nullptr)
    return raise_win_class(w, MPI_ERR_ARG, "MPI_Win_set_name", "win_name is NULL");
  w->name.assign(win_name, strnlen(win_name, MPI_MAX_OBJECT_NAME - 1));
  return MPI_SUCCESS;
}

int MPI_Win_get_name(MPI_Win win, char* win_name, int* resultlen) {
  if (!is_win(win)) return PMPI_Win_get_name(win, win_name, resultlen);
  int err;
  Win* w = window(win, "MPI_Win_get_name", &err);
  if (w == nullptr) return err;
  if (win_name == nullptr || resultlen == nullptr) {
    return raise_win_class(w, MPI_ERR_ARG, "MPI_Win_get_name", "win_name or resultlen is NULL");
  }
  std::memcpy(win_name, w->name.c_str(), w->name.size() + 1);
  *resultlen = static_cast<int>(w->name.size());
  return MPI_SUCCESS;
}

int MPI_Win_set_info(MPI_Win win, MPI_Info info) {
  if (!is_win(win)) return PMPI_Win_set_info(win, info);
  int err;
  Win* w = window(win, "MPI_Win_set_info", &err);
  if (w == nullptr) return err;
#ifdef EP_MPI_HAVE_EP_Win_set_info
  const int rc = EP_Win_set_info(w->ep, info);
  return rc == EP_SUCCESS ? MPI_SUCCESS : raise_win(w, rc, "MPI_Win_set_info");
#else
  (void)info;  // hints are ignored, as MPI allows
  return MPI_SUCCESS;
#endif
}

int MPI_Win_get_info(MPI_Win win, MPI_Info* info_used) {
  if (!is_win(win)) return PMPI_Win_get_info(win, info_used);
  int err;
  Win* w = window(win, "MPI_Win_get_info", &err);
  if (w == nullptr) return err;
  if (info_used == nullptr) {
    return raise_win_class(w, MPI_ERR_ARG, "MPI_Win_get_info", "info_used is NULL");
  }
#ifdef EP_MPI_HAVE_EP_Win_get_info
  const int rc = EP_Win_get_info(w->ep, info_used);
  return rc == EP_SUCCESS ? MPI_SUCCESS : raise_win(w, rc, "MPI_Win_get_info");
#else
  return PMPI_Info_create(info_used);
#endif
}

}  // extern "C"
