/* ep_f08_glue.c - buffers, pending temporaries, and the epf_* functions that
 * gen_ep_f08.py leaves to hand (GLUE_BY_HAND).  Contract: ep_f08_glue.h. */
#include "ep_f08_glue.h"
#include "ep_f08_glue_decl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The module's sentinel variables (BIND(C) in ep_f08.f90). */
extern EP_Status ep_f08_status_ignore;
extern EP_Status ep_f08_statuses_ignore[1];
extern int ep_f08_in_place;
extern int ep_f08_bottom;

/* The module's dispatchers to the user's Fortran callbacks (ep_f08.f90). */
int ep_f08_call_copy(void (*fn)(void), EP_Comm oldcomm, int keyval, MPI_Aint extra,
                     MPI_Aint val_in, MPI_Aint *val_out, int *flag);
int ep_f08_call_delete(void (*fn)(void), EP_Comm comm, int keyval, MPI_Aint val,
                       MPI_Aint extra);
void ep_f08_call_errhandler(void (*fn)(void), EP_Comm *comm, int *code);
int ep_f08_call_query(void (*fn)(void), MPI_Aint extra, EP_Status *status);
int ep_f08_call_free(void (*fn)(void), MPI_Aint extra);
int ep_f08_call_cancel(void (*fn)(void), MPI_Aint extra, int complete);

EP_Status *epf_status(EP_Status *status) {
  return status == &ep_f08_status_ignore ? EP_STATUS_IGNORE : status;
}
EP_Status *epf_statuses(EP_Status *statuses) {
  return statuses == ep_f08_statuses_ignore ? EP_STATUSES_IGNORE : statuses;
}

/* The C type of `size` bytes in a family: 'i' signed integer, 'f' floating, 'c' complex. */
static MPI_Datatype c_type_of(char kind, int size) {
  switch (kind) {
    case 'i':
      return size == 1 ? MPI_INT8_T : size == 2 ? MPI_INT16_T : size == 4 ? MPI_INT32_T
             : size == 8 ? MPI_INT64_T : MPI_DATATYPE_NULL;
    case 'f':
      return size == (int)sizeof(float) ? MPI_FLOAT
             : size == (int)sizeof(double) ? MPI_DOUBLE : MPI_DATATYPE_NULL;
    default:
      return size == 2 * (int)sizeof(float) ? MPI_C_FLOAT_COMPLEX
             : size == 2 * (int)sizeof(double) ? MPI_C_DOUBLE_COMPLEX : MPI_DATATYPE_NULL;
  }
}

MPI_Datatype epf_type_acc(MPI_Fint f) {
  MPI_Datatype t = MPI_Type_f2c(f);
  static const struct {
    MPI_Datatype fortran;
    char kind;
  } table[] = {
      {MPI_INTEGER, 'i'},  {MPI_INTEGER1, 'i'}, {MPI_INTEGER2, 'i'},
      {MPI_INTEGER4, 'i'}, {MPI_INTEGER8, 'i'}, {MPI_REAL, 'f'},
      {MPI_REAL4, 'f'},    {MPI_REAL8, 'f'},    {MPI_DOUBLE_PRECISION, 'f'},
      {MPI_COMPLEX, 'c'},  {MPI_DOUBLE_COMPLEX, 'c'}, {MPI_COMPLEX8, 'c'},
      {MPI_COMPLEX16, 'c'},
  };
  if (t == MPI_DATATYPE_NULL) return t;
  if (t == MPI_2INTEGER) {
    int size = 0;
    MPI_Type_size(t, &size);
    return size == 2 * (int)sizeof(int) ? MPI_2INT : t;
  }
  for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i) {
    if (t != table[i].fortran || t == MPI_DATATYPE_NULL) continue;
    int size = 0;
    MPI_Type_size(t, &size);
    MPI_Datatype c = c_type_of(table[i].kind, size);
    return c != MPI_DATATYPE_NULL ? c : t;
  }
  return t;
}

/* ---- Temporaries for non-contiguous sections ------------------------------------- */

struct epf_tmp {
  epf_tmp *next;
  void *mem;
  int copy_out;  /* copy mem back to desc's section at completion */
  int copy_in;   /* desc's section is copied into mem (again at each EP_Start) */
  CFI_CDESC_T(CFI_MAX_RANK) desc;
};

/* The temporaries of one pending operation: a request, or an RMA operation of a window
 * to one target. */
