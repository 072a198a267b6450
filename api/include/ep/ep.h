/*
 * ep.h - libep, MPI endpoints on threads: the public C interface.
 *
 * What it is: an endpoints communicator gives every thread of an MPI process an
 * endpoint with its own rank.  Endpoints talk point-to-point (within a process and
 * across processes), and later collectively and one-sidedly, with MPI semantics:
 * where this header and ../shared/API.md are silent, the MPI 3.1 text of the
 * same-named MPI call is the contract, with "process" read as "endpoint".
 *
 * Lifetime: the application calls MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...),
 * then EP_Init() in every MPI process of MPI_COMM_WORLD (EP_Init is collective over
 * MPI_COMM_WORLD), ..., EP_Finalize() (collective too), then MPI_Finalize().
 * EP_Init starts one progress thread per process, named "ep-progress".
 *
 * Threading: one thread at a time per endpoint handle (any thread may use it, the
 * user serializes calls on one handle); calls on different handles are fully
 * concurrent.  A concurrent entry on one handle is detected and returns
 * EP_ERR_CONCURRENT.  Datatypes, ops and info objects are MPI's own.
 *
 * Errors: every function returns EP_SUCCESS (0) or an EP_ERR_* code.  Calls that
 * take a valid communicator consult its error handler (EP_ERRORS_ARE_FATAL by
 * default: print and abort the job; or EP_ERRORS_RETURN).  EP_Error_string gives the
 * text of a code followed by the details of the calling thread's most recent error
 * with that code (call, argument, value).
 */
#ifndef EP_EP_H_
#define EP_EP_H_

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Opaque handles --------------------------------------------------------- */
typedef struct ep_comm_s *EP_Comm;
typedef struct ep_request_s *EP_Request;
typedef struct ep_message_s *EP_Message;
typedef struct ep_win_s *EP_Win;
typedef struct ep_group_s *EP_Group;
typedef struct ep_team_s *EP_Team;
typedef struct ep_errhandler_s *EP_Errhandler;

#define EP_COMM_NULL ((EP_Comm)0)
#define EP_REQUEST_NULL ((EP_Request)0)
#define EP_MESSAGE_NULL ((EP_Message)0)
/* The message handle a matched probe of EP_PROC_NULL returns. */
#define EP_MESSAGE_NO_PROC ((EP_Message)1)
#define EP_WIN_NULL ((EP_Win)0)
#define EP_GROUP_NULL ((EP_Group)0)
#define EP_TEAM_NULL ((EP_Team)0)
#define EP_ERRHANDLER_NULL ((EP_Errhandler)0)
/* The empty group: a valid group of size 0 (predefined: EP_Group_free sets a handle
 * holding it to EP_GROUP_NULL and frees nothing). */
#define EP_GROUP_EMPTY ((EP_Group)3)

#define EP_ERRORS_ARE_FATAL ((EP_Errhandler)1)
#define EP_ERRORS_RETURN ((EP_Errhandler)2)

/* ---- Status ------------------------------------------------------------------ */
typedef struct EP_Status {
  int EP_SOURCE; /* rank of the sending endpoint */
  int EP_TAG;
  int EP_ERROR;
  /* private: */
  int ep_cancelled_;
  long long ep_bytes_; /* bytes received (packed representation) */
} EP_Status;

#define EP_STATUS_IGNORE ((EP_Status *)0)
#define EP_STATUSES_IGNORE ((EP_Status *)0)

/* ---- Constants (numerically equal to MPI's where MPI has one) --------------- */
#define EP_ANY_SOURCE MPI_ANY_SOURCE
#define EP_ANY_TAG MPI_ANY_TAG
#define EP_PROC_NULL MPI_PROC_NULL
#define EP_ROOT MPI_ROOT
#define EP_UNDEFINED MPI_UNDEFINED
#define EP_IN_PLACE MPI_IN_PLACE
#define EP_BOTTOM MPI_BOTTOM

#define EP_IDENT MPI_IDENT
#define EP_CONGRUENT MPI_CONGRUENT
#define EP_SIMILAR MPI_SIMILAR
#define EP_UNEQUAL MPI_UNEQUAL

