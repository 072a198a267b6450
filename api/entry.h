// entry.h - what the C entry points of libep share: the init check, handle validation,
// the concurrent-entry guard, error handlers, and the argument checks and status
// writers of more than one area.
//
// Internal to api/ (the files of //api include it); not part of the public header.  The
// entry points live one file per area (env, comm, group, p2p, request, collectives,
// rma, team, grequest).  Each checks that libep is initialized (EP_CHECK_INIT), checks
// its handles and arguments - every failure names the call, the argument and its value
// (runtime/error.h) - guards the endpoint against concurrent entry, then calls the
// runtime.  A failure on a valid communicator goes through its error handler
// (handle()); the others return their code.
//
// Handle validation: every handle object begins with a word that names its kind (a
// Request with its class's vtable pointer, the others with a magic number).  The as_*
// functions below accept a handle only if its address is plausible (not a small
// constant, aligned for its kind's object) and that word is its kind's, so a null
// handle, a predefined constant (EP_ERRORS_RETURN, EP_MESSAGE_NO_PROC: small integers,
// never dereferenced), a misaligned pointer or a live handle of another kind is refused
// with the error of the expected kind.  A handle whose object was freed is the user's
// error (MPI's too): the API sets freed handles to their null value.
//
// The concurrent-entry guard: one thread at a time may be inside a call on an endpoint
// (runtime/comm.h).  Entry (taken by EP_GET_COMM) claims Endpoint::busy for the call; a
// thread that finds it claimed does not wait: its call fails with EP_ERR_CONCURRENT,
// through the endpoint's error handler, and leaves the claim to its holder.
//
// Memory ordering: Entry claims busy with an acquire exchange and gives it back with a
// release store.  For threads X and Y calling on the same endpoint, if Y's Entry
// succeeds after X's call returned, everything X did in its call happens-before
// everything Y does in its own: consecutive users of a handle on different threads
// need no other synchronization.
#ifndef EP_API_ENTRY_H_
#define EP_API_ENTRY_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "base/mpi_calls.h"
#include "ep/ep.h"
#include "runtime/comm.h"
#include "runtime/datatype.h"
#include "runtime/error.h"
#include "runtime/p2p.h"
#include "runtime/request.h"
#include "runtime/runtime.h"

// The bottom package's codes and status layout are the public header's (base/types.h).
static_assert(int{ep::EP_ERR_LASTCODE} == int{EP_ERR_LASTCODE} &&
                  int{ep::EP_ERR_OTHER} == int{EP_ERR_OTHER} &&
                  int{ep::EP_ERR_ARG} == int{EP_ERR_ARG} && int{ep::EP_ERR_TEAM} == int{EP_ERR_TEAM},
              "base/types.h and ep.h number the codes alike");
static_assert(sizeof(ep::Status) == sizeof(EP_Status) &&
                  offsetof(ep::Status, EP_ERROR) == offsetof(EP_Status, EP_ERROR) &&
                  offsetof(ep::Status, ep_bytes_) == offsetof(EP_Status, ep_bytes_),
              "ep::Status has EP_Status's layout");
static_assert(ep::kBsendOverhead == EP_BSEND_OVERHEAD, "EP_BSEND_OVERHEAD");

// EP_Group is a pointer to this.  `magic` first, as in every handle object, so that a
// handle of another kind is told apart by its first word (as_group).
struct ep_group_s {
  static constexpr uint32_t kMagic = 0x6e0f9a11;
  uint32_t magic = kMagic;
  ep::runtime::Group g;
};

namespace ep::api {

using ep::runtime::Endpoint;
using ep::runtime::fail;
using ep::runtime::Request;
using ep::runtime::runtime;
using ep::runtime::SendMode;
using ep::runtime::TypeInfo;

// Callbacks that may re-enter an endpoint.  A user's callback (an error handler, an
// attribute's copy or delete function) may call libep on the communicator whose call
// runs it, while that call holds the endpoint (Entry).  The running call marks the
// endpoint with a Reentry for the callback's duration; an Entry on a marked endpoint by
// the same thread succeeds without claiming it (the outer call keeps its claim).
// Thread-local: the marks of one thread are a stack of Reentry objects on its stack.
class Reentry {
 public:
  explicit Reentry(Endpoint* ep) : ep_(ep), prev_(top_) { top_ = this; }
  ~Reentry() { top_ = prev_; }
  Reentry(const Reentry&) = delete;
  Reentry& operator=(const Reentry&) = delete;
  // True if the calling thread runs a callback of a call that holds `ep`.
  static bool marked(const Endpoint* ep) {
    for (const Reentry* r = top_; r != nullptr; r = r->prev_) {
      if (r->ep_ == ep) return true;
    }
    return false;
  }

