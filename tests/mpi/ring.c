/*
 * ring.c - point-to-point with wildcards: a token ring received with MPI_ANY_SOURCE and
 * MPI_ANY_TAG, a gather to rank 0 from every endpoint (threads of its own process and of
 * the others) with wildcards, per-source order under MPI_ANY_SOURCE, every send mode,
 * Sendrecv_replace, persistent requests restarted, and counts read from statuses.
 */
#include "harness.h"

enum { kLaps = 3, kStream = 20, kPersistRounds = 5 };

static void body(MPI_Comm c, int thread) {
  (void)thread;
  int r, n;
  OK(MPI_Comm_rank(c, &r));
  OK(MPI_Comm_size(c, &n));
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  MPI_Status st;

  /* Token ring: every receive is a wildcard; source, tag and count come from the status. */
  for (int lap = 0; lap < kLaps; ++lap) {
    int tok = -1;
    MPI_Request rq;
    OK(MPI_Irecv(&tok, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &rq));
    if (r == 0) {
      int t0 = lap * n;
      OK(MPI_Send(&t0, 1, MPI_INT, right, lap, c));
    }
    OK(MPI_Wait(&rq, &st));
    CHECK(rq == MPI_REQUEST_NULL, "request not released");
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == lap, "source %d tag %d", st.MPI_SOURCE,
          st.MPI_TAG);
    int count = -1;
    OK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 1, "count %d", count);
    const int expect = lap * n + (r == 0 ? n - 1 : r - 1);
    CHECK(tok == expect, "lap %d: token %d, expected %d", lap, tok, expect);
    if (r != 0) {
      ++tok;
      OK(MPI_Send(&tok, 1, MPI_INT, right, lap, c));
    }
  }

  OK(MPI_Barrier(c)); /* the next phase's messages must not meet this one's wildcards */

  /* Gather to rank 0 with wildcards: each source exactly once, tag and value its rank. */
  if (r == 0) {
    int *seen = calloc((size_t)n, sizeof(int));
    for (int k = 0; k < n - 1; ++k) {
      int v = -1;
      OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &st));
      CHECK(st.MPI_SOURCE > 0 && st.MPI_SOURCE < n, "source %d", st.MPI_SOURCE);
      CHECK(v == st.MPI_SOURCE && st.MPI_TAG == 100 + v, "value %d tag %d source %d", v, st.MPI_TAG,
            st.MPI_SOURCE);
      CHECK(!seen[v], "source %d twice", v);
      seen[v] = 1;
    }
    free(seen);
  } else {
    OK(MPI_Send(&r, 1, MPI_INT, 0, 100 + r, c));
  }

  OK(MPI_Barrier(c));

  /* Per-source order under MPI_ANY_SOURCE: everyone streams to rank 0 in three modes. */
  if (r == 0) {
    int *next = calloc((size_t)n, sizeof(int));
    for (int k = 0; k < (n - 1) * kStream; ++k) {
      int v[2];
      OK(MPI_Recv(v, 2, MPI_INT, MPI_ANY_SOURCE, 7, c, &st));
      CHECK(v[0] == st.MPI_SOURCE, "sender %d source %d", v[0], st.MPI_SOURCE);
      CHECK(v[1] == next[v[0]], "from %d: message %d before %d", v[0], v[1], next[v[0]]);
      ++next[v[0]];
    }
    free(next);
  } else {
    for (int k = 0; k < kStream; ++k) {
      int v[2] = {r, k};
      switch (k % 3) {
        case 0:
          OK(MPI_Send(v, 2, MPI_INT, 0, 7, c));
          break;
        case 1:
          OK(MPI_Ssend(v, 2, MPI_INT, 0, 7, c));
          break;
        default:
          OK(MPI_Bsend(v, 2, MPI_INT, 0, 7, c));
          break;
      }
    }
  }

  /* Sendrecv_replace around the ring, and a plain Sendrecv the other way. */
  int x = r;
  OK(MPI_Sendrecv_replace(&x, 1, MPI_INT, right, 3, left, 3, c, &st));
  CHECK(x == left && st.MPI_SOURCE == left, "shifted %d from %d", x, st.MPI_SOURCE);
  int y = -1;
  OK(MPI_Sendrecv(&r, 1, MPI_INT, left, 4, &y, 1, MPI_INT, right, 4, c, MPI_STATUS_IGNORE));
  CHECK(y == right, "got %d", y);

  /* Persistent requests, started again and again. */
  int out = 0, in = -1;
  MPI_Request pr[2];
  OK(MPI_Recv_init(&in, 1, MPI_INT, left, 5, c, &pr[0]));
  OK(MPI_Send_init(&out, 1, MPI_INT, right, 5, c, &pr[1]));
  for (int k = 0; k < kPersistRounds; ++k) {
    out = r * 1000 + k;
    OK(MPI_Startall(2, pr));
    MPI_Status sts[2];
    OK(MPI_Waitall(2, pr, sts));
    CHECK(pr[0] != MPI_REQUEST_NULL && pr[1] != MPI_REQUEST_NULL, "persistent request freed");
    CHECK(in == left * 1000 + k && sts[0].MPI_SOURCE == left, "round %d: %d from %d", k, in,
          sts[0].MPI_SOURCE);
  }
  OK(MPI_Request_free(&pr[0]));
  OK(MPI_Request_free(&pr[1]));
  CHECK(pr[0] == MPI_REQUEST_NULL, "freed request not null");

  /* Counts of a derived datatype from a status: whole and partial elements. */
  MPI_Datatype pair;
  OK(MPI_Type_contiguous(2, MPI_DOUBLE, &pair));
  OK(MPI_Type_commit(&pair));
  double d[6] = {0}, e[6];
  for (int i = 0; i < 6; ++i) e[i] = r + i;
  OK(MPI_Sendrecv(e, 5, MPI_DOUBLE, right, 6, d, 3, pair, left, 6, c, &st));
  int count = 0, elems = 0;
  OK(MPI_Get_count(&st, pair, &count));
  OK(MPI_Get_elements(&st, pair, &elems));
  CHECK(count == MPI_UNDEFINED && elems == 5, "count %d elements %d", count, elems);
  CHECK(d[3] == left + 3, "d[3] %g", d[3]);
  OK(MPI_Type_free(&pair));
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  const int nt = my_threads();
  MPI_Comm comms[3];
  make_comms(nt, comms);
  /* Buffered sends: one buffer per process, for every thread's messages. */
  int bsize = nt * kStream * (2 * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
  void *buf = malloc((size_t)bsize);
  OK(MPI_Buffer_attach(buf, bsize));
  run_threads(nt, comms, body);
  void *b;
  int s;
  OK(MPI_Buffer_detach(&b, &s));
  CHECK(b == buf && s == bsize, "detached %p %d", b, s);
  free(buf);
  for (int i = 0; i < nt; ++i) OK(MPI_Comm_free(&comms[i]));
  CHECK(comms[0] == MPI_COMM_NULL, "freed communicator not null");
  pass("ring");
  return 0;
}
