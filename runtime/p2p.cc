#include "runtime/p2p.h"

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>

#include "base/mpi_calls.h"
#include "runtime/errhandler.h"
#include "runtime/error.h"
#include "runtime/node.h"
#include "runtime/p2p_inline.h"
#include "runtime/runtime.h"

namespace ep::runtime {
namespace {

TypeInfo packed_info() {
  TypeInfo ti;
  ti.size = 1;
  ti.extent = 1;
  ti.true_lb = 0;
  ti.contiguous = true;
  return ti;
}

// Hands an envelope to a local endpoint: matched in place when possible.  Inlined
// into the eager path below, as that path is into send(): a small local message's
// send is one ping-pong's critical path, and each call level costs its prologue,
// epilogue and arguments (docs/perf/runtime.md).
[[gnu::always_inline]] inline void deliver_local(Endpoint* ep, Endpoint* dest, Envelope* e) {
  if (dest->matcher.try_deliver_direct(e)) {
    Runtime* rt = runtime();
    rt->count(rt->counters.direct_matches);
    return;
  }
  dest->matcher.push(ep->token_for(dest), materialize(e));
}

// Eager: matched in place (one copy) or copied into an owned envelope; complete then.
// A small message whose buffer has gaps is packed on the stack first (materialize()
// copies it if it has to wait).
constexpr int64_t kStackPackBytes = 256;
[[gnu::always_inline]] inline void send_local_eager(const void* buf, int count, const TypeInfo& ti,
                                                    int tag, Endpoint* ep, Endpoint* dest,
                                                    Request* r) {
  const int64_t bytes = ti.size * count;
  Envelope e(Envelope::EagerOnly{});
  e.src_rank = ep->rank;
  e.tag = tag;
  e.bytes = bytes;
  alignas(16) char packed[kStackPackBytes];  // a small message's packed copy
  if (ti.contiguous || bytes == 0) {
    e.data = static_cast<const char*>(buf) + ti.true_lb;
  } else if (bytes <= kStackPackBytes) {  // (copied again only if it has to wait)
    pack(buf, count, ti, packed);
    e.data = packed;
  } else {
    e.block = std::malloc(static_cast<size_t>(bytes));
    pack(buf, count, ti, e.block);
    e.data = static_cast<const char*>(e.block);
  }
  Runtime* rt = runtime();
  rt->count(rt->counters.local_eager);
  deliver_local(ep, dest, &e);
  if (r != nullptr) request_complete(r);
}

// Rendezvous: the matcher copies from our buffer and then completes r.  The envelope
// borrows r's type description (held by r, or by the blocked sender's call).
[[gnu::noinline]] void send_local_rndv(const void* buf, int count, const TypeInfo& ti, int tag,
                                       Endpoint* ep, Endpoint* dest, Request* r) {
  Envelope* e = static_cast<Envelope*>(std::malloc(sizeof(Envelope)));
  new (e) Envelope;
  e->kind = Envelope::kLocalRndv;
  e->owned = true;
  e->block = e;
  e->src_rank = ep->rank;
  e->tag = tag;
  e->bytes = ti.size * count;
  e->sbuf = buf;
  e->scount = count;
  e->sti = ti;
  e->sreq = r;
  Runtime* rt = runtime();
  rt->count(rt->counters.local_rndv);
  deliver_local(ep, dest, e);
}

// Writes a packet header: all of it for a rendezvous header, the first
// kEagerHeaderBytes for an eager packet (runtime.h).
void fill_header(char* at, const EpAddr& a, Endpoint* ep, bool rendezvous, bool sync, int tag,
                 int64_t bytes, int data_tag, const Request* cookie = nullptr) {
  if (!rendezvous) {  // an eager packet is never synchronous (sync goes as a rendezvous)
    fill_eager_header(at, a, ep->rank, tag);
    return;
  }
  WireHeader h{};
  h.ctx = a.ctx;
  h.dst_local = a.local;
  h.kind = WireHeader::kRts;
  h.sync = sync;
  h.src_rank = ep->rank;
  h.tag = tag;
  h.bytes = bytes;
  h.data_tag = data_tag;
  h.cookie = reinterpret_cast<uint64_t>(cookie);
  std::memcpy(at, &h, sizeof(WireHeader));
}

// Every packet to another process goes through the endpoint's outbox, which keeps
// them in send order (progress/outbox.h): small ones are copied into a batch, the
// others travel alone.  A blocking send starts its packet at once if nobody else
// progresses (latency); a nonblocking one leaves it there, so that a burst of them
// goes out as one bundle with the next pass (the caller's own next wait, or the
// progress thread, which submit() wakes).
int send_remote(const void* buf, int count, MPI_Datatype type, const TypeInfo& ti, int tag,
                Endpoint* ep, const EpAddr& a, bool rendezvous, bool sync, bool blocking,
                bool burst, Request* r, const char* call) {
  Runtime* rt = runtime();
  int64_t bytes = ti.size * count;
  size_t len = rendezvous ? sizeof(WireHeader) : kEagerHeaderBytes + static_cast<size_t>(bytes);
  if (!rendezvous) {
    rt->count(rt->counters.remote_eager);
    auto write = [&](char* p) {
      fill_header(p, a, ep, false, sync, tag, bytes, 0);
      pack(buf, count, ti, p + kEagerHeaderBytes);
    };
    if (blocking && len <= progress::Engine::kSmallPacketBytes) {
      alignas(8) char packet[progress::Engine::kSmallPacketBytes];
      write(packet);
      const int err = send_packet_now(ep, a.proc, packet, len, call);  // p2p_inline.h
      if (err != EP_SUCCESS) {
        if (r != nullptr) request_complete(r);  // (nothing waits on it: ours, or buffered)
        return err;
      }
    } else {
      bool submit;
      if (progress::Outbox::fits(len)) {
        submit = ep->outbox->append(a.proc, len, write, burst && !blocking);
      } else {
        char* packet = static_cast<char*>(std::malloc(len));
        write(packet);
        submit = ep->outbox->append_alone(a.proc, packet, len);
      }
      engine().send_outbox(ep->outbox, submit, /*now=*/blocking);
    }
    if (r != nullptr) request_complete(r);  // the data was copied: complete
    return EP_SUCCESS;
  }
  // Rendezvous (runtime.h): the RTS as a packet; the payload leaves on the receiver's
  // CTS (start_rendezvous_payload), from the buffer the request keeps.
  rt->count(rt->counters.remote_rndv);
  r->needs_engine = true;
  r->buf = const_cast<void*>(buf);
  r->count = count;
  r->type = type;
  r->ti = ti;  // held by r for a nonblocking send (send())
  char* packet = static_cast<char*>(std::malloc(len));
  fill_header(packet, a, ep, true, sync, tag, bytes, engine().next_data_tag(), r);
  engine().send_outbox(ep->outbox, ep->outbox->append_alone(a.proc, packet, len),
                       /*now=*/blocking);
  return EP_SUCCESS;
}

// `n` bytes at `buf` as the engine's MPI_Isend/MPI_Irecv takes them: MPI_BYTEs up to
// INT_MAX, beyond that one element of a committed type of exactly n bytes (made once per
// size and kept: such payloads are few and their sizes fewer).
void bytes_as_mpi(void* buf, int64_t n, progress::Command* c) {
  c->buf = buf;
  if (n <= INT_MAX) {
    c->count = static_cast<int>(n);
    c->type = MPI_BYTE;
    return;
  }
  static std::mutex mu;
  static auto* made = new std::map<int64_t, MPI_Datatype>;  // never destroyed (MPI owns them)
  std::lock_guard<std::mutex> lock(mu);
  MPI_Datatype& t = (*made)[n];
  if (t == MPI_DATATYPE_NULL) {
    constexpr int64_t kGiB = int64_t{1} << 30;
    MPI_Datatype gib = MPI_DATATYPE_NULL;
    EP_MPI(MPI_Type_contiguous(static_cast<int>(kGiB), MPI_BYTE, &gib));
    int blocks[2] = {static_cast<int>(n / kGiB), static_cast<int>(n % kGiB)};
    MPI_Aint disps[2] = {0, static_cast<MPI_Aint>(n / kGiB * kGiB)};
    MPI_Datatype types[2] = {gib, MPI_BYTE};
    EP_MPI(MPI_Type_create_struct(2, blocks, disps, types, &t));
    EP_MPI(MPI_Type_commit(&t));
    EP_MPI(MPI_Type_free(&gib));
  }
  c->count = 1;
  c->type = t;
}

// The MPI form of a rendezvous payload (buf, count, type) for the engine's MPI_Isend or
// MPI_Irecv: the type itself when it is builtin (never freed), the bytes of a
// contiguous one; false when the buffer has gaps (the caller packs or drains).  A
// derived type's handle never reaches MPI after the call that started the operation:
// the application may free it meanwhile.
bool payload_as_mpi(void* buf, int count, MPI_Datatype type, const TypeInfo& ti,
                    progress::Command* c) {
  if (is_builtin_type(type) && ti.contiguous) {
    c->buf = buf;
    c->count = count;
    c->type = type;
    return true;
  }
  if (!ti.contiguous) return false;
  bytes_as_mpi(static_cast<char*>(buf) + ti.true_lb, ti.size * count, c);
  return true;
}

}  // namespace

void start_rendezvous_payload(int proc, int data_tag, uint64_t cookie) {
  Request* r = reinterpret_cast<Request*>(cookie);  // ours: the RTS carried it there and back
  if (r->kind == RequestKind::kBsend) {
    r->payload_leaving = true;
    r->bsend->sending();
  }
  progress::Command d;
  d.kind = progress::Command::kSendData;
  d.peer = proc;
  d.data_tag = data_tag;
  if (!payload_as_mpi(r->buf, r->count, r->type, r->ti, &d)) {
    // Gaps: a packed copy leaves instead (freed with the request, as a drain buffer).
    const int64_t bytes = r->ti.size * r->count;
    r->drain_buf = static_cast<char*>(std::malloc(static_cast<size_t>(bytes)));
    pack(r->buf, r->count, r->ti, r->drain_buf);
    bytes_as_mpi(r->drain_buf, bytes, &d);
  }
  d.done = r;
  engine().submit_from_pass(d);
}

int lone_send_failed(int mpi_error, const char* call) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  EP_MPI(MPI_Error_string(mpi_error, text, &len));
  return fail(from_mpi(mpi_error), call, "MPI_Send failed: %s", text);
}

