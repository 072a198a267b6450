// errors.cc - error classes, error handlers and their registry (layer.h), and the MPI
// calls on error handlers and error strings.
#include <mpi.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>

#include "ep/ep.h"
#include "mpi/layer.h"

namespace ep::mpi {

namespace {

const Errh kFatal{MPI_ERRORS_ARE_FATAL, Errh::kFatal, nullptr, nullptr, {}, nullptr};
const Errh kReturn{MPI_ERRORS_RETURN, Errh::kReturn, nullptr, nullptr, {}, nullptr};
const Errh kAbort{MPI_ERRORS_ABORT, Errh::kAbort, nullptr, nullptr, {}, nullptr};

std::atomic<const Errh*> g_errhs{nullptr};  // newest first
std::atomic<const Keyval*> g_keyvals{nullptr};

// The calling thread's latest error raised by libep_mpi: its class and message (what
// MPI_Error_string adds to MPICH's text of that class).
thread_local int t_last_class = MPI_SUCCESS;
thread_local std::string t_last_text;

void note(int cls, const char* call, const std::string& text) {
  t_last_class = cls;
  t_last_text = std::string(call) + ": " + text;
}

std::string ep_text(int ep_code) {
  if (ep_code >= kGreqCode) return "a generalized request's callback failed";
  char s[EP_MAX_ERROR_STRING];
  int len = 0;
  if (EP_Error_string(ep_code, s, &len) != EP_SUCCESS)
    return "libep error " + std::to_string(ep_code);
  return std::string(s, static_cast<size_t>(len));
}

std::string vformat(const char* fmt, va_list ap) {
  char buf[400];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  return buf;
}

[[noreturn]] void die(int cls) {
  std::fprintf(stderr, "libep_mpi: %s\n", t_last_text.c_str());
  std::fflush(stderr);
  PMPI_Abort(MPI_COMM_WORLD, cls);
  std::abort();
}

// Applies error handler e to an error of class cls on the object whose handle is h.
int apply(const Errh* e, int h, bool win, int cls) {
  if (e == nullptr) e = &kFatal;
  switch (e->type) {
    case Errh::kReturn:
      return cls;
    case Errh::kFatal:
    case Errh::kAbort:
      die(cls);
    case Errh::kCommFn:
      if (!win && e->comm_fn != nullptr) {
        MPI_Comm c = h;
        int code = cls;
        e->comm_fn(&c, &code);
      }
      return cls;
    case Errh::kWinFn:
      if (win && e->win_fn != nullptr) {
        MPI_Win w = h;
        int code = cls;
        e->win_fn(&w, &code);
      }
      return cls;
  }
  return cls;
}

}  // namespace

const Errh* errh_fatal() { return &kFatal; }
const Errh* errh_return() { return &kReturn; }

const Errh* find_errh(MPI_Errhandler h) {
  if (h == MPI_ERRORS_ARE_FATAL) return &kFatal;
  if (h == MPI_ERRORS_RETURN) return &kReturn;
  if (h == MPI_ERRORS_ABORT) return &kAbort;
  // acquire: pairs with the release CAS in register_errh (the node's fields).
  for (const Errh* e = g_errhs.load(std::memory_order_acquire); e != nullptr; e = e->next) {
    if (e->handle == h) return e;
  }
  return nullptr;
}

void register_errh(MPI_Errhandler h, MPI_Comm_errhandler_function* comm_fn,
                   MPI_Win_errhandler_function* win_fn) {
  Errh* e = new Errh{h,       comm_fn != nullptr ? Errh::kCommFn : Errh::kWinFn,
                     comm_fn, win_fn,
                     {},      g_errhs.load(std::memory_order_acquire)};
  // release: publishes the node; pairs with the acquire in find_errh.
  while (!g_errhs.compare_exchange_weak(e->next, e, std::memory_order_release,
                                        std::memory_order_acquire)) {
  }
}

const Errh* errh_of_mpi_comm(MPI_Comm comm) {
  MPI_Errhandler h = MPI_ERRHANDLER_NULL;
  if (PMPI_Comm_get_errhandler(comm, &h) != MPI_SUCCESS) return &kFatal;
  const Errh* e = find_errh(h);
  if (e == nullptr) e = &kFatal;
  if (e->type == Errh::kCommFn) {
    e->on_ep.store(true, std::memory_order_relaxed);  // relaxed: read by this process's frees only
  } else if (h != MPI_ERRHANDLER_NULL) {
    PMPI_Errhandler_free(&h);  // a predefined handler: give back the reference
  }
  // A user handler keeps the reference PMPI_Comm_get_errhandler took: libep objects
  // use it for the rest of the run.
  return e;
}

const Keyval* find_keyval(int keyval, bool win) {
  // acquire: pairs with the release CAS in register_keyval.
  for (const Keyval* k = g_keyvals.load(std::memory_order_acquire); k != nullptr; k = k->next) {
    if (k->keyval == keyval && k->win == win) return k;
  }
  return nullptr;
}

void register_keyval(int keyval, bool win, void* copy_fn, void* delete_fn, void* extra_state) {
  Keyval* k = new Keyval{keyval,    win,         copy_fn,
                         delete_fn, extra_state, g_keyvals.load(std::memory_order_acquire)};
  // release: publishes the node; pairs with the acquire in find_keyval.
  while (!g_keyvals.compare_exchange_weak(k->next, k, std::memory_order_release,
                                          std::memory_order_acquire)) {
  }
}

int ep_class(int ep_code) {
  if (ep_code >= kGreqCode) return ep_code - kGreqCode;
  switch (ep_code) {
    case EP_SUCCESS:
      return MPI_SUCCESS;
    case EP_ERR_ARG:
      return MPI_ERR_ARG;
    case EP_ERR_COMM:
      return MPI_ERR_COMM;
    case EP_ERR_RANK:
      return MPI_ERR_RANK;
    case EP_ERR_TAG:
      return MPI_ERR_TAG;
    case EP_ERR_COUNT:
      return MPI_ERR_COUNT;
    case EP_ERR_TYPE:
      return MPI_ERR_TYPE;
    case EP_ERR_OP:
      return MPI_ERR_OP;
    case EP_ERR_BUFFER:
      return MPI_ERR_BUFFER;
    case EP_ERR_TRUNCATE:
      return MPI_ERR_TRUNCATE;
    case EP_ERR_REQUEST:
      return MPI_ERR_REQUEST;
    case EP_ERR_ROOT:
      return MPI_ERR_ROOT;
    case EP_ERR_GROUP:
      return MPI_ERR_GROUP;
    case EP_ERR_WIN:
      return MPI_ERR_WIN;
    case EP_ERR_RMA_RANGE:
      return MPI_ERR_RMA_RANGE;
    case EP_ERR_RMA_SYNC:
      return MPI_ERR_RMA_SYNC;
    case EP_ERR_IN_STATUS:
      return MPI_ERR_IN_STATUS;
    case EP_ERR_PENDING:
      return MPI_ERR_PENDING;
    case EP_ERR_INTERN:
      return MPI_ERR_INTERN;
    default:
      return MPI_ERR_OTHER;  // not initialized, thread level, concurrent entry, ...
  }
}

int raise(const Comm* c, int ep_code, const char* call) {
  const int cls = ep_class(ep_code);
  note(cls, call, ep_text(ep_code));
  return apply(c->shared->errh.load(std::memory_order_relaxed), c->handle, false, cls);
}

int raise_win(const Win* w, int ep_code, const char* call) {
  const int cls = ep_class(ep_code);
  note(cls, call, ep_text(ep_code));
  return apply(w->errh.load(std::memory_order_relaxed), w->handle, true, cls);
}

int raise_class(const Comm* c, int cls, const char* call, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  note(cls, call, vformat(fmt, ap));
  va_end(ap);
  return apply(c->shared->errh.load(std::memory_order_relaxed), c->handle, false, cls);
}

int raise_win_class(const Win* w, int cls, const char* call, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  note(cls, call, vformat(fmt, ap));
  va_end(ap);
  return apply(w->errh.load(std::memory_order_relaxed), w->handle, true, cls);
}

int raise_plain(MPI_Comm comm, int cls, const char* call, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  note(cls, call, vformat(fmt, ap));
  va_end(ap);
  int flag = 0;
  PMPI_Initialized(&flag);
  if (!flag) return cls;
  if (comm == MPI_COMM_NULL || is_ep(comm)) comm = MPI_COMM_WORLD;
  MPI_Errhandler h = MPI_ERRHANDLER_NULL;
  if (PMPI_Comm_get_errhandler(comm, &h) != MPI_SUCCESS) return cls;
  if (h == MPI_ERRORS_RETURN) return cls;
  if (h == MPI_ERRORS_ARE_FATAL || h == MPI_ERRORS_ABORT) die(cls);
  PMPI_Errhandler_free(&h);
  PMPI_Comm_call_errhandler(comm, cls);
  return cls;
}

int raise_plain_ep(MPI_Comm comm, int ep_code, const char* call) {
  return raise_plain(comm, ep_class(ep_code), call, "%s", ep_text(ep_code).c_str());
}

int raise_owner(int owner, int ep_code, const char* call) {
  if (is_kind<Kind::kWin>(owner)) {
    if (const Win* w = static_cast<const Win*>(table(Kind::kWin).get(owner))) {
      return raise_win(w, ep_code, call);
    }
  } else if (is_kind<Kind::kComm>(owner)) {
    if (const Comm* c = static_cast<const Comm*>(table(Kind::kComm).get(owner))) {
      return raise(c, ep_code, call);
    }
  }
  return raise_plain(MPI_COMM_WORLD, ep_class(ep_code), call, "%s", ep_text(ep_code).c_str());
}

int call_errh(const Comm* c, int code) {
  note(code, "MPI_Comm_call_errhandler", "error raised by the application");
  apply(c->shared->errh.load(std::memory_order_relaxed), c->handle, false, code);
  return MPI_SUCCESS;
}

int call_errh_win(const Win* w, int code) {
  note(code, "MPI_Win_call_errhandler", "error raised by the application");
  apply(w->errh.load(std::memory_order_relaxed), w->handle, true, code);
  return MPI_SUCCESS;
}

}  // namespace ep::mpi

