/*
 * errors.c - bad handles and arguments give the error class the MPI standard names,
 * through the communicator's (or window's) error handler, and never crash: with
 * MPI_ERRORS_RETURN the call returns it, a handler of the application's own is called
 * with the handle and the class.  Checked with MPI_Error_class (MPICH returns error
 * codes, libep_mpi returns the class itself, which the endpoints build checks too).
 */
#include "harness.h"

#ifndef PLAIN_MPI
#define EXPECT(call, cls)                                                                     \
  do {                                                                                        \
    int e_rc_ = (call);                                                                       \
    CHECK(error_class(e_rc_) == (cls) && e_rc_ == (cls), "%s gave %d, want %s", #call, e_rc_, \
          #cls);                                                                              \
  } while (0)
#else
#define EXPECT(call, cls)                                                                      \
  do {                                                                                         \
    int e_rc_ = (call);                                                                        \
    CHECK(error_class(e_rc_) == (cls), "%s gave class %d, want %s", #call, error_class(e_rc_), \
          #cls);                                                                               \
  } while (0)
#endif

static __thread MPI_Comm t_seen_comm;
static __thread int t_seen_code, t_calls;

static void on_error(MPI_Comm *comm, int *code, ...) {
  t_seen_comm = *comm;
  t_seen_code = *code;
  ++t_calls;
}

static MPI_Errhandler g_errh;

static void body(MPI_Comm c, int thread) {
  (void)thread;
  int r, n, x[4] = {0};
  OK(MPI_Comm_rank(c, &r));
  OK(MPI_Comm_size(c, &n));
  OK(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
  const int right = (r + 1) % n, left = (r + n - 1) % n;

  /* Arguments. */
  EXPECT(MPI_Send(x, 1, MPI_INT, n, 0, c), MPI_ERR_RANK);
  EXPECT(MPI_Send(x, 1, MPI_INT, right, -5, c), MPI_ERR_TAG);
  EXPECT(MPI_Send(x, -1, MPI_INT, right, 0, c), MPI_ERR_COUNT);
  EXPECT(MPI_Send(x, 1, MPI_DATATYPE_NULL, right, 0, c), MPI_ERR_TYPE);
  MPI_Request rq;
  EXPECT(MPI_Irecv(x, 1, MPI_INT, -7, 0, c, &rq), MPI_ERR_RANK);
  EXPECT(MPI_Bcast(x, 1, MPI_INT, n + 3, c), MPI_ERR_ROOT);
  EXPECT(MPI_Allreduce(x, x + 1, 1, MPI_INT, MPI_OP_NULL, c), MPI_ERR_OP);

  /* Truncation, reported by the receive and in its status. */
  int big[4] = {1, 2, 3, 4}, small[2];
  MPI_Status st;
  OK(MPI_Isend(big, 4, MPI_INT, right, 3, c, &rq));
  EXPECT(MPI_Recv(small, 2, MPI_INT, left, 3, c, &st), MPI_ERR_TRUNCATE);
  OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));

  /* A handler of the application's own sees the communicator and the class. */
  OK(MPI_Comm_set_errhandler(c, g_errh));
  t_calls = 0;
  int rc = MPI_Send(x, 1, MPI_INT, n + 1, 0, c);
  CHECK(t_calls == 1 && t_seen_comm == c && error_class(t_seen_code) == MPI_ERR_RANK &&
            error_class(rc) == MPI_ERR_RANK,
        "handler: %d calls, comm %x code %d", t_calls, (unsigned)t_seen_comm, t_seen_code);
  OK(MPI_Comm_call_errhandler(c, MPI_ERR_OTHER));
  CHECK(t_calls == 2 && t_seen_code == MPI_ERR_OTHER, "call_errhandler");
  OK(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));

  /* Windows' epochs. */
  int *mem;
  MPI_Win win;
  OK(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, c, &mem, &win));
  OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
  EXPECT(MPI_Put(x, 1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
  EXPECT(MPI_Win_unlock(right, win), MPI_ERR_RMA_SYNC);
  OK(MPI_Win_free(&win));

#ifndef PLAIN_MPI
  /* What plain MPI leaves undefined (stale handles) or allows (topologies, MPI groups
   * mixed in): libep's objects answer with a class, never a crash. */
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPI_Comm d, stale;
  OK(MPI_Comm_dup(c, &d));
  stale = d;
  OK(MPI_Comm_free(&d));
  EXPECT(MPI_Send(x, 1, MPI_INT, 0, 0, stale), MPI_ERR_COMM);
  EXPECT(MPI_Comm_rank(stale, &rc), MPI_ERR_COMM);
  EXPECT(MPI_Barrier((MPI_Comm)0x3C7FFFFF), MPI_ERR_COMM); /* never a handle */
  MPI_Request srq;
  OK(MPI_Irecv(x, 1, MPI_INT, MPI_PROC_NULL, 0, c, &srq));
  MPI_Request saved = srq;
  OK(MPI_Wait(&srq, MPI_STATUS_IGNORE));
  EXPECT(MPI_Wait(&saved, MPI_STATUS_IGNORE), MPI_ERR_REQUEST);
  MPI_Request two[2] = {MPI_REQUEST_NULL, saved};
  EXPECT(MPI_Waitall(2, two, MPI_STATUSES_IGNORE), MPI_ERR_REQUEST);
  EXPECT(MPI_Request_free(&saved), MPI_ERR_REQUEST);
  int dims[2], periods[2], coords[2]; /* MPICH 4.0.2 crashes here on a plain communicator */
  EXPECT(MPI_Cart_get(c, 2, dims, periods, coords), MPI_ERR_TOPOLOGY);
  int dim = n, period = 1;
  MPI_Comm cart;
  EXPECT(MPI_Cart_create(c, 1, &dim, &period, 0, &cart), MPI_ERR_COMM);
  EXPECT(MPI_Comm_spawn("true", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, c, &cart, MPI_ERRCODES_IGNORE),
         MPI_ERR_COMM);
  MPI_Group eg, wg, u;
  OK(MPI_Comm_group(c, &eg));
  OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
  EXPECT(MPI_Group_union(eg, wg, &u), MPI_ERR_GROUP);
  OK(MPI_Group_union(eg, MPI_GROUP_EMPTY, &u)); /* the empty group is everyone's */
  OK(MPI_Group_free(&u));
  OK(MPI_Group_free(&wg));
  OK(MPI_Group_free(&eg));
  EXPECT(MPI_Comm_set_attr(c, 12345, NULL), MPI_ERR_KEYVAL);
  EXPECT(MPI_Comm_create_endpoints(c, 1, MPI_INFO_NULL, &d), MPI_ERR_COMM);
  /* MPI_Error_string names the call and the argument. */
  rc = MPI_Send(x, 1, MPI_INT, right, 1 << 30, c);
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  OK(MPI_Error_string(rc, text, &len));
  CHECK(strstr(text, "MPI_Send") != NULL && strstr(text, "tag") != NULL, "error string '%s'", text);
#endif
  OK(MPI_Barrier(c));
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  OK(MPI_Comm_create_errhandler(on_error, &g_errh));
  const int nt = my_threads();
  MPI_Comm comms[3];
  make_comms(nt, comms);
  run_threads(nt, comms, body);
#ifndef PLAIN_MPI
  /* A threadcomm is freed by MPIX_Threadcomm_free only. */
  MPI_Comm tc;
  OK(MPIX_Threadcomm_init(MPI_COMM_WORLD, nt, &tc));
  OK(MPI_Comm_set_errhandler(tc, MPI_ERRORS_RETURN));
  EXPECT(MPI_Comm_free(&tc), MPI_ERR_COMM);
  EXPECT(MPIX_Threadcomm_finish(tc), MPI_ERR_OTHER); /* not started in this thread */
  OK(MPIX_Threadcomm_free(&tc));
#endif
  for (int i = 0; i < nt; ++i) OK(MPI_Comm_free(&comms[i]));
  OK(MPI_Errhandler_free(&g_errh));
  pass("errors");
  return 0;
}
