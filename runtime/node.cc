#include "runtime/node.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/cross_process.h"
#include "base/mpi_calls.h"
#include "node/cma.h"
#include "progress/backoff.h"
#include "runtime/comm.h"
#include "runtime/datatype.h"
#include "runtime/error.h"
#include "runtime/matching.h"
#include "runtime/p2p.h"
#include "runtime/request.h"
#include "runtime/runtime.h"

namespace ep::runtime {
namespace {

// The staging pool of each segment (virtual: pages are touched only when used).
constexpr uint64_t kStagingBytes = uint64_t{256} << 20;
// The acknowledgement ring's owner context (node.h): none of the directory's.
constexpr uint32_t kAckCtx = node::kDirEntries;
// Records one drain takes at most (a ring under a flood does not hold its drainer).
constexpr int kDrainMax = 256;
// A route cache entry (CommShared::node_routes): 0 not yet decided, kNoRoute the MPI
// way, else kRouted | ring << 32 | generation.
constexpr uint64_t kNoRoute = 1, kRouted = uint64_t{1} << 63;

int g_pid = 0;  // this process's pid (set by init)

// Tells the owner of ring `ring` of `peer` about a record just published there: nothing
// if one of its waiters attends the ring, else its pending bit and, if its progress
// thread sleeps, a shared futex wake (see "Waking" in node.h).
void ring_bell(node::PeerSegment* peer, int ring) {
  // seq_cst fence: pairs with the fence in NodeWatch::leave (Dekker, node.h).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // relaxed: ordered by the fence above.
  if (peer->ring(ring).header()->attentive.load(std::memory_order_relaxed) != 0) return;
  node::Doorbell& d = peer->doorbell();
  if (d.mark(static_cast<uint32_t>(ring))) {
    d.bell.fetch_add(1, std::memory_order_relaxed);  // relaxed: the futex word's value only
    progress::futex_wake_shared(d.bell);
  }
}

// The same for a ring of this process (a drain that could not run: the pass does it).
void ring_own_bell(int ring) {
  node::Doorbell& d = runtime()->node.segment().doorbell();
  if (d.mark(static_cast<uint32_t>(ring))) {
    d.bell.fetch_add(1, std::memory_order_relaxed);  // relaxed: the futex word's value only
    progress::futex_wake_shared(d.bell);
  }
}

bool try_lock(std::atomic<bool>& lock) {
  // acquire: pairs with the release in unlock (the state it guards changes hands).
  return !lock.load(std::memory_order_relaxed) && !lock.exchange(true, std::memory_order_acquire);
}
void spin_lock(std::atomic<bool>& lock) {
  while (!try_lock(lock)) progress::cpu_relax();
}
void unlock(std::atomic<bool>& lock) { lock.store(false, std::memory_order_release); }

// Appends a record to ring `ring` of `peer` (node::Ring::push).  ThreadSanitizer sees the
// threads of this process only: a producer that writes bytes another producer of this
// process wrote a lap before is ordered after it by the other process's consumer (its
// release of head), which TSAN cannot see.  Under TSAN, this process's pushes to one ring
// therefore take turns on a lock (whose release and acquire TSAN does see); elsewhere
// they run concurrently, as the ring allows.
template <class Fill>
node::Ring::Push push_to(node::PeerSegment* peer, int ring, uint8_t kind, const node::Owner& owner,
                         uint32_t aux, uint64_t body, Fill&& fill) {
#if defined(EP_SANITIZER_THREAD)
  std::atomic<bool>& turn = peer->turn(ring);
  spin_lock(turn);
#endif
  base::cross_process_release();  // the record goes to another process
  const node::Ring::Push res =
      peer->ring(ring).push(kind, owner, aux, body, fill, peer->head_hint(ring));
#if defined(EP_SANITIZER_THREAD)
  unlock(turn);
#endif
  return res;
}

// Copies ep's staged RTS payload (r's buffer) into a staging block; false if none is free.
bool stage_payload(Request* r, NodeRts* rts) {
  node::Segment& seg = runtime()->node.segment();
  const int64_t off = seg.stage_alloc(static_cast<uint64_t>(rts->bytes));
  if (off < 0) return false;
  if (rts->bytes > 0) pack(r->buf, r->count, r->ti, seg.stage_at(off));
  r->node_stage = off;
  rts->addr = static_cast<uint64_t>(off);
  return true;
}

// Pushes the backlog's records, oldest first, until one does not fit (the lock held).
// Records for a ring that changed owner since are dropped (their destination is gone).
bool flush_locked(NodeEndpoint* ne) {
  Runtime* rt = runtime();
  bool moved = false;
  while (!ne->backlog.empty()) {
    NodeBacklogRecord& rec = ne->backlog.front();
    node::Ring ring = rec.to.peer->ring(rec.to.ring);
    // acquire: pairs with the owner's release stores (Segment::assign/release_rings).
    const bool gone =
        ring.header()->generation.load(std::memory_order_acquire) != rec.to.owner.generation;
    if (gone || rt->node.closing()) {
      rt->count(rt->counters.dropped_packets);
      ne->backlog.pop_front();
      moved = true;
      continue;
    }
    if (rec.stage != nullptr) {
      NodeRts rts;
      std::memcpy(&rts, rec.body.data(), sizeof rts);
      if (!stage_payload(rec.stage, &rts)) break;
      std::memcpy(rec.body.data(), &rts, sizeof rts);
      rec.stage = nullptr;
    }
    const node::Ring::Push res =
        push_to(rec.to.peer, rec.to.ring, rec.kind, rec.to.owner, rec.aux, rec.body.size(),
                [&](char* at) { std::memcpy(at, rec.body.data(), rec.body.size()); });
    if (res == node::Ring::Push::kFull) break;
    if (res == node::Ring::Push::kOk) {
      ring_bell(rec.to.peer, rec.to.ring);
    } else {  // (kTooBig: never, senders size their records by the ring)
      rt->count(rt->counters.dropped_packets);
    }
    ne->backlog.pop_front();
    moved = true;
  }
  // release: pairs with the acquire in push_record (an empty backlog's records are in
  // their rings before the endpoint's next record).
  ne->backlogged.store(!ne->backlog.empty(), std::memory_order_release);
  return moved;
}

// Flushes ne's backlog: `wait` for its lock (the endpoint's own thread), or only if free.
bool flush_backlog(NodeEndpoint* ne, bool wait) {
  if (wait) {
    spin_lock(ne->backlog_lock);
  } else if (!try_lock(ne->backlog_lock)) {
    return false;
  }
  const bool moved = flush_locked(ne);
  unlock(ne->backlog_lock);
  return moved;
}

// Pushes one record of ep's, in order behind its backlog (see "Full rings" in node.h).
// `stage`: an RTS whose payload waits for a staging block (it goes to the backlog).
template <class Fill>
void push_record(Endpoint* ep, const NodeRoute& to, uint8_t kind, uint32_t aux, uint64_t body,
                 Fill&& fill, Request* stage = nullptr) {
  NodeEndpoint* ne = ep->node;
  // acquire: pairs with flush_locked's release (see there).
  if (ne->backlogged.load(std::memory_order_acquire)) flush_backlog(ne, /*wait=*/true);
  if (stage == nullptr && !ne->backlogged.load(std::memory_order_acquire)) {
    const node::Ring::Push res = push_to(to.peer, to.ring, kind, to.owner, aux, body, fill);
    if (res == node::Ring::Push::kOk) {
      ring_bell(to.peer, to.ring);
      return;
    }
  }
  NodeBacklogRecord rec;
  rec.to = to;
  rec.kind = kind;
  rec.aux = aux;
  rec.body.resize(body);
  fill(rec.body.data());
  rec.stage = stage;
  spin_lock(ne->backlog_lock);
  ne->backlog.push_back(std::move(rec));
  ne->backlogged.store(true, std::memory_order_relaxed);  // relaxed: the owner's own hint
  unlock(ne->backlog_lock);
  Runtime* rt = runtime();
  rt->count(rt->counters.node_backlogged);
  rt->node.list_backlogged(ne);
}

// A send request's kNodeAck came: its payload was copied.
void send_acked(Request* r) {
  if (r->node_stage >= 0) runtime()->node.segment().stage_free(r->node_stage);
  r->node_stage = -1;
  request_complete(r);
}

// Hands a node arrival to ep's matcher, as on_record does a packet's (runtime.cc).
void arrive(Endpoint* ep, NodeEndpoint* ne, Envelope* e) {
  if (ep->matcher.try_deliver_direct_with(e, DeliverInline{})) return;
  ep->matcher.push(*ne->token, materialize(e));
}

// One record of ring ne (the drain's function): false rejects it.  Messages go to an
// endpoint's ring, acknowledgements to the acknowledgement ring only.
bool take_record(NodeEndpoint* ne, uint8_t kind, uint32_t aux, const char* body, uint32_t len) {
  Endpoint* ep = ne->ep;
  if ((ep == nullptr) != (kind == kNodeAck)) return false;
  switch (kind) {
    case kNodeEager: {
      // (The source rank is not checked against the communicator: a record may come
      // before this fragment's membership is filled in - the matcher keeps it.)
      NodeEagerHead h;
      if (len < sizeof h || aux > len - sizeof h) return false;
      std::memcpy(&h, body, sizeof h);
      Envelope e(Envelope::EagerOnly{});  // refers to the ring, until we return
      e.src_rank = h.src_rank;
      e.tag = h.tag;
      e.bytes = aux;
      e.data = body + sizeof h;
      arrive(ep, ne, &e);
      return true;
    }
    case kNodeRts: {
      NodeRts rts;
      if (len < sizeof rts) return false;
      std::memcpy(&rts, body, sizeof rts);
      const node::PeerSegment* p = runtime()->node.peer(rts.src_proc);
      if (p == nullptr || rts.bytes < 0 || p->pid() != rts.pid || rts.ack_ring >= p->ring_count() ||
          (rts.staged != 0 && p->staged(rts.addr, static_cast<uint64_t>(rts.bytes)) == nullptr)) {
        return false;
      }
      Envelope e;
      e.kind = Envelope::kNodeRndv;
      e.src_rank = rts.src_rank;
      e.tag = rts.tag;
      e.bytes = rts.bytes;
      e.data = body;  // the NodeRts (materialize copies it)
      arrive(ep, ne, &e);
      return true;
    }
    case kNodeAck: {
      uint64_t cookie = 0;
      if (len < sizeof cookie) return false;
      std::memcpy(&cookie, body, sizeof cookie);
      Runtime* rt = runtime();
      if (!rt->node.acknowledge(cookie)) return false;  // not a send of ours awaiting it
      rt->count(rt->counters.node_acks);
      send_acked(reinterpret_cast<Request*>(cookie));
      return true;
    }
    default:
      return false;
  }
}

// Drains ring ne once: records taken, -1 if the drain lock is held elsewhere.  Only the
// lock's holder reads the ring's bytes (the drain zeroes them as it goes): a waiter's
// poll takes the lock too - one RMW on a line of this process's.
int drain(NodeEndpoint* ne) {
  if (!try_lock(ne->drain_lock)) return -1;
  const uint64_t rejected = ne->consumer.rejected;
  const int n = ne->view.drain(
      ne->consumer, ne->owner,
      [ne](uint8_t kind, uint32_t aux, const char* body, uint32_t len) {
        base::cross_process_acquire();  // a record of another process
        return take_record(ne, kind, aux, body, len);
      },
      kDrainMax);
  const uint64_t bad = ne->consumer.rejected - rejected;
  unlock(ne->drain_lock);
  if (bad != 0) {
    Runtime* rt = runtime();
    if (rt->config.stats) rt->counters.node_rejected.fetch_add(bad, std::memory_order_relaxed);
  }
  return n;
}

}  // namespace

// ---- NodeTransport -------------------------------------------------------------------

NodeTransport::~NodeTransport() { shutdown(); }

void NodeTransport::init(MPI_Comm node_comm, bool wanted, int64_t eager_limit, bool staging,
                         int world_rank, int world_size, std::string* note) {
  int n = 1;
  EP_MPI(MPI_Comm_size(node_comm, &n));
  if (!wanted) {
    *note = "off (EP_NODE_TRANSPORT=off): processes of this node exchange messages through MPI";
    return;
  }
  if (n == 1) {
    *note = "on, unused: no other process of the job on this node";
    return;
  }
  g_pid = static_cast<int>(getpid());
  struct Announce {
    int32_t ok, world_rank, pid, fd;
    uint64_t length, cookie, cookie_at;
  } mine{};
  std::string error;
  mine.ok = segment_.create(node::ring_capacity_for(eager_limit), kStagingBytes, &error) ? 1 : 0;
  mine.world_rank = world_rank;
  mine.pid = g_pid;
  if (mine.ok) {
    mine.fd = segment_.fd();
    mine.length = segment_.length();
    mine.cookie = segment_.cookie();
    mine.cookie_at = segment_.cookie_address();
  }
  std::vector<Announce> all(static_cast<size_t>(n));
  EP_MPI(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, node_comm));
  int ok[2] = {mine.ok, 1};  // every segment mapped; cross-memory attach to every peer
  peers_.resize(static_cast<size_t>(world_size));
  for (const Announce& a : all) {
    if (a.world_rank == world_rank) continue;
    auto p = std::make_unique<node::PeerSegment>();
    if (!a.ok || a.world_rank < 0 || a.world_rank >= world_size ||
        !p->map(a.pid, a.fd, a.length, a.cookie)) {
      ok[0] = 0;
      continue;
    }
    if (!node::cma_probe(a.pid, a.cookie_at, a.cookie)) ok[1] = 0;
    peers_[static_cast<size_t>(a.world_rank)] = std::move(p);
  }
  int all_ok[2] = {0, 0};
  EP_MPI(MPI_Allreduce(ok, all_ok, 2, MPI_INT, MPI_MIN, node_comm));
  if (all_ok[0] == 0) {
    peers_.clear();
    segment_.destroy();
    *note = "off: a process of this node could not make or map a segment";
    if (!error.empty()) *note += " (" + error + ")";
    *note += "; processes of this node exchange messages through MPI";
    return;
  }
  // Every process has mapped every segment: the descriptors are no longer needed.
  segment_.close_fd();
  cma_ = all_ok[1] != 0 && !staging;
  ring_owner_.reset(new std::atomic<NodeEndpoint*>[node::kMaxRings]());
  ack_.ring = segment_.assign_private(kAckCtx);  // (the segment is new: one is free)
  ack_.view = segment_.ring(ack_.ring);
  ack_.owner = segment_.owner(ack_.ring);
  ring_owner_[ack_.ring].store(&ack_, std::memory_order_relaxed);  // relaxed: before start
  on_ = true;
  *note = std::string("on: ") + std::to_string(n) +
          " processes of this node exchange messages through shared memory; larger ones " +
          (cma_             ? "by cross-memory attach"
           : all_ok[1] == 0 ? "through shared staging buffers (cross-memory attach is not "
                              "allowed here)"
                            : "through shared staging buffers (forced by "
                              "LIBEP_TEST_NODE_STAGING)");
}