void send_packet_queued(Endpoint* ep, int proc, const char* packet, size_t len) {
  const bool submit = ep->outbox->append(proc, len, [&](char* at) { copy_bytes(at, packet, len); });
  engine().send_outbox(ep->outbox, submit, /*now=*/true);
}

namespace {

// What a send hands to its protocol: the user's buffer, or the packed copy in the
// attached buffer for a buffered send.
struct Payload {
  const void* buf;
  int count;
  MPI_Datatype type;
  TypeInfo ti;
};

// A buffered send's copy: a segment of the attached buffer (its internal request
// releases it once the message left).  MPI 3.1 section 3.6.2's model: before reporting
// the buffer full, reclaim the space of buffered messages that have left, and let those
// that can leave do so: a pass that tests every outstanding MPI request and takes in the
// CTSs that arrived (each starts a payload), then wait for releases while payloads are
// leaving.  A message whose receiver has not matched cannot leave: its space stays.
int buffer_message(int64_t bytes, Payload* p, Request** bsend_req, const char* call) {
  Runtime* rt = runtime();
  void* segment = rt->bsend.allocate(bytes);
  if (segment == nullptr && rt->bsend.attached()) {
    engine().progress_now();
    segment = rt->bsend.allocate_or_wait(bytes);
  }
  if (segment == nullptr) {
    return fail(EP_ERR_BUFFER, call,
                rt->bsend.attached()
                    ? "%lld bytes plus EP_BSEND_OVERHEAD do not fit in the free part of the "
                      "attached buffer"
                    : "%lld bytes to buffer but no buffer is attached (EP_Buffer_attach)",
                static_cast<long long>(bytes));
  }
  pack(p->buf, p->count, p->ti, segment);
  *p = Payload{segment, static_cast<int>(bytes), MPI_PACKED, packed_info()};
  Request* r = request_new(RequestKind::kBsend, /*user_handle=*/false);
  r->bsend = &rt->bsend;
  r->segment = segment;
  *bsend_req = r;
  return EP_SUCCESS;
}

// To an endpoint of this process (never MPI).
void send_local(const Payload& p, int dest, int tag, Endpoint* ep, bool rendezvous, Request* r) {
  Endpoint* d = local_peer(ep, dest);
  if (d == nullptr) {  // the destination's fragment was freed: nobody can receive this
    Runtime* rt = runtime();
    rt->count(rt->counters.dropped_packets);
    if (r != nullptr) request_complete(r);
  } else if (rendezvous) {
    send_local_rndv(p.buf, p.count, p.ti, tag, ep, d, r);
  } else {
    send_local_eager(p.buf, p.count, p.ti, tag, ep, d, r);
  }
}

}  // namespace

