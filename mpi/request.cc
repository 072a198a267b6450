// request.cc - completion, start, cancel and free of requests; generalized requests;
// matched receives.
//
// An array given to the Wait/Test family may hold libep requests, MPICH requests and null
// handles at once.  All MPICH: straight to PMPI_.  All libep (or null): one EP_ call on a
// copy of the array.  Mixed:
//   - Waitall: EP_Waitall on the libep ones, then PMPI_Waitall on the others (each kind
//     progresses without the other's calls: libep's progress thread keeps MPICH's engine
//     running, so neither wait depends on the other to return);
//   - Testall: libep's and MPICH's completion are checked without completing anything
//     (EP_Request_get_status, PMPI_Testall completes only if all of its own are done),
//     so that "not all complete" modifies no request, as MPI says;
//   - Testany/Testsome test both kinds (which is first alternates);
//   - Waitany/Waitsome: Testany/Testsome in a loop that backs off into sleeps (from about
//     a microsecond, doubling, up to a millisecond): the one wait of libep_mpi that is not
//     libep's, because a completion of either kind must end it and neither library can
//     wake the other's waiter.
// Completed libep requests release their handles (set to MPI_REQUEST_NULL); persistent
// ones stay.  Statuses are converted (status.h); the multi-completion calls map each
// status's error to an MPI class when they return MPI_ERR_IN_STATUS.
//
// Threading: as MPI's.  Memory ordering: none beyond the tables' (handles.h).
#include <mpi.h>
#include <time.h>

#include <algorithm>
#include <climits>
#include <vector>

#include "ep/ep.h"
#include "mpi/handles.h"
#include "mpi/layer.h"
#include "mpi/status.h"

using ep::mpi::is_kind;
using ep::mpi::Kind;

namespace ep::mpi {
namespace {

bool is_req(MPI_Request r) { return is_kind<Kind::kRequest>(r); }

// A scratch array, on the stack for small counts.
template <class T>
class Scratch {
 public:
  explicit Scratch(int n) {
    if (n > kLocal) {
      heap_.resize(static_cast<size_t>(n));
      p_ = heap_.data();
    } else {
      p_ = local_;
    }
  }
  T* data() { return p_; }
  T& operator[](int i) { return p_[i]; }

 private:
  static constexpr int kLocal = 64;
  T local_[kLocal];
  std::vector<T> heap_;
  T* p_;
};

// Whether any handle of reqs is libep's (no lookup: MPICH's arrays pass at this cost).
bool any_ep(int n, const MPI_Request* reqs) {
  for (int i = 0; i < n; ++i) {
    if (is_req(reqs[i])) return true;
  }
  return false;
}

struct Census {
  int plain = 0;  // MPICH requests, MPI_REQUEST_NULL not counted
  int bad = -1;   // index of a libep handle that names nothing
};

// libep's view of reqs into er (its requests, everything else EP_REQUEST_NULL) and sl
// (their slots, for settle), and what else the array holds.
Census view(int n, const MPI_Request* reqs, EP_Request* er, Slot** sl) {
  Census c;
  Table& t = table(Kind::kRequest);
  for (int i = 0; i < n; ++i) {
    if (is_req(reqs[i])) {
      Slot* s = t.slot(index_of(reqs[i]));
      // acquire: pairs with the release store in Table::make.
      er[i] =
          s == nullptr ? nullptr : static_cast<EP_Request>(s->obj.load(std::memory_order_acquire));
      sl[i] = s;
      if (er[i] == nullptr && c.bad < 0) c.bad = i;
    } else {
      er[i] = EP_REQUEST_NULL;
      sl[i] = nullptr;
      if (reqs[i] != MPI_REQUEST_NULL) ++c.plain;
    }
  }
  return c;
}

// MPICH's view of reqs: libep's requests as MPI_REQUEST_NULL.
void mpi_view(int n, const MPI_Request* reqs, MPI_Request* pr) {
  for (int i = 0; i < n; ++i) pr[i] = is_req(reqs[i]) ? MPI_REQUEST_NULL : reqs[i];
}

// The owner whose error handler a failed multi-completion call raises on: the first
// libep request's communicator or window.
int first_owner(int n, const MPI_Request* reqs) {
  for (int i = 0; i < n; ++i) {
    if (is_req(reqs[i])) return request_owner(reqs[i]);
  }
  return 0;
}

// After an EP_ call: libep request i that libep completed (er[i] null) loses its handle.
inline void settle(int i, MPI_Request* reqs, const EP_Request* er, Slot* const* sl) {
  if (sl[i] != nullptr && er[i] == EP_REQUEST_NULL) {
    release_request(sl[i], reqs[i]);
    reqs[i] = MPI_REQUEST_NULL;
  }
}

// Whether a single-request call that returned rc filled its status: it completed the
// request (a receive that truncated and a failed generalized request did too).
bool completed(int rc) { return rc == EP_SUCCESS || rc == EP_ERR_TRUNCATE || rc >= kGreqCode; }

void convert(const EP_Status& es, MPI_Status* st, bool in_status) {
  to_mpi(es, st);
  if (in_status) st->MPI_ERROR = ep_class(es.EP_ERROR);
}

// The class of an MPICH return code.
int mpi_class(int code) {
  int cls = code;
  if (code != MPI_SUCCESS) PMPI_Error_class(code, &cls);
  return cls;
}

// Sleeps a little longer each time (the mixed Waitany/Waitsome loop).
class Backoff {
 public:
  void pause() {
    if (++rounds_ <= kSpinRounds) return;
    struct timespec ts = {0, ns_};
    nanosleep(&ts, nullptr);
    ns_ = std::min(ns_ * 2, kMaxNs);
  }

