// errhandler.h - the user's error handler objects (EP_Comm_create_errhandler) as the
// runtime holds them.
//
// What it is: an EP_Errhandler is either predefined (EP_ERRORS_ARE_FATAL,
// EP_ERRORS_RETURN: small integers, never dereferenced) or a pointer to an
// ep_errhandler_s made by EP_Comm_create_errhandler.  A user handler object is
// reference-counted: the user's handle holds one reference (dropped by
// EP_Errhandler_free), every endpoint whose handler it is holds one, and so does every
// request started on such an endpoint (EP_Wait calls the handler of the request's
// communicator).  The last release deletes it, so a handler freed by the user stays
// valid for the communicators and requests that use it (MPI 3.1 section 8.3).
//
// Threading: ref/unref are thread-safe; the handler function is immutable.
//
// Memory ordering: a reference is taken (relaxed increment) only by a holder of another
// reference; the release is an acq_rel decrement, so the thread that drops the last
// reference sees every other holder's use before it deletes the object.
#ifndef EP_RUNTIME_ERRHANDLER_H_
#define EP_RUNTIME_ERRHANDLER_H_

#include <atomic>
#include <cstdint>

#include "base/types.h"

namespace ep::runtime {
// The type of a user's handler function (EP_Comm_errhandler_function).
using CommErrhandlerFn = void(CommHandle* comm, int* code, ...);
}  // namespace ep::runtime

// EP_Errhandler points to this when it is the user's own.  `magic` first, as in every
// handle object (api/entry.h, "Handle validation").
struct ep_errhandler_s {
  static constexpr uint32_t kMagic = 0x3e77a4d1;
  uint32_t magic = kMagic;
  std::atomic<int> refs{1};  // the user's handle's reference
  ep::runtime::CommErrhandlerFn* fn = nullptr;
};

namespace ep::runtime {

// True for a handler made by EP_Comm_create_errhandler (false for the predefined ones
// and EP_ERRHANDLER_NULL).
inline bool is_user_errhandler(Errhandler eh) { return reinterpret_cast<uintptr_t>(eh) >= 4096; }

// Takes a reference for a new holder (the caller holds one already, or owns the
// object).  No-op for a predefined handler.
inline void errhandler_ref(Errhandler eh) {
  // relaxed: the caller's own reference keeps the object alive meanwhile.
  if (is_user_errhandler(eh)) eh->refs.fetch_add(1, std::memory_order_relaxed);
}

// Drops a reference; the last one deletes the object.  No-op for a predefined handler.
inline void errhandler_unref(Errhandler eh) {
  if (!is_user_errhandler(eh)) return;
  // acq_rel: the release orders this holder's uses before the deletion; the acquire of
  // the last decrement pairs with the other holders' releases.
  if (eh->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    eh->magic = 0;
    delete eh;
  }
}

// *slot = eh, moving a reference from the old handler to the new one.
inline void errhandler_assign(Errhandler* slot, Errhandler eh) {
  errhandler_ref(eh);
  Errhandler old = *slot;
  *slot = eh;
  errhandler_unref(old);
}

}  // namespace ep::runtime

#endif  // EP_RUNTIME_ERRHANDLER_H_
