/*
 * mpi_endpoints.h - MPI endpoints for programs written against <mpi.h>.
 *
 * What it is: with libep_mpi linked ahead of MPICH
 *     mpicc app.c $(pkg-config --cflags --libs ep-mpi)
 * an endpoint is an MPI_Comm, and every MPI function applied to it - and to the requests,
 * groups, windows and messages made from it - is served by libep (../shared/API.md,
 * "Unmodified MPI programs").  MPI_Init/MPI_Init_thread start libep (MPICH is asked for
 * MPI_THREAD_MULTIPLE), MPI_Finalize stops it; MPI_COMM_WORLD and everything made from
 * it stay plain MPI.
 *
 * MPI_Comm_create_endpoints (the MPI Forum's endpoints proposal): collective over the MPI
 * processes of parent_comm (an MPI communicator); my_num_ep handles of one new endpoints
 * communicator, ranked by parent rank, then by index in out_comm_handles; my_num_ep may
 * differ between processes and may be 0.  Each handle belongs to one thread at a time.
 *
 * MPIX_Threadcomm_* (MPICH 4.2's meaning): MPIX_Threadcomm_init, outside any parallel
 * region, is collective over comm and makes one handle for num_threads threads of this
 * process.  Each of those threads calls MPIX_Threadcomm_start (a barrier of the
 * process's num_threads threads) and MPIX_Threadcomm_finish (another one); in between,
 * the shared handle is the calling thread's endpoint: its rank is its process's offset
 * (the threads of the lower-ranked processes of comm) plus its thread number, its order
 * of arrival in MPIX_Threadcomm_start, as in MPICH.  Regions may start again any number
 * of times.  A communicator derived from the handle inside a region (dup, split, ...) is
 * the calling thread's own handle; it lives until the thread frees it or, at the latest,
 * until its MPIX_Threadcomm_finish.  MPIX_Threadcomm_free, outside any region, frees it.
 * Outside a region MPI_Comm_size, names, error handlers and attributes of the handle
 * answer; calls that need an endpoint give MPI_ERR_COMM.
 *
 * Threading: as MPI's with MPI_THREAD_MULTIPLE; one thread at a time per endpoint.
 */
#ifndef EP_MPI_ENDPOINTS_H_
#define EP_MPI_ENDPOINTS_H_

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

int MPI_Comm_create_endpoints(MPI_Comm parent_comm, int my_num_ep, MPI_Info info,
                              MPI_Comm out_comm_handles[]);
int MPIX_Threadcomm_init(MPI_Comm comm, int num_threads, MPI_Comm *newthreadcomm);
int MPIX_Threadcomm_free(MPI_Comm *threadcomm);
int MPIX_Threadcomm_start(MPI_Comm threadcomm);
int MPIX_Threadcomm_finish(MPI_Comm threadcomm);

/* The profiling names (the MPI_ names are weak aliases of these). */
int PMPI_Comm_create_endpoints(MPI_Comm parent_comm, int my_num_ep, MPI_Info info,
                               MPI_Comm out_comm_handles[]);
int PMPIX_Threadcomm_init(MPI_Comm comm, int num_threads, MPI_Comm *newthreadcomm);
int PMPIX_Threadcomm_free(MPI_Comm *threadcomm);
int PMPIX_Threadcomm_start(MPI_Comm threadcomm);
int PMPIX_Threadcomm_finish(MPI_Comm threadcomm);

#ifdef __cplusplus
}
#endif

#endif /* EP_MPI_ENDPOINTS_H_ */