 private:
  static constexpr int kSpinRounds = 16;
  static constexpr long kMaxNs = 1000000;
  int rounds_ = 0;
  long ns_ = 1000;
};

thread_local unsigned t_turn = 0;  // which kind Testany/Testsome tries first

// ---- all libep ---------------------------------------------------------------------------
// er: libep's view of reqs (view()); libep completes what it can, settle() releases the
// handles of what it completed.

int ep_waitall(int n, MPI_Request* reqs, EP_Request* er, Slot** sl, MPI_Status* sts, bool test,
               int* flag, const char* call) {
  Scratch<EP_Status> es(sts == MPI_STATUSES_IGNORE ? 0 : n);
  EP_Status* esp = sts == MPI_STATUSES_IGNORE ? EP_STATUSES_IGNORE : es.data();
  int f = 1;
  const int rc = test ? EP_Testall(n, er, &f, esp) : EP_Waitall(n, er, esp);
  if (test) *flag = f;
  const int owner = rc == EP_SUCCESS ? 0 : first_owner(n, reqs);
  if (f || rc != EP_SUCCESS) {
    const bool filled = rc == EP_SUCCESS || rc == EP_ERR_IN_STATUS;
    for (int i = 0; i < n; ++i) {
      if (esp != nullptr && filled) convert(es[i], &sts[i], rc == EP_ERR_IN_STATUS);
      settle(i, reqs, er, sl);
    }
  }
  return rc == EP_SUCCESS ? MPI_SUCCESS : raise_owner(owner, rc, call);
}

int ep_waitany(int n, MPI_Request* reqs, EP_Request* er, Slot** sl, int* index, MPI_Status* st,
               bool test, int* flag, const char* call) {
  EP_Status es;
  EP_Status* esp = st == MPI_STATUS_IGNORE ? EP_STATUS_IGNORE : &es;
  int f = 1, idx = MPI_UNDEFINED;
  const int rc = test ? EP_Testany(n, er, &idx, &f, esp) : EP_Waitany(n, er, &idx, esp);
  if (test) *flag = f;
  *index = idx;
  int owner = 0;
  if (idx != MPI_UNDEFINED && idx >= 0) {
    if (rc != EP_SUCCESS) owner = request_owner(reqs[idx]);
    settle(idx, reqs, er, sl);
  } else if (rc != EP_SUCCESS) {
    owner = first_owner(n, reqs);
  }
  if (esp != nullptr && f && completed(rc)) to_mpi(es, st);
  return rc == EP_SUCCESS ? MPI_SUCCESS : raise_owner(owner, rc, call);
}

int ep_waitsome(int n, MPI_Request* reqs, EP_Request* er, Slot** sl, int* outcount, int* indices,
                MPI_Status* sts, bool test, const char* call) {
  Scratch<EP_Status> es(sts == MPI_STATUSES_IGNORE ? 0 : n);
  EP_Status* esp = sts == MPI_STATUSES_IGNORE ? EP_STATUSES_IGNORE : es.data();
  int out = 0;
  const int rc =
      test ? EP_Testsome(n, er, &out, indices, esp) : EP_Waitsome(n, er, &out, indices, esp);
  *outcount = out;
  const int owner = rc == EP_SUCCESS ? 0 : first_owner(n, reqs);
  if (out != MPI_UNDEFINED) {
    for (int k = 0; k < out; ++k) {
      if (esp != nullptr) convert(es[k], &sts[k], rc == EP_ERR_IN_STATUS);
      settle(indices[k], reqs, er, sl);
    }
  }
  return rc == EP_SUCCESS ? MPI_SUCCESS : raise_owner(owner, rc, call);
}

// ---- mixed ----------------------------------------------------------------------------------

int mixed_waitall(int n, MPI_Request* reqs, EP_Request* er, Slot** sl, MPI_Status* sts,
                  const char* call) {
  Scratch<MPI_Request> pr(n);
  Scratch<MPI_Status> pst(sts == MPI_STATUSES_IGNORE ? 0 : n);
  mpi_view(n, reqs, pr.data());
  // libep's first (their handles settle), then MPICH's on its view.
  Scratch<EP_Status> es(sts == MPI_STATUSES_IGNORE ? 0 : n);
  const int owner = first_owner(n, reqs);
  EP_Status* esp = sts == MPI_STATUSES_IGNORE ? EP_STATUSES_IGNORE : es.data();
  const int erc = EP_Waitall(n, er, esp);
  const int prc =
      PMPI_Waitall(n, pr.data(), sts == MPI_STATUSES_IGNORE ? MPI_STATUSES_IGNORE : pst.data());
  const int pcls = mpi_class(prc);
  const bool in_status = erc == EP_ERR_IN_STATUS || pcls == MPI_ERR_IN_STATUS;
  for (int i = 0; i < n; ++i) {
    if (is_req(reqs[i])) {
      if (esp != nullptr) {
        convert(es[i], &sts[i], erc == EP_ERR_IN_STATUS);
        if (in_status && erc != EP_ERR_IN_STATUS) sts[i].MPI_ERROR = MPI_SUCCESS;
      }
      settle(i, reqs, er, sl);
    } else {
      reqs[i] = pr[i];
      if (sts != MPI_STATUSES_IGNORE) {
        sts[i] = pst[i];
        if (in_status && pcls != MPI_ERR_IN_STATUS) sts[i].MPI_ERROR = MPI_SUCCESS;
      }
    }
  }
  if (erc != EP_SUCCESS && erc != EP_ERR_IN_STATUS) return raise_owner(owner, erc, call);
  if (prc != MPI_SUCCESS && pcls != MPI_ERR_IN_STATUS) return prc;
  if (in_status) {
    return erc == EP_ERR_IN_STATUS ? raise_owner(owner, erc, call) : prc;
  }
  return MPI_SUCCESS;
}

int mixed_testall(int n, MPI_Request* reqs, EP_Request* er, Slot** sl, int* flag, MPI_Status* sts,
                  const char* call) {
  // libep's side first, without completing anything.
  for (int i = 0; i < n; ++i) {
    if (er[i] == EP_REQUEST_NULL) continue;
    int f = 0;
    const int rc = EP_Request_get_status(er[i], &f, EP_STATUS_IGNORE);
    if (f) continue;  // complete (rc: a failed generalized request's code, for EP_Testall)
    if (rc != EP_SUCCESS) return raise_owner(request_owner(reqs[i]), rc, call);
    *flag = 0;
    return MPI_SUCCESS;
  }
  // MPICH's: PMPI_Testall completes its own only if all of them are complete.
  Scratch<MPI_Request> pr(n);
  Scratch<MPI_Status> pst(sts == MPI_STATUSES_IGNORE ? 0 : n);
  mpi_view(n, reqs, pr.data());
  int pf = 0;
  const int prc = PMPI_Testall(n, pr.data(), &pf,
                               sts == MPI_STATUSES_IGNORE ? MPI_STATUSES_IGNORE : pst.data());
  const int pcls = mpi_class(prc);
  if (!pf || (prc != MPI_SUCCESS && pcls != MPI_ERR_IN_STATUS)) {
    // Not all complete (or MPICH failed outright): libep's stay as they are; MPICH's are
    // as PMPI_Testall left them, libep's statuses pending if MPICH reported in statuses.
    for (int i = 0; i < n; ++i) {
      if (is_req(reqs[i])) {
        if (sts != MPI_STATUSES_IGNORE && pcls == MPI_ERR_IN_STATUS) {
          sts[i].MPI_ERROR = MPI_ERR_PENDING;
        }
        continue;
      }
      reqs[i] = pr[i];
      if (sts != MPI_STATUSES_IGNORE && prc != MPI_SUCCESS) sts[i] = pst[i];
    }
    *flag = 0;
    return prc;
  }
  // libep's are complete: EP_Testall completes them all now.
  Scratch<EP_Status> es(sts == MPI_STATUSES_IGNORE ? 0 : n);
  const int owner = first_owner(n, reqs);
  EP_Status* esp = sts == MPI_STATUSES_IGNORE ? EP_STATUSES_IGNORE : es.data();
  int ef = 0;
  const int erc = EP_Testall(n, er, &ef, esp);
  const bool in_status = erc == EP_ERR_IN_STATUS || pcls == MPI_ERR_IN_STATUS;
  for (int i = 0; i < n; ++i) {
    if (is_req(reqs[i])) {
      if (esp != nullptr) {
        convert(es[i], &sts[i], erc == EP_ERR_IN_STATUS);
        if (in_status && erc != EP_ERR_IN_STATUS) sts[i].MPI_ERROR = MPI_SUCCESS;
      }
      settle(i, reqs, er, sl);
    } else {
      reqs[i] = pr[i];
      if (sts != MPI_STATUSES_IGNORE) {
        sts[i] = pst[i];
        if (in_status && pcls != MPI_ERR_IN_STATUS) sts[i].MPI_ERROR = MPI_SUCCESS;
      }
    }
  }
  *flag = 1;
  if (erc != EP_SUCCESS && erc != EP_ERR_IN_STATUS) return raise_owner(owner, erc, call);
  if (in_status) {
    return erc == EP_ERR_IN_STATUS ? raise_owner(owner, erc, call) : prc;
  }
  return MPI_SUCCESS;
}

// One round of Testany over both kinds: *flag when it returned an index or found every
// request inactive.  er and the MPICH view are refreshed from reqs each round.
int mixed_testany(int n, MPI_Request* reqs, int* index, int* flag, MPI_Status* st,
                  const char* call) {
  Scratch<EP_Request> er(n);
  Scratch<Slot*> sl(n);
  view(n, reqs, er.data(), sl.data());
  Scratch<MPI_Request> pr(n);
  mpi_view(n, reqs, pr.data());
  bool ep_idle = false, mpi_idle = false;
  const bool ep_first = (t_turn++ & 1) == 0;
  for (int pass = 0; pass < 2; ++pass) {
    if ((pass == 0) == ep_first) {
      EP_Status es;
      int f = 0, idx = MPI_UNDEFINED;
      const int rc =
          EP_Testany(n, er.data(), &idx, &f, st == MPI_STATUS_IGNORE ? EP_STATUS_IGNORE : &es);
      if (f && idx != MPI_UNDEFINED) {
        const int owner = request_owner(reqs[idx]);
        settle(idx, reqs, er.data(), sl.data());
        if (st != MPI_STATUS_IGNORE && completed(rc)) to_mpi(es, st);
        *index = idx;
        *flag = 1;
        return rc == EP_SUCCESS ? MPI_SUCCESS : raise_owner(owner, rc, call);
      }
      if (rc != EP_SUCCESS) return raise_owner(first_owner(n, reqs), rc, call);
      ep_idle = f != 0;
    } else {
      int f = 0, idx = MPI_UNDEFINED;
      const int rc = PMPI_Testany(n, pr.data(), &idx, &f, st);
      if (f && idx != MPI_UNDEFINED) {
        reqs[idx] = pr[idx];
        *index = idx;
        *flag = 1;
        return rc;
      }
      if (rc != MPI_SUCCESS) return rc;
      mpi_idle = f != 0;
    }
  }
  *index = MPI_UNDEFINED;
  *flag = ep_idle && mpi_idle ? 1 : 0;
  if (*flag && st != MPI_STATUS_IGNORE) {  // every request inactive: the empty status
    st->MPI_SOURCE = MPI_ANY_SOURCE;
    st->MPI_TAG = MPI_ANY_TAG;
    set_mpi_count(st, 0, false);
  }
  return MPI_SUCCESS;
}

int mixed_testsome(int n, MPI_Request* reqs, int* outcount, int* indices, MPI_Status* sts,
                   const char* call) {
  Scratch<EP_Request> er(n);
  Scratch<Slot*> sl(n);
  view(n, reqs, er.data(), sl.data());
  Scratch<MPI_Request> pr(n);
  mpi_view(n, reqs, pr.data());
  Scratch<int> eidx(n), pidx(n);
  Scratch<EP_Status> es(sts == MPI_STATUSES_IGNORE ? 0 : n);
  Scratch<MPI_Status> pst(sts == MPI_STATUSES_IGNORE ? 0 : n);
  const int owner = first_owner(n, reqs);
  EP_Status* esp = sts == MPI_STATUSES_IGNORE ? EP_STATUSES_IGNORE : es.data();
  int eo = 0, po = 0;
  const int erc = EP_Testsome(n, er.data(), &eo, eidx.data(), esp);
  const int prc = PMPI_Testsome(n, pr.data(), &po, pidx.data(),
                                sts == MPI_STATUSES_IGNORE ? MPI_STATUSES_IGNORE : pst.data());
  if (eo == MPI_UNDEFINED && po == MPI_UNDEFINED) {
    *outcount = MPI_UNDEFINED;
    return MPI_SUCCESS;
  }
  const int pcls = mpi_class(prc);
  const bool in_status = erc == EP_ERR_IN_STATUS || pcls == MPI_ERR_IN_STATUS;
  int out = 0;
  if (eo != MPI_UNDEFINED) {
    for (int k = 0; k < eo; ++k) {
      const int i = eidx[k];
      indices[out] = i;
      if (esp != nullptr) {
        convert(es[k], &sts[out], erc == EP_ERR_IN_STATUS);
        if (in_status && erc != EP_ERR_IN_STATUS) sts[out].MPI_ERROR = MPI_SUCCESS;
      }
      settle(i, reqs, er.data(), sl.data());
      ++out;
    }
  }
  if (po != MPI_UNDEFINED) {
    for (int k = 0; k < po; ++k) {
      const int i = pidx[k];
      indices[out] = i;
      reqs[i] = pr[i];
      if (sts != MPI_STATUSES_IGNORE) {
        sts[out] = pst[k];
        if (in_status && pcls != MPI_ERR_IN_STATUS) sts[out].MPI_ERROR = MPI_SUCCESS;
      }
      ++out;
    }
  }
  *outcount = out;
  if (erc != EP_SUCCESS && erc != EP_ERR_IN_STATUS) return raise_owner(owner, erc, call);
  if (prc != MPI_SUCCESS && pcls != MPI_ERR_IN_STATUS) return prc;
  if (in_status) return erc == EP_ERR_IN_STATUS ? raise_owner(owner, erc, call) : prc;
  return MPI_SUCCESS;
}

// ---- generalized requests -------------------------------------------------------------------

struct Greq {
  MPI_Grequest_query_function* query;
  MPI_Grequest_free_function* free_fn;
  MPI_Grequest_cancel_function* cancel;
  void* extra;
};

int greq_code(int mpi_code) { return mpi_code == MPI_SUCCESS ? EP_SUCCESS : kGreqCode + mpi_code; }

int greq_query(void* x, EP_Status* es) {
  Greq* g = static_cast<Greq*>(x);
  MPI_Status ms;
  ms.MPI_SOURCE = es->EP_SOURCE;
  ms.MPI_TAG = es->EP_TAG;
  ms.MPI_ERROR = es->EP_ERROR;
  set_mpi_count(&ms, es->ep_bytes_, es->ep_cancelled_ != 0);
  const int rc = g->query(g->extra, &ms);
  es->EP_SOURCE = ms.MPI_SOURCE;
  es->EP_TAG = ms.MPI_TAG;
  es->ep_bytes_ = mpi_bytes(&ms);
  es->ep_cancelled_ = ms.count_hi_and_cancelled & 1;
  return greq_code(rc);
}

int greq_free(void* x) {
  Greq* g = static_cast<Greq*>(x);
  const int rc = g->free_fn(g->extra);
  delete g;
  return greq_code(rc);
}

int greq_cancel(void* x, int complete) {
  Greq* g = static_cast<Greq*>(x);
  return greq_code(g->cancel(g->extra, complete));
}

int mrecv(void* buf, int count, MPI_Datatype datatype, MPI_Message* message, MPI_Status* status,
          const char* call) {
  const int h = *message;
  EP_Message m = static_cast<EP_Message>(table(Kind::kMessage).get(h));
  if (m == nullptr) {
    return raise_plain(MPI_COMM_WORLD, MPI_ERR_REQUEST, call,
                       "message %#x names no libep message (received already?)",
                       static_cast<unsigned>(h));
  }
  const int owner = table(Kind::kMessage).slot(index_of(h))->owner.load(std::memory_order_relaxed);
  EP_Status es;
  const int rc =
      EP_Mrecv(buf, count, datatype, &m, status == MPI_STATUS_IGNORE ? EP_STATUS_IGNORE : &es);
  if (m == EP_MESSAGE_NULL) {
    table(Kind::kMessage).release(h);
    *message = MPI_MESSAGE_NULL;
  }
  if (status != MPI_STATUS_IGNORE && (rc == EP_SUCCESS || rc == EP_ERR_TRUNCATE)) {
    to_mpi(es, status);
  }
  return rc == EP_SUCCESS ? MPI_SUCCESS : raise_owner(owner, rc, call);
}

// A large count for libep's int: false (and *err, raised) if it does not fit.
bool narrow_count(MPI_Count count, const char* call, int* narrow, int* err) {
  if (count > INT_MAX || count < 0) {
    *err = raise_plain(MPI_COMM_WORLD, MPI_ERR_COUNT, call, "count %lld does not fit in libep's int",
                       static_cast<long long>(count));
    return false;
  }
  *narrow = static_cast<int>(count);
  return true;
}

int imrecv(void* buf, int count, MPI_Datatype datatype, MPI_Message* message, MPI_Request* request,
           const char* call) {
  const int h = *message;
  EP_Message m = static_cast<EP_Message>(table(Kind::kMessage).get(h));
  if (m == nullptr) {
    return raise_plain(MPI_COMM_WORLD, MPI_ERR_REQUEST, call,
                       "message %#x names no libep message (received already?)",
                       static_cast<unsigned>(h));
  }
  // relaxed: ordered by the acquire load of obj above.
  const int owner = table(Kind::kMessage).slot(index_of(h))->owner.load(std::memory_order_relaxed);
  if (request == nullptr) return raise_owner(owner, EP_ERR_ARG, call);
  EP_Request r = EP_REQUEST_NULL;
  const int rc = EP_Imrecv(buf, count, datatype, &m, &r);
  if (m == EP_MESSAGE_NULL) {
    table(Kind::kMessage).release(h);
    *message = MPI_MESSAGE_NULL;
  }
  if (rc != EP_SUCCESS) return raise_owner(owner, rc, call);
  return make_request(r, owner, request, call);
}

// The libep side of the single-request calls (the MPI_ functions only dispatch: MPICH's
// requests pay one compare and no stack frame).

// After EP_Wait/EP_Test of request handle h (slot s) failed with rc: the error of the
// communicator or window it came from; a completed request's handle is released.
__attribute__((noinline, cold)) int failed_request(MPI_Request* request, Slot* s, EP_Request r,
                                                   int rc, const char* call) {
  const int h = *request;
  const int owner = s->owner.load(std::memory_order_relaxed);  // relaxed: see request_slot
  if (r == EP_REQUEST_NULL) {
    release_request(s, h);
    *request = MPI_REQUEST_NULL;
  }
  return raise_owner(owner, rc, call);
}

__attribute__((noinline)) int ep_wait(MPI_Request* request, MPI_Status* status) {
  const int h = *request;
  Slot* s = request_slot(h);
  if (s == nullptr) return invalid_request(h, "MPI_Wait");
  // relaxed: ordered by request_slot's acquire load.
  EP_Request r = static_cast<EP_Request>(s->obj.load(std::memory_order_relaxed));
  EP_Status es;
  const int rc = EP_Wait(&r, status == MPI_STATUS_IGNORE ? EP_STATUS_IGNORE : &es);
  if (status != MPI_STATUS_IGNORE && completed(rc)) to_mpi(es, status);
  if (rc != EP_SUCCESS) return failed_request(request, s, r, rc, "MPI_Wait");
  if (r == EP_REQUEST_NULL) {
    release_request(s, h);
    *request = MPI_REQUEST_NULL;
  }
  return MPI_SUCCESS;
}

__attribute__((noinline)) int ep_test(MPI_Request* request, int* flag, MPI_Status* status) {
  const int h = *request;
  Slot* s = request_slot(h);
  if (s == nullptr) return invalid_request(h, "MPI_Test");
  // relaxed: ordered by request_slot's acquire load.
  EP_Request r = static_cast<EP_Request>(s->obj.load(std::memory_order_relaxed));
  if (flag == nullptr) return failed_request(request, s, r, EP_ERR_ARG, "MPI_Test");
  EP_Status es;
  const int rc = EP_Test(&r, flag, status == MPI_STATUS_IGNORE ? EP_STATUS_IGNORE : &es);
  if (*flag && status != MPI_STATUS_IGNORE && completed(rc)) to_mpi(es, status);
  if (rc != EP_SUCCESS) return failed_request(request, s, r, rc, "MPI_Test");
  if (r == EP_REQUEST_NULL) {
    release_request(s, h);
    *request = MPI_REQUEST_NULL;
  }
  return MPI_SUCCESS;
}

__attribute__((noinline)) int ep_request_free(MPI_Request* request) {
  const int h = *request;
  EP_Request r = request_of(h);
  if (r == nullptr) return invalid_request(h, "MPI_Request_free");
  const int owner = request_owner(h);
  const int rc = EP_Request_free(&r);
  if (rc != EP_SUCCESS) return raise_owner(owner, rc, "MPI_Request_free");
  release_request(h);
  *request = MPI_REQUEST_NULL;
  return MPI_SUCCESS;
}

__attribute__((noinline)) int ep_cancel(MPI_Request* request) {
  EP_Request r = request_of(*request);
  if (r == nullptr) return invalid_request(*request, "MPI_Cancel");
  const int rc = EP_Cancel(&r);
  return rc == EP_SUCCESS ? MPI_SUCCESS : raise_owner(request_owner(*request), rc, "MPI_Cancel");
}

__attribute__((noinline)) int ep_start(MPI_Request* request) {
  EP_Request r = request_of(*request);
  if (r == nullptr) return invalid_request(*request, "MPI_Start");
  const int rc = EP_Start(&r);
  return rc == EP_SUCCESS ? MPI_SUCCESS : raise_owner(request_owner(*request), rc, "MPI_Start");
}

// The libep side of the array calls.

__attribute__((noinline)) int ep_waitall_call(int count, MPI_Request requests[],
                                              MPI_Status statuses[]) {
  Scratch<EP_Request> er(count);
  Scratch<Slot*> sl(count);
  const Census c = view(count, requests, er.data(), sl.data());
  if (c.bad >= 0) return invalid_request(requests[c.bad], "MPI_Waitall");
  if (c.plain == 0) {
    return ep_waitall(count, requests, er.data(), sl.data(), statuses, false, nullptr,
                      "MPI_Waitall");
  }
  return mixed_waitall(count, requests, er.data(), sl.data(), statuses, "MPI_Waitall");
}

__attribute__((noinline)) int ep_testall_call(int count, MPI_Request requests[], int* flag,
                                              MPI_Status statuses[]) {
  Scratch<EP_Request> er(count);
  Scratch<Slot*> sl(count);
  const Census c = view(count, requests, er.data(), sl.data());
  if (c.bad >= 0) return invalid_request(requests[c.bad], "MPI_Testall");
  if (c.plain == 0) {
    return ep_waitall(count, requests, er.data(), sl.data(), statuses, true, flag, "MPI_Testall");
  }
  return mixed_testall(count, requests, er.data(), sl.data(), flag, statuses, "MPI_Testall");
}

__attribute__((noinline)) int ep_waitany_call(int count, MPI_Request requests[], int* index,
                                              MPI_Status* status) {
  Scratch<EP_Request> er(count);
  Scratch<Slot*> sl(count);
  const Census c = view(count, requests, er.data(), sl.data());
  if (c.bad >= 0) return invalid_request(requests[c.bad], "MPI_Waitany");
  if (c.plain == 0) {
    return ep_waitany(count, requests, er.data(), sl.data(), index, status, false, nullptr,
                      "MPI_Waitany");
  }
  Backoff backoff;
  for (;;) {
    int flag = 0;
    const int rc = mixed_testany(count, requests, index, &flag, status, "MPI_Waitany");
    if (flag || rc != MPI_SUCCESS) return rc;
    backoff.pause();
  }
}

__attribute__((noinline)) int ep_testany_call(int count, MPI_Request requests[], int* index,
                                              int* flag, MPI_Status* status) {
  Scratch<EP_Request> er(count);
  Scratch<Slot*> sl(count);
  const Census c = view(count, requests, er.data(), sl.data());
  if (c.bad >= 0) return invalid_request(requests[c.bad], "MPI_Testany");
  if (c.plain == 0) {
    return ep_waitany(count, requests, er.data(), sl.data(), index, status, true, flag,
                      "MPI_Testany");
  }
  return mixed_testany(count, requests, index, flag, status, "MPI_Testany");
}

__attribute__((noinline)) int ep_waitsome_call(int incount, MPI_Request requests[], int* outcount,
                                               int indices[], MPI_Status statuses[]) {
  Scratch<EP_Request> er(incount);
  Scratch<Slot*> sl(incount);
  const Census c = view(incount, requests, er.data(), sl.data());
  if (c.bad >= 0) return invalid_request(requests[c.bad], "MPI_Waitsome");
  if (c.plain == 0) {
    return ep_waitsome(incount, requests, er.data(), sl.data(), outcount, indices, statuses, false,
                       "MPI_Waitsome");
  }
  Backoff backoff;
  for (;;) {
    const int rc = mixed_testsome(incount, requests, outcount, indices, statuses, "MPI_Waitsome");
    if (*outcount != 0 || rc != MPI_SUCCESS) return rc;
    backoff.pause();
  }
}

__attribute__((noinline)) int ep_testsome_call(int incount, MPI_Request requests[], int* outcount,
                                               int indices[], MPI_Status statuses[]) {
  Scratch<EP_Request> er(incount);
  Scratch<Slot*> sl(incount);
  const Census c = view(incount, requests, er.data(), sl.data());
  if (c.bad >= 0) return invalid_request(requests[c.bad], "MPI_Testsome");
  if (c.plain == 0) {
    return ep_waitsome(incount, requests, er.data(), sl.data(), outcount, indices, statuses, true,
                       "MPI_Testsome");
  }
  return mixed_testsome(incount, requests, outcount, indices, statuses, "MPI_Testsome");
}

__attribute__((noinline)) int ep_startall_call(int count, MPI_Request requests[]) {
  Scratch<EP_Request> er(count);
  Scratch<MPI_Request> pr(count);
  int ne = 0, np = 0;
  for (int i = 0; i < count; ++i) {
    if (!is_req(requests[i])) {
      pr[np++] = requests[i];
      continue;
    }
    er[ne] = request_of(requests[i]);
    if (er[ne++] == nullptr) return invalid_request(requests[i], "MPI_Startall");
  }
  const int rc = EP_Startall(ne, er.data());
  if (rc != EP_SUCCESS) return raise_owner(first_owner(count, requests), rc, "MPI_Startall");
  return np > 0 ? PMPI_Startall(np, pr.data()) : MPI_SUCCESS;
}

}  // namespace
}  // namespace ep::mpi