#define EP_LOCK_SHARED MPI_LOCK_SHARED
#define EP_LOCK_EXCLUSIVE MPI_LOCK_EXCLUSIVE
#define EP_MODE_NOCHECK MPI_MODE_NOCHECK
#define EP_MODE_NOSTORE MPI_MODE_NOSTORE
#define EP_MODE_NOPUT MPI_MODE_NOPUT
#define EP_MODE_NOPRECEDE MPI_MODE_NOPRECEDE
#define EP_MODE_NOSUCCEED MPI_MODE_NOSUCCEED

#define EP_WIN_BASE MPI_WIN_BASE
#define EP_WIN_SIZE MPI_WIN_SIZE
#define EP_WIN_DISP_UNIT MPI_WIN_DISP_UNIT
/* A window's flavor and memory model (EP_Win_get_attr gives an int *). */
#define EP_WIN_CREATE_FLAVOR MPI_WIN_CREATE_FLAVOR
#define EP_WIN_MODEL MPI_WIN_MODEL
#define EP_WIN_FLAVOR_CREATE MPI_WIN_FLAVOR_CREATE
#define EP_WIN_FLAVOR_ALLOCATE MPI_WIN_FLAVOR_ALLOCATE
#define EP_WIN_FLAVOR_DYNAMIC MPI_WIN_FLAVOR_DYNAMIC
#define EP_WIN_FLAVOR_SHARED MPI_WIN_FLAVOR_SHARED
#define EP_WIN_UNIFIED MPI_WIN_UNIFIED

/* Predefined attribute keys of communicators, and the invalid one. */
#define EP_TAG_UB MPI_TAG_UB
#define EP_KEYVAL_INVALID MPI_KEYVAL_INVALID
/* EP_Comm_split_type: endpoints on one node (shared memory), or of one MPI process. */
#define EP_COMM_TYPE_SHARED MPI_COMM_TYPE_SHARED
#define EP_COMM_TYPE_PROCESS 0x4550
#define EP_MAX_OBJECT_NAME MPI_MAX_OBJECT_NAME

#define EP_MAX_ERROR_STRING 512
/* Bytes of the attached buffer that one buffered send uses beyond its packed data. */
#define EP_BSEND_OVERHEAD 128

/* ---- Error codes --------------------------------------------------------------- */
enum {
  EP_SUCCESS = 0,
  EP_ERR_ARG,
  EP_ERR_COMM,
  EP_ERR_RANK,
  EP_ERR_TAG,
  EP_ERR_COUNT,
  EP_ERR_TYPE,
  EP_ERR_OP,
  EP_ERR_BUFFER,
  EP_ERR_TRUNCATE,
  EP_ERR_REQUEST,
  EP_ERR_ROOT,
  EP_ERR_GROUP,
  EP_ERR_WIN,
  EP_ERR_RMA_RANGE,
  EP_ERR_RMA_SYNC,
  EP_ERR_IN_STATUS,
  EP_ERR_PENDING,
  EP_ERR_NOT_INITIALIZED,
  EP_ERR_THREAD_LEVEL, /* MPI was not initialized with MPI_THREAD_MULTIPLE */
  EP_ERR_CONCURRENT,   /* two threads entered one endpoint handle at once */
  EP_ERR_ENDPOINTS,
  EP_ERR_TEAM,
  EP_ERR_INTERN,
  EP_ERR_OTHER,
  EP_ERR_LASTCODE
};

/* ---- Environment --------------------------------------------------------------- */
int EP_Init(void);
int EP_Finalize(void);
int EP_Initialized(int *flag);
int EP_Query_thread(int *provided);
int EP_Is_thread_main(int *flag);
double EP_Wtime(void);
int EP_Comm_set_errhandler(EP_Comm comm, EP_Errhandler errhandler);
int EP_Win_set_errhandler(EP_Win win, EP_Errhandler errhandler);
int EP_Comm_get_errhandler(EP_Comm comm, EP_Errhandler *errhandler);
int EP_Error_string(int code, char *string, int *resultlen);