typedef struct epf_pending {
  struct epf_pending *next;
  void *key;
  int is_win;
  int target;
  int persistent;
  int active; /* started and not yet completed: copy-out due at completion */
  epf_tmp *tmps;
} epf_pending;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static epf_pending *g_pending;  /* guarded by g_mu */
static atomic_int g_npending;   /* entries in g_pending: 0 lets completions skip g_mu */

static size_t section_elements(const CFI_cdesc_t *d) {
  size_t n = 1;
  for (int r = 0; r < d->rank; ++r) n *= (size_t)d->dim[r].extent;
  return n;
}

/* Copies between the section of d and the contiguous mem, in array element order. */
static void section_copy(const CFI_cdesc_t *d, char *mem, int to_mem) {
  size_t n = section_elements(d), e = d->elem_len;
  CFI_index_t idx[CFI_MAX_RANK] = {0};
  for (size_t k = 0; k < n; ++k) {
    char *p = (char *)d->base_addr;
    for (int r = 0; r < d->rank; ++r) p += idx[r] * d->dim[r].sm;
    if (to_mem) {
      memcpy(mem + k * e, p, e);
    } else {
      memcpy(p, mem + k * e, e);
    }
    for (int r = 0; r < d->rank; ++r) {
      if (++idx[r] < d->dim[r].extent) break;
      idx[r] = 0;
    }
  }
}

static void tmps_release(epf_tmp *t, int copy_out) {
  while (t) {
    epf_tmp *next = t->next;
    if (copy_out && t->copy_out) section_copy((CFI_cdesc_t *)&t->desc, t->mem, 0);
    free(t->mem);
    free(t);
    t = next;
  }
}

static epf_tmp *tmps_add(epf_tmps *tmps, void *mem) {
  epf_tmp *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->mem = mem;
  t->next = tmps->head;
  tmps->head = t;
  return t;
}

int epf_buffer(CFI_cdesc_t *d, int mode, epf_tmps *tmps, void **ptr) {
  if (d->base_addr == &ep_f08_in_place) {
    *ptr = EP_IN_PLACE;
    return EP_SUCCESS;
  }
  if (d->base_addr == &ep_f08_bottom) {
    *ptr = EP_BOTTOM;
    return EP_SUCCESS;
  }
  if (d->base_addr == NULL || d->rank == 0 || CFI_is_contiguous(d)) {
    *ptr = d->base_addr;
    return EP_SUCCESS;
  }
  if (mode == EPF_FIXED) return EP_ERR_BUFFER;
  size_t bytes = section_elements(d) * d->elem_len;
  void *mem = malloc(bytes ? bytes : 1);
  epf_tmp *t = mem ? tmps_add(tmps, mem) : NULL;
  if (!t) {
    free(mem);
    return EP_ERR_INTERN;
  }
  memcpy(&t->desc, d, sizeof(CFI_cdesc_t) + (size_t)d->rank * sizeof(CFI_dim_t));
  t->copy_in = 1;
  t->copy_out = mode == EPF_INOUT;
  section_copy(d, mem, 1);
  *ptr = mem;
  return EP_SUCCESS;
}

void epf_finish(epf_tmps *tmps) {
  tmps_release(tmps->head, 1);
  tmps->head = NULL;
}

static void defer(epf_tmps *tmps, int rc, void *key, int is_win, int target,
                  int persistent) {
  if (!tmps->head) return;
  if (rc != EP_SUCCESS) {  /* nothing started: the section keeps its values */
    tmps_release(tmps->head, 0);
    tmps->head = NULL;
    return;
  }
  epf_pending *p = calloc(1, sizeof *p);
  if (!p) abort();  /* the operation runs on the temporaries: they cannot be dropped */
  p->key = key;
  p->is_win = is_win;
  p->target = target;
  p->persistent = persistent;
  p->active = !persistent;
  p->tmps = tmps->head;
  tmps->head = NULL;
  pthread_mutex_lock(&g_mu);
  p->next = g_pending;
  g_pending = p;
  atomic_fetch_add(&g_npending, 1);
  pthread_mutex_unlock(&g_mu);
}

void epf_defer_request(epf_tmps *tmps, int rc, EP_Request request, int persistent) {
  defer(tmps, rc, request, 0, 0, persistent);
}

void epf_defer_win(epf_tmps *tmps, int rc, EP_Win win, int target) {
  defer(tmps, rc, win, 1, target, 0);
}

