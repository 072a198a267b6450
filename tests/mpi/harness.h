/*
 * harness.h - the frame shared by libep_mpi's test programs.
 *
 * Each program is written against <mpi.h> (and ep/mpi_endpoints.h) alone: its test body
 * is ordinary MPI code on a communicator, run by every OpenMP thread of the process on
 * that thread's endpoint.  Built with ep-mpi, a process brings 1-3 threads (uneven: world
 * rank r brings 1 + (r + 1) % 3) and the communicator comes from
 * MPI_Comm_create_endpoints.  Built with -DPLAIN_MPI and without libep_mpi, the same body
 * runs on plain MPI with one thread per process on a duplicate of MPI_COMM_WORLD (and a
 * threadcomm is a duplicate too), checking the same invariants.
 *
 * A failed CHECK prints where and why and aborts the job; a program that passes prints
 * "<name>: PASS" from world rank 0.
 */
#ifndef EP_TESTS_MPI_HARNESS_H_
#define EP_TESTS_MPI_HARNESS_H_

#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PLAIN_MPI
#include <ep/mpi_endpoints.h>
#endif

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      fflush(stderr);                                                          \
      MPI_Abort(MPI_COMM_WORLD, 1);                                            \
    }                                                                          \
  } while (0)

/* An MPI call that must succeed. */
#define OK(call)                                                                   \
  do {                                                                             \
    int ok_rc_ = (call);                                                           \
    if (ok_rc_ != MPI_SUCCESS) {                                                   \
      char ok_s_[MPI_MAX_ERROR_STRING];                                            \
      int ok_n_ = 0;                                                               \
      MPI_Error_string(ok_rc_, ok_s_, &ok_n_);                                     \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, ok_s_); \
      fflush(stderr);                                                              \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                \
    }                                                                              \
  } while (0)

/* The error class of an MPI return code. */
static inline int error_class(int rc) {
  int cls = rc;
  MPI_Error_class(rc, &cls);
  return cls;
}

static inline int world_rank(void) {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

static inline int world_size(void) {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

/* The threads (endpoints) this process brings. */
static inline int my_threads(void) {
#ifdef PLAIN_MPI
  return 1;
#else
  return 1 + (world_rank() + 1) % 3;
#endif
}

/* The endpoints of the threads before this process's (its rank offset). */
static inline int my_offset(int nt) {
  int off = 0;
  MPI_Exscan(&nt, &off, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return world_rank() == 0 ? 0 : off;
}

/* One endpoints communicator: comms[i] for thread i. */
static inline void make_comms(int nt, MPI_Comm *comms) {
#ifdef PLAIN_MPI
  (void)nt;
  OK(MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]));
#else
  OK(MPI_Comm_create_endpoints(MPI_COMM_WORLD, nt, MPI_INFO_NULL, comms));
#endif
}

#ifdef PLAIN_MPI
/* MPICH 4.0 has no threadcomm: one thread per process on a duplicate. */
static inline int MPIX_Threadcomm_init(MPI_Comm comm, int n, MPI_Comm *tc) {
  (void)n;
  return MPI_Comm_dup(comm, tc);
}
static inline int MPIX_Threadcomm_start(MPI_Comm tc) {
  (void)tc;
  return MPI_SUCCESS;
}
static inline int MPIX_Threadcomm_finish(MPI_Comm tc) {
  (void)tc;
  return MPI_SUCCESS;
}
static inline int MPIX_Threadcomm_free(MPI_Comm *tc) { return MPI_Comm_free(tc); }
#endif

static inline void start(int *argc, char ***argv) {
  int provided = 0;
  OK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
  CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
}

/* Runs body(comms[i], i) on nt OpenMP threads, thread i with its endpoint.  With
 * -DHARNESS_PTHREADS (the ThreadSanitizer build: it cannot see libgomp's barriers) the
 * threads are POSIX threads, created and joined for each call. */
#ifdef HARNESS_PTHREADS
#include <pthread.h>

struct harness_thread {
  MPI_Comm comm;
  int index;
  void (*body)(MPI_Comm, int);
};

static void *harness_start(void *arg) {
  struct harness_thread *t = (struct harness_thread *)arg;
  t->body(t->comm, t->index);
  return NULL;
}

static inline void run_threads(int nt, MPI_Comm *comms, void (*body)(MPI_Comm, int)) {
  pthread_t tid[8];
  struct harness_thread arg[8];
  CHECK(nt <= 8, "%d threads", nt);
  for (int i = 0; i < nt; ++i) {
    arg[i].comm = comms[i];
    arg[i].index = i;
    arg[i].body = body;
    CHECK(pthread_create(&tid[i], NULL, harness_start, &arg[i]) == 0, "pthread_create");
  }
  for (int i = 0; i < nt; ++i) pthread_join(tid[i], NULL);
}
#else
static inline void run_threads(int nt, MPI_Comm *comms, void (*body)(MPI_Comm, int)) {
#pragma omp parallel num_threads(nt)
  {
    CHECK(omp_get_num_threads() == nt, "OpenMP gave %d threads, not %d", omp_get_num_threads(), nt);
    body(comms[omp_get_thread_num()], omp_get_thread_num());
  }
}
#endif

static inline void pass(const char *name) {
  OK(MPI_Barrier(MPI_COMM_WORLD));
  if (world_rank() == 0) printf("%s: PASS\n", name);
  fflush(stdout);
  OK(MPI_Finalize());
}

#endif /* EP_TESTS_MPI_HARNESS_H_ */
