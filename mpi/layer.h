// layer.h - libep_mpi's objects: what an MPI handle of libep stands for, how a call finds
// its endpoint, and how an error reaches the application.
//
// What it is: libep_mpi defines the MPI_ functions of an application linked with it
// ahead of MPICH.  Each takes its handle arguments apart: a libep handle (handles.h) is
// served by libep's EP_ function, anything else goes to MPICH's PMPI_ function
// unchanged.  This header holds the records behind libep's communicator and window
// handles and the helpers every wrapper uses:
//   - Comm: one endpoint (ep), the handle the application holds, its error handler, its
//     attributes.  A threadcomm's handle (MPIX_Threadcomm_init) has a shared record
//     (tc set, no ep) whose endpoints the region's threads bind to in
//     MPIX_Threadcomm_start: endpoint() answers each thread with its own.
//   - Win: one endpoint's window, its error handler, attributes and name.
//   - requests, groups and matched messages are libep's own objects in the tables
//     (handles.h); a request's slot names the communicator or window it came from
//     (owner), whose error handler its completion errors go to.
//   - Errh: an error handler as libep_mpi applies it.  libep's own error handler of every
//     libep object is EP_ERRORS_RETURN; the MPI error handler lives here, so that the
//     application's handler sees the MPI handle and the MPI error class.
// Error classes: an EP_ERR_* code becomes the MPI class of the same meaning (ep_class);
// a failing call returns the class itself, after the object's error handler ran.
//
// Threading: as MPI's (and libep's) rules - one thread at a time per endpoint (a
// Comm's attrs and a Win's attrs and name belong to that thread); error handlers,
// keyvals and the registries are process objects, read without a lock.  A threadcomm's
// bindings are thread-local.
//
// Memory ordering: records are published through the handle tables (release/acquire,
// handles.h).  Comm::errh and Win::errh are atomic pointers to immutable Errh records
// (relaxed: a handler set by one thread and raised by another is ordered by the
// application's own synchronization, as in MPI).  The registries are push-only lists
// whose nodes are immutable after a release CAS (acquire when walking).
#ifndef EP_MPI_LAYER_H_
#define EP_MPI_LAYER_H_

#include <mpi.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ep/ep.h"
#include "mpi/handles.h"