namespace {

// send() to another process: the node way if both endpoints have rings (node.h), else
// MPI.  *r: the operation's request (as in send()).  Out of line: the in-process path
// keeps send()'s frame small.
[[gnu::noinline]] int send_other_process(const Payload& p, int64_t bytes, Request* bsend_req,
                                         bool sync, const EpAddr& a, int dest, int tag,
                                         Endpoint* ep, bool blocking, bool burst, const char* call,
                                         Request** r) {
  Runtime* rt = runtime();
  NodeRoute route;
  const bool node = ep->node != nullptr && node_route(ep, dest, a.proc, &route);
  // A packet to another process holds at most Engine::kMaxPacketBytes (its receives are
  // posted in advance with that size), an eager record at most half its ring: a larger
  // eager message goes as a rendezvous.
  const bool rendezvous =
      sync || bytes > rt->config.eager_limit ||
      (node ? bytes > node_eager_max(route)
            : bytes > static_cast<int64_t>(progress::Engine::kMaxPacketBytes - sizeof(WireHeader)));
  *r = bsend_req != nullptr ? bsend_req
       : rendezvous         ? request_new(RequestKind::kSend, /*user_handle=*/true)
                            : nullptr;
  // A rendezvous send that returns before its payload left keeps the description.
  if (*r != nullptr && bsend_req == nullptr && !blocking) request_hold_type(*r, p.ti);
  if (node) return send_node(p.buf, p.count, p.type, p.ti, tag, ep, route, rendezvous, *r, call);
  return send_remote(p.buf, p.count, p.type, p.ti, tag, ep, a, rendezvous, sync, blocking, burst,
                     *r, call);
}

}  // namespace

