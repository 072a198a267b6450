// node.h - the node way of point-to-point: endpoints of different processes of one node
// exchange messages through shared memory, without MPI and, for an endpoint that waits
// actively, without the progress thread.
//
// What it is.  EP_Init gives every process that has node peers a segment (node/segment.h)
// and maps its peers' (NodeTransport::init: one MPI_Allgather and MPI_Allreduce on the
// node's communicator; all or nothing per node).  Every endpoint - the user's and its
// shadow (CommShared::coll: creation's and collectives' hidden traffic) - gets a ring in
// its process's segment when its fragment is made (NodeTransport::attach, from
// comm.cc's begin) and loses it when the fragment retires.  A message from endpoint S to
// endpoint D of another process of the node goes into D's ring (send_node):
//   kNodeEager  the packed payload (at most EP_EAGER_LIMIT bytes, not synchronous): one
//               copy in, and the send is complete;
//   kNodeRts    a larger or synchronous message: where its contiguous payload lies -
//               the user's buffer, a packed copy the request owns, or (where cross-memory
//               attach is forbidden) a block of the sender's staging pool - and where to
//               acknowledge: the sending process's acknowledgement ring (one per
//               process, not the endpoint's: a send completes even if its communicator
//               was freed meanwhile);
//   kNodeAck    the receiver copied the payload once, after the match (process_vm_readv
//               straight into the receive buffer, or out of the mapped staging block):
//               the send request completes.
// One source reaches one destination by one way only (same process, this node, the
// network: decided per pair, for good - NodeTransport::route), in its ring's order, so
// the ring is one more inbound source of the matcher, whose proof (runtime/matching.h)
// covers it: node arrivals are delivered in ring order by whoever holds the ring's
// drain lock, in place (Matcher::try_deliver_direct_with) or through the endpoint's one
// node producer token.
// Who drains.  The endpoint's own thread, in every poll of a wait for a request that
// needs node traffic (Request::needs_node: a receive from a node peer or ANY_SOURCE on a
// communicator with node peers - its endpoint's ring -, a rendezvous send to a node
// peer - the acknowledgement ring), in EP_Test and in probes; and the progress thread's
// pass (or a driving waiter's), for rings whose bit is set in the process's pending
// bitmap (NodeTransport::pass, an engine hook).
// Waking.  While a waiter polls a ring it is `attentive` (a count in the ring header); a
// producer that finds no attentive waiter sets the ring's pending bit and, if the
// receiving process's progress thread sleeps, wakes it with a shared futex on the
// segment's doorbell word, where that thread sleeps (Engine::set_idle_words); its pass
// drains the ring, the deliveries complete requests and wake their waiters as any
// completion does.  So a sleeping endpoint is woken by node messages through its own
// process's progress thread, and a spinning one sees the record itself.
// Full rings.  A producer never waits: a record that does not fit goes into the sending
// endpoint's backlog (process-private, FIFO), and every later record of that endpoint
// goes behind it; the backlog is retried by the endpoint's next sends and waits and by
// every pass.  Acknowledgements that do not fit wait in a process-wide list (their
// order does not matter).
// Validation.  A record is trusted only after checks: the ring's frame and owner checks
// (node/ring.h), then its kind (messages on endpoint rings, acknowledgements on the
// acknowledgement ring), its body's length, a sender that is a node peer with the pid it
// announced, staging blocks inside the sender's pool, acknowledgement cookies of sends
// this process issued and has not seen acknowledged.  Refused records are counted
// (EP_STATS node_rejected).
//
// Threading: a ring's drain (its Consumer, the node token) belongs to the holder of its
// drain lock; an endpoint's backlog to the holder of its backlog lock; issued cookies
// and the process lists are under NodeTransport's mutexes.  Anything else of
// NodeTransport is written by EP_Init/EP_Finalize only.
//
// Memory ordering: records are published and consumed as node/ring.h says.  Attentive
// waiters and producers pair with seq_cst fences (Dekker): the producer stores the
// record (release), fences, then loads `attentive`; the waiter that stops attending
// decrements it (seq_cst), fences, then drains once more - so either the producer sees
// no waiter and rings the doorbell, or the waiter's drain sees the record.  The doorbell
// itself is node/segment.h's.  A drain lock is taken with an acquire exchange and
// released with a release store, handing the Consumer between threads.
#ifndef EP_RUNTIME_NODE_H_
#define EP_RUNTIME_NODE_H_

#include <concurrentqueue/concurrentqueue.h>
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "node/ring.h"
#include "node/segment.h"

