// engine.h - the progress engine: the one owner of libep's MPI traffic in a process.
//
// What it is.  `Engine` makes every MPI call of point-to-point, collective and
// one-sided traffic (the collectives' process-level exchange is the one exception,
// collectives/fast.h), on two duplicates of MPI_COMM_WORLD it makes in start():
//   packet comm  every packet - an eager message with its payload, a rendezvous RTS or
//                CTS, a one-sided request or reply - alone (tag kPacketTag) or several
//                for one process in a bundle (kBundleTag: records of [uint32 length]
//                [uint32 0][packet, padded to 8]).  Received by MPI_Irecv(ANY_SOURCE,
//                ANY_TAG) of kMaxPacketBytes posted in advance (a ring of kPostedRecvs,
//                consumed in post order, so packets reach the sink in MPI arrival order);
//   data comm    rendezvous payloads, under a tag the sender chose (next_data_tag), sent
//                and received straight from and into the users' buffers, both posted
//                only after the receive matched (runtime.h, "Rendezvous").
// Endpoint threads hand it work as Commands through a lock-free MPSC queue (small packets
// through their Outbox, outbox.h) and learn of completions through Completion callbacks;
// arriving packets go to the PacketSink (the runtime).  No packet exceeds kMaxPacketBytes.
//
// The baton.  One pass - start queued commands and held flushes, take arrived packets,
// test outstanding requests, run the pass hook (collective schedules) - runs at a time,
// by whoever holds `baton_`: the thread "ep-progress", or an endpoint thread waiting on
// a transfer with another process (a helper, runtime/wait.h), which saves two thread
// hand-offs per message.  Callbacks (Completion, PacketSink, the hook) run on the holder
// and must not block.  While a helper is at work the progress thread stands aside
// (sleeps kAsideMinNs, doubling to kAsideMaxNs while helpers keep coming); a helper that
// goes to sleep wakes it (helper_leave(true)).  Idle, the progress thread backs off:
// spin, yield, then sleep up to 1 ms (kTransferPollNs while data transfers are in
// flight); submit() wakes it, and so do senders of the node's other processes when the
// node transport is on (set_idle_words).  Paths that skip the queue keep the order the queue would
// give: a waiter's pass returns as soon as its own word changes (try_progress(watch,
// mask)) and then polls the oldest posted receive alone a few times (kQuietPolls); a
// blocking send of a small packet with nothing of its endpoint queued sends it at once
// with MPI_Send (try_send_alone) and posts again a receive a waiter left free; a flush
// of an outbox still being filled by its thread is held up to kHoldNs (a burst of
// EP_Isend leaves as one bundle).
//
// Errors.  Every MPI call's code is checked.  A failure completes the Completion of the
// operation it served with the code and the call (Completion::on_complete), is counted
// (Stats::mpi_errors) and printed once; a packet without a Completion is lost, counted.
// inject_failure() makes chosen calls fail, for tests.
//
// Ordering.  Commands start in submit() order (one FIFO); a bundle goes out where its
// first packet would have; packets to one process travel on one communicator and are
// received in post order, so MPI's non-overtaking rule keeps each endpoint's packets to
// a process in order.
//
// Lifetime: start() once (collective over MPI_COMM_WORLD), stop() once: it waits until
// every queued command started and every send completed; receives left then are
// cancelled.
//
// Threading: submit(), submit_here(), try_progress(), try_start_commands(),
// progress_now(), send_outbox(), try_send_alone(), wake(), helper_enter/leave,
// next_data_tag() and inject_failure() are thread-safe.  submit_from_pass() and
// everything private but the atomics belong to the baton holder (assert(holds_baton())
// in debug builds).
//
// Memory ordering: the baton is taken with an acquire CAS and released with a release
// store: each pass sees every earlier pass's engine state (the holder-owned fields
// below need no other synchronization).  The queue push releases the command; the pass
// that pops it acquires it.  submit() pushes, counts `queued_`, then a seq_cst fence
// orders that before it reads `sleeping_`; the idle thread stores `sleeping_`, fences
// seq_cst and re-reads `queued_` before its futex sleep: either it sees the command or
// the submitter sees it asleep and wakes it (Dekker pairing).  helpers_ and the other
// hints are relaxed: a stale value costs a sleep or a wake, never correctness.
#ifndef EP_PROGRESS_ENGINE_H_
#define EP_PROGRESS_ENGINE_H_

#include <mpi.h>

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "progress/backoff.h"
#include "progress/mpsc_queue.h"
#include "progress/outbox.h"