int send(const void* buf, int count, MPI_Datatype type, const TypeInfo& ti, int dest, int tag,
         Endpoint* ep, SendMode mode, Request** out, const char* call, bool burst) {
  Runtime* rt = runtime();
  if (dest == kProcNull) {
    if (out != nullptr) *out = completed_send_request();
    return EP_SUCCESS;
  }
  const int64_t bytes = ti.size * count;
  Payload p{buf, count, type, ti};
  Request* bsend_req = nullptr;
  if (mode == SendMode::kBuffered) {
    if (const int err = buffer_message(bytes, &p, &bsend_req, call); err != EP_SUCCESS) return err;
  }
  const bool sync = mode == SendMode::kSynchronous;
  const EpAddr& a = ep->comm->peer(dest);
  // The operation's request: the user's one, or the internal one of a buffered send
  // (then the user's completes at once: the data was copied).  An eager send completes
  // in this call, so its user gets the shared complete request instead.
  Request* r;
  if (a.proc == rt->world_rank) {
    const bool rendezvous = sync || bytes > rt->config.eager_limit;
    r = bsend_req != nullptr ? bsend_req
        : rendezvous         ? request_new(RequestKind::kSend, /*user_handle=*/true)
                             : nullptr;
    // A rendezvous send that returns before its payload left keeps the description.
    if (r != nullptr && bsend_req == nullptr && out != nullptr) request_hold_type(r, p.ti);
    send_local(p, dest, tag, ep, rendezvous, r);
  } else if (const int err = send_other_process(p, bytes, bsend_req, sync, a, dest, tag, ep,
                                                /*blocking=*/out == nullptr, burst, call, &r);
             err != EP_SUCCESS) {
    return err;
  }
  if (out != nullptr) {
    *out = r != nullptr && bsend_req == nullptr ? r : completed_send_request();
    return EP_SUCCESS;
  }
  if (r == nullptr || bsend_req != nullptr) return EP_SUCCESS;
  request_wait(r);  // a blocking send of a rendezvous message: wait, then drop ours
  const int err = r->status.EP_ERROR;
  if (r->mpi_error != MPI_SUCCESS) report_mpi_failure(r, call);
  request_unref(r);
  return err;
}