using namespace ep::mpi;  // NOLINT(build/namespaces): the helpers of this layer

extern "C" {

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  if (request == nullptr || !is_req(*request)) return PMPI_Wait(request, status);
  return ep_wait(request, status);
}

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  if (request == nullptr || !is_req(*request)) return PMPI_Test(request, flag, status);
  return ep_test(request, flag, status);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (count <= 0 || requests == nullptr || !any_ep(count, requests)) {
    return PMPI_Waitall(count, requests, statuses);
  }
  return ep_waitall_call(count, requests, statuses);
}

int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  if (count <= 0 || requests == nullptr || flag == nullptr || !any_ep(count, requests)) {
    return PMPI_Testall(count, requests, flag, statuses);
  }
  return ep_testall_call(count, requests, flag, statuses);
}

int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  if (count <= 0 || requests == nullptr || index == nullptr || !any_ep(count, requests)) {
    return PMPI_Waitany(count, requests, index, status);
  }
  return ep_waitany_call(count, requests, index, status);
}

int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  if (count <= 0 || requests == nullptr || index == nullptr || flag == nullptr ||
      !any_ep(count, requests)) {
    return PMPI_Testany(count, requests, index, flag, status);
  }
  return ep_testany_call(count, requests, index, flag, status);
}

int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  if (incount <= 0 || requests == nullptr || outcount == nullptr || indices == nullptr ||
      !any_ep(incount, requests)) {
    return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  }
  return ep_waitsome_call(incount, requests, outcount, indices, statuses);
}

