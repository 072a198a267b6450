/*
 * The CMake test's application: 2 endpoints per process, each in its own thread, pass
 * their rank to the next endpoint and sum all ranks with EP_Allreduce. Every endpoint
 * prints one line "endpoint R of N: from P, sum S"; process 0 prints the package version.
 */
#include <ep/ep.h>
#include <pthread.h>
#include <stdio.h>

#define NUM_EP 2

#define CHECK(call)                                                           \
  do {                                                                        \
    if ((call) != EP_SUCCESS) {                                               \
      fprintf(stderr, "app: %s failed (%s:%d)\n", #call, __FILE__, __LINE__); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                           \
    }                                                                         \
  } while (0)

static void *endpoint_main(void *arg) {
  EP_Comm comm = *(EP_Comm *)arg;
  int rank, size, from = -1, sum = -1;
  CHECK(EP_Comm_rank(comm, &rank));
  CHECK(EP_Comm_size(comm, &size));
  CHECK(EP_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 0, &from, 1, MPI_INT,
                    (rank + size - 1) % size, 0, comm, EP_STATUS_IGNORE));
  CHECK(EP_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm));
  printf("endpoint %d of %d: from %d, sum %d\n", rank, size, from, sum);
  fflush(stdout);
  CHECK(EP_Comm_free(&comm));
  return NULL;
}

int main(int argc, char **argv) {
  int provided, process;
  EP_Comm comms[NUM_EP];
  pthread_t threads[NUM_EP];
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &process);
  if (process == 0) printf("app: built with ep package %s\n", EP_PACKAGE_VERSION);
  CHECK(EP_Init());
  CHECK(EP_Comm_create_endpoints(MPI_COMM_WORLD, NUM_EP, MPI_INFO_NULL, comms));
  for (int i = 0; i < NUM_EP; ++i) pthread_create(&threads[i], NULL, endpoint_main, &comms[i]);
  for (int i = 0; i < NUM_EP; ++i) pthread_join(threads[i], NULL);
  CHECK(EP_Finalize());
  MPI_Finalize();
  return 0;
}