namespace {
// A receive request's buffer description; for a contiguous type also the MatchOp's
// destination and capacity (the in-place delivery reads only those).
// `hold`: the call returns before the receive completes (its request keeps the type's
// description).
Request* new_recv(void* buf, int count, MPI_Datatype type, const TypeInfo& ti, bool hold) {
  Request* r = request_new(RequestKind::kRecv, /*user_handle=*/true);
  r->buf = buf;
  r->count = count;
  r->type = type;
  r->ti = ti;
  if (hold) request_hold_type(r, ti);
  if (ti.contiguous && ti.size > 0 && ti.size <= UINT32_MAX) {
    r->op.target.elem = static_cast<uint32_t>(ti.size);
    r->op.target.dst = static_cast<char*>(buf) + ti.true_lb;
    r->op.target.cap = ti.size * count;
  }
  return r;
}
}  // namespace

Request* post_recv(void* buf, int count, MPI_Datatype type, const TypeInfo& ti, int source, int tag,
                   Endpoint* ep, bool line_wait) {
  Request* r = new_recv(buf, count, type, ti, /*hold=*/!line_wait);
  if (source == kProcNull) {
    r->status.EP_SOURCE = kProcNull;
    r->status.EP_TAG = kAnyTag;
    request_complete(r);
    return r;
  }
  r->owner = ep;
  if (const CommShared* c = ep->comm; c->multi_process) {
    // Which ways the message may take: MPI (the waiter drives the engine), the node's
    // rings (the waiter drains the endpoint's ring), or this process only.
    const int world = runtime()->world_rank;
    if (ep->node == nullptr) {
      r->needs_engine = source == kAnySource || c->peer(source).proc != world;
    } else if (source == kAnySource) {
      r->needs_node = c->node_peers;
      r->needs_engine = c->off_node;
    } else if (const int proc = c->peer(source).proc; proc != world) {
      r->needs_node = runtime()->node.peer(proc) != nullptr;
      r->needs_engine = !r->needs_node;
    }
  }
  r->op.kind = MatchOp::kRecv;
  r->op.source = source;
  r->op.tag = tag;
  // Only the owner's own matcher line is polled: messages from other processes
  // complete the request (a waiter driving the engine or draining its ring watches its
  // state).
  r->op.line_wait = line_wait && !r->needs_engine && !r->needs_node && r->op.target.elem != 0;
  ep->matcher.post(&r->op);
  return r;
}

