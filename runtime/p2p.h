// p2p.h - point-to-point protocols of libep.
//
// What it is: the send and receive paths.  A send to an endpoint of this process
// never touches MPI: small messages (<= EP_EAGER_LIMIT, standard/buffered/ready
// mode) are matched in place by the sender when it can become the receiver's
// matcher (one copy, straight into a posted receive) or queued with a copy of the
// payload; large or synchronous messages are queued as a reference to the sender's
// buffer and copied once by the matcher, and the send completes then.  A send to
// another process is a packet on the progress engine: eager packets carry the
// payload (the send is complete at once); large or synchronous sends carry only an
// RTS, and the payload leaves on the data comm straight from the user's buffer into
// the receiver's once the receive has matched and its CTS came back (runtime.h,
// "Rendezvous").  A send to another process of this node, with the node transport on,
// goes through that endpoint's ring in shared memory instead (runtime/node.h): eager
// records carry the payload, larger or synchronous messages an RTS whose payload the
// receiver copies once after the match.  A blocking EP_Send of a small message to
// another process takes a short way, inline in its entry point (p2p_inline.h).  Data is
// packed and unpacked by libep's datatype engine (datatype.h); a payload goes to MPI
// only as bytes (or in a builtin type): one whose buffer has gaps leaves packed at the
// CTS and lands in a drain buffer that is unpacked on arrival, so no derived datatype's
// handle reaches MPI after the call that started its operation.
//
// Memory ordering: requests complete with request_complete (request.h); an envelope
// handed to a matcher is published by the matcher's queue or its line (matching.h).
//
// The receiver's critical path.  A 2-process ping-pong costs MPI's own latency plus
// what the receiving thread runs between MPI_Test finding the packet and its reply's
// MPI_Send: routing (Runtime::on_record), matching (Matcher::arrive_with), delivery
// (deliver_inline below), the way out of EP_Recv and into EP_Send.  That path is kept
// free of calls: the matcher's first-receive case, the delivery, waited_here, the
// context lookup and the send's baton and MPI_Send (Engine::try_send_alone) are inline
// in their headers, and the argument checks are inline with their messages out of
// line (instruction counts and ratios: docs/perf/runtime.md).
//
// Threading: called by the endpoint's thread (one at a time per endpoint).
#ifndef EP_RUNTIME_P2P_H_
#define EP_RUNTIME_P2P_H_

#include <cstdlib>

#include "base/types.h"
#include "runtime/comm.h"
#include "runtime/request.h"