namespace ep::mpi {

// ---- error handlers ---------------------------------------------------------------------

struct Errh {
  enum Type { kFatal, kReturn, kAbort, kCommFn, kWinFn };
  MPI_Errhandler handle;
  Type type;
  MPI_Comm_errhandler_function* comm_fn;
  MPI_Win_errhandler_function* win_fn;
  // Set once a libep object used it: MPI_Errhandler_free then leaves MPICH's object
  // alone (libep_mpi's objects hold no MPICH reference to it).
  mutable std::atomic<bool> on_ep{false};
  const Errh* next;  // the registry's link (older entry)
};

const Errh* errh_fatal();
const Errh* errh_return();
// The record of a predefined or registered error handler (the newest registration of a
// handle value), or null.
const Errh* find_errh(MPI_Errhandler h);
void register_errh(MPI_Errhandler h, MPI_Comm_errhandler_function* comm_fn,
                   MPI_Win_errhandler_function* win_fn);
// The error handler of a plain MPI communicator, as a record (errh_fatal() if it is none
// of libep_mpi's knowledge).
const Errh* errh_of_mpi_comm(MPI_Comm comm);

// ---- keyvals ------------------------------------------------------------------------------

struct Keyval {
  int keyval;
  bool win;  // a window keyval, else a communicator keyval
  void* copy_fn;
  void* delete_fn;
  void* extra_state;
  const Keyval* next;
};
const Keyval* find_keyval(int keyval, bool win);
void register_keyval(int keyval, bool win, void* copy_fn, void* delete_fn, void* extra_state);

struct Attr {
  int keyval;
  void* value;
};

// ---- records ------------------------------------------------------------------------------

struct ThreadComm;

struct Comm {
  EP_Comm ep = EP_COMM_NULL;  // the endpoint; EP_COMM_NULL on a threadcomm's shared record
  int handle = 0;             // the MPI_Comm the application holds
  ThreadComm* tc = nullptr;   // set on a threadcomm's shared record only
  Comm* shared = this;        // where errh and (for a threadcomm) the name live
  std::atomic<const Errh*> errh{nullptr};  // used on `shared` only
  std::vector<Attr> attrs;                 // this endpoint's attributes
  int tag_ub = 0;                          // MPI_TAG_UB's value (its address is returned)
  // The threadcomm endpoint whose region this communicator was derived in (itself for a
  // threadcomm endpoint); null outside threadcomms.  Such a region endpoint lists what
  // was derived from it in `derived`; MPIX_Threadcomm_finish frees what is left.
  Comm* region = nullptr;
  std::vector<Comm*> derived;
};

struct Win {
  EP_Win ep = EP_WIN_NULL;
  int handle = 0;
  std::atomic<const Errh*> errh{nullptr};
  std::vector<Attr> attrs;
  std::string name;
};

// A threadcomm (threadcomm.cc): this process's endpoints of one endpoints communicator,
// bound to the region's threads in order of arrival in MPIX_Threadcomm_start.
struct ThreadComm {
  int n = 0;                   // this process's threads
  int size = 0;                // endpoints in all processes
  std::vector<Comm*> ep;       // endpoint records by thread number
  std::vector<EP_Comm> local;  // a process-local endpoints communicator: start/finish barriers
  std::unique_ptr<std::atomic<bool>[]> bound;  // thread number i is in a region
  std::atomic<uint64_t> arrivals{0};           // MPIX_Threadcomm_start calls so far
  std::mutex name_mu;                          // guards name (set and read outside hot paths)
  std::string name;
};

// The endpoint record a threadcomm's shared record stands for in this thread, or null
// outside the thread's region.
Comm* bound_endpoint(const Comm* shared);
void bind_endpoint(const Comm* shared, Comm* mine);
void unbind_endpoint(const Comm* shared);

// ---- errors -------------------------------------------------------------------------------

// The MPI error class of an EP_ERR_* code (or of a generalized request's callback code,
// see kGreqCode).
int ep_class(int ep_code);
// Generalized requests: libep passes a callback's return code through; libep_mpi's
// callbacks return kGreqCode + the MPI code of the application's callback, so that no
// MPI code is taken for an EP_ERR_* code.
constexpr int kGreqCode = 1 << 20;

// Raises the EP_ERR_* code of a libep call on c's (w's) error handler; returns the class.
int raise(const Comm* c, int ep_code, const char* call);
int raise_win(const Win* w, int ep_code, const char* call);
// Raises an error libep_mpi found itself (MPI class cls), with a message.
int raise_class(const Comm* c, int cls, const char* call, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
int raise_win_class(const Win* w, int cls, const char* call, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
// An error with no libep object to consult (a libep handle that names nothing, a plain
// parent communicator): raised on MPI_COMM_WORLD's error handler, as MPICH does for a
// null communicator; `comm`, when it is a plain communicator, takes its place.
int raise_plain(MPI_Comm comm, int cls, const char* call, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
// raise_plain for the EP_ERR_* code of a libep call (with libep's message).
int raise_plain_ep(MPI_Comm comm, int ep_code, const char* call);
// Raises the error of a request's completion on the handler of the object it came from.
int raise_owner(int owner, int ep_code, const char* call);
// Calls the handler of c (w) with an MPI code the application gives (MPI_*_call_errhandler).
int call_errh(const Comm* c, int code);
int call_errh_win(const Win* w, int code);

// ---- lookups --------------------------------------------------------------------------------

Comm* endpoint_slow(Comm* c, int h, const char* call, int* err);

// The endpoint record behind communicator handle h (a libep handle) for the calling
// thread; null with *err set (and raised) when there is none.
inline Comm* endpoint(int h, const char* call, int* err) {
  Comm* c = static_cast<Comm*>(table(Kind::kComm).get(h));
  if (c != nullptr && c->tc == nullptr) return c;
  return endpoint_slow(c, h, call, err);
}

// The generated wrappers' lookups: the record of a plain endpoint handle (null for a
// threadcomm's handle or a handle that names nothing), the calling thread's endpoint of
// a threadcomm handle (null if none), and the error of a handle with no endpoint here.
inline Comm* endpoint_fast(int h) {
  Comm* c = static_cast<Comm*>(table(Kind::kComm).get(h));
  return c != nullptr && c->tc == nullptr ? c : nullptr;
}
Comm* endpoint_bound(int h);
int no_endpoint(int h, const char* call);
inline Win* window_fast(int h) { return static_cast<Win*>(table(Kind::kWin).get(h)); }
int no_window(int h, const char* call);
// raise/raise_class/raise_win/raise_win_class from the handle (the record looked up again).
int raise_comm(int h, int ep_code, const char* call);
int raise_comm_class(int h, int cls, const char* call, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
int raise_win_handle(int h, int ep_code, const char* call);
int raise_win_handle_class(int h, int cls, const char* call, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

// The shared or endpoint record of h, without binding (calls a threadcomm answers
// outside its regions: size, names, error handlers, attributes of the shared record);
// null with *err set when h names nothing.
Comm* comm_record(int h, const char* call, int* err);

Win* window(int h, const char* call, int* err);

// A group argument given to a libep call: libep's group, MPI_GROUP_EMPTY as
// EP_GROUP_EMPTY; any other MPI group is MPI_ERR_GROUP (false, raised on c).
bool ep_group(const Comm* c, MPI_Group g, EP_Group* out, const char* call, int* err);
bool ep_group_win(const Win* w, MPI_Group g, EP_Group* out, const char* call, int* err);

// ---- making handles -----------------------------------------------------------------------

// A new communicator handle for endpoint ep (EP_COMM_NULL gives MPI_COMM_NULL), made
// from parent (error handler inherited; derived inside a threadcomm region: recorded
// there) or, for parent null, with error handler errh.  Returns MPI_SUCCESS or an error
// class (raised on parent).
int make_comm(EP_Comm ep, Comm* parent, const Errh* errh, MPI_Comm* out, const char* call);
// A record and handle for a communicator whose endpoint libep fills in later
// (MPI_Comm_idup: rec->ep is written when the request completes); null if none is free.
Comm* new_comm_record(Comm* parent, const Errh* errh);
// Runs the delete callbacks of c's attributes and drops them; MPI code of the first
// failure (the attributes not yet deleted stay).
int delete_attrs(Comm* c);
// Frees an endpoint record and its handle: attributes' delete callbacks, EP_Comm_free.
// Returns MPI_SUCCESS or the class of the first failure (not raised).
int free_comm(Comm* c, const char* call);
// Copies c's attributes to n by their copy callbacks (MPI_Comm_dup); MPI code.
int copy_attrs(const Comm* c, Comm* n);

int make_win(EP_Win ep, Comm* parent, MPI_Win* out, const char* call);

// Storage a nonblocking call's arguments need until the request is freed (the int copies
// of a large-count call's count and displacement arrays).
struct Keep {
  std::vector<std::vector<int>> arrays;
};
int request_table_full(EP_Request r, int owner, const char* call, Keep* keep);
// A new request handle for r; keep (owned from now on) is freed with the request.
inline int make_request(EP_Request r, int owner, MPI_Request* out, const char* call,
                        Keep* keep = nullptr) {
  const int h = table(Kind::kRequest).make(r, owner, keep);
  if (h == 0) return request_table_full(r, owner, call, keep);
  *out = h;
  return MPI_SUCCESS;
}
void delete_keep(void* keep);
// The slot of a libep request handle whose request is live, else null: one lookup serves
// the request (obj), its owner and its release.
inline Slot* request_slot(int h) {
  Slot* s = table(Kind::kRequest).slot(index_of(h));
  // acquire: pairs with the release store in Table::make.
  return s != nullptr && s->obj.load(std::memory_order_acquire) != nullptr ? s : nullptr;
}
// Frees a request handle (and what it keeps) through its slot.
inline void release_request(Slot* s, int h) {
  // relaxed: written before the handle was published (make), read by its user.
  if (void* keep = s->aux.load(std::memory_order_relaxed)) delete_keep(keep);
  table(Kind::kRequest).release_slot(s, index_of(h));
}
inline void release_request(int h) { release_request(table(Kind::kRequest).slot(index_of(h)), h); }
// The communicator or window a request handle came from (0 for none).
inline int request_owner(int h) {
  Slot* s = table(Kind::kRequest).slot(index_of(h));
  return s == nullptr ? 0 : s->owner.load(std::memory_order_relaxed);  // relaxed: ordered
  // by the acquire load of obj in request_of() (the caller looked the request up first)
}
int invalid_request(int h, const char* call);
int make_group(EP_Group g, MPI_Group* out);
int make_message(EP_Message m, int owner, MPI_Message* out);

// The EP_Request behind a libep request handle, or null.
inline EP_Request request_of(int h) {
  return static_cast<EP_Request>(table(Kind::kRequest).get(h));
}
inline EP_Group group_of(int h) { return static_cast<EP_Group>(table(Kind::kGroup).get(h)); }

// A libep handle given to a call libep has no counterpart of: error class cls on the
// object's error handler.
int unsupported(int h, int cls, const char* call);

// The length of a communicator's count and displacement arrays: its size, or for an
// intercommunicator its remote size (local_count: the local size always).
int peer_count(const Comm* c);
int local_count(const Comm* c);

// Copies n MPI_Count or MPI_Aint values into ints; false if one does not fit.  A null
// array stays null.
template <class T>
bool narrow(const T* in, int n, std::vector<int>* out) {
  if (in == nullptr) return true;
  out->resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (in[i] < -2147483647LL - 1 || in[i] > 2147483647LL) return false;
    (*out)[static_cast<size_t>(i)] = static_cast<int>(in[i]);
  }
  return true;
}
template <class T>
bool narrow(const T* in, int n, const std::unique_ptr<Keep>& keep, int** out) {
  *out = nullptr;
  if (in == nullptr) return true;
  keep->arrays.emplace_back();
  if (!narrow(in, n, &keep->arrays.back())) return false;
  *out = keep->arrays.back().data();
  return true;
}

// Whether libep runs (MPI_Init started it).
bool libep_running();

}  // namespace ep::mpi

#endif  // EP_MPI_LAYER_H_
