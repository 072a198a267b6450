// p2p_inline.h - the blocking send's short way, inline into its caller (EP_Send).
//
// What it is: a contiguous standard-mode message to an endpoint of another process
// whose packet fits progress::Engine::kSmallPacketBytes (and not above
// EP_EAGER_LIMIT) is written on the caller's stack and handed to MPI at once (see
// Engine::try_send_alone) - or, to a process of this node with the node transport on,
// written into the destination's ring (runtime/node.h); every other message takes
// runtime::send (p2p.h).  Apart from send()'s generality (modes, requests, local
// peers, datatypes, the call levels between them) this is send()'s path for such a
// message.  It is on the critical path of every 2-process ping-pong.
//
// Threading: the endpoint's thread (the caller holds its entry guard).
//
// Memory ordering: the packet is handed to MPI under the engine's baton (acquire and
// release, engine.h) or through the endpoint's outbox (its lock, outbox.h).
#ifndef EP_RUNTIME_P2P_INLINE_H_
#define EP_RUNTIME_P2P_INLINE_H_

#include <cstdint>
#include <cstring>

#include "progress/engine.h"
#include "runtime/comm.h"
#include "runtime/datatype.h"
#include "runtime/node.h"
#include "runtime/runtime.h"

namespace ep::runtime {

// Writes an eager packet's header (its first kEagerHeaderBytes, runtime.h).
inline void fill_eager_header(char* at, const EpAddr& a, int src_rank, int tag) {
  WireHeader h;
  h.ctx = a.ctx;
  h.dst_local = a.local;
  h.kind = WireHeader::kEager;
  h.sync = 0;
  h.src_rank = src_rank;
  h.tag = tag;
  std::memcpy(at, &h, kEagerHeaderBytes);
}

// A blocking send's packet that could not leave alone (an earlier packet of the
// endpoint still waits, or another thread holds the baton): it joins the outbox,
// which the engine flushes at once if the baton is free (p2p.cc).
void send_packet_queued(Endpoint* ep, int proc, const char* packet, size_t len);

// MPI_Send of a lone packet failed (`call` is the API call): the error, reported.
[[gnu::cold, gnu::noinline]] int lone_send_failed(int mpi_error, const char* call);

// A blocking send's small packet, written on the caller's stack: it leaves from here if
// nothing of the endpoint's waits (Engine::try_send_alone), else through the outbox.
// Returns EP_SUCCESS or the error of a failed MPI_Send.
[[gnu::always_inline]] inline int send_packet_now(Endpoint* ep, int proc, const char* packet,
                                                  size_t len, const char* call) {
  int mpi_error = MPI_SUCCESS;
  if (!engine().try_send_alone(*ep->outbox, proc, packet, len, &mpi_error)) {
    send_packet_queued(ep, proc, packet, len);
    return EP_SUCCESS;
  }
  return mpi_error == MPI_SUCCESS ? EP_SUCCESS : lone_send_failed(mpi_error, call);
}

// The short way (above): EP_SUCCESS (or the error of its MPI_Send) once the message
// left; kNotShort, having done nothing, for any other message (the caller then uses
// send()).  Arguments are already checked.
constexpr int kNotShort = -1;
[[gnu::always_inline]] inline int send_small_remote(const void* buf, int count,
                                                     const TypeInfo& ti, int dest, int tag,
                                                     Endpoint* ep) {
  constexpr int64_t kMaxBytes =
      static_cast<int64_t>(progress::Engine::kSmallPacketBytes - kEagerHeaderBytes);
  if (!ti.contiguous || dest < 0) return kNotShort;  // dest: EP_PROC_NULL
  const int64_t bytes = ti.size * count;
  Runtime* rt = runtime();
  const EpAddr& a = ep->comm->peer(dest);
  if (bytes > kMaxBytes || bytes > rt->config.eager_limit || a.proc == rt->world_rank) {
    return kNotShort;
  }
  if (ep->node != nullptr) {  // a node peer: its ring, not MPI (runtime/node.h)
    const char* data = static_cast<const char*>(buf) + ti.true_lb;
    const int rc = send_node_short(ep, dest, a.proc, data, bytes, tag);
    if (rc != kNotNode) return rc == kNodeGeneral ? kNotShort : rc;
  }
  alignas(8) char packet[progress::Engine::kSmallPacketBytes];
  fill_eager_header(packet, a, ep->rank, tag);
  if (bytes > 0) {
    copy_bytes(packet + kEagerHeaderBytes, static_cast<const char*>(buf) + ti.true_lb,
               static_cast<size_t>(bytes));
  }
  rt->count(rt->counters.remote_eager);
  return send_packet_now(ep, a.proc, packet, kEagerHeaderBytes + static_cast<size_t>(bytes),
                         "EP_Send");
}

}  // namespace ep::runtime

#endif  // EP_RUNTIME_P2P_INLINE_H_
