// mpi_count.h - the MPI calls the progress engine makes, counted per thread.
//
// What it is: every MPI call of progress/ that starts or polls traffic (MPI_Isend,
// MPI_Irecv, MPI_Test, MPI_Testsome; MPI_Send is counted as packets_sent in Stats) is
// counted on the thread that makes it: the progress thread's own passes, or an endpoint
// thread that drives the engine while it waits.  engine_mpi_calls_here() gives the
// calling thread's count, so a test can assert that an exchange made no MPI call on its
// threads, neither through EP_MPI (base/mpi_calls.h) nor through the engine.
//
// Threading: each thread counts into its own thread_local word; only that thread reads it.
//
// Memory ordering: plain thread_local integers; no other thread touches them.
#ifndef EP_PROGRESS_MPI_COUNT_H_
#define EP_PROGRESS_MPI_COUNT_H_

#include <cstdint>

#include "base/cross_process.h"
#include "progress/fast_tls.h"

namespace ep::progress {

extern constinit thread_local uint64_t t_engine_mpi_calls EP_FAST_TLS;

// Counts one MPI call of the engine on the calling thread, which is about to hand
// something to another process (base/cross_process.h).
inline void count_engine_mpi_call() {
  ++t_engine_mpi_calls;
  base::cross_process_release();
}

// The engine's MPI calls made so far by the calling thread.
inline uint64_t engine_mpi_calls_here() { return t_engine_mpi_calls; }

}  // namespace ep::progress

#endif  // EP_PROGRESS_MPI_COUNT_H_
