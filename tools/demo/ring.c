/*
 * libep demo: a token travels around a ring of MPI endpoints.
 *
 * Every MPI process creates NUM_EP endpoints and runs one pthread per endpoint. The token
 * starts at endpoint 0 and goes to endpoint (r + 1) % size for LAPS laps; every hop prints
 *   endpoint 3 (process 1, thread 0) received token 7 from endpoint 2
 * Afterwards a silent timed phase measures the latency of one hop; process 0 prints it.
 *
 * Usage: mpiexec -n 2 ./ring [laps [timed_laps]]
 * Uses only libep's public API (ep/ep.h) plus MPI_Init_thread / MPI_Finalize.
 */
#include <ep/ep.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NUM_EP 3
#define TAG_PRINTED 1
#define TAG_TIMED 2

static int g_laps = 3;
static int g_timed_laps = 100;
static int g_process = 0;

#define CHECK(call)                                                                       \
  do {                                                                                    \
    int rc_ = (call);                                                                     \
    if (rc_ != EP_SUCCESS) {                                                              \
      fprintf(stderr, "ring: %s failed with %d (%s:%d)\n", #call, rc_, __FILE__, __LINE__); \
      fflush(stderr);                                                                     \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                       \
    }                                                                                     \
  } while (0)

struct endpoint_arg {
  EP_Comm comm;
  int thread; /* endpoint index within this process */
};

/* Runs `laps` laps of the ring with `tag`; prints every receipt if `verbose`.
 * Returns the elapsed time on endpoint 0 (0 elsewhere). */
static double run_ring(EP_Comm comm, int rank, int size, int thread, int laps, int tag,
                       int verbose) {
  const int next = (rank + 1) % size;
  const int prev = (rank + size - 1) % size;
  int token = 0;
  double start = 0.0;
  EP_Status status;

  if (rank == 0) {
    start = EP_Wtime();
    CHECK(EP_Send(&token, 1, MPI_INT, next, tag, comm));
  }
  for (int lap = 0; lap < laps; ++lap) {
    CHECK(EP_Recv(&token, 1, MPI_INT, prev, tag, comm, &status));
    if (status.EP_SOURCE != prev || status.EP_TAG != tag) {
      fprintf(stderr, "ring: endpoint %d: bad status source=%d tag=%d (want %d, %d)\n", rank,
              status.EP_SOURCE, status.EP_TAG, prev, tag);
      fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (verbose) {
      /* One printf per line: MPICH makes stdout unbuffered, this keeps lines whole. */
      printf("endpoint %d (process %d, thread %d) received token %d from endpoint %d\n", rank,
             g_process, thread, token, prev);
      fflush(stdout);
    }
    /* Endpoint 0 receives the last hop of the last lap and stops the ring. */
    if (rank == 0 && lap == laps - 1) break;
    token += 1;
    CHECK(EP_Send(&token, 1, MPI_INT, next, tag, comm));
  }
  return rank == 0 ? EP_Wtime() - start : 0.0;
}

static void *endpoint_main(void *p) {
  struct endpoint_arg *arg = (struct endpoint_arg *)p;
  int rank = -1, size = 0;
  CHECK(EP_Comm_rank(arg->comm, &rank));
  CHECK(EP_Comm_size(arg->comm, &size));

  run_ring(arg->comm, rank, size, arg->thread, g_laps, TAG_PRINTED, 1);
  double elapsed = run_ring(arg->comm, rank, size, arg->thread, g_timed_laps, TAG_TIMED, 0);
  if (rank == 0 && g_timed_laps > 0) {
    long hops = (long)g_timed_laps * size;
    printf("ring: %d endpoints, %d timed laps, %ld hops: %.3f us per hop\n", size, g_timed_laps,
           hops, elapsed * 1e6 / (double)hops);
    fflush(stdout);
  }
  CHECK(EP_Comm_free(&arg->comm));
  return NULL;
}

int main(int argc, char **argv) {
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "ring: MPI_Init_thread failed\n");
    return 1;
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    fprintf(stderr, "ring: MPI_THREAD_MULTIPLE not available (provided=%d)\n", provided);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (argc > 1) g_laps = atoi(argv[1]);
  if (argc > 2) g_timed_laps = atoi(argv[2]);
  if (g_laps < 1 || g_timed_laps < 0) {
    fprintf(stderr, "usage: %s [laps>=1 [timed_laps>=0]]\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &g_process);

  CHECK(EP_Init());
  EP_Comm comms[NUM_EP];
  CHECK(EP_Comm_create_endpoints(MPI_COMM_WORLD, NUM_EP, MPI_INFO_NULL, comms));

  pthread_t threads[NUM_EP];
  struct endpoint_arg args[NUM_EP];
  for (int i = 0; i < NUM_EP; ++i) {
    args[i].comm = comms[i];
    args[i].thread = i;
    if (pthread_create(&threads[i], NULL, endpoint_main, &args[i]) != 0) {
      fprintf(stderr, "ring: pthread_create failed\n");
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  for (int i = 0; i < NUM_EP; ++i) pthread_join(threads[i], NULL);

  CHECK(EP_Finalize());
  if (g_process == 0) {
    printf("ring: done\n");
    fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
