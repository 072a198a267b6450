/*
 * mixed.c - requests of MPI_COMM_WORLD and of endpoints in one array: MPI_Waitall,
 * MPI_Waitany, MPI_Waitsome, MPI_Testall, MPI_Testany and MPI_Testsome over both kinds at
 * once (and null handles); a request that fails among them (a generalized request whose
 * query function returns an error): MPI_ERR_IN_STATUS, its class in its status and
 * MPI_SUCCESS in the others'; and generalized requests completed by another thread while
 * one waits, alone and next to endpoint requests, with the status their query function
 * sets.
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
  switch (round % 6) {
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
    case 4:
      while (done < 4) {
        int out = 0, idx[5];
        OK(MPI_Testsome(5, rq, &out, idx, st));
        CHECK(out != MPI_UNDEFINED, "testsome: all inactive too early");
        for (int k = 0; k < out; ++k) {
          CHECK(rq[idx[k]] == MPI_REQUEST_NULL, "testsome left %d", idx[k]);
          if (idx[k] == 0) CHECK(st[k].MPI_SOURCE == wleft, "testsome world source");
          if (idx[k] == 1) CHECK(st[k].MPI_SOURCE == left, "testsome endpoint source");
        }
        done += out;
        if (out == 0) usleep(50);
      }
      {
        int out = 0, idx[5];
        OK(MPI_Testsome(5, rq, &out, idx, st));
        CHECK(out == MPI_UNDEFINED, "testsome on nulls gave %d", out);
      }
      break;
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

/* ---- a failed request among others: MPI_ERR_IN_STATUS ---------------------------------- */

static int greq_query_fail(void *extra, MPI_Status *status) {
  (void)extra;
  MPI_Status_set_elements(status, MPI_INT, 0);
  MPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  return MPI_ERR_OTHER;
}

static int greq_free_none(void *extra) {
  (void)extra;
  return MPI_SUCCESS;
}

static int class_of(int code) {
  int cls = code;
  if (code != MPI_SUCCESS) OK(MPI_Error_class(code, &cls));
  return cls;
}

enum { kFailed = 2, kReqs = 5 };

/* rq: a world receive and send (to this process), an endpoint receive and send (around the
 * ring) and, at kFailed, a generalized request that is complete and fails. */
static void failing_array(MPI_Comm c, int thread, int *bufs, MPI_Request *rq) {
  int r, n;
  OK(MPI_Comm_rank(c, &r));
  OK(MPI_Comm_size(c, &n));
  bufs[0] = bufs[1] = -1;
  bufs[2] = r;
  bufs[3] = world_rank();
  OK(MPI_Irecv(&bufs[0], 1, MPI_INT, world_rank(), 3000 + thread, MPI_COMM_WORLD, &rq[0]));
  OK(MPI_Irecv(&bufs[1], 1, MPI_INT, (r + n - 1) % n, 11, c, &rq[1]));
  OK(MPI_Grequest_start(greq_query_fail, greq_free_none, greq_cancel, NULL, &rq[kFailed]));
  OK(MPI_Grequest_complete(rq[kFailed]));
  OK(MPI_Isend(&bufs[2], 1, MPI_INT, (r + 1) % n, 11, c, &rq[3]));
  OK(MPI_Isend(&bufs[3], 1, MPI_INT, world_rank(), 3000 + thread, MPI_COMM_WORLD, &rq[4]));
}

/* Status st of request i after a call that returned rc: the failed request fails with its
 * class and is freed; with MPI_ERR_IN_STATUS the others completed (MPI_SUCCESS, freed) or,
 * as MPI allows, did not (MPI_ERR_PENDING, still active). */