Request* persistent_new(void* buf, int count, MPI_Datatype type, const TypeInfo& ti, int peer,
                        int tag, Endpoint* ep, int send_mode) {
  Request* p = request_new(RequestKind::kPersistent, /*user_handle=*/true);
  // Never waited on itself (the family waits on p->active); complete, so that a wait that
  // reached it anyway would return at once.  relaxed: not yet shared.
  p->state.store(Request::kComplete, std::memory_order_relaxed);
  p->owner = ep;
  errhandler_assign(&p->errhandler, ep->errhandler);
  p->errcomm = reinterpret_cast<CommHandle>(ep);
  p->buf = buf;
  p->count = count;
  p->type = type;
  p->ti = ti;
  request_hold_type(p, ti);
  p->op.source = peer;  // (its op is never posted: see Request::active)
  p->op.tag = tag;
  p->send_mode = static_cast<int8_t>(send_mode);
  return p;
}

void persistent_free(Request* p) {
  if (p->active != nullptr) request_unref(p->active);  // the operation keeps its own hold
  p->active = nullptr;
  request_recycle(p);
}

namespace {
// A probe's messages may come through MPI: a peer in another process that is not
// reached by the node way.
bool probe_needs_engine(const Endpoint* ep) {
  return ep->comm->multi_process && (ep->node == nullptr || ep->comm->off_node);
}
}  // namespace

bool probe(int source, int tag, Endpoint* ep, Status* status, Envelope** env) {
  if (ep->node != nullptr) node_poll(ep);               // take what the ring holds
  if (probe_needs_engine(ep)) engine().try_progress();  // fetch what MPI holds
  MatchOp op;
  op.kind = env != nullptr ? MatchOp::kMprobe : MatchOp::kProbe;
  op.source = source;
  op.tag = tag;
  ep->matcher.post(&op);
  wait_flag(op.done);  // another thread may be matching: its answer comes soon
  if (op.found) {
    if (status != nullptr) *status = op.status;
    if (env != nullptr) *env = op.env;
  }
  return op.found;
}

bool probe_wait(int source, int tag, Endpoint* ep, Status* status, Envelope** env) {
  bool found = false;
  // ready() may be asked again after it said yes: probe (or take) once only.
  auto ready = [&] { return found || (found = probe(source, tag, ep, status, env)); };
  wait_until(ep->arrivals, ready, probe_needs_engine(ep) ? Drive::kYes : Drive::kNo);
  return found;
}

Request* post_mrecv(void* buf, int count, MPI_Datatype type, const TypeInfo& ti, Envelope* env) {
  Request* r = new_recv(buf, count, type, ti, /*hold=*/true);
  r->needs_engine = env->kind == Envelope::kRemoteRndv;
  deliver(r, r->op.target, env);
  return r;
}

bool cancel_recv(Request* r) {
  if (r->kind != RequestKind::kRecv || r->owner == nullptr || request_done(r)) return false;
  MatchOp op;
  op.kind = MatchOp::kCancel;
  op.req = r;
  r->owner->matcher.post(&op);
  wait_flag(op.done);
  if (!op.found) return false;  // already matched: it completes normally
  r->status.ep_cancelled_ = 1;
  request_complete(r);
  return true;
}