/* Removes and returns the entries matching (key, is_win, target); NULL if none. */
static epf_pending *take(void *key, int is_win, int target) {
  epf_pending *out = NULL;
  if (atomic_load(&g_npending) == 0 || key == NULL) return NULL;
  pthread_mutex_lock(&g_mu);
  for (epf_pending **pp = &g_pending; *pp;) {
    epf_pending *p = *pp;
    if (p->key == key && p->is_win == is_win &&
        (!is_win || target == EPF_ALL_TARGETS || p->target == target)) {
      *pp = p->next;
      p->next = out;
      out = p;
      atomic_fetch_sub(&g_npending, 1);
    } else {
      pp = &p->next;
    }
  }
  pthread_mutex_unlock(&g_mu);
  return out;
}

static void put_back(epf_pending *p) {
  pthread_mutex_lock(&g_mu);
  p->next = g_pending;
  g_pending = p;
  atomic_fetch_add(&g_npending, 1);
  pthread_mutex_unlock(&g_mu);
}

void epf_win_synced(EP_Win win, int target) {
  epf_pending *p = take(win, 1, target);
  while (p) {
    epf_pending *next = p->next;
    tmps_release(p->tmps, 1);
    free(p);
    p = next;
  }
}

/* The request that was `old` before a completion call is now `now`; done: the call
 * completed it (for a persistent request, which keeps its handle). */
static void request_completed(EP_Request old, EP_Request now, int done) {
  epf_pending *p = take(old, 0, 0);
  if (!p) return;
  if (now == EP_REQUEST_NULL) {
    tmps_release(p->tmps, p->active);
    free(p);
    return;
  }
  if (done && p->active) {
    for (epf_tmp *t = p->tmps; t; t = t->next) {
      if (t->copy_out) section_copy((CFI_cdesc_t *)&t->desc, t->mem, 0);
    }
    p->active = 0;
  }
  put_back(p);
}

/* EP_Start of a persistent request: the send sections are copied in again. */
static void request_starting(EP_Request req) {
  epf_pending *p = take(req, 0, 0);
  if (!p) return;
  for (epf_tmp *t = p->tmps; t; t = t->next) {
    if (t->copy_in) section_copy((CFI_cdesc_t *)&t->desc, t->mem, 1);
  }
  put_back(p);
}

static void request_started(EP_Request req) {
  epf_pending *p = take(req, 0, 0);
  if (!p) return;
  p->active = 1;
  put_back(p);
}

/* A copy of the request array, taken only while temporaries are pending. */
static EP_Request *snapshot(int n, const EP_Request *reqs) {
  if (atomic_load(&g_npending) == 0 || n <= 0) return NULL;
  EP_Request *s = malloc((size_t)n * sizeof *s);
  if (s) memcpy(s, reqs, (size_t)n * sizeof *s);
  return s;
}

/* ---- Requests ------------------------------------------------------------------------ */

int epf_wait(EP_Request *request, EP_Status *status) {
  EP_Request old = *request;
  int rc = EP_Wait(request, epf_status(status));
  request_completed(old, *request, 1);
  return rc;
}

int epf_test(EP_Request *request, int *flag, EP_Status *status) {
  EP_Request old = *request;
  int rc = EP_Test(request, flag, epf_status(status));
  if (*flag) request_completed(old, *request, 1);
  return rc;
}

int epf_waitall(int count, EP_Request *requests, EP_Status *statuses) {
  EP_Request *old = snapshot(count, requests);
  int rc = EP_Waitall(count, requests, epf_statuses(statuses));
  if (old) {
    int done = rc == EP_SUCCESS || rc == EP_ERR_IN_STATUS;
    for (int i = 0; i < count; ++i) request_completed(old[i], requests[i], done);
    free(old);
  }
  return rc;
}

int epf_testall(int count, EP_Request *requests, int *flag, EP_Status *statuses) {
  EP_Request *old = snapshot(count, requests);
  int rc = EP_Testall(count, requests, flag, epf_statuses(statuses));
  if (old) {
    for (int i = 0; i < count; ++i) request_completed(old[i], requests[i], *flag);
    free(old);
  }
  return rc;
}

int epf_waitany(int count, EP_Request *requests, int *index, EP_Status *status) {
  EP_Request *old = snapshot(count, requests);
  int rc = EP_Waitany(count, requests, index, epf_status(status));
  if (old) {
    if (*index >= 0 && *index < count) request_completed(old[*index], requests[*index], 1);
    free(old);
  }
  if (*index != EP_UNDEFINED) *index += 1;
  return rc;
}