static void check_status(const char *call, int rc, int i, const MPI_Status *st,
                         const MPI_Request *rq) {
  if (i == kFailed) {
    CHECK(class_of(rc) == MPI_ERR_IN_STATUS, "%s returned class %d with the failed request",
          call, class_of(rc));
    CHECK(class_of(st->MPI_ERROR) == MPI_ERR_OTHER, "%s: failed request's status class %d",
          call, class_of(st->MPI_ERROR));
    CHECK(rq[i] == MPI_REQUEST_NULL, "%s: the failed request is still active", call);
  } else if (rc != MPI_SUCCESS) {
    CHECK(class_of(rc) == MPI_ERR_IN_STATUS, "%s returned class %d", call, class_of(rc));
    const int pending = class_of(st->MPI_ERROR) == MPI_ERR_PENDING;
    CHECK(st->MPI_ERROR == MPI_SUCCESS || pending, "%s: request %d's status error %d", call, i,
          st->MPI_ERROR);
    CHECK(pending == (rq[i] != MPI_REQUEST_NULL), "%s: request %d pending %d, handle %s", call,
          i, pending, rq[i] == MPI_REQUEST_NULL ? "null" : "active");
  } else {
    CHECK(rq[i] == MPI_REQUEST_NULL, "%s: request %d still active", call, i);
  }
}

static void failing(MPI_Comm c, int thread) {
  int r, n, bufs[4];
  OK(MPI_Comm_rank(c, &r));
  OK(MPI_Comm_size(c, &n));
  MPI_Request rq[kReqs];
  MPI_Status st[kReqs];
  for (int round = 0; round < 4; ++round) {
    failing_array(c, thread, bufs, rq);
    int rc = MPI_SUCCESS, seen_failed = 0;
    const char *call = "";
    switch (round) {
      case 0:
        call = "MPI_Waitall";
        rc = MPI_Waitall(kReqs, rq, st);
        for (int i = 0; i < kReqs; ++i) check_status(call, rc, i, &st[i], rq);
        seen_failed = 1;
        break;
      case 1: {
        call = "MPI_Testall";
        int flag = 0;
        while (!flag) {
          rc = MPI_Testall(kReqs, rq, &flag, st);
          if (rc != MPI_SUCCESS) break;
          if (!flag) {
            CHECK(rq[kFailed] != MPI_REQUEST_NULL, "testall freed the failed request early");
            usleep(50);
          }
        }
        for (int i = 0; i < kReqs; ++i) check_status(call, rc, i, &st[i], rq);
        seen_failed = 1;
        break;
      }
      default: {
        call = round == 2 ? "MPI_Waitsome" : "MPI_Testsome";
        int done = 0;
        while (done < kReqs) {
          int out = 0, idx[kReqs];
          rc = round == 2 ? MPI_Waitsome(kReqs, rq, &out, idx, st)
                          : MPI_Testsome(kReqs, rq, &out, idx, st);
          CHECK(out != MPI_UNDEFINED, "%s: all inactive after %d", call, done);
          int failed_here = 0;
          for (int k = 0; k < out; ++k) {
            check_status(call, rc, idx[k], &st[k], rq);
            if (idx[k] == kFailed) failed_here = seen_failed = 1;
            if (rq[idx[k]] == MPI_REQUEST_NULL) ++done;
          }
          if (!failed_here) CHECK(rc == MPI_SUCCESS, "%s: %d without the failed request", call, rc);
          if (out == 0) usleep(50);
        }
        break;
      }
    }
    CHECK(seen_failed, "%s never completed the failed request", call);
    /* What MPI left pending completes now. */
    OK(MPI_Waitall(kReqs, rq, MPI_STATUSES_IGNORE));
    CHECK(bufs[0] == world_rank() && bufs[1] == (r + n - 1) % n, "%s: data %d %d", call, bufs[0],
          bufs[1]);
  }
}

static void body(MPI_Comm c, int thread) {
  for (int round = 0; round < 12; ++round) exchange(c, thread, round);
  OK(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
  failing(c, thread);
  grequests(c);
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  const int nt = my_threads();
  MPI_Comm comms[3];
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
  make_comms(nt, comms);
  run_threads(nt, comms, body);
  for (int i = 0; i < nt; ++i) OK(MPI_Comm_free(&comms[i]));
  pass("mixed");
  return 0;
}
