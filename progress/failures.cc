// failures.cc - failed MPI calls of the engine: their names, the record kept of them
// (EP_STATS, a message once), and the test hook that makes chosen calls fail.
#include <cstdio>

#include "progress/engine.h"

namespace ep::progress {

const char* mpi_call_name(MpiCall call) {
  switch (call) {
    case MpiCall::kSendPacket:
    case MpiCall::kSendData:
      return "MPI_Isend";
    case MpiCall::kRecvPacket:
    case MpiCall::kRecvData:
      return "MPI_Irecv";
    case MpiCall::kSend:
      return "MPI_Send";
    case MpiCall::kTest:
      return "MPI_Test";
    case MpiCall::kTestsome:
      return "MPI_Testsome";
    case MpiCall::kCount:
      break;
  }
  return "MPI";
}

void Engine::inject_failure(MpiCall call, int n) {
  inject_[static_cast<int>(call)].fetch_add(n, std::memory_order_relaxed);  // relaxed: a test's
  armed_.store(true, std::memory_order_relaxed);                            // setup
}

bool Engine::take_injected(MpiCall call) {
  std::atomic<int>& left = inject_[static_cast<int>(call)];
  int n = left.load(std::memory_order_relaxed);  // relaxed: a counter only
  while (n > 0 && !left.compare_exchange_weak(n, n - 1, std::memory_order_relaxed)) {
  }
  return n > 0;
}

void Engine::record_failure(MpiCall call, int mpi_error) {
  Stats::bump(stats_.mpi_errors);
  // relaxed: read for messages and statistics only.
  last_call_.store(static_cast<uint8_t>(call), std::memory_order_relaxed);
  last_error_.store(mpi_error, std::memory_order_relaxed);
  if (!reported_.exchange(true, std::memory_order_relaxed)) {
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(mpi_error, text, &len);
    std::fprintf(stderr, "libep: process %d: %s failed in the progress engine: %s\n", world_rank_,
                 mpi_call_name(call), text);
  }
}

int Engine::last_mpi_error(MpiCall* call) const {
  // relaxed: statistics.
  *call = static_cast<MpiCall>(last_call_.load(std::memory_order_relaxed));
  return last_error_.load(std::memory_order_relaxed);
}

}  // namespace ep::progress