/* ---- Communicators --------------------------------------------------------------- */
/* Collective over the MPI processes of parent.  Returns num_ep handles to ONE new
 * endpoints communicator; ranks are ordered by parent rank, then by index in comms[].
 * num_ep may differ between processes and may be 0; a negative num_ep anywhere makes
 * every process return EP_ERR_ARG. */
int EP_Comm_create_endpoints(MPI_Comm parent, int num_ep, MPI_Info info, EP_Comm comms[]);
int EP_Comm_rank(EP_Comm comm, int *rank);
int EP_Comm_size(EP_Comm comm, int *size);
int EP_Comm_local_rank(EP_Comm comm, int *rank); /* within this process, in rank order */
int EP_Comm_local_size(EP_Comm comm, int *size);
int EP_Comm_dup(EP_Comm comm, EP_Comm *newcomm); /* collective over the endpoints */
int EP_Comm_free(EP_Comm *comm);                 /* sets *comm to EP_COMM_NULL */
int EP_Comm_compare(EP_Comm comm1, EP_Comm comm2, int *result);
/* MPI semantics over endpoints: endpoints of one process may pick different colours;
 * key orders ranks across the whole new communicator (ties by old rank).  On an
 * intercommunicator: the intercommunicator between each colour's endpoints of the two
 * groups (key orders each group); EP_COMM_NULL for EP_UNDEFINED or a colour of one
 * group only. */
int EP_Comm_split(EP_Comm comm, int color, int key, EP_Comm *newcomm);
int EP_Comm_test_inter(EP_Comm comm, int *flag);
int EP_Comm_remote_size(EP_Comm comm, int *size); /* intercommunicators only */
/* The two groups must be disjoint as endpoints; they may share MPI processes.
 * peer_comm and remote_leader are significant only at the local leader. */
int EP_Intercomm_create(EP_Comm local_comm, int local_leader, EP_Comm peer_comm,
                        int remote_leader, int tag, EP_Comm *newintercomm);
/* The group passing high = 0 comes first; if both groups pass the same value, the
 * group whose rank 0 endpoint was created first (smaller creation identity) does. */
int EP_Intercomm_merge(EP_Comm intercomm, int high, EP_Comm *newintracomm);
int EP_Comm_tag_ub(EP_Comm comm, int *tag_ub); /* >= 32767 always */
int EP_Comm_group(EP_Comm comm, EP_Group *group);
int EP_Group_size(EP_Group group, int *size);
int EP_Group_rank(EP_Group group, int *rank);
int EP_Group_free(EP_Group *group);
int EP_Group_translate_ranks(EP_Group group1, int n, const int ranks1[], EP_Group group2,
                             int ranks2[]);
/* Collective over the endpoints of comm, nonblocking: *newcomm is valid once *request
 * completed.  Progresses without further calls (a worker thread of libep carries it). */
int EP_Comm_idup(EP_Comm comm, EP_Comm *newcomm, EP_Request *request);
/* Collective over comm; every endpoint passes the same group (a subgroup of comm's
 * group); endpoints outside it get EP_COMM_NULL. */
int EP_Comm_create(EP_Comm comm, EP_Group group, EP_Comm *newcomm);
/* Collective over the members of group only; concurrent creations on one parent must
 * use different tags.  Non-members may not call it. */
int EP_Comm_create_group(EP_Comm comm, EP_Group group, int tag, EP_Comm *newcomm);
/* split_type EP_COMM_TYPE_SHARED (one node), EP_COMM_TYPE_PROCESS (one MPI process) or
 * EP_UNDEFINED (gives EP_COMM_NULL); key orders ranks as in EP_Comm_split. */
int EP_Comm_split_type(EP_Comm comm, int split_type, int key, MPI_Info info, EP_Comm *newcomm);
/* Each endpoint names its own handle; at most EP_MAX_OBJECT_NAME - 1 characters kept. */
int EP_Comm_set_name(EP_Comm comm, const char *name);
int EP_Comm_get_name(EP_Comm comm, char *name, int *resultlen);

