// matching.h - per-endpoint message matching: exactly once, in order, lock-free.
//
// What it is: every endpoint (one rank of one endpoints communicator in this
// process) has a Matcher.  Incoming messages (`Envelope`s) arrive from the progress
// thread (messages from other processes) and from sender threads of this process;
// the endpoint's own thread posts receives, probes and cancels (`MatchOp`s).
//
// The protocol.  Two lock-free inputs and two private lists:
//   inbox_  moodycamel::ConcurrentQueue<Envelope*>: arrivals.  Each producer (the
//           progress thread, or one sending endpoint) enqueues with its own
//           ProducerToken, so arrivals from one source keep their order (moodycamel
//           is FIFO per producer, and only per producer).
//   posts_  tbb::concurrent_queue<MatchOp*>: receives/probes/cancels, FIFO, posted
//           by the owning endpoint (one thread at a time).
//   posted_, unexpected_: keyed FIFO indexes (match_index.h) touched only by the
//           current *matcher*: the earliest posted receive that matches an arrival,
//           and the earliest unexpected message a specific receive matches, are
//           found in constant time however many wait.
// Whoever adds an item (push to inbox_ or posts_) then calls kick():
//   line_.work.fetch_add(1); if it was 0 the caller becomes the matcher, else the current
//   matcher is guaranteed to see the item (below) and the caller just returns.
// The matcher loops: drain inbox_ (each arrival matched against posted_ in post
// order, else appended to unexpected_), drain posts_ (each receive matched against
// unexpected_ in arrival order, else appended to posted_; probes read unexpected_),
// then tries CAS(line_.work, seen -> 0).  If anyone kicked meanwhile the CAS fails and
// the matcher runs another round.  Hence at most one matcher at a time, every item
// pushed before a kick is processed by the matcher of that kick or a later one, and
// each item is processed exactly once, by one thread, in its queue's order.
// In place.  A sender that finds line_.work == 0 may CAS 0 -> 1 and match its message in
// place (try_deliver_direct), avoiding the queue; a poster likewise handles its op in
// place (post).  Neither drains the queues first, because nothing in them must come
// first: line_.work == 0 means every item whose kick happened was processed, and an item
// pushed but not yet kicked comes from another thread - another source, or a post
// not yet complete - so it is concurrent with ours and MPI allows either order (one
// source's arrivals are pushed by one thread at a time, and it kicks before its
// next push or in-place match).  Afterwards CAS(1 -> 0); if it fails, someone kicked:
// drain the queues and try again (finish_rounds).
// Held.  A thread delivering several arrivals in a row (the records of one bundle from
// another process, all from one source process) may stay the matcher across them:
// hold() once, deliver_held() each, release() once - one CAS pair for the run instead
// of one per arrival.  The argument is the in-place one applied to each arrival in
// turn: anything pushed meanwhile is handled at release(), before the line is let go.
// The first posted receive.  A sender matching in place needs the matcher's line
// (line_.work) anyway; the fields of the first posted receive - match criteria, where its
// data goes, its request and its successor - are copied onto that same line (Line),
// so matching and delivering it costs no transfer of the receive's own MatchOp line
// from the poster's core.  The head is the earliest posted receive and is not in
// posted_; line_.head_next is posted_'s first (the next earliest), nullptr when the
// head is the only one.  The head is popped after its delivery, which reads nothing
// but the copy, and the successor is taken out of posted_ and copied in then.
// Delivered on the line.  A blocking receive (EP_Recv) from an endpoint of this process
// waits by polling the matcher's line as well as its request (line_wait).  While such
// a receive is the only one posted, a matcher that delivers an eager message of at
// most kLineBytes into its contiguous buffer (whole elements, no truncation) writes
// the result - source, tag, bytes - onto the line itself and marks head_req
// delivered, instead of completing the request: a sender of this process then writes
// one cache line of the receiver's, the one it had to take for matching anyway, and
// the waiter reads that one line back (a request completion costs the sender a second
// line, taken from under the spinning waiter).  The waiter takes the result
// (collect()), copies it to its buffer, completes its own request and clears
// head_req.  Nobody else writes head_req meanwhile: a delivered head counts as no
// posted receive (arrivals go to unexpected_ as usual), and the owner, the only
// poster, is inside its EP_Recv.  Before a waiter sleeps it withdraws (withdraw_line
// under the matcher's line, so no delivery is half done): the flag on the head and
// on its MatchOp are cleared, and later deliveries complete the request, which wakes
// it.  A receive that is not the only one posted, or a message that does not fit,
// takes the request's own completion as before.  On this machine a token passed through
// one line that the waiter polls costs half of one passed through two
// (docs/perf/runtime.md).
// Ordering argument: arrivals from one source are processed in send order and each
// goes to the first posted receive that matches it; receives are processed in post
// order and each takes the first unexpected arrival that matches it - MPI's
// non-overtaking rule for both sides, wildcards included.
//
// Threading: push/kick/try_deliver_direct from any thread; the lists from the
// matcher only.
//
// Memory ordering (delivered on the line): the delivering matcher writes the result
// fields and then stores head_req with release; collect() loads head_req with acquire
// (pairs with it) before reading them.  The collector's relaxed store of 0 needs no
// order of its own: the next delivery on the line needs the owner's next post, which
// follows the collector's reads and store in program order and reaches the next
// matcher through the release of line_.work (or of the posts queue) that the matcher
// acquires.  Matchers that meanwhile read head_req see a delivered head or 0: no
// posted receive, either way.
// Memory ordering: producers push (release inside the queues) and then
// line_.work.fetch_add(acq_rel); the matcher's CAS(seen -> 0) uses acq_rel, so a failed
// CAS (acquire) sees every push counted after `seen`, and the next matcher's
// fetch_add/CAS (acquire) synchronizes-with the previous matcher's successful CAS
// (release), handing over posted_/unexpected_.  MatchOp::done is stored with release
// by the matcher after it wrote the result; the poster loads it with acquire.
// ThreadSanitizer builds see the same happens-before inside both queues: inbox_'s block
// reuse through orderings on the accesses that moodycamel orders with fences
// (third_party/concurrentqueue/tsan_orderings.sh), posts_'s representation reuse
// through PostsAllocator (below).  Normal builds compile the queues unchanged.
#ifndef EP_RUNTIME_MATCHING_H_
#define EP_RUNTIME_MATCHING_H_