int epf_testany(int count, EP_Request *requests, int *index, int *flag, EP_Status *status) {
  EP_Request *old = snapshot(count, requests);
  int rc = EP_Testany(count, requests, index, flag, epf_status(status));
  if (old) {
    if (*flag && *index >= 0 && *index < count) {
      request_completed(old[*index], requests[*index], 1);
    }
    free(old);
  }
  if (*index != EP_UNDEFINED) *index += 1;
  return rc;
}

static int some(int (*call)(int, EP_Request *, int *, int *, EP_Status *), int incount,
                EP_Request *requests, int *outcount, int *indices, EP_Status *statuses) {
  EP_Request *old = snapshot(incount, requests);
  int rc = call(incount, requests, outcount, indices, epf_statuses(statuses));
  if (*outcount != EP_UNDEFINED) {
    for (int i = 0; i < *outcount; ++i) {
      if (old) request_completed(old[indices[i]], requests[indices[i]], 1);
      indices[i] += 1;
    }
  }
  free(old);
  return rc;
}

int epf_waitsome(int incount, EP_Request *requests, int *outcount, int *indices,
                 EP_Status *statuses) {
  return some(EP_Waitsome, incount, requests, outcount, indices, statuses);
}

int epf_testsome(int incount, EP_Request *requests, int *outcount, int *indices,
                 EP_Status *statuses) {
  return some(EP_Testsome, incount, requests, outcount, indices, statuses);
}

int epf_request_get_status(EP_Request request, int *flag, EP_Status *status) {
  int rc = EP_Request_get_status(request, flag, epf_status(status));
  if (*flag) {
    /* Complete: copy out now and only once (the user may touch the section from here). */
    epf_pending *p = take(request, 0, 0);
    if (p) {
      if (p->active) {
        for (epf_tmp *t = p->tmps; t; t = t->next) {
          if (t->copy_out) section_copy((CFI_cdesc_t *)&t->desc, t->mem, 0);
        }
      }
      p->active = 0;
      put_back(p);
    }
  }
  return rc;
}

int epf_request_free(EP_Request *request) {
  EP_Request old = *request;
  int rc = EP_Request_free(request);
  if (rc == EP_SUCCESS) {
    epf_pending *p = take(old, 0, 0);
    if (p) {
      /* An active operation may still use its temporaries: they are left allocated. */
      if (!p->active) tmps_release(p->tmps, 0);
      free(p);
    }
  }
  return rc;
}

int epf_start(EP_Request *request) {
  request_starting(*request);
  int rc = EP_Start(request);
  if (rc == EP_SUCCESS) request_started(*request);
  return rc;
}

int epf_startall(int count, EP_Request *requests) {
  for (int i = 0; i < count; ++i) request_starting(requests[i]);
  int rc = EP_Startall(count, requests);
  if (rc == EP_SUCCESS) {
    for (int i = 0; i < count; ++i) request_started(requests[i]);
  }
  return rc;
}

/* ---- Strings ------------------------------------------------------------------------- */

int epf_error_string(int code, char *string, int *resultlen) {
  return EP_Error_string(code, string, resultlen);
}

int epf_comm_get_name(EP_Comm comm, char *name, int *resultlen) {
  return EP_Comm_get_name(comm, name, resultlen);
}

int epf_comm_set_name(EP_Comm comm, const char *name) { return EP_Comm_set_name(comm, name); }

/* ---- Attributes ---------------------------------------------------------------------- */

/* A keyval's C extra state: the user's Fortran callbacks and extra state.  Lives as long
 * as the process (attributes may outlive EP_Comm_free_keyval). */
typedef struct {
  void (*copy_fn)(void);
  void (*delete_fn)(void);
  MPI_Aint extra;
} epf_keyval;

static int keyval_copy(EP_Comm oldcomm, int keyval, void *extra_state, void *in, void *out,
                       int *flag) {
  epf_keyval *k = extra_state;
  MPI_Aint v = 0;
  int rc = ep_f08_call_copy(k->copy_fn, oldcomm, keyval, k->extra, (MPI_Aint)(intptr_t)in,
                            &v, flag);
  *(void **)out = (void *)(intptr_t)v;
  return rc;
}

static int keyval_delete(EP_Comm comm, int keyval, void *val, void *extra_state) {
  epf_keyval *k = extra_state;
  return ep_f08_call_delete(k->delete_fn, comm, keyval, (MPI_Aint)(intptr_t)val, k->extra);
}

