// process.cc - the collectives' process-level state (engine.h): install/uninstall, the
// base communicator, the count of process-level communicators, the process's cores.
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "base/mpi_calls.h"
#include "collectives/engine.h"
#include "collectives/internal.h"
#include "runtime/transport.h"

namespace ep::collectives {
namespace {

// relaxed: a bound, not a publication - nothing else is read through it, and each
// reservation is one RMW, so at most kMaxProcessComms succeed at once.
std::atomic<int> g_process_comms{0};

MPI_Comm g_base = MPI_COMM_NULL;  // written by install/uninstall only (EP_Init/Finalize)
int g_cores = 1;                  // written by install only (EP_Init), before any collective

// relaxed: a test sets it before it starts the threads that read it (thread creation
// orders the two).
std::atomic<int> g_cores_override{0};

// The cores this process can count on (see engine.h, process_cores): every CPU of its
// affinity mask counts 1/k, k being the number of processes of its node whose masks
// hold that CPU.  Collective over `base`.  On any MPI failure: the mask's own count.
int count_cores(MPI_Comm base) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof(mine), &mine) != 0) return 1;
  const int own = std::max(1, CPU_COUNT(&mine));
  MPI_Comm node = MPI_COMM_NULL;
  if (EP_MPI(MPI_Comm_split_type(base, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node)) !=
      MPI_SUCCESS) {
    return own;
  }
  int n = 1;
  EP_MPI(MPI_Comm_size(node, &n));
  std::vector<cpu_set_t> all(static_cast<size_t>(n));
  const int bytes = static_cast<int>(sizeof(cpu_set_t));
  const int err = EP_MPI(MPI_Allgather(&mine, bytes, MPI_BYTE, all.data(), bytes, MPI_BYTE, node));
  EP_MPI(MPI_Comm_free(&node));
  if (err != MPI_SUCCESS) return own;
  double share = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &mine)) continue;
    int k = 0;
    for (const cpu_set_t& m : all) k += CPU_ISSET(cpu, &m) ? 1 : 0;
    share += 1.0 / std::max(k, 1);
  }
  return std::max(1, static_cast<int>(std::floor(share + 1e-9)));
}

}  // namespace

int process_comms_alive() { return g_process_comms.load(std::memory_order_relaxed); }

bool reserve_process_comm() {
  if (g_process_comms.fetch_add(1, std::memory_order_relaxed) < kMaxProcessComms) return true;
  g_process_comms.fetch_sub(1, std::memory_order_relaxed);
  return false;
}

void release_process_comm() { g_process_comms.fetch_sub(1, std::memory_order_relaxed); }

MPI_Comm base_comm() { return g_base; }

int process_cores() {
  const int o = g_cores_override.load(std::memory_order_relaxed);
  return o > 0 ? o : g_cores;
}

void override_process_cores(int n) { g_cores_override.store(n, std::memory_order_relaxed); }

void install() {
  runtime::set_pass_hook(&poll_schedules);
  EP_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &g_base));
  EP_MPI(MPI_Comm_set_errhandler(g_base, MPI_ERRORS_RETURN));
  EP_MPI(MPI_Comm_set_name(g_base, "ep-fragments"));
  g_cores = count_cores(g_base);
}

void uninstall() {
  if (g_base != MPI_COMM_NULL) EP_MPI(MPI_Comm_free(&g_base));
}

}  // namespace ep::collectives