#include <concurrentqueue/concurrentqueue.h>
#include <tbb/concurrent_queue.h>

#include <atomic>
#include <cstdint>
#include <memory>
#if defined(EP_SANITIZER_THREAD)
#include <sanitizer/tsan_interface.h>

#include <new>
#include <utility>
#endif

#include "runtime/datatype.h"
#include "runtime/match_index.h"
#include "runtime/request.h"

namespace ep::runtime {

// One message as the matcher sees it.
struct Envelope {
  // An envelope handed out as an EP_Message (a matched probe's) carries kMessageMagic
  // here until EP_Mrecv/EP_Imrecv takes it; first, as in every handle object
  // (api/entry.h, handle validation).  Other envelopes leave it unset.
  static constexpr uint32_t kMessageMagic = 0x3e55a6e1;
  uint32_t magic;
  enum Kind : uint8_t {
    kEager,       // payload bytes at `data`, owned (free `block` when consumed)
    kLocalRndv,   // payload still in the sender's buffer (same process); `sreq` completes
                  // when it has been copied
    kRemoteRndv,  // an RTS: the payload leaves the sender (src_proc, data_tag) on our CTS
    kNodeRndv,    // an RTS of the node transport: `data` points to its NodeRts (where the
                  // payload lies, whom to acknowledge; runtime/node.h), copied along when
                  // the envelope is materialized; delivery copies the payload once
  };
  Kind kind = kEager;
  bool owned = false;  // the envelope lives in `block` (heap) and owns its payload
  int src_rank = 0;
  int tag = 0;
  int64_t bytes = 0;  // packed size
  // kEager
  const char* data = nullptr;
  void* block = nullptr;     // malloc'ed storage of this envelope and/or payload
  Envelope* next = nullptr;  // matcher's private list link (its unexpected index's bin)
  // The rendezvous kinds' fields: set by the default constructor, left unset by the
  // eager one (nothing reads them in an eager envelope).
  // kLocalRndv
  const void* sbuf;
  int scount;
  // Arrival number in the matcher's unexpected index (match_index.h), set when it joins
  // it (in scount's padding: the envelope fits Engine::kHeadroom).  Any kind.
  uint32_t seq;
  TypeInfo sti;  // borrowed from the sender's request or blocked call (p2p.cc)
  Request* sreq;
  // kRemoteRndv
  int src_proc;
  int data_tag;
  uint64_t cookie;  // the sender's request, echoed in the CTS (runtime.h, "Rendezvous")

