// env.cc - MPI_Init, MPI_Init_thread and MPI_Finalize start and stop libep; the attached
// buffer of buffered sends serves both MPICH and libep.
//
// libep needs MPI_THREAD_MULTIPLE: MPI_Init and MPI_Init_thread ask MPICH for it
// whatever the application asks for and report the level MPICH gives (MPI allows a
// higher level than required).  If libep cannot start, the program runs on as a plain
// MPI program (one line on stderr says why) and the endpoint calls fail with
// MPI_ERR_OTHER.
//
// A program written against ep.h calls EP_Init after MPI_Init_thread and EP_Finalize
// before MPI_Finalize.  Linked with libep_mpi, libep is already running then: this file
// also defines EP_Init and EP_Finalize, which do nothing while libep_mpi runs libep (the
// application's calls resolve to them; libep's are reached through dlsym(RTLD_NEXT)).
#include <dlfcn.h>
#include <mpi.h>

#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>

#include "ep/ep.h"
#include "mpi/layer.h"

namespace ep::mpi {

namespace {

std::atomic<bool> g_running{false};  // libep_mpi started libep and has not stopped it

using EnvFn = int (*)();

EnvFn libep_fn(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (f == nullptr) {
    std::fprintf(stderr, "libep_mpi: %s not found after libep_mpi (link -lep_mpi -lep)\n", name);
    std::abort();
  }
  return reinterpret_cast<EnvFn>(f);
}

void start_libep(int provided) {
  if (provided != MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr,
                 "libep_mpi: MPI provides thread level %d, libep needs MPI_THREAD_MULTIPLE: "
                 "the program runs without endpoints\n",
                 provided);
    return;
  }
  if (libep_fn("EP_Init")() == EP_SUCCESS) {
    g_running.store(true, std::memory_order_release);  // release: pairs with libep_running()
  }                                                    // else libep printed why
}

// The buffer libep's buffered sends use, next to the application's (which MPICH's use).
void* g_ep_buffer = nullptr;

}  // namespace

bool libep_running() {
  return g_running.load(std::memory_order_acquire);  // acquire: pairs with start_libep
}

}  // namespace ep::mpi

extern "C" {

int MPI_Init(int* argc, char*** argv) {
  int provided = 0;
  const int rc = PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  if (rc == MPI_SUCCESS) ep::mpi::start_libep(provided);
  return rc;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  (void)required;
  int level = 0;
  const int rc = PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &level);
  if (rc != MPI_SUCCESS) return rc;
  if (provided != nullptr) *provided = level;
  ep::mpi::start_libep(level);
  return rc;
}

int MPI_Finalize(void) {
  if (ep::mpi::g_running.exchange(false, std::memory_order_acq_rel)) {
    ep::mpi::libep_fn("EP_Finalize")();
  }
  return PMPI_Finalize();
}

int EP_Init(void) {
  if (ep::mpi::libep_running()) return EP_SUCCESS;
  return ep::mpi::libep_fn("EP_Init")();
}

int EP_Finalize(void) {
  if (ep::mpi::libep_running()) return EP_SUCCESS;  // MPI_Finalize stops libep
  return ep::mpi::libep_fn("EP_Finalize")();
}

// MPICH keeps the application's buffer; libep gets one of its own, large enough for the
// same messages with libep's per-message overhead (EP_BSEND_OVERHEAD).
int MPI_Buffer_attach(void* buffer, int size) {
  const int rc = PMPI_Buffer_attach(buffer, size);
  if (rc != MPI_SUCCESS || !ep::mpi::libep_running() || size <= 0) return rc;
  long long bytes = size;
  if (EP_BSEND_OVERHEAD > MPI_BSEND_OVERHEAD) {
    bytes += (bytes / MPI_BSEND_OVERHEAD + 1) * (EP_BSEND_OVERHEAD - MPI_BSEND_OVERHEAD);
  }
  if (bytes > INT_MAX) bytes = INT_MAX;
  void* mine = std::malloc(static_cast<size_t>(bytes));
  const int erc = mine == nullptr ? EP_ERR_BUFFER : EP_Buffer_attach(mine, static_cast<int>(bytes));
  if (erc != EP_SUCCESS) {
    std::free(mine);
    void* b = nullptr;
    int s = 0;
    PMPI_Buffer_detach(&b, &s);
    return ep::mpi::raise_plain(MPI_COMM_WORLD, ep::mpi::ep_class(erc), "MPI_Buffer_attach",
                                "libep could not attach a buffer of %lld bytes", bytes);
  }
  ep::mpi::g_ep_buffer = mine;
  return rc;
}

int MPI_Buffer_detach(void* buffer_addr, int* size) {
  const int rc = PMPI_Buffer_detach(buffer_addr, size);
  if (rc != MPI_SUCCESS || ep::mpi::g_ep_buffer == nullptr) return rc;
  void* b = nullptr;
  int s = 0;
  EP_Buffer_detach(&b, &s);  // waits until libep's buffered messages left
  std::free(ep::mpi::g_ep_buffer);
  ep::mpi::g_ep_buffer = nullptr;
  return rc;
}

int MPI_Buffer_attach_c(void* buffer, MPI_Count size) {
  if (size > INT_MAX) return PMPI_Buffer_attach_c(buffer, size);
  return MPI_Buffer_attach(buffer, static_cast<int>(size));
}

int MPI_Buffer_detach_c(void* buffer_addr, MPI_Count* size) {
  if (ep::mpi::g_ep_buffer == nullptr) return PMPI_Buffer_detach_c(buffer_addr, size);
  int s = 0;
  const int rc = MPI_Buffer_detach(buffer_addr, &s);
  if (rc == MPI_SUCCESS && size != nullptr) *size = s;
  return rc;
}

}  // extern "C"