void NodeTransport::shutdown() {
  on_ = false;
  peers_.clear();
  segment_.destroy();
  ring_owner_.reset();
}

void NodeTransport::attach(CommShared* c) {
  if (!on_) return;
  const int n = static_cast<int>(c->local.size());
  const int first = segment_.assign_rings(c->ctx, n);
  if (first < 0) return;  // none free: this fragment's endpoints use MPI with the node
  c->node_first_ring = first;
  for (int i = 0; i < n; ++i) {
    Endpoint* ep = c->local[static_cast<size_t>(i)].get();
    auto* ne = new NodeEndpoint;
    ne->ep = ep;
    ne->ring = first + i;
    ne->view = segment_.ring(first + i);
    ne->owner = segment_.owner(first + i);
    // acquire: pairs with the last consumer's release of head (rings are reused).
    ne->consumer.head = ne->view.header()->head.load(std::memory_order_acquire);
    ne->token = std::make_unique<moodycamel::ProducerToken>(ep->matcher.inbox());
    ep->node = ne;
    // release: pairs with the pass's acquire (it drains through the endpoint).
    ring_owner_[first + i].store(ne, std::memory_order_release);
  }
}

void NodeTransport::detach(CommShared* c) {
  const int first = c->node_first_ring;
  if (first < 0 || !ring_owner_) return;
  const int n = static_cast<int>(c->local.size());
  for (int i = 0; i < n; ++i) {
    ring_owner_[first + i].store(nullptr, std::memory_order_relaxed);  // relaxed: see retire
    node_endpoint_free(c->local[static_cast<size_t>(i)].get());
  }
  segment_.release_rings(c->ctx, first, n);
  c->node_first_ring = -1;
}

