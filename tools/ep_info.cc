// ep_info - what libep is and what it would do here, like `ucx_info -c`:
//   [version]        libep's version
//   [mpi]            the MPI library (MPI_Get_library_version), the MPI headers it was built
//                    against, and the thread level MPI_Init_thread(MPI_THREAD_MULTIPLE) gives
//   [configuration]  the EP_* table with defaults, docs and effective values (as ep_config)
//   [node layout]    per node: its processes (MPI_Comm_split_type SHARED), the CPUs each
//                    may run on (its binding: taskset, mpiexec -bind-to) and where its
//                    progress thread would run: the CPU EP_PROGRESS_CPUS gives it (node-
//                    local process i takes entry i mod n), tried as EP_Init pins it -
//                    "unpinned" with the kernel's reason if refused; "not pinned"
//                    without the variable (a warning when that shares a single CPU);
//                    and the transport between them: MPI (EP_NODE_TRANSPORT=off, or a
//                    process that cannot map the others' memory), or shared memory with
//                    large messages by cross-memory attach or through staging buffers -
//                    what EP_Init would choose, found the way it does (runtime/node.h):
//                    every process makes a memfd, maps the others' through /proc and
//                    tries to read them
// Runs standalone (a singleton MPI process) or under mpiexec: world rank 0 prints the first
// three sections, then each node's first process prints its node, in node order.
// Exits 1 when the environment is rejected (a malformed EP_* value) in any process.
//   PREFIX/bin/ep_info, mpiexec -n 4 PREFIX/bin/ep_info, bazel run //tools:ep_info
#include <mpi.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "node/cma.h"
#include "node/shm.h"
#include "progress/affinity.h"
#include "runtime/config.h"
#include "tools/config_table.h"

namespace {

// libep's version: equals ep.pc's and the CMake package's (tests/cmake checks it).
constexpr char kVersion[] = "0.1.0";

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
      return "MPI_THREAD_MULTIPLE";
    default:
      return "unknown";
  }
}

void print_mpi(int provided) {
  char library[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(library, &len);
  std::string text(library, len);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::printf("[mpi]\nMPI library:\n");
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::printf("  %s\n", text.substr(start, end - start).c_str());
    start = end + 1;
  }
#ifdef MPICH_VERSION
  std::printf("built against: MPI %d.%d headers of MPICH %s\n", MPI_VERSION, MPI_SUBVERSION,
              MPICH_VERSION);
#else
  std::printf("built against: MPI %d.%d headers\n", MPI_VERSION, MPI_SUBVERSION);
#endif
  std::printf("thread level: %s (asked for MPI_THREAD_MULTIPLE%s)\n", thread_level_name(provided),
              provided == MPI_THREAD_MULTIPLE ? "" : "; libep's EP_Init will refuse this MPI");
}

// What one process reports for the node layout: one line, formatted where it runs.
constexpr int kLineBytes = 320;

// Where this process's progress thread would run: EP_Init's caller is this thread, whose
// affinity the progress thread inherits before it is pinned (as EP_Init does, a probe
// thread is pinned to `cpu` and asked which CPUs it got).
std::string placement(int cpu) {
  const std::vector<int> allowed = ep::progress::thread_cpus(pthread_self());
  std::string line = "allowed CPUs " + ep::progress::cpu_list_text(allowed) + "; progress thread ";
  if (cpu < 0) {
    line += "not pinned (runs on CPUs " + ep::progress::cpu_list_text(allowed) + ")";
    if (allowed.size() == 1) line += ": shares the application's only CPU";
    return line;
  }
  std::string why;
  std::vector<int> got;
  std::thread probe([&] {
    if (ep::progress::pin_thread(pthread_self(), cpu, &why)) {
      got = ep::progress::thread_cpus(pthread_self());
    }
  });
  probe.join();
  if (!why.empty()) {
    return line + "unpinned: the kernel refuses CPU " + std::to_string(cpu) + " (" + why +
           "); runs on CPUs " + ep::progress::cpu_list_text(allowed);
  }
  if (got == std::vector<int>{cpu}) return line + "on CPU " + std::to_string(cpu);
  return line + "asked for CPU " + std::to_string(cpu) + ", got CPUs " +
         ep::progress::cpu_list_text(got);
}

