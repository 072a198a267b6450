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
// Threading: called by the endpoint's thread (one at a time per endpoint).
#ifndef EP_RUNTIME_P2P_H_
#define EP_RUNTIME_P2P_H_

#include "ep/ep.h"
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
bool probe(int source, int tag, Endpoint* ep, EP_Status* status, Envelope** env);
// Receives a message taken by a matched probe.
Request* post_mrecv(void* buf, int count, MPI_Datatype type, const TypeInfo& ti, Envelope* env);
// Cancels a pending receive; true if it was cancelled (then it is complete).
bool cancel_recv(Request* r);

// Matcher callbacks.
// `t` is r->op.target (or the matcher's copy of it).
void deliver(Request* r, const RecvTarget& t, Envelope* e);
Envelope* materialize(Envelope* e);

}  // namespace ep::runtime

#endif  // EP_RUNTIME_P2P_H_