/* ---- Groups (MPI 3.1 section 6.3): process objects, any thread may use them ---------- */
int EP_Group_incl(EP_Group group, int n, const int ranks[], EP_Group *newgroup);
int EP_Group_excl(EP_Group group, int n, const int ranks[], EP_Group *newgroup);
int EP_Group_range_incl(EP_Group group, int n, int ranges[][3], EP_Group *newgroup);
int EP_Group_range_excl(EP_Group group, int n, int ranges[][3], EP_Group *newgroup);
int EP_Group_union(EP_Group group1, EP_Group group2, EP_Group *newgroup);
int EP_Group_intersection(EP_Group group1, EP_Group group2, EP_Group *newgroup);
int EP_Group_difference(EP_Group group1, EP_Group group2, EP_Group *newgroup);
int EP_Group_compare(EP_Group group1, EP_Group group2, int *result);

/* ---- Attribute caching (MPI 3.1 section 6.7) -------------------------------------------
 * Keyvals are process objects; each endpoint has its own attribute values.  Copy
 * callbacks run at EP_Comm_dup/EP_Comm_idup in each endpoint's own thread (idup: in its
 * call), delete callbacks at EP_Comm_free and EP_Comm_delete_attr and when a value is
 * replaced; a callback's failure code is returned by the call that ran it.  EP_TAG_UB
 * gives a pointer to the communicator's tag bound. */
typedef int EP_Comm_copy_attr_function(EP_Comm oldcomm, int comm_keyval, void *extra_state,
                                       void *attribute_val_in, void *attribute_val_out,
                                       int *flag);
typedef int EP_Comm_delete_attr_function(EP_Comm comm, int comm_keyval, void *attribute_val,
                                         void *extra_state);
/* The predefined callbacks: copy nothing, copy the value, delete nothing. */
int ep_comm_dup_fn(EP_Comm oldcomm, int comm_keyval, void *extra_state, void *attribute_val_in,
                   void *attribute_val_out, int *flag);
#define EP_COMM_NULL_COPY_FN ((EP_Comm_copy_attr_function *)0)
#define EP_COMM_DUP_FN ep_comm_dup_fn
#define EP_COMM_NULL_DELETE_FN ((EP_Comm_delete_attr_function *)0)
int EP_Comm_create_keyval(EP_Comm_copy_attr_function *comm_copy_attr_fn,
                          EP_Comm_delete_attr_function *comm_delete_attr_fn, int *comm_keyval,
                          void *extra_state);
int EP_Comm_free_keyval(int *comm_keyval); /* sets *comm_keyval to EP_KEYVAL_INVALID */
int EP_Comm_set_attr(EP_Comm comm, int comm_keyval, void *attribute_val);
/* attribute_val is a (void **): it receives the value set. */
int EP_Comm_get_attr(EP_Comm comm, int comm_keyval, void *attribute_val, int *flag);
int EP_Comm_delete_attr(EP_Comm comm, int comm_keyval);

/* ---- Error handlers of the user's own ----------------------------------------------
 * The handler runs in the thread of the failing call, with the communicator handle and
 * the error code; the call then returns that code.  New communicators inherit their
 * parent's handler. */
typedef void EP_Comm_errhandler_function(EP_Comm *comm, int *error_code, ...);
int EP_Comm_create_errhandler(EP_Comm_errhandler_function *comm_errhandler_fn,
                              EP_Errhandler *errhandler);
int EP_Comm_call_errhandler(EP_Comm comm, int errorcode);
/* Sets *errhandler to EP_ERRHANDLER_NULL; communicators using it keep it. */
int EP_Errhandler_free(EP_Errhandler *errhandler);

/* ---- Point-to-point ---------------------------------------------------------------- */
int EP_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, EP_Comm comm);
int EP_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, EP_Comm comm);
int EP_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, EP_Comm comm);
int EP_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, EP_Comm comm);
int EP_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, EP_Comm comm,
             EP_Request *request);
int EP_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, EP_Comm comm,
              EP_Request *request);
int EP_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, EP_Comm comm,
              EP_Request *request);
int EP_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, EP_Comm comm,
              EP_Request *request);