  Envelope() : sbuf(nullptr), scount(0), sreq(nullptr), src_proc(0), data_tag(0), cookie(0) {}
  // An eager envelope on a message path (a local eager send, a bundle's record): only
  // the fields above the rendezvous ones are set (clearing all of them costs a `rep stos`
  // on every message).
  struct EagerOnly {};
  explicit Envelope(EagerOnly) {}
};

inline bool envelope_matches(int source, int tag, const Envelope& e) {
  return (source == kAnySource || source == e.src_rank) &&
         (tag == kAnyTag ? e.tag >= 0 : tag == e.tag);
}

// The allocator of the posts queue.  std::allocator: TBB's default cache_aligned_allocator
// recycles pages through tbbmalloc, whose frees ThreadSanitizer cannot see, and posts
// are not hot enough for the difference to matter.
#if defined(EP_SANITIZER_THREAD)
template <class U>
inline constexpr bool kIsQueueRepresentation = false;
template <class V, class A>
inline constexpr bool kIsQueueRepresentation<tbb::detail::d2::concurrent_queue_rep<V, A>> = true;

// Under TSAN, std::allocator plus one annotation.  tbb::concurrent_queue takes the
// memory of its representation (its counters and page lists) from
// r1::cache_aligned_allocate whatever its Allocator, i.e. from tbbmalloc: the
// representation of a matcher destroyed on one thread is reused by a matcher built on
// another, and TSAN, which never saw the free, reports the new queue's construction as
// racing with the old queue's last use.  The queue builds and destroys its
// representation through its allocator, so this one makes the reuse visible: destroy()
// releases the address after the last access, construct() acquires it before the
// first - the order tbbmalloc's own hand-off gives, seen by TSAN.  Items and pages are
// built as std::allocator builds them (pages come from operator new, which TSAN sees),
// so no other edge is added.
template <class T>
struct PostsAllocator {
  using value_type = T;
  PostsAllocator() = default;
  template <class U>
  PostsAllocator(const PostsAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return std::allocator<T>().allocate(n); }
  void deallocate(T* p, std::size_t n) { std::allocator<T>().deallocate(p, n); }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (kIsQueueRepresentation<U>) __tsan_acquire(p);  // pairs with destroy()
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <class U>
  void destroy(U* p) {
    p->~U();
    if constexpr (kIsQueueRepresentation<U>) __tsan_release(p);  // pairs with construct()
  }
  friend bool operator==(const PostsAllocator&, const PostsAllocator&) { return true; }
};
#else
template <class T>
using PostsAllocator = std::allocator<T>;
#endif

class Matcher {
 public:
  // Called by the matcher when receive `r` takes message `e` (consumes `e`); `target`
  // is r->op.target, or the matcher's copy of it for the first posted receive (use it,
  // not r->op).  By reference: a 24-byte struct passed by value went through a
  // store-forwarding stall in every delivery.  Read it before completing r.
  using DeliverFn = void (*)(Request* r, const RecvTarget& target, Envelope* e);
  // Makes an unexpected envelope own its payload (it was matched in place before).
  using MaterializeFn = Envelope* (*)(Envelope* e);

  Matcher(DeliverFn deliver, MaterializeFn materialize)
      : deliver_(deliver), materialize_(materialize), inbox_(0) {}
  // Notified whenever an arrival becomes unexpected (a blocking probe sleeps on it).
  void set_arrivals(Event* arrivals) { arrivals_ = arrivals; }
  ~Matcher();