void deliver(Request* r, const RecvTarget& t, Envelope* e) {
  // A contiguous receive reads only `t` (see "Cache lines" in request.h).
  const bool contiguous = t.elem != 0;
  const int64_t cap = contiguous ? t.cap : r->ti.size * r->count;
  const bool truncated = e->bytes > cap;
  const int64_t n = truncated ? cap : e->bytes;
  if (e->kind == Envelope::kEager) {
    bool inline_payload = false;
    if (contiguous) {
      const int64_t whole = whole_elements(n, t.elem);  // as unpack(): whole elements only
      if (whole > 0 && whole <= Request::kInlineBytes) {
        // The waiter copies it (see "Inline payload" in request.h).
        copy_bytes(r->inline_data, e->data, static_cast<size_t>(whole));
        inline_payload = true;
      } else if (whole > 0) {
        copy_bytes(t.dst, e->data, static_cast<size_t>(whole));
      }
    } else {
      unpack(e->data, n, r->buf, r->count, r->ti);
    }
    eager_delivered(r, e, n, truncated ? EP_ERR_TRUNCATE : EP_SUCCESS);
    request_complete(r, inline_payload);
    return;
  }
  r->status.EP_SOURCE = e->src_rank;
  r->status.EP_TAG = e->tag;
  r->status.EP_ERROR = truncated ? EP_ERR_TRUNCATE : EP_SUCCESS;
  switch (e->kind) {
    case Envelope::kEager:
      return;  // handled above
    case Envelope::kLocalRndv: {
      copy(e->sbuf, e->scount, e->sti, r->buf, r->count, r->ti, n);
      r->status.ep_bytes_ = n;
      Request* s = e->sreq;
      std::free(e->block);
      request_complete(r);
      if (s != nullptr) request_complete(s);
      return;
    }
    case Envelope::kNodeRndv: {
      // One copy, now, from the sender's memory (runtime/node.h), then the kNodeAck.
      NodeRts rts;
      std::memcpy(&rts, e->data, sizeof rts);
      std::free(e->block);
      int os_error = 0;
      if (!node_fetch(rts, r, t, n, &os_error)) {
        r->status.EP_ERROR = EP_ERR_OTHER;
        r->os_error = os_error;
        r->mpi_error = MPI_ERR_OTHER;  // (so that every completing call reports it)
      }
      r->status.ep_bytes_ = n;
      request_complete(r);
      return;
    }
    case Envelope::kRemoteRndv: {
      // The payload's receive is posted first, then the CTS lets it leave (runtime.h).
      progress::Command c;
      c.kind = progress::Command::kRecvData;
      c.peer = e->src_proc;
      c.data_tag = e->data_tag;
      c.done = r;
      WireHeader cts{};
      cts.kind = WireHeader::kCts;
      cts.data_tag = e->data_tag;
      cts.cookie = e->cookie;
      c.reply = static_cast<char*>(std::malloc(sizeof cts));
      std::memcpy(c.reply, &cts, sizeof cts);
      c.reply_len = sizeof cts;
      if (truncated || !payload_as_mpi(r->buf, r->count, r->type, r->ti, &c)) {
        // Truncated, or gaps in the receive buffer: the payload lands in drain_buf and
        // on_complete unpacks it.
        r->drain_buf = static_cast<char*>(std::malloc(static_cast<size_t>(e->bytes)));
        r->drain_bytes = e->bytes;
        bytes_as_mpi(r->drain_buf, e->bytes, &c);
      }
      std::free(e->block);
      engine().submit_here(c);
      return;
    }
  }
}

Envelope* materialize(Envelope* e) {
  if (e->owned) return e;
  if (e->kind == Envelope::kEager) {
    char* block = static_cast<char*>(std::malloc(sizeof(Envelope) + e->bytes));
    Envelope* h = new (block) Envelope(Envelope::EagerOnly{});  // (no rendezvous fields)
    h->src_rank = e->src_rank;
    h->tag = e->tag;
    h->bytes = e->bytes;
    if (e->bytes > 0) std::memcpy(block + sizeof(Envelope), e->data, e->bytes);
    std::free(e->block);
    h->data = block + sizeof(Envelope);
    h->block = block;
    h->owned = true;
    return h;
  }
  if (e->kind == Envelope::kNodeRndv) {  // the RTS record lives in the ring: copy it along
    char* block = static_cast<char*>(std::malloc(sizeof(Envelope) + sizeof(NodeRts)));
    Envelope* h = new (block) Envelope(*e);
    std::memcpy(block + sizeof(Envelope), e->data, sizeof(NodeRts));
    h->data = block + sizeof(Envelope);
    h->block = block;
    h->owned = true;
    return h;
  }
  Envelope* h = static_cast<Envelope*>(std::malloc(sizeof(Envelope)));
  new (h) Envelope(*e);
  h->block = h;
  h->owned = true;
  return h;
}

}  // namespace ep::runtime