namespace ep::progress {

// The MPI calls the engine makes for traffic (error messages, the test hook).
enum class MpiCall : uint8_t {
  kSendPacket,  // MPI_Isend of a packet or bundle
  kSendData,    // MPI_Isend of a rendezvous payload (its receive is posted: no Issend)
  kRecvPacket,  // MPI_Irecv posted for the next packets
  kRecvData,    // MPI_Irecv of a rendezvous payload
  kSend,        // MPI_Send of a lone packet
  kTest,        // MPI_Test of a posted packet receive
  kTestsome,    // MPI_Testsome of the outstanding requests
  kCount
};
// The MPI function's name ("MPI_Isend", ...).
const char* mpi_call_name(MpiCall call);

// Called once, on the baton holder, when an MPI operation of a command finished: with
// mpi_error MPI_SUCCESS, or the failed call's error code and name.
class Completion {
 public:
  virtual void on_complete(const MPI_Status& status, int mpi_error, MpiCall call) = 0;

 protected:
  ~Completion() = default;
};

// Receives every incoming packet, on the progress thread.  `block` was allocated
// with malloc and holds kHeadroom free bytes followed by the `len` packet bytes;
// ownership passes to the sink.
class PacketSink {
 public:
  virtual void on_packet(int src_proc, char* block, size_t len) = 0;
  // One packet of a bundle: `packet` is valid only during the call.  The default
  // copies it into a block for on_packet; a sink may consume it in place.
  virtual void on_record(int src_proc, const char* packet, size_t len);
  // Bracket the records of one bundle (the on_record calls between them): a sink may
  // keep state across them, such as a matcher held for consecutive records to one
  // endpoint.  A packet alone is not bracketed.
  virtual void bundle_begin() {}
  virtual void bundle_end() {}

 protected:
  ~PacketSink() = default;
};

struct Command {
  enum Kind : uint8_t {
    kSendPacket,   // MPI_Isend(buf, len bytes) on the packet comm; then done or free(buf)
    kSendData,     // MPI_Isend of (buf, count, type) with data_tag (a rendezvous payload)
    kRecvData,     // MPI_Irecv of (buf, count, type) from peer with data_tag
    kRun,          // run fn(arg) on the progress thread
    kFlushOutbox,  // send the batches of the Outbox `arg` (outbox.h), drop its reference
    kTrack,        // test `req` (started by the submitter, handed over) until done
  };
  Kind kind = kRun;
  int peer = 0;      // rank in MPI_COMM_WORLD
  int data_tag = 0;  // kSendData/kRecvData
  int count = 0;
  void* buf = nullptr;
  size_t len = 0;  // kSendPacket
  MPI_Datatype type = MPI_BYTE;
  Completion* done = nullptr;  // nullptr for kSendPacket: the engine frees buf
  void (*fn)(void*) = nullptr;
  void* arg = nullptr;
  MPI_Request req = MPI_REQUEST_NULL;  // kTrack
  // kRecvData: a packet (malloc'ed, `reply_len` bytes) sent to `peer` once the receive
  // is posted - a rendezvous CTS - or nullptr.  The engine frees it once sent.
  char* reply = nullptr;
  size_t reply_len = 0;
};

struct Options {
  Policy policy = Policy::kAdaptive;
  // Pin the thread to this CPU alone, whatever the caller's affinity (progress/affinity.h);
  // -1: not pinned (the thread keeps the affinity of the thread that calls start()).
  int cpu = -1;
};

// Written by one thread at a time (the baton holder; loops and sleeps by the progress
// thread only), read by EP_STATS at the end.
struct Stats {
  std::atomic<uint64_t> packets_sent{0}, packets_received{0}, data_sent{0}, data_received{0},
      bytes_received{0}, loops{0}, sleeps{0}, commands{0}, bundles_sent{0}, mpi_errors{0},
      packets_dropped{0};
  // relaxed load + store, not a locked RMW: there is only one writer at a time (the
  // baton's acquire/release orders successive writers).
  static void bump(std::atomic<uint64_t>& c, uint64_t n = 1) {
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
};

class Engine {
 public:
  static constexpr size_t kHeadroom = 128;
  static constexpr int kPacketTag = 0, kBundleTag = 1;
  // A packet alone of at most this size is handed to the sink in place (on_record);
  // a larger one gets a block of its own (on_packet).
  static constexpr size_t kSmallPacketBytes = 256;
  // A bundle holds at most this many bytes of packets (larger ones travel alone).
  static constexpr size_t kBundleBytes = 64 * 1024;
  static constexpr int kDataTagMask = (1 << 27) - 1;
  // No packet is larger (the posted receives' size): a sender with more bytes uses the
  // data comm.  Room for a bundle, or for a one-sided chunk's 64 KiB block list.
  static constexpr size_t kMaxPacketBytes = 136 * 1024;
  static_assert(kMaxPacketBytes >= kBundleBytes && kMaxPacketBytes >= Outbox::kBatchBytes,
                "bundles and outbox batches are packets too");
  // The byte count of a received packet (at most kMaxPacketBytes) from its status: MPICH
  // keeps it there (count_lo), elsewhere MPI_Get_count.  tests/progress/packet_bytes_test
  // compares the two.
  static int packet_bytes(const MPI_Status& status) {
#if defined(MPICH)
    return status.count_lo;
#else
    int n = 0;
    MPI_Get_count(&status, MPI_BYTE, &n);
    return n;
#endif
  }