namespace ep::runtime {

class CommShared;
class Endpoint;
struct Envelope;
struct Request;
struct RecvTarget;
struct TypeInfo;

// Record kinds (node::Ring's caller kinds).
constexpr uint8_t kNodeEager = 2, kNodeRts = 3, kNodeAck = 4;

// The body of a kNodeEager record: these, then the packed payload (the record's aux is
// its byte count).
struct NodeEagerHead {
  int32_t src_rank;
  int32_t tag;
};
// The body of a kNodeRts record.
struct NodeRts {
  int32_t src_rank;
  int32_t tag;
  int64_t bytes;     // packed payload size
  uint64_t addr;     // the payload's address in the sender, or its staging offset (staged)
  uint64_t cookie;   // the sender's Request, echoed in the kNodeAck
  int32_t src_proc;  // the sender's MPI_COMM_WORLD rank
  int32_t pid;       // and pid (checked against its segment's)
  // Where to acknowledge: the sending process's acknowledgement ring and its owner fields.
  uint32_t ack_ring;
  uint32_t ack_generation;
  uint32_t ack_ctx;
  uint16_t ack_local;
  uint8_t staged;
  uint8_t unused;
};
static_assert(sizeof(NodeRts) == 56, "an RTS body is 56 bytes");

// Where a record for one destination endpoint goes (filled by node_route; no default
// values: the send path declares one for every message).
struct NodeRoute {
  node::PeerSegment* peer;
  int ring;
  node::Owner owner;
};

// A record that did not fit (see "Full rings").
struct NodeBacklogRecord {
  NodeRoute to;
  uint8_t kind = 0;
  uint32_t aux = 0;
  std::string body;
  Request* stage = nullptr;  // an RTS whose payload still has to be staged (at its flush)
};

// A ring this process drains: an endpoint's (Endpoint::node; only where the node
// transport is on and a ring could be assigned), or the acknowledgement ring.
struct NodeEndpoint {
  Endpoint* ep = nullptr;  // whose ring; nullptr: the acknowledgement ring
  int ring = -1;
  node::Ring view;
  node::Owner owner;
  std::atomic<bool> drain_lock{false};
  node::Consumer consumer;                           // guarded by drain_lock
  std::unique_ptr<moodycamel::ProducerToken> token;  // guarded by drain_lock
  // Backlog (see "Full rings"): `backlogged` is its hint for the send path (relaxed
  // reads; the lock decides).
  std::atomic<bool> backlog_lock{false};
  std::atomic<bool> backlogged{false};
  std::deque<NodeBacklogRecord> backlog;  // guarded by backlog_lock
  bool listed = false;                    // guarded by NodeTransport::mu_
};

// The process's node transport (Runtime::node).
class NodeTransport {
 public:
  NodeTransport() = default;
  ~NodeTransport();
  NodeTransport(const NodeTransport&) = delete;
  NodeTransport& operator=(const NodeTransport&) = delete;

  // EP_Init, collective over `node_comm` (this node's processes): makes and exchanges the
  // segments.  `wanted`: EP_NODE_TRANSPORT; `staging`: never use cross-memory attach (a
  // test switch).  Sets on() for every process of the node or for none; *note says which
  // way and why (EP_VERBOSE).
  void init(MPI_Comm node_comm, bool wanted, int64_t eager_limit, bool staging, int world_rank,
            int world_size, std::string* note);
  // EP_Finalize: after the last barrier (nobody receives any more): backlogs are dropped
  // from now on.  Then, after every communicator is gone, shutdown() unmaps everything.
  void close() { closing_.store(true, std::memory_order_relaxed); }  // relaxed: a hint
  void shutdown();

  bool on() const { return on_; }
  bool cma() const { return cma_; }
  bool closing() const { return closing_.load(std::memory_order_relaxed); }  // relaxed: hint
  // The segment of process `proc` (MPI_COMM_WORLD rank) if it is a node peer, else null.
  node::PeerSegment* peer(int proc) const {
    return static_cast<size_t>(proc) < peers_.size() ? peers_[static_cast<size_t>(proc)].get()
                                                     : nullptr;
  }
  node::Segment& segment() { return segment_; }

  // Gives fragment c's endpoints (and its shadow's) their rings; none if none are free.
  void attach(CommShared* c);
  // Takes them back (the fragment is being deleted; nobody drains them any more).
  void detach(CommShared* c);

  // The pass hook (see "Who drains"): pending rings, backlogs, acknowledgements.
  bool pass(bool* pending);
  // The idle progress thread's last check before it sleeps: a ring is pending.
  bool work_waiting() { return on_ && segment_.doorbell().any(); }