int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  if (incount <= 0 || requests == nullptr || outcount == nullptr || indices == nullptr ||
      !any_ep(incount, requests)) {
    return PMPI_Testsome(incount, requests, outcount, indices, statuses);
  }
  return ep_testsome_call(incount, requests, outcount, indices, statuses);
}

int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  if (!is_req(request)) return PMPI_Request_get_status(request, flag, status);
  EP_Request r = request_of(request);
  if (r == nullptr) return invalid_request(request, "MPI_Request_get_status");
  if (flag == nullptr) {
    return raise_owner(request_owner(request), EP_ERR_ARG, "MPI_Request_get_status");
  }
  EP_Status es;
  const int rc =
      EP_Request_get_status(r, flag, status == MPI_STATUS_IGNORE ? EP_STATUS_IGNORE : &es);
  if (rc != EP_SUCCESS) return raise_owner(request_owner(request), rc, "MPI_Request_get_status");
  if (*flag && status != MPI_STATUS_IGNORE) to_mpi(es, status);
  return MPI_SUCCESS;
}

int MPI_Request_free(MPI_Request* request) {
  if (request == nullptr || !is_req(*request)) return PMPI_Request_free(request);
  return ep_request_free(request);
}

int MPI_Cancel(MPI_Request* request) {
  if (request == nullptr || !is_req(*request)) return PMPI_Cancel(request);
  return ep_cancel(request);
}