void NodeTransport::list_backlogged(NodeEndpoint* ne) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!ne->listed) backlogged_.push_back(ne);
  ne->listed = true;
  lists_.store(true, std::memory_order_relaxed);  // relaxed: a hint, re-read under mu_
}

void NodeTransport::add_ack(const NodeRoute& to, uint64_t cookie) {
  std::lock_guard<std::mutex> lock(mu_);
  acks_.push_back(Ack{to, cookie});
  lists_.store(true, std::memory_order_relaxed);  // relaxed: a hint, re-read under mu_
}

void NodeTransport::issue(uint64_t cookie) {
  std::lock_guard<std::mutex> lock(issued_mu_);
  issued_.insert(cookie);
}

bool NodeTransport::acknowledge(uint64_t cookie) {
  std::lock_guard<std::mutex> lock(issued_mu_);
  return issued_.erase(cookie) != 0;
}

bool NodeTransport::pass(bool* /*pending*/) {
  if (!on_) return false;
  bool work = false;
  node::Doorbell& d = segment_.doorbell();
  for (uint32_t w = 0; w < node::kMaxRings / 64; ++w) {
    uint64_t bits = d.take(w);
    while (bits != 0) {
      const int b = __builtin_ctzll(bits);
      bits &= bits - 1;
      // acquire: pairs with attach's release (the endpoint is built).  Endpoints are
      // deleted only by retire, which runs in a pass too: not during this one.
      NodeEndpoint* ne =
          ring_owner_[w * 64 + static_cast<uint32_t>(b)].load(std::memory_order_acquire);
      if (ne == nullptr) continue;
      const int n = drain(ne);
      // Held elsewhere, or more than one drain takes: look again in the next pass.
      // relaxed: this thread's own next pass reads it (no wake is owed).
      if (n < 0 || n >= kDrainMax)
        d.pending[w].fetch_or(uint64_t{1} << b, std::memory_order_relaxed);
      work |= n > 0;
    }
  }
  // relaxed: a hint; the lists are read under mu_.
  if (!lists_.load(std::memory_order_relaxed) || !mu_.try_lock()) return work;
  for (size_t i = 0; i < backlogged_.size();) {
    NodeEndpoint* ne = backlogged_[i];
    if (try_lock(ne->backlog_lock)) {
      work |= flush_locked(ne);
      const bool empty = ne->backlog.empty();
      unlock(ne->backlog_lock);
      if (empty) {
        ne->listed = false;
        backlogged_[i] = backlogged_.back();
        backlogged_.pop_back();
        continue;
      }
    }
    ++i;
  }
  for (size_t i = 0; i < acks_.size();) {
    const Ack& a = acks_[i];
    const bool done =
        closing() ||
        push_to(a.to.peer, a.to.ring, kNodeAck, a.to.owner, 0, sizeof a.cookie, [&](char* at) {
          std::memcpy(at, &a.cookie, sizeof a.cookie);
        }) == node::Ring::Push::kOk;
    if (done) {
      if (!closing()) ring_bell(a.to.peer, a.to.ring);
      acks_[i] = acks_.back();
      acks_.pop_back();
      work = true;
      continue;
    }
    ++i;
  }
  lists_.store(!backlogged_.empty() || !acks_.empty(), std::memory_order_relaxed);
  mu_.unlock();
  return work;
}