int epf_comm_create_keyval(void (*copy_fn)(void), void (*delete_fn)(void), int *comm_keyval,
                           MPI_Aint extra_state) {
  epf_keyval *k = malloc(sizeof *k);
  if (!k) return EP_ERR_INTERN;
  k->copy_fn = copy_fn;
  k->delete_fn = delete_fn;
  k->extra = extra_state;
  int rc = EP_Comm_create_keyval(keyval_copy, keyval_delete, comm_keyval, k);
  if (rc != EP_SUCCESS) free(k);
  return rc;
}

int epf_comm_set_attr(EP_Comm comm, int comm_keyval, MPI_Aint attribute_val) {
  return EP_Comm_set_attr(comm, comm_keyval, (void *)(intptr_t)attribute_val);
}

int epf_comm_get_attr(EP_Comm comm, int comm_keyval, MPI_Aint *attribute_val, int *flag) {
  void *v = NULL;
  int rc = EP_Comm_get_attr(comm, comm_keyval, &v, flag);
  if (rc == EP_SUCCESS && *flag) {
    *attribute_val = comm_keyval == EP_TAG_UB ? *(int *)v : (MPI_Aint)(intptr_t)v;
  }
  return rc;
}

int epf_win_get_attr(EP_Win win, int win_keyval, MPI_Aint *attribute_val, int *flag) {
  void *v = NULL;
  int rc = EP_Win_get_attr(win, win_keyval, &v, flag);
  if (rc == EP_SUCCESS && *flag) {
    if (win_keyval == EP_WIN_BASE) {
      *attribute_val = (MPI_Aint)(intptr_t)v;
    } else if (win_keyval == EP_WIN_SIZE) {
      *attribute_val = *(MPI_Aint *)v;
    } else {
      *attribute_val = *(int *)v;
    }
  }
  return rc;
}

/* ---- Error handlers ------------------------------------------------------------------
 * C's handler gets no extra state, so each Fortran handler takes one of a fixed set of
 * trampolines. */
#define EPF_MAX_ERRHANDLERS 16
static void (*g_errhandler_fns[EPF_MAX_ERRHANDLERS])(void); /* guarded by g_mu */
#define EPF_TRAMPOLINE(i)                                                \
  static void errhandler_##i(EP_Comm *comm, int *code, ...) {            \
    ep_f08_call_errhandler(g_errhandler_fns[i], comm, code);             \
  }
EPF_TRAMPOLINE(0) EPF_TRAMPOLINE(1) EPF_TRAMPOLINE(2) EPF_TRAMPOLINE(3)
EPF_TRAMPOLINE(4) EPF_TRAMPOLINE(5) EPF_TRAMPOLINE(6) EPF_TRAMPOLINE(7)
EPF_TRAMPOLINE(8) EPF_TRAMPOLINE(9) EPF_TRAMPOLINE(10) EPF_TRAMPOLINE(11)
EPF_TRAMPOLINE(12) EPF_TRAMPOLINE(13) EPF_TRAMPOLINE(14) EPF_TRAMPOLINE(15)
static EP_Comm_errhandler_function *const g_trampolines[EPF_MAX_ERRHANDLERS] = {
    errhandler_0,  errhandler_1,  errhandler_2,  errhandler_3, errhandler_4,  errhandler_5,
    errhandler_6,  errhandler_7,  errhandler_8,  errhandler_9, errhandler_10, errhandler_11,
    errhandler_12, errhandler_13, errhandler_14, errhandler_15};

int epf_comm_create_errhandler(void (*comm_errhandler_fn)(void), EP_Errhandler *errhandler) {
  int slot = -1;
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < EPF_MAX_ERRHANDLERS && slot < 0; ++i) {
    if (!g_errhandler_fns[i]) {
      g_errhandler_fns[i] = comm_errhandler_fn;
      slot = i;
    }
  }
  pthread_mutex_unlock(&g_mu);
  if (slot < 0) return EP_ERR_OTHER;
  return EP_Comm_create_errhandler(g_trampolines[slot], errhandler);
}

/* ---- Generalized requests ------------------------------------------------------------ */

typedef struct {
  void (*query_fn)(void);
  void (*free_fn)(void);
  void (*cancel_fn)(void);
  MPI_Aint extra;
} epf_grequest;

static int grequest_query(void *extra_state, EP_Status *status) {
  epf_grequest *g = extra_state;
  return ep_f08_call_query(g->query_fn, g->extra, status);
}

