/*
 * mpi_names_ir.c - fixed amounts of libep point-to-point through the MPI names (libep_mpi)
 * or the EP_ names, for instruction counts and whole-process A/B timing (no clock inside).
 *
 *   mpi_names_ir mpi|ep N     one process, one thread, two endpoints: 1000 + N times
 *                             Irecv on endpoint 1, Send 0 -> 1, Wait (loop_mpi / loop_ep;
 *                             valgrind --tool=callgrind --toggle-collect=loop_mpi counts
 *                             only the loop)
 *   mpi_names_ir mpi|ep N p   the same on persistent requests (Recv_init/Send_init once,
 *                             N times Start both, Wait both: persistent_mpi / persistent_ep)
 *   mpiexec -n 2 mpi_names_ir mpi2|ep2 N
 *                             8-byte ping-pong, 1 endpoint in each of 2 processes, N rounds
 *
 * Linked with libep_mpi ahead of MPICH (//mpi:mpi_names, or pkg-config ep-mpi).  Commands
 * and figures: docs/performance.md, "MPI names (libep_mpi)".
 */
#include <ep/ep.h>
#include <ep/mpi_endpoints.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void loop_mpi(MPI_Comm *c, long n) {
  long v = 0, in = 0;
  for (long i = 0; i < n; ++i) {
    MPI_Request r;
    MPI_Irecv(&in, 8, MPI_BYTE, 0, 7, c[1], &r);
    MPI_Send(&v, 8, MPI_BYTE, 1, 7, c[0]);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
}

__attribute__((noinline)) void loop_ep(EP_Comm *c, long n) {
  long v = 0, in = 0;
  for (long i = 0; i < n; ++i) {
    EP_Request r;
    EP_Irecv(&in, 8, MPI_BYTE, 0, 7, c[1], &r);
    EP_Send(&v, 8, MPI_BYTE, 1, 7, c[0]);
    EP_Wait(&r, EP_STATUS_IGNORE);
  }
}

/* The same on persistent requests: Start both, Wait both. */
__attribute__((noinline)) void persistent_mpi(MPI_Comm *c, long n) {
  long v = 0, in = 0;
  MPI_Request r[2];
  MPI_Recv_init(&in, 8, MPI_BYTE, 0, 7, c[1], &r[0]);
  MPI_Send_init(&v, 8, MPI_BYTE, 1, 7, c[0], &r[1]);
  for (long i = 0; i < n; ++i) {
    MPI_Start(&r[0]);
    MPI_Start(&r[1]);
    MPI_Wait(&r[1], MPI_STATUS_IGNORE);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
  }
  MPI_Request_free(&r[0]);
  MPI_Request_free(&r[1]);
}

__attribute__((noinline)) void persistent_ep(EP_Comm *c, long n) {
  long v = 0, in = 0;
  EP_Request r[2];
  EP_Recv_init(&in, 8, MPI_BYTE, 0, 7, c[1], &r[0]);
  EP_Send_init(&v, 8, MPI_BYTE, 1, 7, c[0], &r[1]);
  for (long i = 0; i < n; ++i) {
    EP_Start(&r[0]);
    EP_Start(&r[1]);
    EP_Wait(&r[1], EP_STATUS_IGNORE);
    EP_Wait(&r[0], EP_STATUS_IGNORE);
  }
  EP_Request_free(&r[0]);
  EP_Request_free(&r[1]);
}

/* 8-byte ping-pong between 1 endpoint in each of 2 processes (p2p_bench's row b). */
__attribute__((noinline)) void pingpong_mpi(MPI_Comm c, long n) {
  int r;
  long v = 0;
  MPI_Comm_rank(c, &r);
  for (long i = 0; i < n; ++i) {
    if (r == 0) {
      MPI_Send(&v, 8, MPI_BYTE, 1, 7, c);
      MPI_Recv(&v, 8, MPI_BYTE, 1, 7, c, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(&v, 8, MPI_BYTE, 0, 7, c, MPI_STATUS_IGNORE);
      MPI_Send(&v, 8, MPI_BYTE, 0, 7, c);
    }
  }
}

__attribute__((noinline)) void pingpong_ep(EP_Comm c, long n) {
  int r;
  long v = 0;
  EP_Comm_rank(c, &r);
  for (long i = 0; i < n; ++i) {
    if (r == 0) {
      EP_Send(&v, 8, MPI_BYTE, 1, 7, c);
      EP_Recv(&v, 8, MPI_BYTE, 1, 7, c, EP_STATUS_IGNORE);
    } else {
      EP_Recv(&v, 8, MPI_BYTE, 0, 7, c, EP_STATUS_IGNORE);
      EP_Send(&v, 8, MPI_BYTE, 0, 7, c);
    }
  }
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const int mpi = argc > 1 && !strcmp(argv[1], "mpi");
  const long n = argc > 2 ? atol(argv[2]) : 200000;
  if (argc > 1 && !strcmp(argv[1], "mpi2")) {
    MPI_Comm c;
    MPI_Comm_create_endpoints(MPI_COMM_WORLD, 1, MPI_INFO_NULL, &c);
    pingpong_mpi(c, n);
    MPI_Comm_free(&c);
  } else if (argc > 1 && !strcmp(argv[1], "ep2")) {
    EP_Comm c;
    EP_Comm_create_endpoints(MPI_COMM_WORLD, 1, MPI_INFO_NULL, &c);
    pingpong_ep(c, n);
    EP_Comm_free(&c);
  } else if (mpi) {
    MPI_Comm c[2];
    MPI_Comm_create_endpoints(MPI_COMM_WORLD, 2, MPI_INFO_NULL, c);
    if (argc > 3) {
      persistent_mpi(c, n);
    } else {
      loop_mpi(c, 1000); /* warm */
      loop_mpi(c, n);
    }
    MPI_Comm_free(&c[0]);
    MPI_Comm_free(&c[1]);
  } else {
    EP_Comm c[2];
    EP_Comm_create_endpoints(MPI_COMM_WORLD, 2, MPI_INFO_NULL, c);
    if (argc > 3) {
      persistent_ep(c, n);
    } else {
      loop_ep(c, 1000);
      loop_ep(c, n);
    }
    EP_Comm_free(&c[0]);
    EP_Comm_free(&c[1]);
  }
  printf("ir: done %s %ld\n", argc > 1 ? argv[1] : "ep", n);
  MPI_Finalize();
  return 0;
}