  moodycamel::ConcurrentQueue<Envelope*>& inbox() { return inbox_; }
  // Enqueue an arrival (with the producer's token) and kick.
  void push(moodycamel::ProducerToken& token, Envelope* e) {
    inbox_.enqueue(token, e);
    kick();
  }
  // Enqueue a receive/probe/cancel and kick.  Probes and cancels are complete when
  // op->done reads 1 (acquire).
  void post(MatchOp* op);
  // If no matcher is active, become it and match `e` in place (e may live on the
  // caller's stack: it is materialized if it has to wait).  Returns false, doing
  // nothing, if another matcher is active.
  bool try_deliver_direct(Envelope* e) { return try_deliver_direct_with(e, deliver_); }
  // The same with `deliver` for the first posted receive: the function this matcher was
  // made with, or one that does the same (the runtime passes an inline form of its
  // own, which the compiler can inline on the path of every message).
  template <class Deliver>
  bool try_deliver_direct_with(Envelope* e, Deliver deliver) {
    if (!hold()) return false;
    arrive_with(e, deliver);  // the queues hold nothing we must see first ("In place")
    let_go();
    return true;
  }
  // See "Held" above.  hold(): if no matcher is active, become it (true), else false.
  // deliver_held(): while holding, match `e` in place (as try_deliver_direct).
  // release(): stop holding, after handling whatever was pushed meanwhile.
  bool hold() {
    uint32_t expected = 0;
    // acquire: pairs with the release CAS of the previous matcher (finish_rounds).
    return line_.work.compare_exchange_strong(expected, 1, std::memory_order_acquire,
                                              std::memory_order_relaxed);
  }
  void deliver_held(Envelope* e) { arrive(e); }
  template <class Deliver>
  void deliver_held_with(Envelope* e, Deliver deliver) {
    arrive_with(e, deliver);
  }
  void release() { let_go(); }
  // True while some thread is acting as this matcher (for safe reclamation).
  bool busy() const { return line_.work.load(std::memory_order_acquire) != 0; }

  // Delivered on the line (see above).  The payload limit of such a delivery.
  static constexpr int64_t kLineBytes = 8;
  struct LineResult {
    int source = 0;
    int tag = 0;
    int64_t bytes = 0;
    alignas(8) char data[kLineBytes];
  };
  // The waiter of `r` (its owner's thread): true, with the result in `out`, if a
  // matcher delivered r's message on the line.
  bool collect(const Request* r, LineResult* out);
  // The waiter of `r` stops polling the line (before it sleeps): afterwards no
  // delivery to r happens on the line.  Returns false if another thread is the
  // matcher right now (try again later), true once withdrawn.
  bool withdraw_line(Request* r);
  // A cheap poll for the waiter's tight loop: some head was delivered on the line
  // (collect() then checks that it is the caller's).
  bool delivered_hint() const {
    // relaxed: a hint only; collect() re-reads with acquire (pairs with deliver_on_line).
    return (line_.head_req.load(std::memory_order_relaxed) & kDelivered) != 0;
  }

