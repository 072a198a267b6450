// types.h - what every layer of libep shares below the public header: the status codes,
// the values of the MPI-like constants, and the C-layout types the runtime keeps.
//
// The public header (api/include/ep/ep.h) defines the same codes and EP_Status for
// applications; api/entry.h checks at compile time that the two agree.  Handles are
// pointers to the incomplete structs ep.h names (ep_comm_s, ...), so a handle has the
// same type on both sides without this header including ep.h.
//
// Threading, memory ordering: plain values and types; nothing to order.
#ifndef EP_BASE_TYPES_H_
#define EP_BASE_TYPES_H_

#include <mpi.h>

struct ep_comm_s;
struct ep_request_s;
struct ep_errhandler_s;

namespace ep {

// The status codes (EP_SUCCESS == 0), in ep.h's order.
enum Code : int {
  EP_SUCCESS = 0,
  EP_ERR_ARG,
  EP_ERR_COMM,
  EP_ERR_RANK,
  EP_ERR_TAG,
  EP_ERR_COUNT,
  EP_ERR_TYPE,
  EP_ERR_OP,
  EP_ERR_BUFFER,
  EP_ERR_TRUNCATE,
  EP_ERR_REQUEST,
  EP_ERR_ROOT,
  EP_ERR_GROUP,
  EP_ERR_WIN,
  EP_ERR_RMA_RANGE,
  EP_ERR_RMA_SYNC,
  EP_ERR_IN_STATUS,
  EP_ERR_PENDING,
  EP_ERR_NOT_INITIALIZED,
  EP_ERR_THREAD_LEVEL,
  EP_ERR_CONCURRENT,
  EP_ERR_ENDPOINTS,
  EP_ERR_TEAM,
  EP_ERR_INTERN,
  EP_ERR_OTHER,
  EP_ERR_LASTCODE
};

// The constants ep.h defines as MPI's own values.
inline constexpr int kAnySource = MPI_ANY_SOURCE;
inline constexpr int kAnyTag = MPI_ANY_TAG;
inline constexpr int kProcNull = MPI_PROC_NULL;
inline constexpr int kRoot = MPI_ROOT;
inline constexpr int kUndefined = MPI_UNDEFINED;
inline constexpr int kIdent = MPI_IDENT;
inline constexpr int kCongruent = MPI_CONGRUENT;
inline constexpr int kSimilar = MPI_SIMILAR;
inline constexpr int kUnequal = MPI_UNEQUAL;
inline void* in_place() { return MPI_IN_PLACE; }
// Bytes of the attached buffer a buffered send uses beyond its data (EP_BSEND_OVERHEAD).
inline constexpr int kBsendOverhead = 128;

// The layout of EP_Status.
struct Status {
  int EP_SOURCE;
  int EP_TAG;
  int EP_ERROR;
  int ep_cancelled_;
  long long ep_bytes_;
};

// Handles as the runtime keeps them (the types of EP_Comm, EP_Request, EP_Errhandler).
using CommHandle = ep_comm_s*;
using RequestHandle = ep_request_s*;
using Errhandler = ep_errhandler_s*;
// EP_ERRORS_ARE_FATAL and EP_ERRORS_RETURN.
inline Errhandler errors_are_fatal() { return reinterpret_cast<Errhandler>(1); }
inline Errhandler errors_return() { return reinterpret_cast<Errhandler>(2); }

}  // namespace ep

#endif  // EP_BASE_TYPES_H_
