// records.cc - making, finding and freeing the records behind libep's MPI handles
// (layer.h), and a threadcomm's thread-local bindings.
#include <mpi.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <vector>

#include "ep/ep.h"
#include "mpi/handles.h"
#include "mpi/layer.h"

namespace ep::mpi {

// A thread's threadcomm bindings: the first few in initial-exec TLS (read on every call
// on a threadcomm), more in a vector.  The initial-exec variables have external linkage,
// as libep's own: initial-exec relocations against local TLS symbols of libep_mpi.so were
// resolved to wrong offsets (Debian 12: glibc 2.36, binutils 2.40), so that two variables
// overlapped.
struct Binding {
  const Comm* shared;
  Comm* mine;
};
constexpr int kInlineBindings = 4;
__thread Binding t_bind[kInlineBindings] __attribute__((tls_model("initial-exec")));
__thread int t_nbind __attribute__((tls_model("initial-exec"))) = 0;

namespace {
thread_local std::vector<Binding> t_more;
}  // namespace

Comm* bound_endpoint(const Comm* shared) {
  const int n = std::min(t_nbind, kInlineBindings);
  for (int i = 0; i < n; ++i) {
    if (t_bind[i].shared == shared) return t_bind[i].mine;
  }
  if (t_nbind > kInlineBindings) {
    for (const Binding& b : t_more) {
      if (b.shared == shared) return b.mine;
    }
  }
  return nullptr;
}

void bind_endpoint(const Comm* shared, Comm* mine) {
  if (t_nbind < kInlineBindings) {
    t_bind[t_nbind] = {shared, mine};
  } else {
    t_more.push_back({shared, mine});
  }
  ++t_nbind;
}

void unbind_endpoint(const Comm* shared) {
  const int n = std::min(t_nbind, kInlineBindings);
  for (int i = 0; i < n; ++i) {
    if (t_bind[i].shared != shared) continue;
    if (!t_more.empty()) {
      t_bind[i] = t_more.back();
      t_more.pop_back();
    } else {
      t_bind[i] = t_bind[n - 1];
    }
    --t_nbind;
    return;
  }
  for (size_t i = 0; i < t_more.size(); ++i) {
    if (t_more[i].shared != shared) continue;
    t_more.erase(t_more.begin() + static_cast<long>(i));
    --t_nbind;
    return;
  }
}

Comm* endpoint_slow(Comm* c, int h, const char* call, int* err) {
  if (c == nullptr) {
    *err = raise_plain(MPI_COMM_WORLD, MPI_ERR_COMM, call,
                       "communicator %#x names no libep communicator (freed?)",
                       static_cast<unsigned>(h));
    return nullptr;
  }
  Comm* mine = bound_endpoint(c);
  if (mine != nullptr) return mine;
  *err = raise_class(c, MPI_ERR_COMM, call,
                     "threadcomm %#x is used outside this thread's "
                     "MPIX_Threadcomm_start/MPIX_Threadcomm_finish",
                     static_cast<unsigned>(h));
  return nullptr;
}

Comm* endpoint_bound(int h) {
  const Comm* c = static_cast<const Comm*>(table(Kind::kComm).get(h));
  return c != nullptr && c->tc != nullptr ? bound_endpoint(c) : nullptr;
}

int no_endpoint(int h, const char* call) {
  int err = MPI_ERR_COMM;
  endpoint_slow(static_cast<Comm*>(table(Kind::kComm).get(h)), h, call, &err);
  return err;
}

int no_window(int h, const char* call) {
  int err = MPI_ERR_WIN;
  window(h, call, &err);
  return err;
}

int raise_comm(int h, int ep_code, const char* call) {
  int err = MPI_ERR_COMM;
  const Comm* c = comm_record(h, call, &err);
  return c == nullptr ? err : raise(c, ep_code, call);
}

int raise_comm_class(int h, int cls, const char* call, const char* fmt, ...) {
  int err = MPI_ERR_COMM;
  const Comm* c = comm_record(h, call, &err);
  if (c == nullptr) return err;
  char text[400];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  return raise_class(c, cls, call, "%s", text);
}

int raise_win_handle(int h, int ep_code, const char* call) {
  int err = MPI_ERR_WIN;
  const Win* w = window(h, call, &err);
  return w == nullptr ? err : raise_win(w, ep_code, call);
}

int raise_win_handle_class(int h, int cls, const char* call, const char* fmt, ...) {
  int err = MPI_ERR_WIN;
  const Win* w = window(h, call, &err);
  if (w == nullptr) return err;
  char text[400];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  return raise_win_class(w, cls, call, "%s", text);
}

Comm* comm_record(int h, const char* call, int* err) {
  Comm* c = static_cast<Comm*>(table(Kind::kComm).get(h));
  if (c == nullptr) {
    *err = raise_plain(MPI_COMM_WORLD, MPI_ERR_COMM, call,
                       "communicator %#x names no libep communicator (freed?)",
                       static_cast<unsigned>(h));
    return nullptr;
  }
  if (c->tc == nullptr) return c;
  Comm* mine = bound_endpoint(c);
  return mine != nullptr ? mine : c;
}

Win* window(int h, const char* call, int* err) {
  Win* w = static_cast<Win*>(table(Kind::kWin).get(h));
  if (w == nullptr) {
    *err = raise_plain(MPI_COMM_WORLD, MPI_ERR_WIN, call,
                       "window %#x names no libep window (freed?)", static_cast<unsigned>(h));
  }
  return w;
}

namespace {

// The group libep knows for g, or EP_GROUP_NULL with a message in *why.
EP_Group translate_group(MPI_Group g, const char** why) {
  if (g == MPI_GROUP_EMPTY) return EP_GROUP_EMPTY;
  if (is_kind<Kind::kGroup>(g)) {
    EP_Group eg = group_of(g);
    if (eg == EP_GROUP_NULL) *why = "names no libep group (freed?)";
    return eg;
  }
  *why = g == MPI_GROUP_NULL ? "is MPI_GROUP_NULL"
                             : "is a group of MPI processes, not of libep endpoints";
  return EP_GROUP_NULL;
}

}  // namespace

bool ep_group(const Comm* c, MPI_Group g, EP_Group* out, const char* call, int* err) {
  const char* why = "";
  *out = translate_group(g, &why);
  if (*out != EP_GROUP_NULL) return true;
  *err = raise_class(c, MPI_ERR_GROUP, call, "group %#x %s", static_cast<unsigned>(g), why);
  return false;
}

bool ep_group_win(const Win* w, MPI_Group g, EP_Group* out, const char* call, int* err) {
  const char* why = "";
  *out = translate_group(g, &why);
  if (*out != EP_GROUP_NULL) return true;
  *err = raise_win_class(w, MPI_ERR_GROUP, call, "group %#x %s", static_cast<unsigned>(g), why);
  return false;
}

Comm* new_comm_record(Comm* parent, const Errh* errh) {
  Comm* n = new Comm;
  n->errh.store(parent != nullptr ? parent->shared->errh.load(std::memory_order_relaxed) : errh,
                std::memory_order_relaxed);  // relaxed: published with the handle
  const int h = table(Kind::kComm).make(n, 0);
  if (h == 0) {
    delete n;
    return nullptr;
  }
  n->handle = h;
  if (parent != nullptr && parent->region != nullptr) {
    n->region = parent->region;
    parent->region->derived.push_back(n);
  }
  return n;
}

int make_comm(EP_Comm ep, Comm* parent, const Errh* errh, MPI_Comm* out, const char* call) {
  if (ep == EP_COMM_NULL) {
    *out = MPI_COMM_NULL;
    return MPI_SUCCESS;
  }
  // libep_mpi applies the MPI error handler itself: libep returns every error.
  EP_Comm_set_errhandler(ep, EP_ERRORS_RETURN);
  Comm* n = new_comm_record(parent, errh);
  if (n == nullptr) {
    EP_Comm_free(&ep);
    if (parent != nullptr) {
      return raise_class(parent, MPI_ERR_INTERN, call, "too many communicator handles");
    }
    return raise_plain(MPI_COMM_WORLD, MPI_ERR_INTERN, call, "too many communicator handles");
  }
  n->ep = ep;
  *out = n->handle;
  return MPI_SUCCESS;
}

int copy_attrs(const Comm* c, Comm* n) {
  for (const Attr& a : c->attrs) {
    const Keyval* k = find_keyval(a.keyval, false);
    if (k == nullptr || k->copy_fn == nullptr) continue;  // MPI_COMM_NULL_COPY_FN
    auto* copy = reinterpret_cast<MPI_Comm_copy_attr_function*>(k->copy_fn);
    void* value = nullptr;
    int flag = 0;
    const int rc = copy(c->handle, a.keyval, k->extra_state, a.value, &value, &flag);
    if (rc != MPI_SUCCESS) return rc;
    if (flag) n->attrs.push_back({a.keyval, value});
  }
  return MPI_SUCCESS;
}

int delete_attrs(Comm* c) {
  while (!c->attrs.empty()) {
    const Attr a = c->attrs.back();
    const Keyval* k = find_keyval(a.keyval, false);
    if (k != nullptr && k->delete_fn != nullptr) {
      auto* del = reinterpret_cast<MPI_Comm_delete_attr_function*>(k->delete_fn);
      const int rc = del(c->handle, a.keyval, a.value, k->extra_state);
      if (rc != MPI_SUCCESS) return rc;
    }
    c->attrs.pop_back();
  }
  return MPI_SUCCESS;
}

int free_comm(Comm* c, const char* call) {
  const int arc = delete_attrs(c);
  if (arc != MPI_SUCCESS) return arc;
  // What was derived from a threadcomm endpoint in its region goes with it.
  while (!c->derived.empty()) {
    Comm* d = c->derived.back();
    const int rc = free_comm(d, call);
    if (rc != MPI_SUCCESS) return rc;
  }
  if (c->ep != EP_COMM_NULL) {
    const int rc = EP_Comm_free(&c->ep);
    if (rc != EP_SUCCESS) return ep_class(rc);
  }
  if (c->region != nullptr && c->region != c) {
    auto& d = c->region->derived;
    d.erase(std::remove(d.begin(), d.end(), c), d.end());
  }
  // (A threadcomm's endpoint records carry the shared handle, which they do not own.)
  if (c->handle != 0 && table(Kind::kComm).get(c->handle) == c) {
    table(Kind::kComm).release(c->handle);
  }
  delete c;
  return MPI_SUCCESS;
}

int make_win(EP_Win ep, Comm* parent, MPI_Win* out, const char* call) {
  EP_Win_set_errhandler(ep, EP_ERRORS_RETURN);
  Win* w = new Win;
  w->ep = ep;
  w->errh.store(errh_fatal(), std::memory_order_relaxed);  // MPI: windows start fatal
  const int h = table(Kind::kWin).make(w, 0);
  if (h == 0) {
    EP_Win_free(&w->ep);
    delete w;
    return raise_class(parent, MPI_ERR_INTERN, call, "too many window handles");
  }
  w->handle = h;
  *out = h;
  return MPI_SUCCESS;
}

int request_table_full(EP_Request r, int owner, const char* call, Keep* keep) {
  EP_Request_free(&r);
  delete keep;
  return raise_owner(owner, EP_ERR_INTERN, call);
}

void delete_keep(void* keep) { delete static_cast<Keep*>(keep); }

int invalid_request(int h, const char* call) {
  return raise_plain(MPI_COMM_WORLD, MPI_ERR_REQUEST, call,
                     "request %#x names no libep request (completed or freed?)",
                     static_cast<unsigned>(h));
}

int unsupported(int h, int cls, const char* call) {
  int err = cls;
  if (is_kind<Kind::kComm>(h)) {
    Comm* c = comm_record(h, call, &err);
    if (c == nullptr) return err;
    return raise_class(c, cls, call, "not available on libep's endpoints communicators");
  }
  if (is_kind<Kind::kWin>(h)) {
    Win* w = window(h, call, &err);
    if (w == nullptr) return err;
    return raise_win_class(w, cls, call, "not available on libep's windows");
  }
  return raise_plain(MPI_COMM_WORLD, cls, call, "not available on libep's objects");
}

int peer_count(const Comm* c) {
  int inter = 0, n = 0;
  EP_Comm_test_inter(c->ep, &inter);
  if (inter) {
    EP_Comm_remote_size(c->ep, &n);
  } else {
    EP_Comm_size(c->ep, &n);
  }
  return n;
}

int local_count(const Comm* c) {
  int n = 0;
  EP_Comm_size(c->ep, &n);
  return n;
}

int make_group(EP_Group g, MPI_Group* out) {
  if (g == EP_GROUP_NULL) {
    *out = MPI_GROUP_NULL;
  } else if (g == EP_GROUP_EMPTY) {
    *out = MPI_GROUP_EMPTY;
  } else {
    const int h = table(Kind::kGroup).make(g, 0);
    if (h == 0) {
      EP_Group_free(&g);
      return MPI_ERR_INTERN;
    }
    *out = h;
  }
  return MPI_SUCCESS;
}

int make_message(EP_Message m, int owner, MPI_Message* out) {
  if (m == EP_MESSAGE_NULL) {
    *out = MPI_MESSAGE_NULL;
  } else if (m == EP_MESSAGE_NO_PROC) {
    *out = MPI_MESSAGE_NO_PROC;
  } else {
    const int h = table(Kind::kMessage).make(m, owner);
    if (h == 0) return MPI_ERR_INTERN;
    *out = h;
  }
  return MPI_SUCCESS;
}

}  // namespace ep::mpi
