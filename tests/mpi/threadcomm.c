/*
 * threadcomm.c - MPIX_Threadcomm: one handle for the threads of an OpenMP region, the
 * region started and finished again several times.  Inside: each thread's rank is its
 * process's offset plus a thread number (distinct, below the process's thread count),
 * a ring with wildcards, collectives, a duplicate and a split freed inside the region
 * (and, on odd rounds, a split left to MPIX_Threadcomm_finish), an attribute whose delete
 * callback runs at MPIX_Threadcomm_finish.  Outside: the handle's size and name.
 */
#include "harness.h"

enum { kRounds = 4 };

static int g_deleted; /* delete callbacks run, per process */
static int g_round, g_offset, g_nt, g_total, g_keyval;
static int g_taken[3]; /* how many threads took each thread number this round */

static int count_delete(MPI_Comm comm, int keyval, void *value, void *extra) {
  (void)comm, (void)keyval, (void)value, (void)extra;
#pragma omp atomic
  ++g_deleted;
  return MPI_SUCCESS;
}

/* One thread's region (every thread is given the same handle). */
static void region(MPI_Comm tc, int thread) {
  (void)thread;
  OK(MPIX_Threadcomm_start(tc));
  int r, n;
  OK(MPI_Comm_rank(tc, &r));
  OK(MPI_Comm_size(tc, &n));
  CHECK(n == g_total, "size %d", n);
  CHECK(r >= g_offset && r < g_offset + g_nt, "rank %d outside [%d, %d)", r, g_offset,
        g_offset + g_nt);
#pragma omp atomic
  ++g_taken[r - g_offset];
  char name[MPI_MAX_OBJECT_NAME];
  int len;
  OK(MPI_Comm_get_name(tc, name, &len));
  CHECK(strcmp(name, "team") == 0, "name '%s'", name);

  /* A ring with wildcards across threads and processes. */
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  int tok = -1;
  MPI_Status st;
  MPI_Request rq;
  OK(MPI_Irecv(&tok, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, tc, &rq));
  OK(MPI_Send(&r, 1, MPI_INT, right, g_round, tc));
  OK(MPI_Wait(&rq, &st));
  CHECK(tok == left && st.MPI_SOURCE == left && st.MPI_TAG == g_round, "token %d from %d", tok,
        st.MPI_SOURCE);

  long sum = -1, v = r;
  OK(MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, tc));
  CHECK(sum == (long)n * (n - 1) / 2, "allreduce %ld", sum);

  /* Derived communicators, freed inside the region. */
  MPI_Comm d, s;
  OK(MPI_Comm_dup(tc, &d));
  int dr;
  OK(MPI_Comm_rank(d, &dr));
  CHECK(dr == r, "dup rank %d of %d", dr, r);
  OK(MPI_Barrier(d));
  OK(MPI_Comm_free(&d));
  OK(MPI_Comm_split(tc, r % 2, -r, &s));
  int sn;
  OK(MPI_Comm_size(s, &sn));
  CHECK(sn == (n - r % 2 + 1) / 2, "split size %d", sn);
  OK(MPI_Bcast(&sn, 1, MPI_INT, 0, s));
#ifdef PLAIN_MPI
  OK(MPI_Comm_free(&s));
#else
  if (g_round % 2 == 0) OK(MPI_Comm_free(&s)); /* else MPIX_Threadcomm_finish frees it */
#endif
  /* An attribute of this thread's endpoint: deleted at finish. */
  OK(MPI_Comm_set_attr(tc, g_keyval, (char *)NULL + r));
  void *val;
  int flag;
  OK(MPI_Comm_get_attr(tc, g_keyval, &val, &flag));
  CHECK(flag && val == (char *)NULL + r, "attribute %p", val);
#ifdef PLAIN_MPI
  OK(MPI_Comm_delete_attr(tc, g_keyval));
#endif
  OK(MPIX_Threadcomm_finish(tc));
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  g_nt = my_threads();
  g_offset = my_offset(g_nt);
  OK(MPI_Allreduce(&g_nt, &g_total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, count_delete, &g_keyval, NULL));

  MPI_Comm tc;
  OK(MPIX_Threadcomm_init(MPI_COMM_WORLD, g_nt, &tc));
  int size = 0;
  OK(MPI_Comm_size(tc, &size)); /* outside a region: the threadcomm's size */
  CHECK(size == g_total, "threadcomm size %d, want %d", size, g_total);
  OK(MPI_Comm_set_name(tc, "team"));

  for (int round = 0; round < kRounds; ++round) {
    g_round = round;
    for (int i = 0; i < 3; ++i) g_taken[i] = 0;
    MPI_Comm handles[3] = {tc, tc, tc};
    run_threads(g_nt, handles, region);
    for (int i = 0; i < g_nt; ++i) {
      CHECK(g_taken[i] == 1, "thread number %d taken %d times", i, g_taken[i]);
    }
    CHECK(g_deleted == g_nt * (round + 1), "round %d: %d deletes", round, g_deleted);
  }
#ifndef PLAIN_MPI
  int r = 0;
  OK(MPI_Comm_set_errhandler(tc, MPI_ERRORS_RETURN));
  const int rc = MPI_Comm_rank(tc, &r); /* outside a region there is no endpoint */
  CHECK(error_class(rc) == MPI_ERR_COMM, "rank outside a region: %d", rc);
#endif
  OK(MPIX_Threadcomm_free(&tc));
  CHECK(tc == MPI_COMM_NULL, "freed threadcomm not null");
  OK(MPI_Comm_free_keyval(&g_keyval));
  pass("threadcomm");
  return 0;
}
