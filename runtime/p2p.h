// p2p.h - point-to-point protocols of libep.
//
// What it is: the send and receive paths.  A send to an endpoint of this process
// never touches MPI: small messages (<= EP_EAGER_LIMIT, standard/buffered/ready
// mode) are matched in place by the sender when it can become the receiver's
// matcher (one copy, straight into a posted receive) or queued with a copy of the
// payload; large or synchronous messages are queued as a reference to the sender's
// buffer and copied once by the matcher, and the send completes then.  A send to
// another process is a packet on the progress engine: eager packets carry the
// payload (the send is complete at once); large or synchronous sends carry only a
// header (RTS) and the payload follows on the data comm with MPI_Isend (MPI_Issend
// for synchronous mode), which the receiver's progress thread receives with
// MPI_Irecv straight into the user's buffer once the receive has matched.  A blocking
// EP_Send of a small message to another process takes a short way, inline in its
// entry point (p2p_inline.h).
//
// The receiver's critical path.  A 2-process ping-pong costs MPI's own latency plus
// what the receiving thread runs between MPI_Test finding the packet and its reply's
// MPI_Send: routing (Runtime::on_record), matching (Matcher::arrive_with), delivery
// (deliver_inline below), the way out of EP_Recv and into EP_Send.  That path is kept
// free of calls: the matcher's first-receive case, the delivery, waited_here, the
// context lookup and the send's baton and MPI_Send (Engine::try_send_alone) are inline
// in their headers, and the argument checks are inline with their messages out of
// line.  Measured (a /tmp build that counts instructions with callgrind only between
// those two points, 20,000 hops; each count includes about 16 of its own): 670-733
// instructions per hop before this layout, 498-508 after; 8 B ping-pong against
// MPI_Send/MPI_Recv in alternating runs of the two builds on the same host (10 each,
// 20 segments of 10,000 round trips, 2026-11-26, MPI at 0.20-0.32 us one way):
// libep's ratio fell from 1.48-1.82x (median 1.68x) to 1.42-1.59x (median 1.49x).
// Then (2026-11-26) two steps off that path: the reply's send posts again the receive
// that the waiter's packet left free right after its MPI_Send (progress/engine.h,
// "The posted receives"), so that the next wait's first tests no longer sit behind an
// MPI_Irecv when the reply arrives; and EP_Send checks its arguments at a glance
// (api/p2p.cc), 522-524 -> 507-511 instructions counted as above.  10 alternating runs
// of the builds before and after them: 1.43-1.73x (median 1.54x) -> 1.28-1.39x
// (median 1.36x), lower in every pair, MPI at 0.20-0.31 us one way.
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
// "Delivered on the line" in matching.h), which request_wait polls too.
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