int EP_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, EP_Comm comm,
            EP_Status *status);
int EP_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, EP_Comm comm,
             EP_Request *request);
int EP_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                EP_Comm comm, EP_Status *status);
int EP_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                        int source, int recvtag, EP_Comm comm, EP_Status *status);
int EP_Probe(int source, int tag, EP_Comm comm, EP_Status *status);
int EP_Iprobe(int source, int tag, EP_Comm comm, int *flag, EP_Status *status);
int EP_Mprobe(int source, int tag, EP_Comm comm, EP_Message *message, EP_Status *status);
int EP_Improbe(int source, int tag, EP_Comm comm, int *flag, EP_Message *message,
               EP_Status *status);
int EP_Mrecv(void *buf, int count, MPI_Datatype datatype, EP_Message *message, EP_Status *status);
int EP_Imrecv(void *buf, int count, MPI_Datatype datatype, EP_Message *message,
              EP_Request *request);
/* Per process, shared by its endpoints.  Detach waits until buffered messages left. */
int EP_Buffer_attach(void *buffer, int size);
int EP_Buffer_detach(void *buffer_addr, int *size);
int EP_Get_count(const EP_Status *status, MPI_Datatype datatype, int *count);
int EP_Get_elements(const EP_Status *status, MPI_Datatype datatype, int *count);

/* ---- Persistent requests (MPI 3.1 section 3.9) -----------------------------------------
 * Inactive until started; Wait/Test complete a started one and leave it inactive (the
 * handle stays valid, not EP_REQUEST_NULL); Wait/Test on an inactive one return at once
 * with the empty status.  EP_Request_free releases it (an active one once it completes).
 * Starting an active request is EP_ERR_REQUEST; EP_Startall with any active (or invalid)
 * request starts none. */
int EP_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                 EP_Comm comm, EP_Request *request);
int EP_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                  EP_Comm comm, EP_Request *request);
int EP_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                  EP_Comm comm, EP_Request *request);
int EP_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                  EP_Comm comm, EP_Request *request);
int EP_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag, EP_Comm comm,
                 EP_Request *request);
int EP_Start(EP_Request *request);
int EP_Startall(int count, EP_Request requests[]);

/* ---- Requests ------------------------------------------------------------------------ */
int EP_Wait(EP_Request *request, EP_Status *status);
int EP_Test(EP_Request *request, int *flag, EP_Status *status);
int EP_Waitall(int count, EP_Request requests[], EP_Status statuses[]);
int EP_Testall(int count, EP_Request requests[], int *flag, EP_Status statuses[]);
int EP_Waitany(int count, EP_Request requests[], int *index, EP_Status *status);
int EP_Testany(int count, EP_Request requests[], int *index, int *flag, EP_Status *status);
int EP_Waitsome(int incount, EP_Request requests[], int *outcount, int indices[],
                EP_Status statuses[]);
int EP_Testsome(int incount, EP_Request requests[], int *outcount, int indices[],
                EP_Status statuses[]);
int EP_Request_free(EP_Request *request);
int EP_Cancel(EP_Request *request);
int EP_Test_cancelled(const EP_Status *status, int *flag);
int EP_Request_get_status(EP_Request request, int *flag, EP_Status *status);

/* ---- Generalized requests (MPI chapter 12.2/12.3) -----------------------------------
 * A generalized request belongs to no endpoint: EP_Grequest_complete may be called from
 * any thread, also while another thread waits on the request (the waiter wakes at once).
 * query_fn runs in the Wait/Test call that completes the request (and in every
 * EP_Request_get_status on a completed request); free_fn runs once, after query_fn, in
 * that call - or, for a request freed with EP_Request_free, in whichever of
 * EP_Request_free and EP_Grequest_complete comes last.  cancel_fn runs in EP_Cancel with
 * complete = whether EP_Grequest_complete was already called.  A single-request call
 * returns free_fn's code if it failed, else query_fn's; the all/some forms return
 * EP_ERR_IN_STATUS and put that code in the request's status EP_ERROR. */