  Engine();
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Duplicates the communicators and starts the named thread, pinned to Options::cpu.
  // A CPU the kernel refuses is no failure: the thread runs unpinned and pin_refusal()
  // says why.
  void start(const Options& options, PacketSink* sink);
  // The kernel's reason (strerror) for refusing Options::cpu at the last start(); empty
  // when the thread was pinned or no CPU was asked for.
  const std::string& pin_refusal() const { return pin_refusal_; }
  // Completes every submitted command, then joins the thread and frees the comms.
  void stop();

  // Thread-safe; never blocks.  Allocates one queue node.  With `self_progress` the
  // caller first tries to run the command itself (one pass, if the baton is free);
  // the progress thread is woken only if work is left and no helper will do it.
  void submit(const Command& command, bool self_progress = false);
  // For the baton holder only (PacketSink::on_packet and Completion callbacks run
  // there): starts the command at once instead of queueing it for the next pass - a
  // reply leaves while its request is being handled.
  void submit_from_pass(const Command& command) {
    assert(holds_baton());
    execute(command);
  }
  // submit_from_pass on the baton holder, submit(command, true) elsewhere.
  void submit_here(const Command& command) {
    if (holds_baton()) {
      execute(command);
    } else {
      submit(command, /*self_progress=*/true);
    }
  }
  // True on the thread that holds the baton (checked by debug assertions).
  bool holds_baton() const {
    // relaxed: only the holder stores its own mark; another thread never sees its own.
    return baton_owner_.load(std::memory_order_relaxed) == this_thread_mark();
  }
  // Runs one progress pass if no other thread holds the baton.  Returns true if this
  // call made progress.  Thread-safe.
  bool try_progress(const std::atomic<uint32_t>* watch = nullptr, uint32_t mask = 0);
  // True while some thread runs a pass (a hint: it may end at any moment).
  bool baton_held() const { return baton_.load(std::memory_order_relaxed) != 0; }
  // Runs one pass that tests every outstanding MPI request (none is left for a later
  // pass), waiting until the baton is free if another thread holds it.  True if the
  // pass made progress.  Buffered sends reclaim their space with it (runtime/bsend.h).
  bool progress_now();
  // Like try_progress, but only starts queued commands (a sender pushing its own
  // message out; probing and testing are left to waiters and the progress thread).
  bool try_start_commands();
  // After Outbox::append/append_alone (outbox.h): `flush_reserved` - it returned true
  // (a flush is owed); `now` - send at once if no other thread holds the baton
  // (a blocking send).  Otherwise the flush is queued as Command::kFlushOutbox.
  void send_outbox(Outbox* outbox, bool flush_reserved, bool now);
  // A blocking send's lone small packet (at most kSmallPacketBytes), from the thread
  // that appends to `outbox`: if the baton is free and the outbox holds nothing of
  // this endpoint's, sends `len` bytes at `packet` at once with MPI_Send and returns
  // true; else returns false and does nothing (the caller goes through the outbox).
  // *mpi_error: MPI_Send's code (the caller reports a failure).
  bool try_send_alone(const Outbox& outbox, int peer, const char* packet, size_t len,
                      int* mpi_error);
  // Wakes the progress thread if it sleeps (a waiter stops progressing itself).
  void wake();
  // A thread announces that it will drive progress while it waits (helper_enter)
  // and that it stopped (helper_leave); meanwhile the progress thread stands aside
  // instead of competing for the baton and the cores.
  // Standing aside: the progress thread sleeps and looks again after kAsideMinNs; each
  // look that finds a helper at work, or one that entered since its previous look,
  // doubles the next sleep, up to kAsideMaxNs (a ping-pong makes helper after helper,
  // and every look would wake a thread on a busy core).  It resumes at once if a helper
  // leaves with `wake_now`, else within two sleeps of the last helper leaving.  One word
  // holds the number of helpers (low 32 bits) and how many ever entered (high 32 bits).
  void helper_enter() {
    // relaxed: helpers_ is a scheduling hint, not synchronization.
    helpers_.fetch_add(kHelperEntered + 1, std::memory_order_relaxed);
  }
  // The last helper to leave also wakes the progress thread when commands wait in the
  // queue (a flush its endpoint left there, say): nobody else would start them soon.
  void helper_leave(bool wake_now) {
    // relaxed: a hint (see helper_enter).
    const uint64_t old = helpers_.fetch_sub(1, std::memory_order_relaxed);
    // relaxed: queued_ is a hint here; a command pushed later wakes the thread itself.
    if ((old & kHelperCount) == 1 && (wake_now || queued_.load(std::memory_order_relaxed) > 0)) {
      wake();
    }
  }
  static constexpr int64_t kAsideMinNs = 100'000, kAsideMaxNs = 1'000'000;
  // Work the layers above run in every pass (collective schedules): returns true if it
  // made progress, and sets *pending while it has unfinished work (stop() waits for it).
  // Set once, before any pass can call it.
  using PassHook = bool (*)(bool* pending);
  void set_pass_hook(PassHook hook) { hook_.store(hook, std::memory_order_release); }
  // The node transport's work in every pass (runtime/node.h: rings whose pending bit is
  // set, backlogs): true if it made progress.  Work done there does not restart the idle
  // thread's back-off: the node's senders wake it when they need it.  Set once, before
  // start().
  void set_node_hook(PassHook hook) { node_hook_.store(hook, std::memory_order_release); }
  // Where the idle progress thread sleeps while the node transport is on: `word`, a futex
  // word in memory shared with the node's other processes, whose senders wake it (so
  // every wait and wake on it is a shared futex operation), its `asleep` flag there (1
  // while it sleeps: the senders' side of the Dekker pairing, node/segment.h's Doorbell),
  // and `work_waiting`, asked after the flag is set and before sleeping (records wait for
  // the node hook).  Without them the thread sleeps on a private word.  Set before start().
  void set_idle_words(std::atomic<uint32_t>* word, std::atomic<uint32_t>* asleep,
                      bool (*work_waiting)()) {
    wake_ptr_ = word;
    asleep_ = asleep;
    work_waiting_ = work_waiting;
  }
  // A fresh tag for a rendezvous payload to any peer.  Thread-safe.
  int next_data_tag() {
    // relaxed: only uniqueness matters, the tag travels in the packet itself.
    return static_cast<int>(data_tag_.fetch_add(1, std::memory_order_relaxed) & kDataTagMask);
  }