// ---- routes and sends ----------------------------------------------------------------

bool node_route(Endpoint* ep, int dest, int proc, NodeRoute* route) {
  node::PeerSegment* p = runtime()->node.peer(proc);
  if (p == nullptr || ep->node == nullptr) return false;
  CommShared* c = ep->comm;
  std::atomic<uint64_t>& slot = c->node_routes[dest];
  // relaxed: the entry is a value derived from the peer's directory (read with acquire
  // by resolve); whoever computes it stores the same.
  uint64_t v = slot.load(std::memory_order_relaxed);
  const EpAddr& a = c->peer(dest);
  if (v == 0) {
    uint32_t gen = 0;
    const int ring = p->resolve(a.ctx, a.local, &gen);
    v = ring < 0 ? kNoRoute : kRouted | static_cast<uint64_t>(ring) << 32 | gen;
    slot.store(v, std::memory_order_relaxed);
  }
  if (v == kNoRoute) return false;
  route->peer = p;
  route->ring = static_cast<int>((v >> 32) & 0xffff);
  route->owner = node::Owner{a.ctx, a.local, static_cast<uint32_t>(v)};
  return true;
}

int64_t node_eager_max(const NodeRoute& route) {
  return static_cast<int64_t>(route.peer->max_record()) -
         static_cast<int64_t>(sizeof(node::RecordHeader) + sizeof(NodeEagerHead));
}