typedef int EP_Grequest_query_function(void *extra_state, EP_Status *status);
typedef int EP_Grequest_free_function(void *extra_state);
typedef int EP_Grequest_cancel_function(void *extra_state, int complete);
int EP_Grequest_start(EP_Grequest_query_function *query_fn, EP_Grequest_free_function *free_fn,
                      EP_Grequest_cancel_function *cancel_fn, void *extra_state,
                      EP_Request *request);
int EP_Grequest_complete(EP_Request request);
/* EP_Get_elements(status, datatype) afterwards gives count; EP_Get_count a compatible value. */
int EP_Status_set_elements(EP_Status *status, MPI_Datatype datatype, int count);
int EP_Status_set_cancelled(EP_Status *status, int flag);

/* ---- Collectives (every endpoint of the communicator calls) ------------------------ */
/* On an intercommunicator every collective but Scan and Exscan works, blocking and
 * nonblocking (MPI 3.1 5.2.2): rooted ones take EP_ROOT at the root, EP_PROC_NULL at the
 * other members of the root's group and the root's rank in the remote group elsewhere;
 * count/displacement arrays are indexed by remote rank (Reduce_scatter's recvcounts by
 * local rank); each group receives the other group's data (Allgather, Alltoall) or the
 * reduction of the other group's inputs (Allreduce, Reduce_scatter, Reduce at the root);
 * EP_IN_PLACE is not allowed there. */
/* Arguments follow MPI 3.1; EP_IN_PLACE where MPI allows it; non-root endpoints may pass
 * NULL for arguments significant only at the root.  Non-commutative ops are applied in
 * rank order. */
int EP_Barrier(EP_Comm comm);
int EP_Bcast(void *buf, int count, MPI_Datatype datatype, int root, EP_Comm comm);
int EP_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                 EP_Comm comm);
int EP_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              int root, EP_Comm comm);
int EP_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
              int recvcount, MPI_Datatype recvtype, int root, EP_Comm comm);
int EP_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
               EP_Comm comm);
int EP_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, EP_Comm comm);
int EP_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                int root, EP_Comm comm);
int EP_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, EP_Comm comm);
int EP_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                  EP_Comm comm);
int EP_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, EP_Comm comm);
int EP_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                 MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                 const int rdispls[], MPI_Datatype recvtype, EP_Comm comm);
int EP_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                      MPI_Datatype datatype, MPI_Op op, EP_Comm comm);
int EP_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                            MPI_Datatype datatype, MPI_Op op, EP_Comm comm);
int EP_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
            EP_Comm comm);
int EP_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              EP_Comm comm);
/* Counts, byte displacements (MPI 3.1 section 5.8) and datatypes by peer rank; EP_IN_PLACE
 * as sendbuf takes the blocks from recvbuf (the send arguments are then ignored). */
int EP_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                 const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                 const int rdispls[], const MPI_Datatype recvtypes[], EP_Comm comm);
/* Nonblocking (intra- and intercommunicators): the arguments of the blocking call, then the request
 * (NULL is EP_ERR_ARG).  Progressed by the progress thread, so they complete while the
 * application computes.  Several may be outstanding on one or more communicators; they
 * complete in any order they are waited for and match in the order each endpoint started
 * them (blocking and nonblocking calls never match each other, MPI 3.1 section 5.12).
 * Buffers, count and displacement arrays must stay untouched until completion. */
int EP_Ibarrier(EP_Comm comm, EP_Request *request);
int EP_Ibcast(void *buf, int count, MPI_Datatype datatype, int root, EP_Comm comm,
              EP_Request *request);
int EP_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, EP_Comm comm, EP_Request *request);
int EP_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, EP_Comm comm, EP_Request *request);
int EP_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, EP_Comm comm,
               EP_Request *request);
int EP_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                EP_Comm comm, EP_Request *request);
int EP_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, EP_Comm comm,
                EP_Request *request);
int EP_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 int root, EP_Comm comm, EP_Request *request);
int EP_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, EP_Comm comm, EP_Request *request);
int EP_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   EP_Comm comm, EP_Request *request);
int EP_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, EP_Comm comm, EP_Request *request);
int EP_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                  const int rdispls[], MPI_Datatype recvtype, EP_Comm comm,
                  EP_Request *request);
