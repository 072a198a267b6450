// engine.cc - the engine's life and schedule: start and stop, submitting commands, the
// baton's passes, and the progress thread's loop (idle back-off, standing aside).
#include "progress/engine.h"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cassert>
#include <cstdlib>
#include <cstring>

#include "progress/affinity.h"

namespace ep::progress {

Engine::Engine() = default;

Engine::~Engine() {
  if (thread_.joinable()) stop();
}

void Engine::start(const Options& options, PacketSink* sink) {
  policy_ = options.policy;
  sink_ = sink;
  pin_refusal_.clear();
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
  MPI_Comm_dup(MPI_COMM_WORLD, &packet_comm_);
  MPI_Comm_dup(MPI_COMM_WORLD, &data_comm_);
  MPI_Comm_set_errhandler(packet_comm_, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(data_comm_, MPI_ERRORS_RETURN);
  MPI_Comm_set_name(packet_comm_, "ep-packets");
  MPI_Comm_set_name(data_comm_, "ep-data");
  for (PostedRecv& p : posted_) {
    p.buf = static_cast<char*>(std::malloc(kHeadroom + kMaxPacketBytes + 1));
  }
  take_baton();  // (no thread runs yet: free)
  while (posted_count_ < kPostedRecvs) post_packet_recv();
  release_baton();
  stopping_.store(false, std::memory_order_relaxed);  // relaxed: thread start orders it
  thread_ = std::thread([this] { run(); });
  pthread_setname_np(thread_.native_handle(), "ep-progress");
  // The thread may begin its loop unpinned; it is pinned before start() returns.  A
  // refusal leaves it with the affinity it inherited from this thread.
  if (options.cpu >= 0) pin_thread(thread_.native_handle(), options.cpu, &pin_refusal_);
}

void Engine::stop() {
  if (!thread_.joinable()) return;
  stopping_.store(true, std::memory_order_release);  // pairs with acquire in run()
  wake();
  thread_.join();
  // pthread_join returns when the kernel cleared the thread id, a moment before the
  // task leaves /proc/self/task; wait for that too (bounded), so that "no progress
  // thread after EP_Finalize / a failed EP_Init" holds for whoever looks.
  int tid = tid_.load(std::memory_order_acquire);  // pairs with the release in run()
  std::string path = "/proc/self/task/" + std::to_string(tid);
  for (int i = 0; tid != 0 && i < 10000 && access(path.c_str(), F_OK) == 0; ++i) usleep(100);
  for (PostedRecv& p : posted_) {
    if (p.req != MPI_REQUEST_NULL) {
      MPI_Cancel(&p.req);
      MPI_Wait(&p.req, MPI_STATUS_IGNORE);
    }
    std::free(p.buf);
    p.buf = nullptr;
  }
  posted_count_ = 0;
  // What is left is receives no message will ever come for (their requests freed by
  // the application, or their sender failed): cancelled, and completed as such.
  for (size_t i = 0; i < requests_.size(); ++i) {
    MPI_Status st{};
    MPI_Cancel(&requests_[i]);
    MPI_Wait(&requests_[i], &st);
    if (active_[i].done != nullptr) active_[i].done->on_complete(st, MPI_SUCCESS, active_[i].call);
    if (active_[i].free_buf != nullptr) std::free(active_[i].free_buf);
  }
  requests_.clear();
  active_.clear();
  MPI_Comm_free(&packet_comm_);
  MPI_Comm_free(&data_comm_);
}

void Engine::submit(const Command& command, bool self_progress) {
  Node* n = new Node;
  n->command = command;
  queue_.push(n);
  queued_.fetch_add(1, std::memory_order_relaxed);  // ordered by the fence below
  if (self_progress) try_start_commands();
  // seq_cst fence: pairs with the fence in idle(); see "Memory ordering" in engine.h.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // relaxed loads: ordered by the fence above; helpers_ is only a hint (a helper
  // drains the queue in its own passes).
  // A sleeping thread - asleep for lack of work, or standing aside for helpers that
  // have all left - is woken while no helper will start the command, and only by one
  // submitter per sleep (the exchange): a burst of nonblocking sends must not pay a
  // futex call each.
  if (sleeping_.load(std::memory_order_relaxed) != kAwake &&
      queued_.load(std::memory_order_relaxed) > 0 &&
      (helpers_.load(std::memory_order_relaxed) & kHelperCount) == 0 &&
      sleeping_.exchange(kAwake, std::memory_order_relaxed) != kAwake) {
    wake();
  }
}

void Engine::wake() {
  wake_ptr_->fetch_add(1, std::memory_order_relaxed);  // futex word: value change only
  if (asleep_ != nullptr) {
    futex_wake_shared(*wake_ptr_);
  } else {
    futex_wake_all(*wake_ptr_);
  }
}

bool Engine::try_progress(const std::atomic<uint32_t>* watch, uint32_t mask) {
  if (!take_baton()) return false;
  bool work = pass(watch, mask);
  if (!work && watch != nullptr) work = poll_quietly(watch, mask);
  release_baton();
  return work;
}

bool Engine::progress_now() {
  Backoff backoff(policy_);
  while (!take_baton()) {
    const int64_t ns = backoff.pause();
    // relaxed: the futex compares the value itself.
    if (ns > 0) sleep_on_word(wake_ptr_->load(std::memory_order_relaxed), ns);
  }
  lazy_passes_ = kLazyTestPasses;  // test_active tests now
  const bool work = pass();
  release_baton();
  return work;
}

bool Engine::try_start_commands() {
  if (!take_baton()) return false;
  bool work = start_commands();
  release_baton();
  return work;
}

void Engine::send_outbox(Outbox* outbox, bool flush_reserved, bool now) {
  if (now && take_baton()) {
    start_commands();                          // what was submitted earlier goes first
    if (flush_reserved) flush_outbox(outbox);  // ours, without a queue node
    release_baton();
    return;
  }
  if (flush_reserved) {
    Command c;
    c.kind = Command::kFlushOutbox;
    c.arg = outbox;
    submit(c);
  }
}

bool Engine::pass(const std::atomic<uint32_t>* watch, uint32_t mask, bool* node_work) {
  assert(holds_baton());
  // relaxed: queued_ is a hint; a command whose count is not visible yet is started
  // by the next pass (every pass looks again).
  bool work = false;
  if (queued_.load(std::memory_order_relaxed) != 0 || !held_.empty()) work = start_commands();
  work |= poll_packets(watch, mask);
  // relaxed: the waiter re-reads its word with acquire; this only cuts the pass short.
  if (watch != nullptr && (watch->load(std::memory_order_relaxed) & mask) != 0) return true;
  // acquire: pairs with the release in set_node_hook().
  if (PassHook node = node_hook_.load(std::memory_order_acquire)) {
    bool unused = false;
    const bool did = node(&unused);
    if (node_work != nullptr) {
      *node_work = did;
    } else {
      work |= did;
    }
  }
  work |= test_active();
  // acquire: pairs with the release in set_pass_hook().
  if (PassHook hook = hook_.load(std::memory_order_acquire)) {
    hook_pending_ = false;
    work |= hook(&hook_pending_);
  }
  return work;
}

void Engine::idle(Backoff& backoff, int64_t aside_ns, bool transfers) {
  const bool aside = aside_ns > 0;
  int64_t ns = aside ? aside_ns : backoff.pause();
  if (ns == 0) return;
  if (!aside && transfers && ns > kTransferPollNs) ns = kTransferPollNs;
  // relaxed: the futex compares the value itself; sleeping_ and queued_ are ordered
  // by the seq_cst fences here and in submit() (Dekker pairing).
  uint32_t seen = wake_ptr_->load(std::memory_order_relaxed);
  sleeping_.store(aside ? kStandingAside : kAsleep, std::memory_order_relaxed);
  // seq_cst: the sleeper's side of the node senders' Dekker pairing (set_idle_words).
  if (asleep_ != nullptr) asleep_->store(1, std::memory_order_seq_cst);
  // seq_cst fence: pairs with the fence in submit().
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // Standing aside, a helper's passes run the node hook: only an idle sleep asks.
  const bool node_work = !aside && work_waiting_ != nullptr && work_waiting_();
  if ((aside || queued_.load(std::memory_order_relaxed) == 0) && !node_work &&
      !stopping_.load(std::memory_order_acquire)) {
    Stats::bump(stats_.sleeps);
    sleep_on_word(seen, ns);
  }
  // relaxed: a stale 1 costs a sender one needless wake.
  if (asleep_ != nullptr) asleep_->store(0, std::memory_order_relaxed);
  sleeping_.store(kAwake, std::memory_order_relaxed);  // relaxed: only makes submit() skip a wake
}

void Engine::run() {
  tid_.store(static_cast<int>(syscall(SYS_gettid)), std::memory_order_release);  // pairs: stop()
  Backoff backoff(policy_);
  int64_t aside_ns = kAsideMinNs;  // the next sleep while standing aside for a helper
  uint32_t seen_entered = 0;       // helpers that had entered at the previous look
  for (;;) {
    Stats::bump(stats_.loops);
    // relaxed: helpers_ is a hint (see Engine::helper_enter).
    const uint64_t helpers = helpers_.load(std::memory_order_relaxed);
    const uint32_t entered = static_cast<uint32_t>(helpers >> 32);
    // A helper at work, or one that came and went since the last look (more may follow):
    // stand aside - unless commands wait that no helper is there to start.
    // relaxed: queued_ is a hint (the pass re-reads the queue itself).
    const bool helped = (helpers & kHelperCount) != 0 ||
                        (entered != seen_entered && queued_.load(std::memory_order_relaxed) == 0);
    seen_entered = entered;
    if (helped || !take_baton()) {
      // A waiting endpoint thread is progressing: let it have the core.  Each look
      // that finds it still at it doubles the next sleep (see Engine::helper_enter).
      idle(backoff, aside_ns, false);
      aside_ns = aside_ns * 2 < kAsideMaxNs ? aside_ns * 2 : kAsideMaxNs;
      continue;
    }
    aside_ns = kAsideMinNs;
    bool node_work = false;
    bool work = pass(nullptr, 0, &node_work);
    // Held flushes leave within kHoldNs: poll for them instead of sleeping.
    const bool holding = !held_.empty();
    const bool transfers = transfers_ > 0;  // (read under the baton)
    // relaxed: a command pushed after this load is seen by the stop check's next round.
    // Receives left at the stop are no one's any more (see stop()): only sends count.
    bool drained = static_cast<int>(requests_.size()) == receives_ && !holding && !hook_pending_ &&
                   queued_.load(std::memory_order_relaxed) == 0;
    release_baton();
    if (work) {
      backoff.reset();
      continue;
    }
    // acquire: pairs with the release in stop(); everything submitted before stop()
    // is visible, so an empty queue here means nothing is left to start.
    if (stopping_.load(std::memory_order_acquire) && drained) break;
    if (holding) {
      sched_yield();
      continue;
    }
    idle(backoff, 0, transfers);
  }
}

}  // namespace ep::progress