int MPI_Start(MPI_Request* request) {
  if (request == nullptr || !is_req(*request)) return PMPI_Start(request);
  return ep_start(request);
}

int MPI_Startall(int count, MPI_Request requests[]) {
  if (count <= 0 || requests == nullptr || !any_ep(count, requests)) {
    return PMPI_Startall(count, requests);
  }
  return ep_startall_call(count, requests);
}

int MPI_Grequest_start(MPI_Grequest_query_function* query_fn, MPI_Grequest_free_function* free_fn,
                       MPI_Grequest_cancel_function* cancel_fn, void* extra_state,
                       MPI_Request* request) {
  // libep's generalized requests: waiting on one sleeps (MPICH's polls its engine).
  if (!libep_running()) {
    return PMPI_Grequest_start(query_fn, free_fn, cancel_fn, extra_state, request);
  }
  const char* call = "MPI_Grequest_start";
  if (query_fn == nullptr || free_fn == nullptr || cancel_fn == nullptr || request == nullptr) {
    return raise_plain(MPI_COMM_SELF, MPI_ERR_ARG, call,
                       "query_fn, free_fn, cancel_fn or request is NULL");
  }
  auto* g = new Greq{query_fn, free_fn, cancel_fn, extra_state};
  EP_Request r = EP_REQUEST_NULL;
  const int rc = EP_Grequest_start(greq_query, greq_free, greq_cancel, g, &r);
  if (rc != EP_SUCCESS) {
    delete g;
    return raise_plain_ep(MPI_COMM_SELF, rc, call);
  }
  return make_request(r, 0, request, call);
}

