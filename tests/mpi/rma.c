/*
 * rma.c - one-sided communication on windows over an endpoints communicator: fence
 * epochs (put, get, accumulate), passive-target lock epochs (exclusive and shared, with
 * fetch-and-op and compare-and-swap on a counter), lock_all with request-based
 * operations and flushes, post/start/complete/wait, a window over the application's
 * memory, a dynamic window, and the window's attributes, group, name and error handler.
 */
#include "harness.h"

enum { kIncrements = 10 };

static void body(MPI_Comm c, int thread) {
  (void)thread;
  int r, n;
  OK(MPI_Comm_rank(c, &r));
  OK(MPI_Comm_size(c, &n));
  const int right = (r + 1) % n, left = (r + n - 1) % n;

  /* Allocated window: one long per endpoint plus a counter. */
  long *mem = NULL;
  MPI_Win win;
  OK(MPI_Win_allocate((MPI_Aint)sizeof(long) * (n + 1), sizeof(long), MPI_INFO_NULL, c, &mem,
                      &win));
  for (int i = 0; i <= n; ++i) mem[i] = -1;
  mem[n] = 0;
  MPI_Aint *size = NULL;
  int flag = 0;
  OK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &size, &flag));
  CHECK(flag && *size == (MPI_Aint)sizeof(long) * (n + 1), "window size");
  void *base = NULL;
  OK(MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag));
  CHECK(flag && base == mem, "window base %p vs %p", base, (void *)mem);
  MPI_Group wg;
  int gs = 0;
  OK(MPI_Win_get_group(win, &wg));
  OK(MPI_Group_size(wg, &gs));
  CHECK(gs == n, "window group of %d", gs);
  OK(MPI_Group_free(&wg));
  OK(MPI_Win_set_name(win, "counters"));
  char name[MPI_MAX_OBJECT_NAME];
  int len = 0;
  OK(MPI_Win_get_name(win, name, &len));
  CHECK(strcmp(name, "counters") == 0, "window name '%s'", name);
  OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));

  /* Fence: everyone puts its rank into slot r of every endpoint, then reads one back. */
  OK(MPI_Win_fence(0, win));
  long me = r;
  for (int t = 0; t < n; ++t) OK(MPI_Put(&me, 1, MPI_LONG, t, r, 1, MPI_LONG, win));
  OK(MPI_Win_fence(0, win));
  for (int i = 0; i < n; ++i) CHECK(mem[i] == i, "after fence slot %d = %ld", i, mem[i]);
  long got = -1;
  OK(MPI_Get(&got, 1, MPI_LONG, right, left, 1, MPI_LONG, win));
  OK(MPI_Win_fence(0, win));
  CHECK(got == left, "get %ld", got);
  long one = 1;
  OK(MPI_Accumulate(&one, 1, MPI_LONG, 0, n, 1, MPI_LONG, MPI_SUM, win));
  OK(MPI_Win_fence(0, win));
  if (r == 0) CHECK(mem[n] == n, "accumulated %ld", mem[n]);
  OK(MPI_Win_fence(0, win));
  if (r == 0) mem[n] = 0;
  OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
  OK(MPI_Barrier(c));

  /* Passive target: a counter at rank 0, incremented under exclusive and shared locks. */
  for (int k = 0; k < kIncrements; ++k) {
    long old = -1;
    OK(MPI_Win_lock(k % 2 ? MPI_LOCK_SHARED : MPI_LOCK_EXCLUSIVE, 0, 0, win));
    OK(MPI_Fetch_and_op(&one, &old, MPI_LONG, 0, n, MPI_SUM, win));
    OK(MPI_Win_unlock(0, win));
    CHECK(old >= 0 && old < (long)n * kIncrements, "fetched %ld", old);
  }
  OK(MPI_Barrier(c));
  long total = -1, cmp = (long)n * kIncrements, swap = -7;
  OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
  OK(MPI_Get(&total, 1, MPI_LONG, 0, n, 1, MPI_LONG, win));
  OK(MPI_Win_flush(0, win));
  CHECK(total == (long)n * kIncrements, "counter %ld", total);
  OK(MPI_Win_unlock(0, win));
  OK(MPI_Barrier(c));
  if (r == 0) { /* compare-and-swap: only the right expectation swaps */
    long old = 0;
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
    OK(MPI_Compare_and_swap(&swap, &cmp, &old, MPI_LONG, 0, n, win));
    OK(MPI_Win_unlock(0, win));
    CHECK(old == cmp && mem[n] == swap, "cas %ld -> %ld", old, mem[n]);
  }
  OK(MPI_Barrier(c));

  /* lock_all with request-based put and get, flushed. */
  OK(MPI_Win_lock_all(0, win));
  long mark = 1000 + r, back = -1;
  MPI_Request rq[2];
  OK(MPI_Rput(&mark, 1, MPI_LONG, right, r, 1, MPI_LONG, win, &rq[0]));
  OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
  OK(MPI_Win_flush(right, win));
  OK(MPI_Rget(&back, 1, MPI_LONG, right, r, 1, MPI_LONG, win, &rq[1]));
  OK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
  CHECK(back == mark, "rget %ld", back);
  OK(MPI_Win_flush_all(win));
  OK(MPI_Win_unlock_all(win));
  OK(MPI_Barrier(c));
  CHECK(mem[left] == 1000 + left, "rput from %d: %ld", left, mem[left]);

  /* Post/start/complete/wait: each endpoint exposes to its left and accesses its right. */
  MPI_Group all, from, to;
  OK(MPI_Comm_group(c, &all));
  OK(MPI_Group_incl(all, 1, &left, &from));
  OK(MPI_Group_incl(all, 1, &right, &to));
  OK(MPI_Win_post(from, 0, win));
  OK(MPI_Win_start(to, 0, win));
  long pscw = 5000 + r;
  OK(MPI_Put(&pscw, 1, MPI_LONG, right, n, 1, MPI_LONG, win));
  OK(MPI_Win_complete(win));
  OK(MPI_Win_wait(win));
  CHECK(mem[n] == 5000 + left, "pscw %ld", mem[n]);
  OK(MPI_Group_free(&all));
  OK(MPI_Group_free(&from));
  OK(MPI_Group_free(&to));
  OK(MPI_Win_free(&win));
  CHECK(win == MPI_WIN_NULL, "freed window not null");

  /* A window over the application's memory. */
  int own[4] = {r, r, r, r};
  OK(MPI_Win_create(own, sizeof own, sizeof(int), MPI_INFO_NULL, c, &win));
  OK(MPI_Win_fence(0, win));
  int peer[4] = {0};
  OK(MPI_Get(peer, 4, MPI_INT, left, 0, 4, MPI_INT, win));
  OK(MPI_Win_fence(0, win));
  CHECK(peer[3] == left, "get from created window %d", peer[3]);
  OK(MPI_Win_free(&win));

  /* A dynamic window: the target's address travels by a message. */
  long dyn = 40 + r;
  MPI_Aint addr, raddr;
  OK(MPI_Win_create_dynamic(MPI_INFO_NULL, c, &win));
  OK(MPI_Win_attach(win, &dyn, sizeof dyn));
  OK(MPI_Get_address(&dyn, &addr));
  OK(MPI_Sendrecv(&addr, 1, MPI_AINT, left, 60, &raddr, 1, MPI_AINT, right, 60, c,
                  MPI_STATUS_IGNORE));
  OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
  long rd = -1;
  OK(MPI_Get(&rd, 1, MPI_LONG, right, raddr, 1, MPI_LONG, win));
  OK(MPI_Win_unlock(right, win));
  CHECK(rd == 40 + right, "dynamic get %ld", rd);
  OK(MPI_Barrier(c));
  OK(MPI_Win_detach(win, &dyn));
  OK(MPI_Win_free(&win));
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  const int nt = my_threads();
  MPI_Comm comms[3];
  make_comms(nt, comms);
  run_threads(nt, comms, body);
  for (int i = 0; i < nt; ++i) OK(MPI_Comm_free(&comms[i]));
  pass("rma");
  return 0;
}