  // Bookkeeping of backlogs and acknowledgements (node.cc).
  void list_backlogged(NodeEndpoint* ne);
  void add_ack(const NodeRoute& to, uint64_t cookie);
  // The acknowledgement ring, and the rendezvous sends awaiting their kNodeAck: a send
  // is issued before its RTS leaves; acknowledge() takes it (false: not one of ours).
  NodeEndpoint& ack_ring() { return ack_; }
  void issue(uint64_t cookie);
  bool acknowledge(uint64_t cookie);

 private:
  friend bool node_endpoint_busy(const Endpoint* ep);
  bool on_ = false;
  bool cma_ = false;
  std::atomic<bool> closing_{false};
  node::Segment segment_;
  std::vector<std::unique_ptr<node::PeerSegment>> peers_;  // by world rank
  // Every ring this process drains, by index (the pass hook).
  std::unique_ptr<std::atomic<NodeEndpoint*>[]> ring_owner_;
  NodeEndpoint ack_;
  std::mutex issued_mu_;
  std::unordered_set<uint64_t> issued_;  // guarded by issued_mu_
  // The process lists (see "Full rings").
  std::mutex mu_;
  std::vector<NodeEndpoint*> backlogged_;  // guarded by mu_
  struct Ack {
    NodeRoute to;
    uint64_t cookie;
  };
  std::vector<Ack> acks_;           // guarded by mu_
  std::atomic<bool> lists_{false};  // a hint: one of the lists is not empty (relaxed)
};

// The route of ep's messages to peer rank `dest` (address `a`, in another process): true
// with *route if they go by the node way (both endpoints have rings), false if by MPI.
// Decided once per (fragment, peer rank) and remembered.
bool node_route(Endpoint* ep, int dest, int proc, NodeRoute* route);
// The largest eager payload a node route's ring takes.
int64_t node_eager_max(const NodeRoute& route);

// Sends on the node way (p2p.cc's send, with its arguments): eager (complete: r, if any,
// is completed) or rendezvous (r pending until the kNodeAck).  EP_SUCCESS, or an error
// (a payload too large for the staging pool).
int send_node(const void* buf, int count, MPI_Datatype type, const TypeInfo& ti, int tag,
              Endpoint* ep, const NodeRoute& route, bool rendezvous, Request* r, const char* call);
// EP_Send's short way for a node peer (p2p_inline.h): a contiguous eager message of
// `bytes` at `data`.  EP_SUCCESS once it is in the ring (or backlog), kNotNode if the
// message takes the MPI way, kNodeGeneral if it needs send() (too large for an eager
// record: a rendezvous).
constexpr int kNotNode = -2, kNodeGeneral = -3;
int send_node_short(Endpoint* ep, int dest, int proc, const char* data, int64_t bytes, int tag);

// Drains ep's ring once (non-blocking): records taken, or -1 if another thread holds
// the drain lock.  Also flushes ep's backlog.  For any thread.
int node_poll(Endpoint* ep);
// The same for what request r waits for (r->needs_node): its endpoint's ring for a
// receive; for a rendezvous send, the acknowledgement ring and its endpoint's backlog.
int node_poll_request(Request* r);
// kNodeRndv delivery (p2p.cc's deliver): copies n bytes of the RTS's payload into r's
// buffer (t: its contiguous target, or elem 0), acknowledges, and sets r's status
// fields but EP_ERROR/ep_bytes_ (the caller's).  False (with *err: errno) if the copy
// failed (the sender is gone, say); the acknowledgement is sent either way.
bool node_fetch(const NodeRts& rts, Request* r, const RecvTarget& t, int64_t n, int* err);
// True while a thread drains ep's ring or its backlog holds records (retire waits).
bool node_endpoint_busy(const Endpoint* ep);
// Frees ep's node state (its fragment is being deleted).
void node_endpoint_free(Endpoint* ep);

// A wait's watch over the ring of a request that needs node traffic (runtime/wait.h's
// poll step, request.cc): see "Waking".  Attends the ring from the first poll until
// withdraw() or the end.  Inactive for any other request.
class NodeWatch {
 public:
  explicit NodeWatch(Request* r);
  ~NodeWatch() {
    if (attending_) leave();
  }
  NodeWatch(const NodeWatch&) = delete;
  NodeWatch& operator=(const NodeWatch&) = delete;
  bool active() const { return ne_ != nullptr; }
  // One poll: attend (first time), drain, flush the backlog.  True if records came.
  bool poll();
  // Before the waiter sleeps: stop attending and drain once more.  True if it was
  // attending (the caller polls its condition again before sleeping).
  bool withdraw() {
    if (!attending_) return false;
    leave();
    withdrawn_ = true;
    return true;
  }

 private:
  void leave();
  Request* r_;
  NodeEndpoint* ne_;
  bool attending_ = false;
  bool withdrawn_ = false;
};

}  // namespace ep::runtime

#endif  // EP_RUNTIME_NODE_H_