int EP_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                  const int rdispls[], const MPI_Datatype recvtypes[], EP_Comm comm,
                  EP_Request *request);
int EP_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                       MPI_Datatype datatype, MPI_Op op, EP_Comm comm, EP_Request *request);
int EP_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, EP_Comm comm,
                             EP_Request *request);
int EP_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
             EP_Comm comm, EP_Request *request);
int EP_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               EP_Comm comm, EP_Request *request);

/* ---- Helper teams (MPI 12.4.4 draft) ---------------------------------------------------
 * Threads that join a team lend themselves to the library while they wait in
 * EP_Team_leave/EP_Team_sync: they run parts of the operations that other members of the
 * team started (the combine and copy steps of large reductions) and drive the progress of
 * pending point-to-point.  maxsize >= 1 caps teamsize; info key "balanced" = "true"
 * promises that every member leaves (EP_Team_break is then EP_ERR_TEAM).  A thread
 * belongs to at most one team at a time.  A join beyond teamsize fails at once with
 * EP_ERR_TEAM (that thread's later leave/break are EP_ERR_TEAM too).  EP_Team_leave
 * returns once every member left or broke; then the team may be joined again.
 * EP_Team_sync is a barrier of the members (leave followed by join).  EP_Team_free
 * while members are joined is EP_ERR_TEAM. */
int EP_Team_create(int maxsize, MPI_Info info, EP_Team *team);
int EP_Team_free(EP_Team *team);
int EP_Team_join(int teamsize, EP_Team team);
int EP_Team_leave(EP_Team team);
int EP_Team_sync(EP_Team team);
int EP_Team_break(EP_Team team);

/* ---- One-sided communication ---------------------------------------------------
 * A window spans the endpoints of a communicator; the target of an operation is an
 * endpoint rank.  Each endpoint exposes its own base, size and displacement unit.
 * Accumulate-family operations (EP_Accumulate, EP_Get_accumulate, EP_Fetch_and_op,
 * EP_Compare_and_swap) to one location are atomic per basic element with respect to
 * each other, whichever endpoints issue them.  Operations are served at the target by
 * its process's progress thread (passive target progress without the target endpoint);
 * within a process they are plain memory operations done by the calling thread.
 * Epochs: EP_Win_fence (active target) and EP_Win_lock/lock_all (passive target).  A
 * lock of a target that this endpoint already holds locked, any lock inside lock_all, an
 * unlock without a lock and a fence inside a passive epoch are EP_ERR_RMA_SYNC; locks of
 * different targets may be held at once (MPI-3).  An operation outside an epoch is
 * EP_ERR_RMA_SYNC, one outside the target's window EP_ERR_RMA_RANGE.  Windows start with
 * EP_ERRORS_ARE_FATAL.
 * Within a node, other processes reach EP_Win_allocate memory through shared memory and
 * EP_Win_create memory through cross-memory attach (process_vm_readv/writev), without
 * the target's progress thread; the info key "ep_shared_memory" set to "false" (per
 * endpoint, at creation) makes them use the progress thread's handler calls instead. */
int EP_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, EP_Comm comm,
                  EP_Win *win);
/* baseptr is a (void **): it receives the address of the allocated memory. */
int EP_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, EP_Comm comm, void *baseptr,
                    EP_Win *win);
int EP_Win_free(EP_Win *win);
int EP_Win_get_attr(EP_Win win, int win_keyval, void *attribute_val, int *flag);
int EP_Win_get_group(EP_Win win, EP_Group *group);
int EP_Win_fence(int assert, EP_Win win);
int EP_Win_lock(int lock_type, int rank, int assert, EP_Win win);
int EP_Win_unlock(int rank, EP_Win win);
int EP_Win_lock_all(int assert, EP_Win win);
int EP_Win_unlock_all(EP_Win win);
int EP_Win_flush(int rank, EP_Win win);
int EP_Win_flush_all(EP_Win win);
int EP_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
           int target_rank, MPI_Aint target_disp, int target_count,
           MPI_Datatype target_datatype, EP_Win win);