 private:
  const Endpoint* ep_;
  const Reentry* prev_;
  static inline thread_local const Reentry* top_ = nullptr;
};

// Calls a user error handler (errhandler.cc): fn(&comm, &code); returns code.
int call_user_errhandler(EP_Errhandler eh, EP_Comm comm, int code);

// Applies error handler `eh` of communicator `comm` to a failure code: FATAL aborts,
// RETURN returns it, a user handler is called (in this thread) and the code returned.
// For a caller that does not hold comm's endpoint (a request's completion, a refused
// concurrent entry).
inline int handle(EP_Errhandler eh, EP_Comm comm, int code) {
  if (code == EP_SUCCESS || eh == EP_ERRORS_RETURN) return code;
  if (eh == EP_ERRORS_ARE_FATAL) {
    std::fprintf(stderr, "libep: fatal error: %s\n", ep::runtime::error_string(code).c_str());
    std::fflush(stderr);
    EP_MPI(MPI_Abort(MPI_COMM_WORLD, code));
  }
  return call_user_errhandler(eh, comm, code);
}
// The same for a call that holds ep (Entry): the handler may call libep on it.
inline int handle(Endpoint* ep, int code) {
  if (code == EP_SUCCESS) return code;
  Reentry mark(ep);
  return handle(ep->errhandler, reinterpret_cast<EP_Comm>(ep), code);
}
// A request started on ep reports to ep's error handler (a reference: see
// runtime/errhandler.h).
inline void set_request_errhandler(Request* r, Endpoint* ep) {
  ep::runtime::errhandler_assign(&r->errhandler, ep->errhandler);
  r->errcomm = reinterpret_cast<EP_Comm>(ep);
}

#define EP_CHECK_INIT(call)                                                                 \
  do {                                                                                      \
    if (runtime() == nullptr) {                                                             \
      return fail(EP_ERR_NOT_INITIALIZED, call, "libep is not initialized (call EP_Init)"); \
    }                                                                                       \
  } while (0)

// Handle validation (see the top of this file): `h`, a handle taken as a pointer to the
// object it should name, may name one - its address is not below 4096 (null or a
// predefined constant, never an object) and is aligned for T (no object of T lies
// elsewhere, and reading its kind word there would be undefined behaviour).
template <class T>
inline bool plausible_handle(const T* h) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(h);
  return a >= 4096 && a % alignof(T) == 0;
}

inline Endpoint* as_endpoint(EP_Comm c) {
  auto* ep = reinterpret_cast<Endpoint*>(c);
  return (plausible_handle(ep) && ep->magic == Endpoint::kMagic) ? ep : nullptr;
}

// EP_GROUP_EMPTY's object: process-wide, never written after its construction, never
// freed (EP_Group_free only resets a handle holding EP_GROUP_EMPTY).
inline ep_group_s* empty_group() {
  static ep_group_s empty;
  return &empty;
}

// A valid group handle's object: EP_GROUP_EMPTY included.
inline ep_group_s* as_group(EP_Group g) {
  if (g == EP_GROUP_EMPTY) return empty_group();
  return (plausible_handle(g) && g->magic == ep_group_s::kMagic) ? g : nullptr;
}

// EP_ERR_GROUP for a group argument `arg` that as_group refused.
inline int group_error(EP_Group g, const char* call, const char* arg) {
  return fail(EP_ERR_GROUP, call, "%s is %s", arg,
              g == EP_GROUP_NULL ? "EP_GROUP_NULL" : "not a valid group handle");
}

