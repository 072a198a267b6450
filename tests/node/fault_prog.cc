// fault_prog - the program tests/node/fault_test.sh runs under mpiexec -n 2:
//   fault_prog normal   the two processes exchange a message through the node transport
//                       and end normally; each checks first that its segment is mapped
//                       (an unlinked memfd, /proc/self/maps) and that no descriptor of it
//                       is left open once EP_Init returned: nothing can open it any more;
//   fault_prog kill     process 1 is SIGKILLed while process 0 waits in EP_Recv for it.
// Exits 0 on success (normal), never returns on its own in `kill` (the launcher ends
// the job).
#include <dirent.h>
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "ep/ep.h"

namespace {

int fail(const char* what) {
  std::fprintf(stderr, "fault_prog: %s\n", what);
  return 1;
}

// The node segment is mapped here: an unlinked memfd named ep-node, never a file.
bool segment_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("/memfd:ep-node") != std::string::npos) return true;
  }
  return false;
}

// No descriptor of this process refers to the segment (EP_Init closed it).
bool segment_descriptor_open() {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return true;
  bool open = false;
  while (dirent* e = readdir(d)) {
    char link[512] = {0};
    const std::string path = std::string("/proc/self/fd/") + e->d_name;
    if (readlink(path.c_str(), link, sizeof link - 1) > 0 &&
        std::strstr(link, "memfd:ep-node") != nullptr) {
      open = true;
    }
  }
  closedir(d);
  return open;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const bool kill_mode = argc > 1 && std::strcmp(argv[1], "kill") == 0;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (EP_Init() != EP_SUCCESS) return fail("EP_Init failed");
  if (!segment_mapped()) return fail("no ep-node segment is mapped");
  if (segment_descriptor_open()) return fail("a descriptor of the segment is still open");
  EP_Comm comm;
  if (EP_Comm_create_endpoints(MPI_COMM_WORLD, 1, MPI_INFO_NULL, &comm) != EP_SUCCESS) {
    return fail("EP_Comm_create_endpoints failed");
  }
  int v = 7;
  if (kill_mode) {
    if (rank == 1) {
      usleep(200000);  // process 0 is waiting by now
      raise(SIGKILL);
    }
    EP_Recv(&v, 1, MPI_INT, 1, 0, comm, EP_STATUS_IGNORE);  // never completes
    return fail("EP_Recv returned although its sender was killed");
  }
  if (rank == 0) {
    if (EP_Send(&v, 1, MPI_INT, 1, 0, comm) != EP_SUCCESS) return fail("EP_Send failed");
  } else if (rank == 1) {
    if (EP_Recv(&v, 1, MPI_INT, 0, 0, comm, EP_STATUS_IGNORE) != EP_SUCCESS || v != 7) {
      return fail("EP_Recv failed");
    }
  }
  EP_Comm_free(&comm);
  EP_Finalize();
  if (segment_mapped()) return fail("the segment is still mapped after EP_Finalize");
  MPI_Finalize();
  return 0;
}