int send_node(const void* buf, int count, MPI_Datatype type, const TypeInfo& ti, int tag,
              Endpoint* ep, const NodeRoute& route, bool rendezvous, Request* r, const char* call) {
  Runtime* rt = runtime();
  const int64_t bytes = ti.size * count;
  if (!rendezvous) {
    rt->count(rt->counters.node_eager);
    push_record(ep, route, kNodeEager, static_cast<uint32_t>(bytes),
                sizeof(NodeEagerHead) + static_cast<uint64_t>(bytes), [&](char* at) {
                  const NodeEagerHead h{ep->rank, tag};
                  std::memcpy(at, &h, sizeof h);
                  if (bytes > 0) pack(buf, count, ti, at + sizeof h);
                });
    if (r != nullptr) request_complete(r);  // the data was copied
    return EP_SUCCESS;
  }
  NodeEndpoint& ack = rt->node.ack_ring();
  NodeRts rts{};
  rts.src_rank = ep->rank;
  rts.tag = tag;
  rts.bytes = bytes;
  rts.cookie = reinterpret_cast<uint64_t>(r);
  rts.src_proc = rt->world_rank;
  rts.pid = g_pid;
  rts.ack_ring = static_cast<uint32_t>(ack.ring);
  rts.ack_generation = ack.owner.generation;
  rts.ack_ctx = ack.owner.ctx;
  rts.ack_local = ack.owner.local;
  Request* stage_later = nullptr;
  if (rt->node.cma()) {
    if (ti.contiguous || bytes == 0) {
      rts.addr = reinterpret_cast<uint64_t>(static_cast<const char*>(buf) + ti.true_lb);
    } else {  // the receiver reads one contiguous range: a packed copy the request owns
      r->drain_buf = static_cast<char*>(std::malloc(static_cast<size_t>(bytes)));
      pack(buf, count, ti, r->drain_buf);
      rts.addr = reinterpret_cast<uint64_t>(r->drain_buf);
    }
  } else {
    if (static_cast<uint64_t>(bytes) > rt->node.segment().staging_length()) {
      const int err = fail(EP_ERR_OTHER, call,
                           "%lld bytes exceed the node transport's staging pool (%llu bytes), "
                           "which carries messages between the processes of a node where "
                           "cross-memory attach is not allowed",
                           static_cast<long long>(bytes),
                           static_cast<unsigned long long>(rt->node.segment().staging_length()));
      const bool user = r->kind != RequestKind::kBsend;
      request_complete(r);
      if (user) request_unref(r);
      return err;
    }
    rts.staged = 1;
    r->buf = const_cast<void*>(buf);
    r->count = count;
    r->type = type;
    r->ti = ti;
    if (!stage_payload(r, &rts)) stage_later = r;  // the pool is full for now
  }
  rt->count(rt->counters.node_rndv);
  r->needs_node = true;
  r->owner = ep;
  rt->node.issue(rts.cookie);
  push_record(
      ep, route, kNodeRts, 0, sizeof rts, [&](char* at) { std::memcpy(at, &rts, sizeof rts); },
      stage_later);
  return EP_SUCCESS;
}