using ep::mpi::Comm;
using ep::mpi::Errh;
using ep::mpi::Win;

extern "C" {

// MPICH's text of the class, then what libep_mpi knows of this thread's latest error of
// that class (which call, which argument).
int MPI_Error_string(int errorcode, char* string, int* resultlen) {
  const int rc = PMPI_Error_string(errorcode, string, resultlen);
  if (rc != MPI_SUCCESS || errorcode != ep::mpi::t_last_class || errorcode == MPI_SUCCESS) {
    return rc;
  }
  std::string s(string, static_cast<size_t>(*resultlen));
  s += " (" + ep::mpi::t_last_text + ")";
  const size_t n = std::min(s.size(), static_cast<size_t>(MPI_MAX_ERROR_STRING - 1));
  std::memcpy(string, s.data(), n);
  string[n] = '\0';
  *resultlen = static_cast<int>(n);
  return rc;
}

int MPI_Comm_create_errhandler(MPI_Comm_errhandler_function* fn, MPI_Errhandler* errhandler) {
  const int rc = PMPI_Comm_create_errhandler(fn, errhandler);
  if (rc == MPI_SUCCESS) ep::mpi::register_errh(*errhandler, fn, nullptr);
  return rc;
}

int MPI_Errhandler_create(MPI_Comm_errhandler_function* fn, MPI_Errhandler* errhandler) {
  return MPI_Comm_create_errhandler(fn, errhandler);
}

int MPI_Win_create_errhandler(MPI_Win_errhandler_function* fn, MPI_Errhandler* errhandler) {
  const int rc = PMPI_Win_create_errhandler(fn, errhandler);
  if (rc == MPI_SUCCESS) ep::mpi::register_errh(*errhandler, nullptr, fn);
  return rc;
}

int MPI_Errhandler_free(MPI_Errhandler* errhandler) {
  if (errhandler != nullptr) {
    const Errh* e = ep::mpi::find_errh(*errhandler);
    // relaxed: set by this process's threads before the handler reached libep objects.
    if (e != nullptr && (e->type == Errh::kCommFn || e->type == Errh::kWinFn) &&
        e->on_ep.load(std::memory_order_relaxed)) {
      *errhandler = MPI_ERRHANDLER_NULL;  // libep objects still use it: MPICH's stays
      return MPI_SUCCESS;
    }
  }
  return PMPI_Errhandler_free(errhandler);
}

int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler) {
  if (!ep::mpi::is_kind<ep::mpi::Kind::kComm>(comm)) {
    return PMPI_Comm_set_errhandler(comm, errhandler);
  }
  int err;
  Comm* c = ep::mpi::comm_record(comm, "MPI_Comm_set_errhandler", &err);
  if (c == nullptr) return err;
  const Errh* e = ep::mpi::find_errh(errhandler);
  if (e == nullptr || e->type == Errh::kWinFn) {
    return ep::mpi::raise_class(c, MPI_ERR_ARG, "MPI_Comm_set_errhandler",
                                "errhandler %#x is not a communicator error handler",
                                static_cast<unsigned>(errhandler));
  }
  e->on_ep.store(true, std::memory_order_relaxed);  // relaxed: see MPI_Errhandler_free
  c->shared->errh.store(e, std::memory_order_relaxed);
  return MPI_SUCCESS;
}

int MPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler) {
  return MPI_Comm_set_errhandler(comm, errhandler);
}

int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler* errhandler) {
  if (!ep::mpi::is_kind<ep::mpi::Kind::kComm>(comm)) {
    return PMPI_Comm_get_errhandler(comm, errhandler);
  }
  int err;
  Comm* c = ep::mpi::comm_record(comm, "MPI_Comm_get_errhandler", &err);
  if (c == nullptr) return err;
  if (errhandler == nullptr) {
    return ep::mpi::raise_class(c, MPI_ERR_ARG, "MPI_Comm_get_errhandler", "errhandler is NULL");
  }
  *errhandler = c->shared->errh.load(std::memory_order_relaxed)->handle;
  return MPI_SUCCESS;
}

int MPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler* errhandler) {
  return MPI_Comm_get_errhandler(comm, errhandler);
}

int MPI_Comm_call_errhandler(MPI_Comm comm, int errorcode) {
  if (!ep::mpi::is_kind<ep::mpi::Kind::kComm>(comm)) {
    return PMPI_Comm_call_errhandler(comm, errorcode);
  }
  int err;
  Comm* c = ep::mpi::comm_record(comm, "MPI_Comm_call_errhandler", &err);
  if (c == nullptr) return err;
  return ep::mpi::call_errh(c, errorcode);
}

int MPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler) {
  if (!ep::mpi::is_kind<ep::mpi::Kind::kWin>(win)) return PMPI_Win_set_errhandler(win, errhandler);
  int err;
  Win* w = ep::mpi::window(win, "MPI_Win_set_errhandler", &err);
  if (w == nullptr) return err;
  const Errh* e = ep::mpi::find_errh(errhandler);
  if (e == nullptr || e->type == Errh::kCommFn) {
    return ep::mpi::raise_win_class(w, MPI_ERR_ARG, "MPI_Win_set_errhandler",
                                    "errhandler %#x is not a window error handler",
                                    static_cast<unsigned>(errhandler));
  }
  e->on_ep.store(true, std::memory_order_relaxed);  // relaxed: see MPI_Errhandler_free
  w->errh.store(e, std::memory_order_relaxed);
  return MPI_SUCCESS;
}

int MPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler* errhandler) {
  if (!ep::mpi::is_kind<ep::mpi::Kind::kWin>(win)) return PMPI_Win_get_errhandler(win, errhandler);
  int err;
  Win* w = ep::mpi::window(win, "MPI_Win_get_errhandler", &err);
  if (w == nullptr) return err;
  if (errhandler == nullptr) {
    return ep::mpi::raise_win_class(w, MPI_ERR_ARG, "MPI_Win_get_errhandler", "errhandler is NULL");
  }
  *errhandler = w->errh.load(std::memory_order_relaxed)->handle;
  return MPI_SUCCESS;
}

int MPI_Win_call_errhandler(MPI_Win win, int errorcode) {
  if (!ep::mpi::is_kind<ep::mpi::Kind::kWin>(win)) return PMPI_Win_call_errhandler(win, errorcode);
  int err;
  Win* w = ep::mpi::window(win, "MPI_Win_call_errhandler", &err);
  if (w == nullptr) return err;
  return ep::mpi::call_errh_win(w, errorcode);
}

}  // extern "C"