// A request handle: the shared complete request's vtable pointer identifies the class
// (Request is final: every Request has it).
inline Request* as_request(EP_Request h) {
  if (!plausible_handle(reinterpret_cast<const Request*>(h))) return nullptr;
  static const void* const vptr =
      *reinterpret_cast<const void* const*>(ep::runtime::completed_send_request());
  return *reinterpret_cast<const void* const*>(h) == vptr ? reinterpret_cast<Request*>(h) : nullptr;
}

// Holds an endpoint for the duration of one call; detects concurrent entry (see the top
// of this file).  Never waits.
class Entry {
 public:
  explicit Entry(Endpoint* ep) : ep_(ep) {
    // acquire: pairs with the release in ~Entry() of the previous user of the handle.
    owner_ = ep_->busy.exchange(1, std::memory_order_acquire) == 0;
    ok_ = owner_ || Reentry::marked(ep_);  // a callback of the holding call (Reentry)
  }
  ~Entry() {
    if (owner_) ep_->busy.store(0, std::memory_order_release);  // pairs: the exchange above
  }
  bool ok() const { return ok_; }

 private:
  Endpoint* ep_;
  bool owner_;
  bool ok_;
};

#define EP_GET_COMM(ep, comm, call)                                                       \
  EP_CHECK_INIT(call);                                                                    \
  Endpoint* ep = as_endpoint(comm);                                                       \
  if (ep == nullptr) {                                                                    \
    return fail(EP_ERR_COMM, call, "communicator is %s",                                  \
                (comm) == EP_COMM_NULL ? "EP_COMM_NULL" : "not a valid endpoint handle"); \
  }                                                                                       \
  Entry entry_guard(ep);                                                                  \
  if (!entry_guard.ok()) {                                                                \
    return handle(ep->errhandler, (comm),                                                 \
                  fail(EP_ERR_CONCURRENT, call,                                           \
                       "another thread is inside a call on endpoint %d of this "          \
                       "communicator",                                                    \
                       ep->rank));                                                        \
  }

inline int check_type(MPI_Datatype type, TypeInfo* ti, const char* call, const char* arg) {
  if (!ep::runtime::describe(type, ti)) {
    return fail(EP_ERR_TYPE, call, "%s is not a valid committed datatype", arg);
  }
  return EP_SUCCESS;
}

inline int check_buffer(const void* buf, int count, MPI_Datatype type, TypeInfo* ti,
                        const char* call) {
  if (count < 0) return fail(EP_ERR_COUNT, call, "count %d is negative", count);
  if (buf == EP_IN_PLACE) return fail(EP_ERR_BUFFER, call, "buffer is EP_IN_PLACE");
  int err = check_type(type, ti, call, "datatype");
  if (err != EP_SUCCESS) return err;
  if (buf == nullptr && count > 0 && ti->size > 0 && ti->named) {
    return fail(EP_ERR_BUFFER, call, "buffer is NULL but count is %d", count);
  }
  return EP_SUCCESS;
}

// What a completed operation reports, written into the caller's status: everything but
// EP_ERROR, which only the multi-completion calls write, when they return
// EP_ERR_IN_STATUS (API.md; MPI 3.1 section 3.2.5).
inline void write_status(EP_Status* dst, const ep::Status& src) {
  if (dst == EP_STATUS_IGNORE) return;
  dst->EP_SOURCE = src.EP_SOURCE;
  dst->EP_TAG = src.EP_TAG;
  dst->ep_cancelled_ = src.ep_cancelled_;
  dst->ep_bytes_ = src.ep_bytes_;
}
// A completed request's status, written as write_status does.
inline void copy_status(const Request* r, EP_Status* st) { write_status(st, r->status); }
// The status of a null or inactive request, or of a probe of EP_PROC_NULL (less its
// source): any source, any tag, count 0; EP_ERROR untouched.
inline void empty_status(EP_Status* st) {
  if (st == EP_STATUS_IGNORE) return;
  st->EP_SOURCE = EP_ANY_SOURCE;
  st->EP_TAG = EP_ANY_TAG;
  st->ep_cancelled_ = 0;
  st->ep_bytes_ = 0;
}

}  // namespace ep::api

#endif  // EP_API_ENTRY_H_