  // Test hook: the next `n` calls of `call` the engine makes fail with MPI_ERR_OTHER
  // (without reaching MPI).  Thread-safe.
  void inject_failure(MpiCall call, int n);
  // The last failed MPI call and its error code (EP_STATS, messages); MPI_SUCCESS if none.
  int last_mpi_error(MpiCall* call) const;

  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }
  const Stats& stats() const { return stats_; }

 private:
  struct Active {
    Completion* done;
    void* free_buf;  // freed on completion when done == nullptr
    MpiCall call;    // what started it (a failure's message)
    bool transfer;   // a data send or receive (counted in transfers_)
  };
  struct Node : MpscNode {
    Command command;
  };
  void run();
  bool take_baton();     // acquire; false if another thread holds it
  void release_baton();  // release
  // Requires the baton.  `watch`/`mask`: end early once a bit of mask is set in *watch
  // (nullptr: a full pass).  *node_work (if given) says whether the node hook did work,
  // which the return value then leaves out: node senders ring a doorbell when they need
  // the thread, so its work calls for no spinning afterwards (see run()).
  bool pass(const std::atomic<uint32_t>* watch = nullptr, uint32_t mask = 0,
            bool* node_work = nullptr);
  bool drain_commands();
  // drain_commands, then flush_held: what a pass or a sender starts.
  bool start_commands();
  // Flushes the held outboxes whose burst ended; true if it flushed one.
  bool flush_held();
  // Sends the packets of bundle_ (all to bundle_peer_) and empties it.
  void flush_bundle();
  void flush_outbox(Outbox* outbox);
  // MPI_Isend of malloc'ed `buf` on the packet comm; freed once sent (or if it fails).
  void send_owned(char* buf, size_t len, int peer, int tag);
  // The same for `len` bytes at `data` inside the malloc'ed `block` (freed when sent).
  void send_owned_at(char* block, const char* data, size_t len, int peer, int tag);
  void deliver_bundle(int src, const char* data, size_t len);
  bool poll_packets(const std::atomic<uint32_t>* watch = nullptr, uint32_t mask = 0);
  // A waiter's pass found nothing: poll the oldest posted receive alone, up to
  // kQuietPolls times, while nothing else needs a pass; true if a poll took a packet.
  bool poll_quietly(const std::atomic<uint32_t>* watch, uint32_t mask);
  static constexpr int kQuietPolls = 8;
  bool test_active();
  void execute(const Command& c);
  // True (and a failure recorded) if the test hook makes this call fail.
  bool injected(MpiCall call) {
    // relaxed: the hook is armed long before the calls it affects (a test's setup).
    return armed_.load(std::memory_order_relaxed) && take_injected(call);
  }
  bool take_injected(MpiCall call);
  // A failed MPI call: counted (EP_STATS), remembered, reported once on stderr.
  void record_failure(MpiCall call, int mpi_error);
  void track(MPI_Request req, Completion* done, void* free_buf, MpiCall call,
             bool transfer = false);
  // aside_ns > 0: standing aside for a helper, sleep that long; 0: idle for lack of work.
  // `transfers`: data transfers were in flight at the end of the last pass.
  void idle(Backoff& backoff, int64_t aside_ns, bool transfers);
  // While data transfers are in flight the idle thread sleeps at most this long: they
  // complete soon and need MPI progress calls to do so.
  static constexpr int64_t kTransferPollNs = 50'000;

