// threadcomm.cc - MPIX_Threadcomm_init/start/finish/free over libep endpoints.
//
// A threadcomm is one endpoints communicator (EP_Comm_create_endpoints over comm, one
// endpoint per thread of this process) behind one shared handle.  MPIX_Threadcomm_start
// numbers the region's threads by arrival (an atomic counter, modulo the thread count:
// every region has exactly n starts) and binds the shared handle to endpoint number i in
// the calling thread (layer.h, bind_endpoint); MPIX_Threadcomm_finish frees what the
// thread derived in the region and its attributes, and unbinds.  Both end with a barrier
// of the process's threads, as MPICH's do, on a second endpoints communicator over
// MPI_COMM_SELF (libep's own waiting, no spinning here).
//
// Memory ordering: `arrivals` is relaxed (the barrier that follows orders each region's
// starts after the previous region's finishes); `bound[i]` is claimed with an acq_rel
// exchange and cleared with release, so a thread that takes endpoint i sees the previous
// holder's last use of it.
#include <mpi.h>

#include <string>
#include <vector>

#include "ep/ep.h"
#include "ep/mpi_endpoints.h"
#include "mpi/layer.h"

using ep::mpi::Comm;
using ep::mpi::Kind;
using ep::mpi::ThreadComm;

namespace ep::mpi {
namespace {

// The shared record of threadcomm handle h, or null (raised).
Comm* threadcomm(MPI_Comm h, const char* call, int* err) {
  Comm* s = is_kind<Kind::kComm>(h) ? static_cast<Comm*>(table(Kind::kComm).get(h)) : nullptr;
  if (s == nullptr || s->tc == nullptr) {
    if (s != nullptr) {
      *err = raise_class(s, MPI_ERR_COMM, call, "communicator %#x is not a threadcomm",
                         static_cast<unsigned>(h));
    } else {
      *err = raise_plain(is_ep(h) ? MPI_COMM_WORLD : h, MPI_ERR_COMM, call,
                         "communicator %#x is not a threadcomm", static_cast<unsigned>(h));
    }
    return nullptr;
  }
  return s;
}

int index_of_endpoint(const ThreadComm* t, const Comm* e) {
  for (int i = 0; i < t->n; ++i) {
    if (t->ep[static_cast<size_t>(i)] == e) return i;
  }
  return -1;
}

}  // namespace
}  // namespace ep::mpi

using namespace ep::mpi;  // NOLINT(build/namespaces): the helpers of this layer