int send_node_short(Endpoint* ep, int dest, int proc, const char* data, int64_t bytes, int tag) {
  NodeRoute route;
  if (!node_route(ep, dest, proc, &route)) return kNotNode;
  if (bytes > node_eager_max(route)) return kNodeGeneral;
  Runtime* rt = runtime();
  rt->count(rt->counters.node_eager);
  push_record(ep, route, kNodeEager, static_cast<uint32_t>(bytes),
              sizeof(NodeEagerHead) + static_cast<uint64_t>(bytes), [&](char* at) {
                const NodeEagerHead h{ep->rank, tag};
                std::memcpy(at, &h, sizeof h);
                if (bytes > 0) copy_bytes(at + sizeof h, data, static_cast<size_t>(bytes));
              });
  return EP_SUCCESS;
}

// ---- receiving -----------------------------------------------------------------------

int node_poll(Endpoint* ep) {
  NodeEndpoint* ne = ep->node;
  if (ne == nullptr) return 0;
  // relaxed: a hint; the lock decides.
  if (ne->backlogged.load(std::memory_order_relaxed)) flush_backlog(ne, /*wait=*/false);
  return drain(ne);
}

namespace {
// The ring a request that needs node traffic waits on (see node_poll_request).
NodeEndpoint* ring_of(const Request* r) {
  return r->kind == RequestKind::kRecv ? r->owner->node : &runtime()->node.ack_ring();
}
}  // namespace