  MpscQueue queue_;                 // consumer: the baton holder
  std::atomic<int64_t> queued_{0};  // commands pushed and not yet executed
  PacketSink* sink_ = nullptr;
  MPI_Comm packet_comm_ = MPI_COMM_NULL;
  MPI_Comm data_comm_ = MPI_COMM_NULL;
  int world_rank_ = 0, world_size_ = 1;
  Policy policy_ = Policy::kAdaptive;
  std::thread thread_;
  std::string pin_refusal_;  // written by start() only, before it returns
  std::atomic<int> tid_{0};            // kernel id of the progress thread (release: run())
  std::atomic<bool> stopping_{false};  // release in stop(), acquire in run()
  // What the progress thread is doing (seq_cst fences: see "Memory ordering").
  static constexpr uint32_t kAwake = 0, kAsleep = 1, kStandingAside = 2;
  std::atomic<uint32_t> sleeping_{kAwake};
  std::atomic<uint32_t> wake_word_{0};  // futex word the thread sleeps on (private)
  // The word it sleeps on (wake_word_, or the shared one of set_idle_words), its asleep
  // flag there (or nullptr: private) and the node transport's last check; written
  // before start().
  std::atomic<uint32_t>* wake_ptr_ = &wake_word_;
  std::atomic<uint32_t>* asleep_ = nullptr;
  bool (*work_waiting_)() = nullptr;
  // Sleeps on *wake_ptr_ while it holds `seen` (a shared futex wait when asleep_ is set).
  void sleep_on_word(uint32_t seen, int64_t ns) {
    if (asleep_ != nullptr) {
      futex_wait_shared(*wake_ptr_, seen, ns);
    } else {
      futex_wait(*wake_ptr_, seen, ns);
    }
  }
  std::atomic<uint32_t> data_tag_{0};
  std::atomic<uint32_t> baton_{0};  // 1 while a thread runs a pass
  // this_thread_mark() of the baton holder while it holds it, else nullptr (a hint for
  // holds_baton(); written by the holder only).
  std::atomic<const void*> baton_owner_{nullptr};
  // Threads progressing while they wait (low 32 bits) and helpers that ever entered
  // (high 32 bits, wrapping); a hint, see helper_enter.
  static constexpr uint64_t kHelperCount = 0xffffffffu, kHelperEntered = uint64_t{1} << 32;
  std::atomic<uint64_t> helpers_{0};
  std::atomic<PassHook> hook_{nullptr};  // release in set_pass_hook, acquire in pass
  std::atomic<PassHook> node_hook_{nullptr};  // release in set_node_hook, acquire in pass
  bool hook_pending_ = false;            // owned by the baton holder
  // Owned by the baton holder:
  std::vector<MPI_Request> requests_;
  std::vector<Active> active_;
  std::vector<int> indices_;
  std::vector<MPI_Status> statuses_;
  int waited_ = 0;       // entries of active_ with a Completion
  int transfers_ = 0;    // entries of active_ that are data sends or receives
  int receives_ = 0;     // entries of active_ that are receives (kRecvData, kTrack)
  int lazy_passes_ = 0;  // passes since active_ was last tested
  static constexpr int kLazyTestPasses = 16;
  // Flushes held back while their appender is still appending, each with
  // its command's reference to the outbox.
  struct Held {
    Outbox* outbox;
    int64_t until_ns;  // now_ns() after which anyone flushes it
  };
  // Long enough for a window of 64 EP_Isend, short enough that a burst whose thread
  // went off to compute waits little (docs/perf/progress.md).
  static constexpr int64_t kHoldNs = 5'000;
  std::vector<Held> held_;
  std::vector<Command> bundle_;  // kSendPacket commands to bundle_peer_, in queue order
  size_t bundle_bytes_ = 0;
  int bundle_peer_ = -1;
  // The receives posted in advance for the next packets (MPI_Irecv(ANY_SOURCE,
  // ANY_TAG) on the packet comm, into buf + kHeadroom; kMaxPacketBytes fit), a ring
  // consumed oldest first.  A few: a waiter's pass uses up one per wait at most.
  static constexpr int kPostedRecvs = 4;
  static_assert((kPostedRecvs & (kPostedRecvs - 1)) == 0, "the ring indexes with a mask");
  struct PostedRecv {
    MPI_Request req = MPI_REQUEST_NULL;
    char* buf = nullptr;  // kHeadroom + kMaxPacketBytes + 1, for the engine's life
  };
  PostedRecv posted_[kPostedRecvs];
  int posted_head_ = 0;   // the oldest posted receive (the one tested)
  int posted_count_ = 0;  // posted: posted_head_ and the next posted_count_ - 1 (cyclic)
  // Posts the first free slot (after the newest posted one).  Requires one free.
  void post_packet_recv();
  std::vector<Outbox::Batch> batches_;  // flush_outbox's scratch
  Stats stats_;
  std::atomic<bool> armed_{false};                                   // inject_failure
  std::atomic<int> inject_[static_cast<int>(MpiCall::kCount)] = {};  // calls to fail
  std::atomic<int> last_error_{0};                                   // record_failure
  std::atomic<uint8_t> last_call_{0};
  std::atomic<bool> reported_{false};
};

// Inline: every blocking send of a small message to another process, and every
// pass, starts here.
inline bool Engine::try_send_alone(const Outbox& outbox, int peer, const char* packet, size_t len,
                                   int* mpi_error) {
  if (len > kSmallPacketBytes || !take_baton()) return false;
  if (!outbox.idle_for_appender()) {  // an earlier packet of this endpoint goes first
    release_baton();
    return false;
  }
  // An eager send of a small packet: returns once MPI holds the bytes.
  *mpi_error = injected(MpiCall::kSend)
                   ? MPI_ERR_OTHER
                   : MPI_Send(packet, static_cast<int>(len), MPI_BYTE, peer, kPacketTag,
                              packet_comm_);
  if (*mpi_error != MPI_SUCCESS) record_failure(MpiCall::kSend, *mpi_error);
  // The receive a waiter's packet left free is posted again now, while this packet is
  // on its way (its reply cannot come before it arrived).
  if (posted_count_ < kPostedRecvs) post_packet_recv();
  Stats::bump(stats_.packets_sent);
  release_baton();
  return true;
}

inline bool Engine::take_baton() {
  uint32_t expected = 0;
  // acquire: pairs with the release store in release_baton() that ended the previous
  // pass.
  if (baton_.load(std::memory_order_relaxed) != 0 ||
      !baton_.compare_exchange_strong(expected, 1, std::memory_order_acquire,
                                      std::memory_order_relaxed)) {
    return false;
  }
  baton_owner_.store(this_thread_mark(), std::memory_order_relaxed);  // relaxed: a hint
  return true;
}

inline void Engine::release_baton() {
  baton_owner_.store(nullptr, std::memory_order_relaxed);  // relaxed: a hint
  baton_.store(0, std::memory_order_release);  // pairs with the acquire in take_baton()
}

}  // namespace ep::progress

#endif  // EP_PROGRESS_ENGINE_H_