// What EP_Init would choose for the processes of `node` (collective over it): a line for
// the node's section.
std::string node_transport(const ep::runtime::Config& config, MPI_Comm node, int local_size) {
  if (!config.node_transport) return "MPI (EP_NODE_TRANSPORT=off)";
  if (local_size == 1) return "none needed (one process)";
  struct Probe {
    int32_t ok, pid, fd, pad;
    uint64_t cookie, cookie_at;
  } mine{};
  ep::node::Memfd m;
  const uint64_t cookie = ep::node::random_cookie();
  if (ep::node::create_memfd("ep-node", 4096, &m)) {
    std::memcpy(m.base, &cookie, sizeof cookie);
    mine = Probe{1,      static_cast<int32_t>(getpid()),    m.fd, 0,
                 cookie, reinterpret_cast<uint64_t>(m.base)};
  }
  std::vector<Probe> all(static_cast<size_t>(local_size));
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, node);
  int ok[2] = {mine.ok, 1};  // mapped every other process's; read every other's memory
  for (const Probe& p : all) {
    if (p.pid == mine.pid) continue;
    char* seg = p.ok != 0 ? ep::node::map_peer(p.pid, p.fd, 4096, 0, p.cookie) : nullptr;
    if (seg == nullptr) ok[0] = 0;
    ep::node::unmap_peer(seg, 4096);
    if (!ep::node::cma_probe(p.pid, p.cookie_at, p.cookie)) ok[1] = 0;
  }
  int all_ok[2] = {0, 0};
  MPI_Allreduce(ok, all_ok, 2, MPI_INT, MPI_MIN, node);
  ep::node::destroy_memfd(&m);
  if (all_ok[0] == 0) return "MPI (a process cannot map the others' shared memory)";
  return all_ok[1] != 0 ? "shared memory; large messages by cross-memory attach"
                        : "shared memory; large messages through staging buffers (cross-memory "
                          "attach is not allowed)";
}

// Prints this node's section on its first process; nodes print in the order of their
// first world rank (a token passes from one node leader to the next).
void print_node_layout(const ep::runtime::Config& config, int world_rank, int world_size) {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &node);
  int local_index = 0, local_size = 0;
  MPI_Comm_rank(node, &local_index);
  MPI_Comm_size(node, &local_size);
  int cpu = -1;
  if (!config.progress_cpus.empty()) {
    cpu = config.progress_cpus[local_index % config.progress_cpus.size()];
  }
  char mine[kLineBytes] = {};
  std::snprintf(mine, sizeof mine, "  node-local process %d (world rank %d): %s", local_index,
                world_rank, placement(cpu).c_str());
  std::vector<char> all(static_cast<size_t>(local_size) * kLineBytes);
  MPI_Gather(mine, kLineBytes, MPI_CHAR, all.data(), kLineBytes, MPI_CHAR, 0, node);
  const std::string transport = node_transport(config, node, local_size);

  MPI_Comm leaders;
  MPI_Comm_split(MPI_COMM_WORLD, local_index == 0 ? 0 : MPI_UNDEFINED, world_rank, &leaders);
  if (leaders != MPI_COMM_NULL) {
    int node_index = 0, nodes = 0, token = 0;
    MPI_Comm_rank(leaders, &node_index);
    MPI_Comm_size(leaders, &nodes);
    if (node_index > 0) MPI_Recv(&token, 1, MPI_INT, node_index - 1, 0, leaders, MPI_STATUS_IGNORE);
    if (node_index == 0) {
      std::printf("\n[node layout]\n%d process(es) on %d node(s)\n", world_size, nodes);
    }
    char host[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    MPI_Get_processor_name(host, &len);
    std::printf("node %d (%.*s): %d process(es) per node\n", node_index, len, host, local_size);
    std::printf("  transport between them: %s\n", transport.c_str());
    for (int p = 0; p < local_size; ++p) {
      std::printf("%s\n", &all[static_cast<size_t>(p) * kLineBytes]);
    }
    std::fflush(stdout);
    if (node_index + 1 < nodes) MPI_Send(&token, 1, MPI_INT, node_index + 1, 0, leaders);
    MPI_Comm_free(&leaders);
  }
  MPI_Comm_free(&node);
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int world_rank = 0, world_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);

  ep::runtime::Config config;
  int ok = 1;
  if (world_rank == 0) {
    std::printf("[version]\nlibep version: %s\n\n", kVersion);
    print_mpi(provided);
    std::printf("\n[configuration]\n");
    ok = ep::tools::print_config_table(stdout, &config) ? 1 : 0;
    std::fflush(stdout);
  } else {
    std::string error;
    std::vector<std::string> warnings;
    ok = ep::runtime::parse_config(&config, &error, &warnings) ? 1 : 0;
    if (!ok) std::fprintf(stderr, "ep_info: world rank %d: %s\n", world_rank, error.c_str());
  }
  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all_ok) print_node_layout(config, world_rank, world_size);
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
