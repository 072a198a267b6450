// status.h - MPI_Status from EP_Status and back.
//
// What it is: libep fills an EP_Status; the application reads an MPI_Status.  The byte
// count goes where MPICH keeps it (count_lo and the upper bits of
// count_hi_and_cancelled, the cancelled flag in bit 0), so that MPICH's own
// MPI_Get_count, MPI_Get_elements and MPI_Test_cancelled answer for a status that came
// from libep, whatever the datatype.  libep's count is in bytes of the packed
// representation, which is what MPICH's decoding expects.  The EP_Status fields read
// here are those of ep.h's struct (its byte count and cancelled flag); the static
// asserts stop the build if that layout changes.
//
// Threading: plain functions on caller-owned structs.  Memory ordering: none.
#ifndef EP_MPI_STATUS_H_
#define EP_MPI_STATUS_H_

#include <mpi.h>

#include <cstddef>

#include "ep/ep.h"

namespace ep::mpi {

static_assert(offsetof(EP_Status, ep_cancelled_) == 12 && offsetof(EP_Status, ep_bytes_) == 16,
              "status.h reads EP_Status's byte count and cancelled flag");
static_assert(sizeof(MPI_Status) == 20, "status.h writes MPICH's MPI_Status layout");

inline void set_mpi_count(MPI_Status* m, long long bytes, bool cancelled) {
  m->count_lo = static_cast<int>(bytes & 0xffffffffLL);
  m->count_hi_and_cancelled = static_cast<int>((bytes >> 32) << 1) | (cancelled ? 1 : 0);
}

inline long long mpi_bytes(const MPI_Status* m) {
  return static_cast<long long>(static_cast<unsigned>(m->count_lo)) |
         (static_cast<long long>(m->count_hi_and_cancelled >> 1) << 32);
}

// Source, tag, count and cancelled flag; MPI_ERROR stays as it was (MPI writes it only
// in the multi-completion calls: to_mpi_error).
inline void to_mpi(const EP_Status& e, MPI_Status* m) {
  m->MPI_SOURCE = e.EP_SOURCE;
  m->MPI_TAG = e.EP_TAG;
  set_mpi_count(m, e.ep_bytes_, e.ep_cancelled_ != 0);
}

}  // namespace ep::mpi

#endif  // EP_MPI_STATUS_H_