namespace ep::runtime {

enum class SendMode { kStandard, kBuffered, kSynchronous, kReady };

// Starts a send; on success *out is a request (held by user + operation) or, if
// `out` is nullptr, the call waits for completion.  Arguments are already checked.
// `burst`: an application's nonblocking send, which more may follow before its thread
// waits - its packet may wait for them in the outbox (see "Bursts" in
// progress/engine.h); libep's own sends (hidden traffic, Sendrecv) leave at once.
int send(const void* buf, int count, MPI_Datatype type, const TypeInfo& ti, int dest, int tag,
         Endpoint* ep, SendMode mode, Request** out, const char* call, bool burst = false);
// Posts a receive; the request completes when a message matched and arrived.
// `line_wait`: the caller will request_wait() for it at once (a blocking receive): a
// small message from this process may then be delivered on the matcher's line (see
// "Delivered on the line" in matching.h), which request_wait polls too; and the
// request borrows ti's description from the call.  Otherwise the request holds a
// reference on it (runtime/datatype.h, "Lifetime"), as a nonblocking send of a
// rendezvous message does, and a matched receive (post_mrecv) always.
Request* post_recv(void* buf, int count, MPI_Datatype type, const TypeInfo& ti, int source, int tag,
                   Endpoint* ep, bool line_wait = false);
// Probe: true (and *status) if a matching message is waiting; removes it if `env`.
bool probe(int source, int tag, Endpoint* ep, Status* status, Envelope** env);
// The blocking form: waits (runtime/wait.h) until a matching message is there.
bool probe_wait(int source, int tag, Endpoint* ep, Status* status, Envelope** env);
// Receives a message taken by a matched probe.
Request* post_mrecv(void* buf, int count, MPI_Datatype type, const TypeInfo& ti, Envelope* env);
// Cancels a pending receive; true if it was cancelled (then it is complete).
bool cancel_recv(Request* r);

// Persistent requests (MPI 3.1 section 3.9).  A persistent request is a Request of kind
// kPersistent that holds a send's or a receive's arguments, checked and described
// (TypeInfo) once by its EP_*_init call.  Each start runs send() or post_recv() with
// them - what EP_Isend/EP_Irecv run after their checks - and keeps the request of that
// operation in `active`: the engine and the matchers complete that one, never the
// persistent request.  The Wait/Test call that completes the operation releases its
// request and sets `active` back to nullptr (inactive; api/request.cc).
// Lifetime: the persistent request has one holder, the user's handle (persistent_free);
// its active operation has the usual two (request.h, "Lifetime"), the persistent request
// holding the user's side.
// Threading: the handle's user (one thread at a time per request, as MPI requires);
// starts run on the endpoint's thread under its entry guard, like EP_Isend.
//
// A new, inactive persistent request; `send_mode` is a SendMode, or -1 for a receive.
// Arguments are already checked; the request holds a reference on ti's description, and
// each start's operation one of its own: the application may free the datatype.
Request* persistent_new(void* buf, int count, MPI_Datatype type, const TypeInfo& ti, int peer,
                        int tag, Endpoint* ep, int send_mode);
// Starts the inactive persistent request p: its operation's request becomes p->active.
// EP_SUCCESS, or the error of a send that failed to start (a buffered send with no room,
// a failed MPI call; reported as `call`, p stays inactive).  Inline: a start must cost no
// more than the EP_Isend/EP_Irecv it repeats.
[[gnu::always_inline]] inline int persistent_start(Request* p, const char* call) {
  Endpoint* ep = p->owner;
  Request* r = nullptr;
  if (p->send_mode < 0) {
    r = post_recv(p->buf, p->count, p->type, p->ti, p->op.source, p->op.tag, ep);
  } else {
    const int err = send(p->buf, p->count, p->type, p->ti, p->op.source, p->op.tag, ep,
                         static_cast<SendMode>(p->send_mode), &r, call, /*burst=*/true);
    if (err != EP_SUCCESS) return err;
  }
  // A counted reference, as every holder of a handler takes (~Request drops it).
  if (!r->immortal) errhandler_assign(&r->errhandler, ep->errhandler);  // (the shared one never fails)
  p->active = r;
  return EP_SUCCESS;
}
// EP_Request_free of a persistent request: an active operation is released as
// EP_Request_free releases a nonpersistent request (it completes on its own and is
// recycled then); p itself is recycled at once - nothing of the operation refers to it.
void persistent_free(Request* p);

// A rendezvous CTS arrived from process `proc` (runtime.h, "Rendezvous"): the payload of
// the send request `cookie` leaves now, under `data_tag`.  On the baton holder.
void start_rendezvous_payload(int proc, int data_tag, uint64_t cookie);

// Matcher callbacks.
// `t` is r->op.target (or the matcher's copy of it).
void deliver(Request* r, const RecvTarget& t, Envelope* e);
Envelope* materialize(Envelope* e);
// The end of an eager delivery of n bytes (deliver and deliver_inline): the status,
// then the envelope's block freed - it may hold *e itself, so after the last read of e.
inline void eager_delivered(Request* r, Envelope* e, int64_t n, int error) {
  r->status.EP_SOURCE = e->src_rank;
  r->status.EP_TAG = e->tag;
  r->status.EP_ERROR = error;
  r->status.ep_bytes_ = n;
  if (e->block != nullptr) std::free(e->block);
}
// deliver(), with its most common case inline: an eager message that fits a contiguous
// receive buffer, delivered by the very thread blocked on the receive (a waiter
// driving the engine finds its own message: every blocking receive from another
// process).  It goes straight into the buffer (no inline payload: the waiter's own
// cache has the buffer) and completes the request without an RMW.  The runtime's
// matchers take this form on the paths of arrivals (Matcher::try_deliver_direct_with).
[[gnu::always_inline]] inline void deliver_inline(Request* r, const RecvTarget& t, Envelope* e) {
  if (e->kind != Envelope::kEager || t.elem == 0 || e->bytes > t.cap || !waited_here(r)) {
    deliver(r, t, e);
    return;
  }
  const int64_t n = e->bytes;
  const int64_t whole = whole_elements(n, t.elem);  // as unpack(): whole elements only
  if (whole > 0) copy_bytes(t.dst, e->data, static_cast<size_t>(whole));
  eager_delivered(r, e, n, EP_SUCCESS);
  request_complete_waited(r);
}
// deliver_inline as what Matcher's *_with functions take: a function object, whose
// call is direct at any optimization level (a function pointer's is not).
struct DeliverInline {
  [[gnu::always_inline]] void operator()(Request* r, const RecvTarget& t, Envelope* e) const {
    deliver_inline(r, t, e);
  }
};

}  // namespace ep::runtime

#endif  // EP_RUNTIME_P2P_H_
