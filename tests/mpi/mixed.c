/*
 * mixed.c - requests of MPI_COMM_WORLD and of endpoints in one array: MPI_Waitall,
 * MPI_Waitany, MPI_Waitsome, MPI_Testall and MPI_Testany over both kinds at once (and
 * null handles), and generalized requests completed by another thread while one waits,
 * alone and next to endpoint requests, with the status their query function sets.
 */
#include <pthread.h>
#include <unistd.h>

#include "harness.h"

static void exchange(MPI_Comm c, int thread, int round) {
  int r, n, wr = world_rank(), wn = world_size();
  OK(MPI_Comm_rank(c, &r));
  OK(MPI_Comm_size(c, &n));
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  /* World traffic: thread 0 around the ring of processes, the others to their own
   * process (every process has a thread 0; the tag tells the threads apart). */
  const int wright = thread == 0 ? (wr + 1) % wn : wr,
            wleft = thread == 0 ? (wr + wn - 1) % wn : wr;
  int ein = -1, eout = r * 10 + round, win = -1, wout = wr * 10 + round;
  MPI_Request rq[5];
  rq[2] = MPI_REQUEST_NULL;
  OK(MPI_Irecv(&win, 1, MPI_INT, wleft, 1000 + thread, MPI_COMM_WORLD, &rq[0]));
  OK(MPI_Irecv(&ein, 1, MPI_INT, left, 7, c, &rq[1]));
  OK(MPI_Isend(&wout, 1, MPI_INT, wright, 1000 + thread, MPI_COMM_WORLD, &rq[3]));
  OK(MPI_Isend(&eout, 1, MPI_INT, right, 7, c, &rq[4]));
  MPI_Status st[5];
  int done = 0;
  switch (round % 5) {
    case 0:
      OK(MPI_Waitall(5, rq, st));
      CHECK(st[0].MPI_SOURCE == wleft && st[1].MPI_SOURCE == left, "waitall sources %d %d",
            st[0].MPI_SOURCE, st[1].MPI_SOURCE);
      done = 5;
      break;
    case 1:
      while (done < 4) {
        int idx = -1;
        OK(MPI_Waitany(5, rq, &idx, &st[0]));
        CHECK(idx >= 0 && idx < 5 && idx != 2 && rq[idx] == MPI_REQUEST_NULL, "waitany %d", idx);
        if (idx == 1) CHECK(st[0].MPI_SOURCE == left, "waitany source %d", st[0].MPI_SOURCE);
        ++done;
      }
      {
        int idx = 0;
        OK(MPI_Waitany(5, rq, &idx, MPI_STATUS_IGNORE));
        CHECK(idx == MPI_UNDEFINED, "waitany on nulls gave %d", idx);
      }
      break;
    case 2:
      while (done < 4) {
        int out = 0, idx[5];
        OK(MPI_Waitsome(5, rq, &out, idx, st));
        CHECK(out > 0, "waitsome %d", out);
        for (int k = 0; k < out; ++k) {
          if (idx[k] == 0) CHECK(st[k].MPI_SOURCE == wleft, "waitsome world source");
          if (idx[k] == 1) CHECK(st[k].MPI_SOURCE == left, "waitsome endpoint source");
        }
        done += out;
      }
      break;
    case 3: {
      int flag = 0;
      while (!flag) {
        OK(MPI_Testall(5, rq, &flag, st));
        if (!flag) {
          /* Not all complete: no request was touched. */
          CHECK(rq[0] != MPI_REQUEST_NULL || rq[1] != MPI_REQUEST_NULL ||
                    rq[3] != MPI_REQUEST_NULL || rq[4] != MPI_REQUEST_NULL,
                "testall freed requests");
          usleep(100);
        }
      }
      for (int i = 0; i < 5; ++i) CHECK(rq[i] == MPI_REQUEST_NULL, "testall left %d", i);
      break;
    }
    default:
      while (done < 4) {
        int flag = 0, idx = -1;
        OK(MPI_Testany(5, rq, &idx, &flag, &st[0]));
        if (flag) {
          CHECK(idx != MPI_UNDEFINED, "testany: all inactive too early");
          ++done;
        } else {
          usleep(50);
        }
      }
      break;
  }
  CHECK(win == wleft * 10 + round && ein == left * 10 + round, "round %d: world %d endpoint %d",
        round, win, ein);
}

/* ---- generalized requests ------------------------------------------------------------- */

struct Greq {
  MPI_Request req;
  int value;
  int freed;
};

static int greq_query(void *extra, MPI_Status *status) {
  struct Greq *g = extra;
  MPI_Status_set_elements(status, MPI_INT, g->value);
  MPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = 77;
  status->MPI_TAG = 88;
  return MPI_SUCCESS;
}

static int greq_free(void *extra) {
  ((struct Greq *)extra)->freed = 1;
  return MPI_SUCCESS;
}

static int greq_cancel(void *extra, int complete) {
  (void)extra, (void)complete;
  return MPI_SUCCESS;
}

static void *completer(void *arg) {
  usleep(20000); /* the waiter is asleep in MPI_Wait by now */
  OK(MPI_Grequest_complete(((struct Greq *)arg)->req));
  return NULL;
}

static void grequests(MPI_Comm c) {
  struct Greq g = {MPI_REQUEST_NULL, 3, 0};
  OK(MPI_Grequest_start(greq_query, greq_free, greq_cancel, &g, &g.req));
  MPI_Request copy = g.req;
  pthread_t t;
  pthread_create(&t, NULL, completer, &g);
  MPI_Status st;
  OK(MPI_Wait(&copy, &st));
  pthread_join(t, NULL);
  int count = -1;
  OK(MPI_Get_count(&st, MPI_INT, &count));
  CHECK(copy == MPI_REQUEST_NULL && g.freed, "generalized request not freed");
  CHECK(count == 3 && st.MPI_SOURCE == 77 && st.MPI_TAG == 88, "grequest status %d %d %d", count,
        st.MPI_SOURCE, st.MPI_TAG);

  /* Next to an endpoint receive, in one Waitall. */
  int r, n, in = -1;
  OK(MPI_Comm_rank(c, &r));
  OK(MPI_Comm_size(c, &n));
  struct Greq h = {MPI_REQUEST_NULL, 5, 0};
  MPI_Request rq[2];
  OK(MPI_Grequest_start(greq_query, greq_free, greq_cancel, &h, &h.req));
  rq[0] = h.req;
  OK(MPI_Irecv(&in, 1, MPI_INT, (r + n - 1) % n, 9, c, &rq[1]));
  pthread_create(&t, NULL, completer, &h);
  OK(MPI_Send(&r, 1, MPI_INT, (r + 1) % n, 9, c));
  MPI_Status sts[2];
  OK(MPI_Waitall(2, rq, sts));
  pthread_join(t, NULL);
  OK(MPI_Get_count(&sts[0], MPI_INT, &count));
  CHECK(count == 5 && h.freed && in == (r + n - 1) % n, "grequest in waitall: %d %d", count, in);
}

static void body(MPI_Comm c, int thread) {
  for (int round = 0; round < 10; ++round) exchange(c, thread, round);
  grequests(c);
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  const int nt = my_threads();
  MPI_Comm comms[3];
  make_comms(nt, comms);
  run_threads(nt, comms, body);
  for (int i = 0; i < nt; ++i) OK(MPI_Comm_free(&comms[i]));
  pass("mixed");
  return 0;
}