int MPI_Grequest_complete(MPI_Request request) {
  if (!is_req(request)) return PMPI_Grequest_complete(request);
  EP_Request r = request_of(request);
  if (r == nullptr) return invalid_request(request, "MPI_Grequest_complete");
  const int rc = EP_Grequest_complete(r);
  return rc == EP_SUCCESS ? MPI_SUCCESS : raise_owner(0, rc, "MPI_Grequest_complete");
}

int MPI_Mrecv(void* buf, int count, MPI_Datatype datatype, MPI_Message* message,
              MPI_Status* status) {
  if (message == nullptr || !is_kind<Kind::kMessage>(*message)) {
    return PMPI_Mrecv(buf, count, datatype, message, status);
  }
  return mrecv(buf, count, datatype, message, status, "MPI_Mrecv");
}

int MPI_Mrecv_c(void* buf, MPI_Count count, MPI_Datatype datatype, MPI_Message* message,
                MPI_Status* status) {
  if (message == nullptr || !is_kind<Kind::kMessage>(*message)) {
    return PMPI_Mrecv_c(buf, count, datatype, message, status);
  }
  int n = 0, err = MPI_SUCCESS;
  if (!narrow_count(count, "MPI_Mrecv_c", &n, &err)) return err;
  return mrecv(buf, n, datatype, message, status, "MPI_Mrecv_c");
}

int MPI_Imrecv(void* buf, int count, MPI_Datatype datatype, MPI_Message* message,
               MPI_Request* request) {
  if (message == nullptr || !is_kind<Kind::kMessage>(*message)) {
    return PMPI_Imrecv(buf, count, datatype, message, request);
  }
  return imrecv(buf, count, datatype, message, request, "MPI_Imrecv");
}

int MPI_Imrecv_c(void* buf, MPI_Count count, MPI_Datatype datatype, MPI_Message* message,
                 MPI_Request* request) {
  if (message == nullptr || !is_kind<Kind::kMessage>(*message)) {
    return PMPI_Imrecv_c(buf, count, datatype, message, request);
  }
  int n = 0, err = MPI_SUCCESS;
  if (!narrow_count(count, "MPI_Imrecv_c", &n, &err)) return err;
  return imrecv(buf, n, datatype, message, request, "MPI_Imrecv_c");
}

}  // extern "C"
