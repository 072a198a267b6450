/*
 * ep_f08_glue.h - the C side of the Fortran binding (module ep_f08).
 *
 * What it is: every Fortran procedure EP_X of ep_f08 calls the C function epf_x, which
 * converts its arguments (MPI handles with MPI_*_f2c, choice buffers from their C
 * descriptors, EP_STATUS(ES)_IGNORE and EP_IN_PLACE/EP_BOTTOM from the module's
 * sentinel variables) and calls EP_X.  epf_* for most functions are generated
 * (gen_ep_f08.py); the rest are in ep_f08_glue.c.
 *
 * Choice buffers: a contiguous array (or scalar) is passed as its address.  A
 * non-contiguous array section is copied into a contiguous temporary (copy-in), the call
 * gets the temporary, and the temporary is copied back to the section (copy-out, for
 * buffers the call may write) and freed when the operation completes: at return for a
 * blocking call; in the ep_f08 completion call (EP_Wait, EP_Test, ...all/any/some,
 * EP_Request_get_status) that completes the request for a nonblocking or persistent one
 * (EP_Start re-copies a persistent send's section); in the window synchronization that
 * completes it (fence, flush(_local)(_all), unlock(_all), complete, EP_Win_free) for an
 * RMA operation.  So nonblocking operations on sections work as long as they are
 * completed through ep_f08, and the section is left alone until then (ASYNCHRONOUS).  A
 * request freed with EP_Request_free while active keeps its temporary forever (its
 * completion is never observed).  Window memory and attached buffers (EP_Win_create,
 * EP_Win_attach/detach, EP_Buffer_attach) must be contiguous: EP_ERR_BUFFER otherwise.
 *
 * Threading: thread-safe; pending temporaries sit in one process-wide list under a
 * mutex, touched only by calls that had (or complete) a non-contiguous section.
 */
#ifndef EP_FORTRAN_EP_F08_GLUE_H_
#define EP_FORTRAN_EP_F08_GLUE_H_

#include <ISO_Fortran_binding.h>
#include <ep/ep.h>

/* The temporaries of one call. */
typedef struct epf_tmp epf_tmp;
typedef struct {
  epf_tmp *head;
} epf_tmps;
#define EPF_TMPS_INIT {0}

enum { EPF_IN, EPF_INOUT, EPF_FIXED };
#define EPF_ALL_TARGETS (-1000000)

/* Sets *ptr to what C gets for the buffer `d` (see above); EP_ERR_BUFFER for a
 * non-contiguous EPF_FIXED buffer, EP_ERR_INTERN if a temporary cannot be allocated. */
int epf_buffer(CFI_cdesc_t *d, int mode, epf_tmps *tmps, void **ptr);
/* Blocking call done: copy-out and free now. */
void epf_finish(epf_tmps *tmps);
/* Nonblocking call: on success keep the temporaries until `request` completes. */
void epf_defer_request(epf_tmps *tmps, int rc, EP_Request request, int persistent);
/* RMA operation: on success keep them until a synchronization of `win` completes target. */
void epf_defer_win(epf_tmps *tmps, int rc, EP_Win win, int target);
/* A synchronization of `win` completed the operations to `target` (or EPF_ALL_TARGETS). */
void epf_win_synced(EP_Win win, int target);

/* The C datatype of Fortran handle f for the accumulate-family RMA calls: a named Fortran
 * type (MPI_INTEGER, MPI_REAL, MPI_DOUBLE_PRECISION, MPI_COMPLEX, MPI_DOUBLE_COMPLEX,
 * MPI_INTEGERn, MPI_REALn, MPI_2INTEGER) becomes the C type of the same size and kind that
 * libep's RMA element table knows; any other type is MPI_Type_f2c(f).  Derived types
 * built from Fortran types are not translated (libep answers EP_ERR_TYPE/EP_ERR_OP). */
MPI_Datatype epf_type_acc(MPI_Fint f);

/* NULL for the module's EP_STATUS_IGNORE / EP_STATUSES_IGNORE, else the argument. */
EP_Status *epf_status(EP_Status *status);
EP_Status *epf_statuses(EP_Status *statuses);

#endif /* EP_FORTRAN_EP_F08_GLUE_H_ */