 private:
  void kick();
  void run_rounds(uint32_t seen);     // drains the queues, then finish_rounds
  void finish_rounds(uint32_t seen);  // CAS(seen -> 0); on failure drain and retry
  // The end of an in-place match or a hold: finish_rounds(1) with its usual first
  // CAS inline.  A failed CAS reloads `seen`: drain before the next try.
  void let_go() {
    uint32_t seen = 1;
    // acq_rel, acquire on failure: as in finish_rounds.
    if (line_.work.compare_exchange_strong(seen, 0, std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
      return;
    }
    process_all();
    finish_rounds(seen);
  }
  void process_all();
  void arrive(Envelope* e) { arrive_with(e, deliver_); }
  // An arrival: to the first posted receive that matches it, else unexpected (see the
  // ordering argument above).  The first posted receive inline, the rest (a later
  // posted receive, or none: unexpected) in arrive_rest.
  template <class Deliver>
  void arrive_with(Envelope* e, Deliver deliver) {
    const Line& l = line_;
    // relaxed: as posted_head(), read once here for the line check too.
    const uintptr_t h = l.head_req.load(std::memory_order_relaxed);
    Request* head = head_of(h);
    if (head != nullptr && envelope_matches(l.head_source, l.head_tag, *e)) {
      if ((h & kLineWait) != 0 && deliver_on_line(e, h)) return;
      // Delivery reads only the copy; once it completed the request may be reused, so
      // the head is popped afterwards, from the copy too.
      const RecvTarget target{l.head_dst, l.head_cap, l.head_elem};
      deliver(head, target, e);
      pop_head();
      return;
    }
    arrive_rest(e, head);
  }
  void arrive_rest(Envelope* e, Request* head);
  void handle(MatchOp* op);
  // The posted receives (see "The first posted receive"): append in post order; drop
  // the first one (after its delivery: the earliest of the index becomes the head).
  void append_posted(MatchOp* op);
  void pop_head() {
    MatchOp* n = line_.head_next;
    if (n != nullptr) posted_.remove(n);
    load_head(n);
  }
  void load_head(MatchOp* op) {
    Line& l = line_;
    // head_req stores here are relaxed: we hold the line (line_.work), whose release by
    // let_go/finish_rounds publishes them to the next matcher; a waiter only looks for
    // the kDelivered mark, which deliver_on_line publishes with release.
    if (op == nullptr) {
      l.head_req.store(0, std::memory_order_relaxed);
      l.head_next = nullptr;
      return;
    }
    l.head_source = op->source;
    l.head_tag = op->tag;
    l.head_dst = op->target.dst;
    l.head_cap = op->target.cap;
    l.head_elem = op->target.elem;
    l.head_req.store(reinterpret_cast<uintptr_t>(op->req) | (op->line_wait ? kLineWait : 0),
                     std::memory_order_relaxed);
    l.head_next = posted_.first();
  }
  // The first posted receive's request, or nullptr if none is posted (a head
  // delivered on the line counts as none); head_of: the same from a head_req value.
  Request* posted_head() const;
  static Request* head_of(uintptr_t head_req) {
    return (head_req & kDelivered) != 0 ? nullptr
                                        : reinterpret_cast<Request*>(head_req & ~kBitsMask);
  }
  // arrive(): deliver `e` to the head, whose waiter polls the line (`h`: head_req, with
  // kLineWait), on the line if it may be (see "Delivered on the line"); false: deliver
  // it as usual.
  bool deliver_on_line(Envelope* e, uintptr_t h);
  // A probe found `u`: publish its envelope in op->status and mark op done.
  void report(MatchOp* op, const Envelope* u);

  DeliverFn deliver_;
  MaterializeFn materialize_;
  Event* arrivals_ = nullptr;  // set before the endpoint is published
  moodycamel::ConcurrentQueue<Envelope*> inbox_;
  tbb::concurrent_queue<MatchOp*, PostsAllocator<MatchOp*>> posts_;
  // One cache line: all that a sender matching the first posted receive in place reads
  // and writes of the matcher, and all that posting a receive does.
  // Bits of Line::head_req besides the Request pointer (64-byte aligned): the head's
  // waiter polls the line (kLineWait), the head was delivered on the line
  // (kDelivered), whose byte count is in bits kBytesShift and up.
  static constexpr uintptr_t kLineWait = 1, kDelivered = 2, kBytesShift = 2, kBitsMask = 63;
  static_assert(kLineBytes < (uintptr_t{1} << (6 - kBytesShift)), "bytes fit in the spare bits");
  struct alignas(64) Line {
    std::atomic<uint32_t> work{0};
    // Matcher-private (see the protocol above).  The first posted receive's fields
    // (see "The first posted receive"); head_req 0: nothing is posted.
    uint32_t head_elem = 0;
    int head_source = 0;
    int head_tag = 0;
    char* head_dst = nullptr;
    int64_t head_cap = 0;
    // Request* | bits above.  Atomic: the waiter reads it (collect) and clears a
    // delivered head without being the matcher; matchers use relaxed accesses but
    // for the release that publishes a delivery.
    std::atomic<uintptr_t> head_req{0};
    MatchOp* head_next = nullptr;
    // The result of a delivery on the line (written before head_req's release).
    int res_source = 0;
    int res_tag = 0;
    alignas(8) char res_data[kLineBytes];
  };
  static_assert(sizeof(Line) == 64, "the matcher's hot fields share one cache line");
  Line line_;
  // Matcher-private, after the line: touched when a second receive is posted or an
  // unexpected message waits, so a delivery to the only posted receive writes no
  // field of them.  posted_: every posted receive but the head, in post order
  // (head_next is its first); unexpected_: the unexpected messages in arrival order.
  alignas(64) PostedIndex posted_;
  UnexpectedIndex unexpected_;
};

}  // namespace ep::runtime

#endif  // EP_RUNTIME_MATCHING_H_