int node_poll_request(Request* r) {
  if (r->kind == RequestKind::kRecv) return node_poll(r->owner);
  // A rendezvous send: its RTS may still wait in its endpoint's backlog.
  NodeEndpoint* ne = r->owner->node;
  // relaxed: a hint; the lock decides.
  if (ne != nullptr && ne->backlogged.load(std::memory_order_relaxed)) {
    flush_backlog(ne, /*wait=*/false);
  }
  return drain(&runtime()->node.ack_ring());
}

bool node_fetch(const NodeRts& rts, Request* r, const RecvTarget& t, int64_t n, int* err) {
  Runtime* rt = runtime();
  node::PeerSegment* p = rt->node.peer(rts.src_proc);  // checked when the RTS arrived
  bool ok = true;
  if (n > 0) {
    const char* staged =
        rts.staged != 0 ? p->staged(rts.addr, static_cast<uint64_t>(rts.bytes)) : nullptr;
    const int64_t whole = t.elem != 0 ? whole_elements(n, t.elem) : n;
    char* dst = t.elem != 0 ? t.dst : static_cast<char*>(std::malloc(static_cast<size_t>(n)));
    if (rts.staged == 0) {
      ok = node::cma_read(p->pid(), rts.addr, dst, static_cast<size_t>(whole), err);
    } else if (staged != nullptr) {
      std::memcpy(dst, staged, static_cast<size_t>(whole));
    } else {  // (checked when it arrived: never)
      ok = false;
      *err = EINVAL;
    }
    if (t.elem == 0) {
      if (ok) unpack(dst, n, r->buf, r->count, r->ti);
      std::free(dst);
    }
  }
  // The sender's payload is no longer needed: acknowledge (order does not matter).
  const NodeRoute to{p, static_cast<int>(rts.ack_ring),
                     node::Owner{rts.ack_ctx, rts.ack_local, rts.ack_generation}};
  const uint64_t cookie = rts.cookie;
  const node::Ring::Push res =
      push_to(p, to.ring, kNodeAck, to.owner, 0, sizeof cookie,
              [&](char* at) { std::memcpy(at, &cookie, sizeof cookie); });
  if (res == node::Ring::Push::kOk) {
    ring_bell(p, to.ring);
  } else {
    rt->node.add_ack(to, cookie);
  }
  return ok;
}

bool node_endpoint_busy(const Endpoint* ep) {
  const NodeEndpoint* ne = ep->node;
  if (ne == nullptr) return false;
  // acquire: pairs with the locks' release (what the holder did is done).  Retire polls
  // again later: a drain or a listed backlog ends on its own.
  if (ne->drain_lock.load(std::memory_order_acquire) ||
      ne->backlog_lock.load(std::memory_order_acquire)) {
    return true;
  }
  NodeTransport& nt = runtime()->node;
  std::lock_guard<std::mutex> lock(nt.mu_);
  return ne->listed;
}

void node_endpoint_free(Endpoint* ep) {
  delete ep->node;
  ep->node = nullptr;
}

void node_detach(CommShared* c) { runtime()->node.detach(c); }

// ---- NodeWatch -----------------------------------------------------------------------

NodeWatch::NodeWatch(Request* r) : r_(r), ne_(r->needs_node ? ring_of(r) : nullptr) {}

bool NodeWatch::poll() {
  if (!attending_ && !withdrawn_) {
    // seq_cst: the waiter's side of the Dekker pairing (node.h, "Memory ordering").
    ne_->view.header()->attentive.fetch_add(1, std::memory_order_seq_cst);
    attending_ = true;
  }
  return node_poll_request(r_) > 0;
}

void NodeWatch::leave() {
  ne_->view.header()->attentive.fetch_sub(1, std::memory_order_seq_cst);
  // seq_cst fence: pairs with the producers' fence in ring_bell (Dekker).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  attending_ = false;
  // Drain once more: a record published before a producer saw us attending rang no
  // doorbell.  If another thread drains now, or more is left, the pass takes over.
  const int n = drain(ne_);
  if (n < 0 || n >= kDrainMax) ring_own_bell(ne_->ring);
}

}  // namespace ep::runtime