static int grequest_free(void *extra_state) {
  epf_grequest *g = extra_state;
  int rc = ep_f08_call_free(g->free_fn, g->extra);
  free(g);
  return rc;
}

static int grequest_cancel(void *extra_state, int complete) {
  epf_grequest *g = extra_state;
  return ep_f08_call_cancel(g->cancel_fn, g->extra, complete);
}

int epf_grequest_start(void (*query_fn)(void), void (*free_fn)(void),
                       void (*cancel_fn)(void), MPI_Aint extra_state, EP_Request *request) {
  epf_grequest *g = malloc(sizeof *g);
  if (!g) return EP_ERR_INTERN;
  g->query_fn = query_fn;
  g->free_fn = free_fn;
  g->cancel_fn = cancel_fn;
  g->extra = extra_state;
  int rc = EP_Grequest_start(grequest_query, grequest_free, grequest_cancel, g, request);
  if (rc != EP_SUCCESS) free(g);
  return rc;
}

/* ---- Alltoallw: arrays of MPI datatypes ----------------------------------------------- */

/* C handles for n Fortran datatypes, in tmps (freed with them); NULL on failure. */
static MPI_Datatype *convert_types(int n, const MPI_Fint *f, epf_tmps *tmps) {
  MPI_Datatype *c = malloc((size_t)(n > 0 ? n : 1) * sizeof *c);
  if (!c || !tmps_add(tmps, c)) {
    free(c);
    return NULL;
  }
  for (int i = 0; i < n; ++i) c[i] = MPI_Type_f2c(f[i]);
  return c;
}

static int alltoallw(CFI_cdesc_t *sendbuf, int *sendcounts, int *sdispls,
                     const MPI_Fint *sendtypes, CFI_cdesc_t *recvbuf, int *recvcounts,
                     int *rdispls, const MPI_Fint *recvtypes, EP_Comm comm,
                     EP_Request *request) {
  epf_tmps tmps = EPF_TMPS_INIT;
  void *sp = NULL, *rp = NULL;
  MPI_Datatype *st = NULL, *rt = NULL;
  int inter = 0, n = 0;
  int rc = EP_Comm_test_inter(comm, &inter);
  if (rc == EP_SUCCESS) rc = inter ? EP_Comm_remote_size(comm, &n) : EP_Comm_size(comm, &n);
  if (rc == EP_SUCCESS) rc = epf_buffer(sendbuf, EPF_IN, &tmps, &sp);
  if (rc == EP_SUCCESS) rc = epf_buffer(recvbuf, EPF_INOUT, &tmps, &rp);
  if (rc == EP_SUCCESS) {
    rt = convert_types(n, recvtypes, &tmps);
    st = sp == EP_IN_PLACE ? rt : convert_types(n, sendtypes, &tmps);
    if (!st || !rt) rc = EP_ERR_INTERN;
  }
  if (rc == EP_SUCCESS) {
    rc = request ? EP_Ialltoallw(sp, sendcounts, sdispls, st, rp, recvcounts, rdispls, rt,
                                 comm, request)
                 : EP_Alltoallw(sp, sendcounts, sdispls, st, rp, recvcounts, rdispls, rt, comm);
  }
  if (request) {
    epf_defer_request(&tmps, rc, *request, 0);
  } else {
    epf_finish(&tmps);
  }
  return rc;
}

int epf_alltoallw(CFI_cdesc_t *sendbuf, int *sendcounts, int *sdispls,
                  const MPI_Fint *sendtypes, CFI_cdesc_t *recvbuf, int *recvcounts,
                  int *rdispls, const MPI_Fint *recvtypes, EP_Comm comm) {
  return alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                   recvtypes, comm, NULL);
}

int epf_ialltoallw(CFI_cdesc_t *sendbuf, int *sendcounts, int *sdispls,
                   const MPI_Fint *sendtypes, CFI_cdesc_t *recvbuf, int *recvcounts,
                   int *rdispls, const MPI_Fint *recvtypes, EP_Comm comm,
                   EP_Request *request) {
  return alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                   recvtypes, comm, request);
}

/* ---- Windows --------------------------------------------------------------------------- */

int epf_win_free(EP_Win *win) {
  EP_Win old = *win;
  int rc = EP_Win_free(win);
  if (rc == EP_SUCCESS) epf_win_synced(old, EPF_ALL_TARGETS);
  return rc;
}
