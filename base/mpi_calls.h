// mpi_calls.h - the count of MPI calls libep makes outside its progress engine.
//
// What it is: every MPI call in runtime/, collectives/, rma/ and api/ is written
// EP_MPI(MPI_Xxx(...)) (tools/check_layers.sh enforces it), which counts it on the
// calling thread; mpi_calls_outside_engine() is the sum over all threads, those that
// exited included.  EP_STATS prints it at EP_Finalize, tests read it: between
// endpoints of one process no message may make an MPI call (MPICH serializes them on
// one process-wide lock).  The progress engine's own calls (progress/) are not counted.
//
// Threading: counting touches only the calling thread's counter (registered once per
// thread under a mutex); the sum takes that mutex.
//
// Memory ordering: each counter is its thread's (but one shared by threads that count
// while they exit), incremented with relaxed fetch_add; the sum loads them with
// relaxed order - a count, not a synchronization: a call counted by another thread is
// in the sum if that thread's call happened-before the sum (coherence of the word).
#ifndef EP_BASE_MPI_CALLS_H_
#define EP_BASE_MPI_CALLS_H_

#include <atomic>
#include <cstdint>

namespace ep {

namespace mpi_calls_internal {
// This thread's counter, registered by its first count (nullptr before).
extern constinit thread_local std::atomic<uint64_t>* t_counter
    __attribute__((tls_model("initial-exec")));
std::atomic<uint64_t>* register_thread();
}  // namespace mpi_calls_internal

// Counts one MPI call of the calling thread.
inline void count_mpi_call() {
  std::atomic<uint64_t>* c = mpi_calls_internal::t_counter;
  if (c == nullptr) c = mpi_calls_internal::register_thread();
  c->fetch_add(1, std::memory_order_relaxed);  // relaxed: a count (see "Memory ordering")
}

// The MPI calls counted so far, all threads together.
uint64_t mpi_calls_outside_engine();

}  // namespace ep

// An MPI call made outside the progress engine: counted, then made; its value is the
// call's.
#define EP_MPI(call) (::ep::count_mpi_call(), (call))

#endif  // EP_BASE_MPI_CALLS_H_
