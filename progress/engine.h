// engine.h - the progress engine: one thread per MPI process that owns MPI traffic.
//
// What it is: `Engine` runs the thread named "ep-progress" and owns all MPI traffic
// of point-to-point: the receive of incoming packets (a ring of MPI_Irecvs posted in
// advance, below), MPI_Isend/MPI_Issend/MPI_Irecv of submitted commands, and MPI_Testsome of
// everything outstanding.
// Endpoint threads call MPI only while they hold the baton (below); otherwise they
// submit `Command`s through a lock-free MPSC queue (small packets through their
// Outbox, outbox.h) and learn of completion through `Completion` callbacks.
//
// The progress baton.  One progress pass (drain commands, probe packets, test
// requests) runs at a time, by whoever holds `baton_`: normally the progress thread.
// A thread blocked on a transfer with another process (EP_Wait on it, EP_Probe) may
// take the baton with try_progress() and run passes itself: the engine's state moves
// with the baton, so it is still one serial owner of every MPI call, but a waiting
// thread does not need two thread hand-offs per message.  While the baton is taken the
// progress thread sleeps; it takes over again as soon as nobody else progresses, so
// progress stays asynchronous.  A blocking send takes the baton only to start its own
// packet (send_outbox), after the commands queued before it.  Sends that only free a
// buffer when done are tested every kLazyTestPasses passes, not in every pass of a
// waiter.  Completion and PacketSink callbacks therefore run on
// whichever thread holds the baton.  A waiter's pass may name the word its wait is
// for (try_progress(watch, mask)): the pass then ends as soon as a delivered packet
// set one of `mask`'s bits there - before the next MPI_Test, which would find
// nothing in a ping-pong, and before the tests and the collectives' hook - so the
// waiter returns to its application one empty probe earlier; the next pass, of
// whoever holds the baton then, does the rest.
// A pass looks at the command queue only while `queued_` counts commands or flushes
// are held: a waiter's pass in a ping-pong skips the queue's empty pop and the bundle
// bookkeeping (about 90 instructions), and a command whose count is not visible yet
// is started by the next pass.
//
// Two MPI communicators, both duplicates of MPI_COMM_WORLD made by start():
//   packet comm: every packet (header + eager payload, or a rendezvous header), tag
//                kPacketTag, or bundles of them, tag kBundleTag; received in arrival
//                order by MPI_Irecv(MPI_ANY_SOURCE, MPI_ANY_TAG)s of kMaxPacketBytes,
//                up to kPostedRecvs of them posted in advance and each posted again
//                once its packet was handed over (see "The posted receives");
//   data comm:   rendezvous payloads, tag = a data tag the sender chose (< 2^27), so
//                large payloads go straight from the sender's buffer into the
//                receiver's buffer once the receiver has matched (no copy here).
// Progress cost is independent of the number of endpoints communicators: the engine
// knows none of them (the sink resolves the header).
//
// The posted receives.  A small message finds its receive waiting, so MPI copies it
// straight into the engine's buffer as it arrives, and one MPI_Test per pass finds
// it: measured with plain MPI here, 24-byte ping-pong one way took 0.465 us so, 0.50 us
// with MPI_Improbe(ANY_SOURCE, ANY_TAG) + MPI_Mrecv (what the engine did before) and
// 0.42-0.45 us with MPI_Send/MPI_Recv; libep's own 2-process ping-pong went from
// 0.70-0.76 to 0.66-0.70 us.  The price is a bound: no packet may exceed
// kMaxPacketBytes (a larger one would be truncated), so an eager message whose packet
// would be larger goes as a rendezvous (runtime/p2p.cc), and a one-sided chunk's
// payload shrinks so that its block list and payload fit (rma/window.cc).  Bundles
// and outbox batches are smaller by construction.  A packet that must outlive the
// pass (on_packet) is copied into a block of its own: handing over the posted buffer
// instead would allocate kMaxPacketBytes per packet, above glibc's mmap threshold
// (measured: 10 us per 256-byte message).
// Several receives are posted at once (kPostedRecvs), in a ring: posted_head_ is the
// oldest, followed by the posted_count_ - 1 newer ones; the free slots follow them.
// All of them match any packet, so MPI gives the first arriving packet to the oldest
// one (MPI 3.1 section 3.5: of two pending receives that both match a message, the
// second cannot take it while the first is pending), the next to the next one, and
// so on; the engine tests only the oldest and consumes them in post order, so packets
// still reach the sink in MPI arrival order, and a bundle that arrives large (MPI's
// rendezvous) holds back the small packets behind it until it is complete.
// Why several: a waiter's pass that delivered its own packet in place returns at
// once, without posting its receive again (its reply goes out before any MPI_Irecv).
// With one posted receive, the next wait had to post first, and in a ping-pong the
// reply had usually arrived by then: a 2-process ping-pong's waiter found its packet
// at its first MPI_Test in about half the waits (1.5-2.0 tests per packet, counted),
// so that MPI_Irecv stayed on the critical path.  With a ring the oldest receive is
// still posted when the next wait starts: its first MPI_Test can find the reply, and
// the free slot is posted again by the waiter's next lone blocking send right after
// its MPI_Send (below), or when a test finds nothing (one MPI_Irecv per empty test,
// at most, so that a packet arriving meanwhile waits for one post only), or at once
// when the baton holder is not a waiter whose packet just arrived (the progress
// thread keeps every slot posted, as before).  Only if waiters used up every slot
// does a pass post before it tests.
// Why after the send: in a ping-pong the reply cannot arrive before the packet just
// sent has crossed and been answered, so an MPI_Irecv there (200-300 TSC ticks here)
// costs nobody; posted at the next wait's first empty test instead, it was often
// under way when the reply arrived, and the reply waited for it (rdtsc-stamped: the
// test after that post found the packet in most waits of the slower side).  Measured
// with 8 alternating runs of the two builds (a 2-process 8-byte ping-pong timing
// libep and plain MPI in alternating segments, libep/MPI per segment, median of 20),
// 2026-11-26: 1.54-1.71x (median 1.67x) before, 1.41-1.47x (median 1.44x) after,
// lower in all 8 pairs.  Counted in the same ping-pong: 3.3-3.7 tests per
// packet, and no post before a test.  The gain is small: 36 alternating runs of the
// builds with one and with four receives, each run a 2-process 8-byte ping-pong that
// times libep and plain MPI in alternating segments (libep/MPI per segment, median of
// 20), gave 1.13-2.14x (median 1.66x) with one and 1.06-2.08x (median 1.65x) with
// four; paired, the run with four was lower in 27 of the 36 pairs, by 2% (median).
// What a ping-pong's one way costs beyond plain MPI is now the work between a
// packet's MPI_Test and the reply's MPI_Send (matching, completion, the API calls'
// returns and checks: 450-500 TSC ticks, rdtsc-stamped), not its detection (25
// ticks later than in a plain MPI_Test loop on the same posted receives).
//
// A waiter's quiet polls.  A waiter's pass that found nothing (try_progress with a
// watch) goes on polling for packets alone, up to kQuietPolls times, still holding the
// baton: MPI_Test of the oldest posted receive and a look at its word, without the rest of a
// pass (the command queue, the tests of outstanding requests, the collectives' hook)
// or the waiter's loop around it (its request's state, the back-off, the baton's
// exchange).  Such a round costs about 650 instructions, most of them MPI_Test's,
// instead of about 950, and a message that arrives during a round waits for half a
// round on average before its MPI_Test finds it.  The polls stop as soon as anything
// else needs a full pass: a command queued, a flush held, a request the engine tests
// for a waiter, a pending collective.  Measured with a 2-process 8-byte ping-pong that
// switches the polls on and off every 1,000 round trips within one run (so both
// halves see the same host), the one-way latency was 1-7% lower with them (medians
// of 200 segments each, 7 runs; the same program with nothing switched: 0.999-1.001).
//
// Bundles.  Several packets for one peer travel as one MPI message with tag
// kBundleTag: records of [uint32 length][uint32 0][packet bytes, padded to 8]
// (outbox.h).  Bundles come from endpoints' Outboxes (kFlushOutbox: an endpoint's
// small packets, batched as it sends them) and from a pass that finds several
// kSendPacket commands without a Completion queued back to back for one peer with no
// other kind of command between them.  The receiver hands each record to the sink
// (on_record) as if it had arrived alone.  Small messages thus cost one MPI send and
// one MPI receive per batch instead of one each; a packet alone goes out as before
// (tag kPacketTag).
//
// Bursts.  A flush of an outbox that is `filling()` (its last append was a nonblocking
// send into the open batch, outbox.h) is held back when a thread other than the
// appender runs it: it joins held_, and a later pass (of whoever holds the baton)
// flushes it once the appender itself runs a pass (its next wait), or the outbox
// stops filling (a blocking send, a packet alone, another peer), or kHoldNs passed.
// So a window of EP_Isend leaves as one bundle when its thread next waits, instead
// of in pieces taken by another endpoint's waiting thread while the sender appends,
// each take moving the batch's cache lines between the cores.  Measured with
// `p2p_bench --phases c` (2 endpoint pairs streaming windows of 64 8-byte messages),
// alternating runs of the builds before and after: 47 -> 64 packets per bundle, and
// libep's rate 2.1-5.2 (median 3.1) -> 2.4-5.7 (median 3.6) M msg/s over 12 pairs,
// 3.9-5.5 (median 4.3) -> 3.8-5.6 (median 5.5) over 6 more; a single stream (one
// endpoint per process) is unchanged at 3.9-5.6 M msg/s.  While a flush is held
// the progress thread polls instead of sleeping, so a burst whose thread went off to
// compute leaves within kHoldNs and a pass - or, if the flush was held by a waiting
// thread that then returned, once the progress thread next looks (it may be standing
// aside: within two of its sleeps, see "Standing aside"), at most about 2 ms.
//
// Lone blocking sends.  A blocking send of a small eager message whose endpoint has
// nothing waiting in its outbox (the usual case of a ping-pong or a reply) skips the
// outbox and the command queue: its thread takes the baton, writes the packet on its
// stack and sends it with MPI_Send (try_send_alone).  MPI_Send of a packet of at most
// kSmallPacketBytes returns once MPI copied it (an eager send; it never waits for the
// receiver), so nothing is allocated, tracked or tested later, and the outbox's lock,
// its references and the flush's batch list are not touched.  Order is kept: the
// outbox holds nothing of the endpoint's, so every earlier packet of it has already
// been handed to MPI, on the same communicator.  Still holding the baton, the send
// then posts again a receive that a waiter's packet left free (see "The posted
// receives").
//
// Ordering: commands are executed in the order of their submit() calls (a single FIFO),
// so one endpoint's commands keep their order even when its handle moves between
// threads; a bundle keeps its packets in queue order and goes out where the first of
// them would have, and no other command is started while a bundle is being built;
// packets and bundles to one peer go out on one communicator, and the receiver's
// receives (MPI_ANY_SOURCE/MPI_ANY_TAG) take them in post order and are consumed in
// post order (see "The posted receives"), so MPI's non-overtaking rule keeps them in
// order; incoming packets reach the sink in MPI arrival order.
//
// Lifetime: start() once (collective over MPI_COMM_WORLD, from any one thread of
// each process), stop() once (waits until every submitted command completed).
//
// Threading: submit() and try_progress() are thread-safe.  Completion::on_complete and
// PacketSink::on_packet run on the baton holder and must not block.
//
// Memory ordering: the baton is taken with an acquire exchange and released with a
// release store, so each pass sees every earlier pass's engine state.  submit()
// pushes, bumps `queued_` and then a seq_cst fence orders that before reading
// `sleeping_`; the progress thread stores `sleeping_`, fences seq_cst and re-reads
// `queued_` before sleeping - so either it sees the command or the submitter sees
// `sleeping_` and wakes it (Dekker pairing).
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
  int cpu = -1;  // pin the thread to this CPU; -1: not pinned
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
  // A packet alone of at most this size is handed to the sink in place, in the posted
  // receive's buffer (on_record), like a record of a bundle: no allocation per small
  // message.  Larger ones get a block of their own (on_packet).
  static constexpr size_t kSmallPacketBytes = 256;
  // A bundle holds at most this many bytes of packets (larger ones travel alone).
  static constexpr size_t kBundleBytes = 64 * 1024;
  static constexpr int kDataTagMask = (1 << 27) - 1;
  // No packet is larger (see "The posted receives"): a sender with more bytes uses the
  // data comm (runtime/p2p.cc, rma/window.cc).  Room for a bundle, or for a one-sided
  // chunk's 64 KiB block list beside its payload.
  static constexpr size_t kMaxPacketBytes = 136 * 1024;
  static_assert(kMaxPacketBytes >= kBundleBytes && kMaxPacketBytes >= Outbox::kBatchBytes,
                "bundles and outbox batches are packets too");
  // The byte count of a received packet (at most kMaxPacketBytes) from its status.
  // MPICH keeps the count in the status itself (count_lo: the low 32 bits; packets
  // never need the high ones), which a received packet's hand-over reads instead of
  // calling MPI_Get_count: about 80 instructions less, 2-4% of a 2-process ping-pong's
  // one-way latency (measured as the quiet polls were).  Elsewhere MPI_Get_count.
  // tests/progress/packet_bytes_test compares the two.
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

  // Duplicates the communicators and starts the named, pinned thread.  On failure
  // returns false with *error set and leaves no thread behind.
  bool start(const Options& options, PacketSink* sink, std::string* error);
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
  // See "Lone blocking sends" above.
  // *mpi_error: MPI_Send's code (the caller reports a failure).
  bool try_send_alone(const Outbox& outbox, int peer, const char* packet, size_t len,
                      int* mpi_error);
  // Wakes the progress thread if it sleeps (a waiter stops progressing itself).
  void wake();
  // A thread announces that it will drive progress while it waits (helper_enter)
  // and that it stopped (helper_leave); meanwhile the progress thread stands aside
  // instead of competing for the baton and the cores.
  // Standing aside: the progress thread sleeps and looks again after kAsideMinNs; each
  // look that finds a helper at work, or finds that one entered since its previous look
  // (the grace), doubles the next sleep, up to kAsideMaxNs.  It resumes at once if a
  // helper leaves with `wake_now` (it stops helping to sleep, so nobody else would
  // progress), else at its first look that finds no helper and none since - so within
  // two sleeps, at most 2 x kAsideMaxNs, of the last helper leaving.
  // Why doubling: a ping-pong makes one helper after another, back to back, for as
  // long as it runs, and every look wakes a thread on a core that an endpoint thread
  // is using: at a fixed 100 us, 10,000 wakes a second made the 2-process 8-byte
  // ping-pong 1.3x slower (1.06 vs 0.82 us one way, measured with a fixed 2 ms).
  // One word holds both: the number of helpers (low 32 bits) and how many ever
  // entered (high 32 bits), so entering and leaving cost one RMW each and no clock.
  void helper_enter() {
    // relaxed: helpers_ is a scheduling hint, not synchronization.
    helpers_.fetch_add(kHelperEntered + 1, std::memory_order_relaxed);
  }
  void helper_leave(bool wake_now) {
    // relaxed: a hint (see helper_enter).
    const uint64_t old = helpers_.fetch_sub(1, std::memory_order_relaxed);
    if ((old & kHelperCount) == 1 && wake_now) wake();
  }
  static constexpr int64_t kAsideMinNs = 100'000, kAsideMaxNs = 1'000'000;
  // Work the layers above run in every pass (collective schedules): returns true if it
  // made progress, and sets *pending while it has unfinished work (then the progress
  // thread yields instead of sleeping).  Set once, before any pass can call it.
  using PassHook = bool (*)(bool* pending);
  void set_pass_hook(PassHook hook) { hook_.store(hook, std::memory_order_release); }
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
  // Requires the baton.  `watch`/`mask`: see "The progress baton" (nullptr: a full pass).
  bool pass(const std::atomic<uint32_t>* watch = nullptr, uint32_t mask = 0);
  bool drain_commands();
  // drain_commands, then flush_held: what a pass or a sender starts.
  bool start_commands();
  // Flushes the held outboxes whose burst ended (see "Bursts"); true if it flushed one.
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
  // See "A waiter's quiet polls": true if a poll handed over a packet.
  bool poll_quietly(const std::atomic<uint32_t>* watch, uint32_t mask);
  // 4, 16 and 64 polls measured the same; a few keep the baton's hold short.
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
  std::atomic<int> tid_{0};            // kernel id of the progress thread (release: run())
  std::atomic<bool> stopping_{false};  // release in stop(), acquire in run()
  // What the progress thread is doing (seq_cst fences, see "Memory ordering" above).
  static constexpr uint32_t kAwake = 0, kAsleep = 1, kStandingAside = 2;
  std::atomic<uint32_t> sleeping_{kAwake};
  std::atomic<uint32_t> wake_word_{0};  // futex word the thread sleeps on
  std::atomic<uint32_t> data_tag_{0};
  std::atomic<uint32_t> baton_{0};  // 1 while a thread runs a pass
  // this_thread_mark() of the baton holder while it holds it, else nullptr (a hint for
  // holds_baton(); written by the holder only).
  std::atomic<const void*> baton_owner_{nullptr};
  // Threads progressing while they wait (low 32 bits) and helpers that ever entered
  // (high 32 bits, wrapping); a hint, see "Standing aside".
  static constexpr uint64_t kHelperCount = 0xffffffffu, kHelperEntered = uint64_t{1} << 32;
  std::atomic<uint64_t> helpers_{0};
  std::atomic<PassHook> hook_{nullptr};  // release in set_pass_hook, acquire in pass
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
  // Flushes held back while their appender is still appending ("Bursts"), each with
  // its command's reference to the outbox.
  struct Held {
    Outbox* outbox;
    int64_t until_ns;  // now_ns() after which anyone flushes it
  };
  // Long enough for a window of 64 EP_Isend (3.3-4.8 us measured), short enough that a
  // burst whose thread went off to compute waits little: with 20 us the rate of
  // `p2p_bench --phases c` was the same within noise (6 alternating pairs).
  static constexpr int64_t kHoldNs = 5'000;
  std::vector<Held> held_;
  std::vector<Command> bundle_;  // kSendPacket commands to bundle_peer_, in queue order
  size_t bundle_bytes_ = 0;
  int bundle_peer_ = -1;
  // The receives posted in advance for the next packets (MPI_Irecv(ANY_SOURCE,
  // ANY_TAG) on the packet comm, into buf + kHeadroom; kMaxPacketBytes fit), a ring
  // (see "The posted receives").  A few: a waiter uses up one per wait at most.
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
  // An eager send of a small packet: returns once MPI holds the bytes (see "Lone
  // blocking sends" above).
  *mpi_error = injected(MpiCall::kSend)
                   ? MPI_ERR_OTHER
                   : MPI_Send(packet, static_cast<int>(len), MPI_BYTE, peer, kPacketTag,
                              packet_comm_);
  if (*mpi_error != MPI_SUCCESS) record_failure(MpiCall::kSend, *mpi_error);
  // The receive a waiter's packet left free is posted again now, while this packet is
  // on its way (see "The posted receives").
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