int EP_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
           MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, EP_Win win);
int EP_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                  int target_rank, MPI_Aint target_disp, int target_count,
                  MPI_Datatype target_datatype, MPI_Op op, EP_Win win);
int EP_Get_accumulate(const void *origin_addr, int origin_count,
                      MPI_Datatype origin_datatype, void *result_addr, int result_count,
                      MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                      int target_count, MPI_Datatype target_datatype, MPI_Op op, EP_Win win);
int EP_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype,
                    int target_rank, MPI_Aint target_disp, MPI_Op op, EP_Win win);
int EP_Compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
                        MPI_Datatype datatype, int target_rank, MPI_Aint target_disp,
                        EP_Win win);

/* ---- One-sided: dynamic and shared windows, request-based operations, local flushes,
 * sync, general active-target synchronization.
 * Dynamic windows (EP_Win_create_dynamic): memory is attached and detached per endpoint
 * at any time; the target displacement is the target's address (MPI_Get_address); an
 * access to memory not attached at the target is EP_ERR_RMA_RANGE, returned by the
 * operation (targets of this process or node) or at the latest by the next flush or
 * unlock of that target (targets served by the progress thread), and writes nothing.
 * Attaching an overlapping or empty-with-NULL region is EP_ERR_ARG; detaching a base that
 * is not attached is EP_ERR_RMA_RANGE; attach/detach on another flavor is EP_ERR_WIN.
 * Shared windows (EP_Win_allocate_shared): every endpoint of the communicator on one node
 * (else EP_ERR_COMM); every endpoint loads and stores every segment directly
 * (EP_Win_shared_query; rank EP_PROC_NULL: the first non-empty segment); segments are
 * contiguous in rank order unless the info key "alloc_shared_noncontig" is "true".
 * Request-based operations (EP_Rput, ...) are valid only inside a passive-target epoch
 * (else EP_ERR_RMA_SYNC, no request); the request completes locally (origin buffer
 * reusable / result arrived).  EP_Win_flush_local(_all): local completion.  EP_Win_sync:
 * a full memory barrier (the unified model needs no copy).  PSCW: groups hold endpoint
 * ranks of the window's communicator (a member outside it: EP_ERR_GROUP); an operation to
 * a target outside the start group, complete without start, wait/test without post, and
 * start/post inside their own open epoch are EP_ERR_RMA_SYNC. */
int EP_Win_create_dynamic(MPI_Info info, EP_Comm comm, EP_Win *win);
int EP_Win_attach(EP_Win win, void *base, MPI_Aint size);
int EP_Win_detach(EP_Win win, const void *base);
/* baseptr is a (void **). */
int EP_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, EP_Comm comm,
                           void *baseptr, EP_Win *win);
int EP_Win_shared_query(EP_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr);
int EP_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
            int target_rank, MPI_Aint target_disp, int target_count,
            MPI_Datatype target_datatype, EP_Win win, EP_Request *request);
int EP_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
            MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, EP_Win win,
            EP_Request *request);
int EP_Raccumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                   int target_rank, MPI_Aint target_disp, int target_count,
                   MPI_Datatype target_datatype, MPI_Op op, EP_Win win, EP_Request *request);
int EP_Rget_accumulate(const void *origin_addr, int origin_count,
                       MPI_Datatype origin_datatype, void *result_addr, int result_count,
                       MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                       int target_count, MPI_Datatype target_datatype, MPI_Op op, EP_Win win,
                       EP_Request *request);
int EP_Win_flush_local(int rank, EP_Win win);
int EP_Win_flush_local_all(EP_Win win);
int EP_Win_sync(EP_Win win);
int EP_Win_post(EP_Group group, int assert, EP_Win win);
int EP_Win_start(EP_Group group, int assert, EP_Win win);
int EP_Win_complete(EP_Win win);
int EP_Win_wait(EP_Win win);
int EP_Win_test(EP_Win win, int *flag);

#ifdef __cplusplus
}
#endif

#endif /* EP_EP_H_ */
