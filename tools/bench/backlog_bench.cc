// backlog_bench - how a backlog of unmatched messages drains: endpoint 0 of process 0
// sends N messages that endpoint 0 of process 1 has not posted receives for; once they
// all arrived (their envelopes at least: a rendezvous payload waits at its sender),
// the receiver posts N receives and waits for them.  Timed from a barrier before the
// first send to the last receive's completion, so that the arrival of the backlog
// counts too (a payload MPI holds as unexpected slows every later receive the engine
// posts).  The time should grow linearly with N.
//
// mpiexec -n 2 backlog_bench BYTES N1 N2 [REPS]
//   prints the drain time of N1 and of N2 messages of BYTES bytes (medians of REPS,
//   default 3) and their ratio; tools/bench/backlog_run.sh runs the two rows.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ep/ep.h"
#include "tools/bench/bench_util.h"

namespace {

// One drain of n messages of `bytes`; returns its seconds on the receiver (0 elsewhere).
double drain(EP_Comm comm, int rank, int bytes, int n) {
  const int kData = 1, kSent = 2;
  double t = 0;
  // The receive buffers exist, and are touched, before the clock starts: an application
  // posts receives into memory it already has (page faults are not the drain's).
  const size_t stride = static_cast<size_t>(bytes > 0 ? bytes : 1);
  std::vector<char> in_buf(rank == 0 ? 0 : stride * static_cast<size_t>(n), 'y');
  char* in = in_buf.data();
  CHECK(EP_Barrier(comm));
  const double t0 = ep_bench::now_s();
  if (rank == 0) {
    std::vector<char> buf(static_cast<size_t>(bytes > 0 ? bytes : 1), 'x');
    std::vector<EP_Request> reqs(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      CHECK(EP_Isend(buf.data(), bytes, MPI_BYTE, 1, kData, comm, &reqs[i]));
    }
    char done = 1;
    CHECK(EP_Send(&done, 1, MPI_CHAR, 1, kSent, comm));
    CHECK(EP_Waitall(n, reqs.data(), EP_STATUSES_IGNORE));
  } else {
    char done = 0;
    // The announcement follows every data message (non-overtaking): once it is here,
    // so is every message's envelope.
    CHECK(EP_Recv(&done, 1, MPI_CHAR, 0, kSent, comm, EP_STATUS_IGNORE));
    std::vector<EP_Request> reqs(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      CHECK(EP_Irecv(in + static_cast<size_t>(i) * stride, bytes, MPI_BYTE, 0, kData, comm,
                     &reqs[i]));
    }
    CHECK(EP_Waitall(n, reqs.data(), EP_STATUSES_IGNORE));
    t = ep_bench::now_s() - t0;
  }
  CHECK(EP_Barrier(comm));
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (argc < 4) {
    std::fprintf(stderr, "usage: backlog_bench BYTES N1 N2 [REPS]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int bytes = std::atoi(argv[1]), n1 = std::atoi(argv[2]), n2 = std::atoi(argv[3]);
  const int reps = argc > 4 ? std::atoi(argv[4]) : 3;
  CHECK(EP_Init());
  EP_Comm comm;
  CHECK(EP_Comm_create_endpoints(MPI_COMM_WORLD, 1, MPI_INFO_NULL, &comm));
  int rank = 0;
  CHECK(EP_Comm_rank(comm, &rank));
  std::vector<double> t1, t2;
  drain(comm, rank, bytes, n1 / 10 > 0 ? n1 / 10 : 1);  // warm-up
  for (int r = 0; r < reps; ++r) {  // alternating
    t1.push_back(drain(comm, rank, bytes, n1));
    t2.push_back(drain(comm, rank, bytes, n2));
  }
  if (rank == 1) {
    const double m1 = ep_bench::median(t1), m2 = ep_bench::median(t2);
    const char* limit = std::getenv("EP_EAGER_LIMIT");
    std::printf("backlog %d B (EP_EAGER_LIMIT=%s): %d in %.4f s, %d in %.4f s: %.2fx for %.1fx the "
                "messages\n",
                bytes, limit != nullptr ? limit : "default", n1, m1, n2, m2, m2 / m1,
                static_cast<double>(n2) / n1);
  }
  CHECK(EP_Comm_free(&comm));
  CHECK(EP_Finalize());
  MPI_Finalize();
  return 0;
}
