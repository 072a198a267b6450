// The waiting discipline (runtime/wait.h) under stress: waiters of every kind - a
// blocking receive from this process and from another, a blocking probe, EP_Waitany,
// a barrier, an allreduce, a window lock held by another endpoint, a generalized
// request completed by another thread, a helper team's sync - are released after a
// random delay (none, a few microseconds: they are still spinning; a few milliseconds:
// they sleep), over many seeded rounds on 1-3 processes.  Every wait must end with the
// right result, and no sleep may have needed its safety timeout (runtime::lost_wakeups:
// a waiter whose condition had come true without waking it).
// Seeded: LIBEP_STRESS_SEED=<n> replays a run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "runtime/wait.h"
#include "tests/common/harness.h"

namespace {

using ep_test::scaled;
using ep_test::uneven;
using ep_test::world_rank;

[[maybe_unused]] const bool kWatchdog = ep_test::install_watchdog(200, 900);

// A delay drawn alike by every endpoint of every process (same seed and draws).
int delay_us(std::mt19937_64& rng) {
  switch (rng() % 3) {
    case 0: return 0;
    case 1: return 5 + static_cast<int>(rng() % 50);
    default: return 300 + static_cast<int>(rng() % 3000);
  }
}

int noop_query(void*, EP_Status*) { return EP_SUCCESS; }
int noop_free(void*) { return EP_SUCCESS; }
int noop_cancel(void*, int) { return EP_SUCCESS; }

TEST(WaitStress, EveryKindOfWaiterWakesWithItsResult) {
  uint64_t seed = ep_test::stress_seed("wait_stress_test");
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  const int rounds = scaled(400);
  const uint64_t lost_before = ep::runtime::lost_wakeups();
  ep_test::run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    std::vector<int> mem(4, 0);
    EP_Win win;
    ASSERT_EQ(EP_Win_create(mem.data(), 16, 4, MPI_INFO_NULL, comm, &win), EP_SUCCESS);
    ASSERT_EQ(EP_Win_set_errhandler(win, EP_ERRORS_RETURN), EP_SUCCESS);
    std::mt19937_64 rng(seed);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int r = 0; r < rounds; ++r) {
      const int kind = static_cast<int>(rng() % 7);
      const int d = delay_us(rng);
      int v = -1, out = rank * 1000 + r;
      switch (kind) {
        case 0: {  // receive (from the left: local or another process), sender delays
          EP_Request s;
          if (d > 0) usleep(static_cast<useconds_t>(d));
          ASSERT_EQ(EP_Isend(&out, 1, MPI_INT, right, r, comm, &s), EP_SUCCESS);
          ASSERT_EQ(EP_Recv(&v, 1, MPI_INT, left, r, comm, EP_STATUS_IGNORE), EP_SUCCESS);
          ASSERT_EQ(v, left * 1000 + r);
          ASSERT_EQ(EP_Wait(&s, EP_STATUS_IGNORE), EP_SUCCESS);
          break;
        }
        case 1: {  // blocking probe, then the receive
          EP_Request s;
          if (d > 0) usleep(static_cast<useconds_t>(d));
          ASSERT_EQ(EP_Isend(&out, 1, MPI_INT, right, r, comm, &s), EP_SUCCESS);
          EP_Status st;
          ASSERT_EQ(EP_Probe(left, r, comm, &st), EP_SUCCESS);
          ASSERT_EQ(st.EP_SOURCE, left);
          ASSERT_EQ(EP_Recv(&v, 1, MPI_INT, left, r, comm, EP_STATUS_IGNORE), EP_SUCCESS);
          ASSERT_EQ(v, left * 1000 + r);
          ASSERT_EQ(EP_Wait(&s, EP_STATUS_IGNORE), EP_SUCCESS);
          break;
        }
        case 2: {  // EP_Waitany over a receive and a generalized request another thread completes
          EP_Request reqs[2];
          ASSERT_EQ(EP_Irecv(&v, 1, MPI_INT, left, r, comm, &reqs[0]), EP_SUCCESS);
          ASSERT_EQ(EP_Grequest_start(noop_query, noop_free, noop_cancel, nullptr, &reqs[1]),
                    EP_SUCCESS);
          EP_Request g = reqs[1];
          std::thread completer([&] {
            if (d > 0) usleep(static_cast<useconds_t>(d));
            EP_Grequest_complete(g);
          });
          // Our send follows our first completion; the left neighbour's may come first.
          int index = -1, first = -1;
          ASSERT_EQ(EP_Waitany(2, reqs, &first, EP_STATUS_IGNORE), EP_SUCCESS);
          ASSERT_EQ(EP_Send(&out, 1, MPI_INT, right, r, comm), EP_SUCCESS);
          ASSERT_EQ(EP_Waitany(2, reqs, &index, EP_STATUS_IGNORE), EP_SUCCESS);
          ASSERT_EQ(index + first, 1) << "each request completes once";
          ASSERT_EQ(reqs[0], EP_REQUEST_NULL);
          ASSERT_EQ(reqs[1], EP_REQUEST_NULL);
          completer.join();
          ASSERT_EQ(v, left * 1000 + r);
          break;
        }
        case 3:  // barrier: rank 0 arrives late
          if (rank == 0 && d > 0) usleep(static_cast<useconds_t>(d));
          ASSERT_EQ(EP_Barrier(comm), EP_SUCCESS);
          break;
        case 4: {  // allreduce: the last rank arrives late
          if (rank == size - 1 && d > 0) usleep(static_cast<useconds_t>(d));
          int sum = -1;
          ASSERT_EQ(EP_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm), EP_SUCCESS);
          ASSERT_EQ(sum, size * (size - 1) / 2);
          break;
        }
        case 5: {  // exclusive locks of rank 0's window, in turn: each waits for the grant
          ASSERT_EQ(EP_Win_lock(EP_LOCK_EXCLUSIVE, 0, 0, win), EP_SUCCESS);
          if (d > 0) usleep(static_cast<useconds_t>(d % 500));
          int one = 1;
          ASSERT_EQ(EP_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win), EP_SUCCESS);
          ASSERT_EQ(EP_Win_unlock(0, win), EP_SUCCESS);
          ASSERT_EQ(EP_Barrier(comm), EP_SUCCESS);
          break;
        }
        case 6: {  // a helper team's sync with a late member
          EP_Team team;
          ASSERT_EQ(EP_Team_create(2, MPI_INFO_NULL, &team), EP_SUCCESS);
          std::thread member([&] {
            EP_Team_join(2, team);
            if (d > 0) usleep(static_cast<useconds_t>(d));
            EP_Team_sync(team);
            EP_Team_leave(team);
          });
          ASSERT_EQ(EP_Team_join(2, team), EP_SUCCESS);
          ASSERT_EQ(EP_Team_sync(team), EP_SUCCESS);
          ASSERT_EQ(EP_Team_leave(team), EP_SUCCESS);
          member.join();
          ASSERT_EQ(EP_Team_free(&team), EP_SUCCESS);
          break;
        }
      }
    }
    ASSERT_EQ(EP_Barrier(comm), EP_SUCCESS);
    if (rank == 0) {
      int locks = 0;
      std::mt19937_64 again(seed);
      for (int r = 0; r < rounds; ++r) {
        locks += static_cast<int>(again() % 7) == 5;
        delay_us(again);
      }
      EXPECT_EQ(mem[0], locks * size) << "every exclusive epoch's accumulate landed";
    }
    ASSERT_EQ(EP_Win_free(&win), EP_SUCCESS);
  });
  EXPECT_EQ(ep::runtime::lost_wakeups(), lost_before) << "a sleeper was not woken";
}

}  // namespace