extern "C" {

int PMPIX_Threadcomm_init(MPI_Comm comm, int num_threads, MPI_Comm* newthreadcomm) {
  const char* call = "MPIX_Threadcomm_init";
  if (!libep_running()) {
    return raise_plain(comm, MPI_ERR_OTHER, call,
                       "libep is not running (MPI was not initialized through libep_mpi with "
                       "MPI_THREAD_MULTIPLE)");
  }
  if (is_ep(comm)) {
    int err;
    Comm* c = comm_record(comm, call, &err);
    if (c == nullptr) return err;
    return raise_class(c, MPI_ERR_COMM, call,
                       "comm must be an MPI communicator, not an endpoints communicator");
  }
  if (newthreadcomm == nullptr)
    return raise_plain(comm, MPI_ERR_ARG, call, "newthreadcomm is NULL");
  const int n = num_threads > 0 ? num_threads : 0;
  std::vector<EP_Comm> eps(static_cast<size_t>(n), EP_COMM_NULL);
  int rc = EP_Comm_create_endpoints(comm, num_threads, MPI_INFO_NULL, eps.data());
  if (rc != EP_SUCCESS) return raise_plain_ep(comm, rc, call);
  auto* t = new ThreadComm;
  t->n = n;
  t->local.assign(static_cast<size_t>(n), EP_COMM_NULL);
  if (n > 0) {
    rc = EP_Comm_create_endpoints(MPI_COMM_SELF, n, MPI_INFO_NULL, t->local.data());
    if (rc != EP_SUCCESS) {
      for (EP_Comm& e : eps) EP_Comm_free(&e);
      delete t;
      return raise_plain_ep(comm, rc, call);
    }
  }
  // Every process needs the size, also one that brings no thread (as MPICH's init).
  const int mrc = PMPI_Allreduce(&n, &t->size, 1, MPI_INT, MPI_SUM, comm);
  if (mrc != MPI_SUCCESS) return mrc;
  t->bound.reset(new std::atomic<bool>[static_cast<size_t>(n) + 1]);
  for (int i = 0; i < n; ++i)
    t->bound[static_cast<size_t>(i)].store(false, std::memory_order_relaxed);

  Comm* s = new_comm_record(nullptr, errh_of_mpi_comm(comm));
  if (s == nullptr) return raise_plain(comm, MPI_ERR_INTERN, call, "too many communicator handles");
  s->tc = t;
  for (int i = 0; i < n; ++i) {
    EP_Comm_set_errhandler(eps[static_cast<size_t>(i)], EP_ERRORS_RETURN);
    EP_Comm_set_errhandler(t->local[static_cast<size_t>(i)], EP_ERRORS_RETURN);
    Comm* e = new Comm;
    e->ep = eps[static_cast<size_t>(i)];
    e->handle = s->handle;
    e->shared = s;
    e->region = e;
    t->ep.push_back(e);
  }
  *newthreadcomm = s->handle;
  return MPI_SUCCESS;
}

int PMPIX_Threadcomm_start(MPI_Comm threadcomm_handle) {
  const char* call = "MPIX_Threadcomm_start";
  int err;
  Comm* s = threadcomm(threadcomm_handle, call, &err);
  if (s == nullptr) return err;
  ThreadComm* t = s->tc;
  if (bound_endpoint(s) != nullptr) {
    return raise_class(s, MPI_ERR_OTHER, call, "this thread is already inside a region of it");
  }
  if (t->n == 0) {
    return raise_class(s, MPI_ERR_OTHER, call, "this process brought no thread to it");
  }
  // relaxed: a ticket; the barrier below orders the regions (see the head of the file).
  const uint64_t ticket = t->arrivals.fetch_add(1, std::memory_order_relaxed);
  const int i = static_cast<int>(ticket % static_cast<uint64_t>(t->n));
  // acq_rel: pairs with the release store in finish (the previous holder of endpoint i).
  if (t->bound[static_cast<size_t>(i)].exchange(true, std::memory_order_acq_rel)) {
    return raise_class(s, MPI_ERR_OTHER, call, "more threads than its %d started a region of it",
                       t->n);
  }
  Comm* e = t->ep[static_cast<size_t>(i)];
  bind_endpoint(s, e);
  const int rc = EP_Barrier(t->local[static_cast<size_t>(i)]);
  return rc == EP_SUCCESS ? MPI_SUCCESS : raise(e, rc, call);
}

int PMPIX_Threadcomm_finish(MPI_Comm threadcomm_handle) {
  const char* call = "MPIX_Threadcomm_finish";
  int err;
  Comm* s = threadcomm(threadcomm_handle, call, &err);
  if (s == nullptr) return err;
  ThreadComm* t = s->tc;
  Comm* e = bound_endpoint(s);
  if (e == nullptr) {
    return raise_class(s, MPI_ERR_OTHER, call, "this thread is not inside a region of it");
  }
  const int i = index_of_endpoint(t, e);
  // What the thread derived in the region, and its attributes, end with the region.
  while (!e->derived.empty()) {
    const int rc = free_comm(e->derived.back(), call);
    if (rc != MPI_SUCCESS) {
      return raise_class(e, rc, call, "freeing a communicator derived in the region failed");
    }
  }
  const int arc = delete_attrs(e);
  if (arc != MPI_SUCCESS) return raise_class(e, arc, call, "an attribute delete callback failed");
  unbind_endpoint(s);
  t->bound[static_cast<size_t>(i)].store(false, std::memory_order_release);  // release: see start
  const int rc = EP_Barrier(t->local[static_cast<size_t>(i)]);
  return rc == EP_SUCCESS ? MPI_SUCCESS : raise(s, rc, call);
}

int PMPIX_Threadcomm_free(MPI_Comm* threadcomm_handle) {
  const char* call = "MPIX_Threadcomm_free";
  if (threadcomm_handle == nullptr) {
    return raise_plain(MPI_COMM_WORLD, MPI_ERR_ARG, call, "threadcomm is NULL");
  }
  int err;
  Comm* s = threadcomm(*threadcomm_handle, call, &err);
  if (s == nullptr) return err;
  ThreadComm* t = s->tc;
  for (int i = 0; i < t->n; ++i) {
    // acquire: pairs with the release in finish.
    if (t->bound[static_cast<size_t>(i)].load(std::memory_order_acquire)) {
      return raise_class(s, MPI_ERR_OTHER, call, "a thread is still inside a region of it");
    }
  }
  const int arc = delete_attrs(s);  // attributes set on the handle outside the regions
  if (arc != MPI_SUCCESS) return raise_class(s, arc, call, "an attribute delete callback failed");
  for (int i = 0; i < t->n; ++i) {
    const int rc = free_comm(t->ep[static_cast<size_t>(i)], call);
    if (rc != MPI_SUCCESS) return raise_class(s, rc, call, "freeing endpoint %d failed", i);
    EP_Comm_free(&t->local[static_cast<size_t>(i)]);
  }
  table(Kind::kComm).release(s->handle);
  delete t;
  delete s;
  *threadcomm_handle = MPI_COMM_NULL;
  return MPI_SUCCESS;
}

int MPIX_Threadcomm_init(MPI_Comm, int, MPI_Comm*)
    __attribute__((weak, alias("PMPIX_Threadcomm_init")));
int MPIX_Threadcomm_start(MPI_Comm) __attribute__((weak, alias("PMPIX_Threadcomm_start")));
int MPIX_Threadcomm_finish(MPI_Comm) __attribute__((weak, alias("PMPIX_Threadcomm_finish")));
int MPIX_Threadcomm_free(MPI_Comm*) __attribute__((weak, alias("PMPIX_Threadcomm_free")));

}  // extern "C"
