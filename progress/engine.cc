#include "progress/engine.h"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ep::progress {

Engine::Engine() = default;

Engine::~Engine() {
  if (thread_.joinable()) stop();
}

bool Engine::start(const Options& options, PacketSink* sink, std::string* error) {
  policy_ = options.policy;
  sink_ = sink;
  if (options.cpu >= 0) {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || options.cpu >= CPU_SETSIZE ||
        !CPU_ISSET(options.cpu, &allowed)) {
      *error = "EP_PROGRESS_CPUS: CPU " + std::to_string(options.cpu) +
               " is not one this process may run on";
      return false;
    }
  }
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
  while (posted_count_ < kPostedRecvs) post_packet_recv();
  stopping_.store(false, std::memory_order_relaxed);  // relaxed: thread start orders it
  thread_ = std::thread([this] { run(); });
  pthread_setname_np(thread_.native_handle(), "ep-progress");
  if (options.cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(options.cpu, &set);
    if (pthread_setaffinity_np(thread_.native_handle(), sizeof(set), &set) != 0) {
      *error =
          "EP_PROGRESS_CPUS: cannot pin the progress thread to CPU " + std::to_string(options.cpu);
      stop();
      return false;
    }
  }
  return true;
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

const char* mpi_call_name(MpiCall call) {
  switch (call) {
    case MpiCall::kSendPacket:
    case MpiCall::kSendData: return "MPI_Isend";
    case MpiCall::kRecvPacket:
    case MpiCall::kRecvData: return "MPI_Irecv";
    case MpiCall::kSend: return "MPI_Send";
    case MpiCall::kTest: return "MPI_Test";
    case MpiCall::kTestsome: return "MPI_Testsome";
    case MpiCall::kCount: break;
  }
  return "MPI";
}

void Engine::inject_failure(MpiCall call, int n) {
  inject_[static_cast<int>(call)].fetch_add(n, std::memory_order_relaxed);  // relaxed: a test's
  armed_.store(true, std::memory_order_relaxed);                            // setup
}

bool Engine::take_injected(MpiCall call) {
  std::atomic<int>& left = inject_[static_cast<int>(call)];
  int n = left.load(std::memory_order_relaxed);  // relaxed: a counter only
  while (n > 0 && !left.compare_exchange_weak(n, n - 1, std::memory_order_relaxed)) {
  }
  return n > 0;
}

void Engine::record_failure(MpiCall call, int mpi_error) {
  Stats::bump(stats_.mpi_errors);
  // relaxed: read for messages and statistics only.
  last_call_.store(static_cast<uint8_t>(call), std::memory_order_relaxed);
  last_error_.store(mpi_error, std::memory_order_relaxed);
  if (!reported_.exchange(true, std::memory_order_relaxed)) {
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(mpi_error, text, &len);
    std::fprintf(stderr, "libep: process %d: %s failed in the progress engine: %s\n",
                 world_rank_, mpi_call_name(call), text);
  }
}

int Engine::last_mpi_error(MpiCall* call) const {
  // relaxed: statistics.
  *call = static_cast<MpiCall>(last_call_.load(std::memory_order_relaxed));
  return last_error_.load(std::memory_order_relaxed);
}

void Engine::post_packet_recv() {
  PostedRecv& p = posted_[(posted_head_ + posted_count_) & (kPostedRecvs - 1)];
  const int err = injected(MpiCall::kRecvPacket)
                      ? MPI_ERR_OTHER
                      : MPI_Irecv(p.buf + kHeadroom, static_cast<int>(kMaxPacketBytes), MPI_BYTE,
                                  MPI_ANY_SOURCE, MPI_ANY_TAG, packet_comm_, &p.req);
  if (err != MPI_SUCCESS) {  // not posted: the next pass tries again
    record_failure(MpiCall::kRecvPacket, err);
    return;
  }
  ++posted_count_;
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
  // Only a thread asleep for lack of work is woken, and only by one submitter per sleep
  // (the exchange): a burst of nonblocking sends must not pay a futex call each.  A
  // thread standing aside for a helper is not woken: it looks again within kAsideMaxNs.
  if (sleeping_.load(std::memory_order_relaxed) == kAsleep &&
      queued_.load(std::memory_order_relaxed) > 0 &&
      (helpers_.load(std::memory_order_relaxed) & kHelperCount) == 0 &&
      sleeping_.exchange(kAwake, std::memory_order_relaxed) == kAsleep) {
    wake();
  }
}

void Engine::wake() {
  wake_word_.fetch_add(1, std::memory_order_relaxed);  // futex word: value change only
  futex_wake_all(wake_word_);
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
    if (ns > 0) futex_wait(wake_word_, wake_word_.load(std::memory_order_relaxed), ns);
  }
  lazy_passes_ = kLazyTestPasses;  // test_active tests now
  const bool work = pass();
  release_baton();
  return work;
}

bool Engine::poll_quietly(const std::atomic<uint32_t>* watch, uint32_t mask) {
  for (int k = 0; k < kQuietPolls; ++k) {
    // relaxed: queued_ is a hint (the next pass drains whatever it finds); the watched
    // word is re-read with acquire by the waiter, this only ends the polls.
    if (waited_ != 0 || hook_pending_ || !held_.empty() ||
        queued_.load(std::memory_order_relaxed) != 0 ||
        (watch->load(std::memory_order_relaxed) & mask) != 0) {
      return false;
    }
    if (poll_packets(watch, mask)) return true;
  }
  return false;
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

bool Engine::pass(const std::atomic<uint32_t>* watch, uint32_t mask) {
  // relaxed: queued_ is a hint; a command whose count is not visible yet is started
  // by the next pass (every pass looks again).
  bool work = false;
  if (queued_.load(std::memory_order_relaxed) != 0 || !held_.empty()) work = start_commands();
  work |= poll_packets(watch, mask);
  // relaxed: the waiter re-reads its word with acquire; this only cuts the pass short.
  if (watch != nullptr && (watch->load(std::memory_order_relaxed) & mask) != 0) return true;
  work |= test_active();
  // acquire: pairs with the release in set_pass_hook().
  if (PassHook hook = hook_.load(std::memory_order_acquire)) {
    hook_pending_ = false;
    work |= hook(&hook_pending_);
  }
  return work;
}

void Engine::track(MPI_Request req, Completion* done, void* free_buf, MpiCall call,
                   bool transfer) {
  requests_.push_back(req);
  active_.push_back(Active{done, free_buf, call, transfer});
  if (done != nullptr) ++waited_;
  if (transfer) ++transfers_;
  if (call == MpiCall::kRecvData || call == MpiCall::kTestsome) ++receives_;
}

void Engine::execute(const Command& c) {
  MPI_Request req = MPI_REQUEST_NULL;
  int err = MPI_SUCCESS;
  MpiCall call = MpiCall::kSendPacket;
  switch (c.kind) {
    case Command::kSendPacket:
      err = injected(call) ? MPI_ERR_OTHER
                           : MPI_Isend(c.buf, static_cast<int>(c.len), MPI_BYTE, c.peer,
                                       kPacketTag, packet_comm_, &req);
      Stats::bump(stats_.packets_sent);
      break;
    case Command::kSendData:
      call = MpiCall::kSendData;
      err = injected(call)
                ? MPI_ERR_OTHER
                : MPI_Isend(c.buf, c.count, c.type, c.peer, c.data_tag, data_comm_, &req);
      Stats::bump(stats_.data_sent);
      break;
    case Command::kRecvData:
      call = MpiCall::kRecvData;
      err = injected(call)
                ? MPI_ERR_OTHER
                : MPI_Irecv(c.buf, c.count, c.type, c.peer, c.data_tag, data_comm_, &req);
      Stats::bump(stats_.data_received);
      if (err == MPI_SUCCESS && c.reply != nullptr) {  // posted: now the CTS may go
        track(req, c.done, nullptr, call, /*transfer=*/true);
        send_owned(c.reply, c.reply_len, c.peer, kPacketTag);
        Stats::bump(stats_.packets_sent);
        return;
      }
      if (c.reply != nullptr) std::free(c.reply);
      break;
    case Command::kRun:
      c.fn(c.arg);
      return;
    case Command::kTrack:
      track(c.req, c.done, nullptr, MpiCall::kTestsome);
      return;
    case Command::kFlushOutbox: {
      Outbox* o = static_cast<Outbox*>(c.arg);
      if (o->filling() && o->appender() != this_thread_mark()) {
        held_.push_back(Held{o, now_ns() + kHoldNs});  // see "Bursts" in engine.h
      } else {
        flush_outbox(o);
      }
      return;
    }
  }
  if (err != MPI_SUCCESS) {  // the operation never started: it completes with the error
    record_failure(call, err);
    MPI_Status st{};
    if (c.done != nullptr) c.done->on_complete(st, err, call);
    if (c.done == nullptr && c.kind == Command::kSendPacket) std::free(c.buf);
    return;
  }
  track(req, c.done, c.kind == Command::kSendPacket && c.done == nullptr ? c.buf : nullptr, call,
        c.kind == Command::kSendData || c.kind == Command::kRecvData);
}

void PacketSink::on_record(int src_proc, const char* packet, size_t len) {
  char* block = static_cast<char*>(std::malloc(Engine::kHeadroom + len + 1));
  std::memcpy(block + Engine::kHeadroom, packet, len);
  on_packet(src_proc, block, len);
}

void Engine::flush_outbox(Outbox* outbox) {
  batches_.clear();
  outbox->take(&batches_);
  outbox->unref();  // the flush command's reference
  for (const Outbox::Batch& b : batches_) {
    if (b.bundle && b.len >= kRecordHeader) {
      uint32_t head[2];
      std::memcpy(head, b.buf, kRecordHeader);
      if (record_size(head[0]) == b.len) {
        // One record: it goes as a packet of its own, without the record header (a small
        // message stays within MPI's fastest size; see kSmallPacketBytes).
        send_owned_at(b.buf, b.buf + kRecordHeader, head[0], b.peer, kPacketTag);
        Stats::bump(stats_.packets_sent);
        continue;
      }
    }
    send_owned(b.buf, b.len, b.peer, b.bundle ? kBundleTag : kPacketTag);
    Stats::bump(b.bundle ? stats_.bundles_sent : stats_.packets_sent);
  }
}

void Engine::send_owned(char* buf, size_t len, int peer, int tag) {
  send_owned_at(buf, buf, len, peer, tag);
}

void Engine::send_owned_at(char* block, const char* data, size_t len, int peer, int tag) {
  MPI_Request req = MPI_REQUEST_NULL;
  const int err = injected(MpiCall::kSendPacket)
                      ? MPI_ERR_OTHER
                      : MPI_Isend(data, static_cast<int>(len), MPI_BYTE, peer, tag, packet_comm_,
                                  &req);
  if (err != MPI_SUCCESS) {  // the packets are lost: counted and reported (record_failure)
    record_failure(MpiCall::kSendPacket, err);
    std::free(block);
    return;
  }
  track(req, nullptr, block, MpiCall::kSendPacket);
}

void Engine::flush_bundle() {
  if (bundle_.size() == 1) {
    execute(bundle_[0]);
  } else if (!bundle_.empty()) {
    char* out = static_cast<char*>(std::malloc(bundle_bytes_));
    size_t pos = 0;
    for (const Command& c : bundle_) {
      write_record_header(out + pos, c.len);
      std::memcpy(out + pos + kRecordHeader, c.buf, c.len);
      pos += record_size(c.len);
      std::free(c.buf);
    }
    send_owned(out, pos, bundle_peer_, kBundleTag);
    Stats::bump(stats_.packets_sent, bundle_.size());
    Stats::bump(stats_.bundles_sent);
  }
  bundle_.clear();
  bundle_bytes_ = 0;
  bundle_peer_ = -1;
}

bool Engine::drain_commands() {
  int n = 0;
  for (; n < 64; ++n) {
    MpscNode* m = queue_.pop();
    if (m == nullptr) break;
    Node* node = static_cast<Node*>(m);
    const Command& c = node->command;
    const bool bundleable = c.kind == Command::kSendPacket && c.done == nullptr &&
                            record_size(c.len) <= kBundleBytes / 4;
    if (!bundleable || c.peer != bundle_peer_ ||
        bundle_bytes_ + record_size(c.len) > kBundleBytes) {
      flush_bundle();
    }
    if (bundleable) {
      bundle_.push_back(c);
      bundle_bytes_ += record_size(c.len);
      bundle_peer_ = c.peer;
    } else {
      execute(c);
    }
    delete node;
  }
  flush_bundle();
  if (n == 0) return false;
  queued_.fetch_sub(n, std::memory_order_relaxed);  // relaxed: a sleep hint only
  Stats::bump(stats_.commands, n);
  return true;
}

bool Engine::start_commands() {
  bool work = drain_commands();
  if (!held_.empty()) work |= flush_held();
  return work;
}

bool Engine::flush_held() {
  const void* me = this_thread_mark();
  int64_t now = 0;  // read once, and only if some flush is still held for its appender
  bool flushed = false;
  size_t w = 0;
  for (const Held& h : held_) {
    if (h.outbox->filling() && h.outbox->appender() != me) {
      if (now == 0) now = now_ns();
      if (now < h.until_ns) {  // still its appender's: look again next pass
        held_[w++] = h;
        continue;
      }
    }
    flush_outbox(h.outbox);
    flushed = true;
  }
  held_.resize(w);
  return flushed;
}

bool Engine::poll_packets(const std::atomic<uint32_t>* watch, uint32_t mask) {
  bool any = false;
  for (int i = 0; i < 64; ++i) {
    // relaxed: only ends the loop early (see "The progress baton" in engine.h).
    if (any && watch != nullptr && (watch->load(std::memory_order_relaxed) & mask) != 0) break;
    // Waiters' packets used up every posted receive (see "The posted receives").
    if (posted_count_ == 0) post_packet_recv();
    PostedRecv& oldest = posted_[posted_head_];
    int flag = 0;
    MPI_Status st;
    const int err = injected(MpiCall::kTest) ? MPI_ERR_TRUNCATE : MPI_Test(&oldest.req, &flag, &st);
    if (!flag && err == MPI_SUCCESS) {
      // Nothing arrived: post again one receive that a waiter's packet left free, while
      // posting delays nobody (see "The posted receives").
      if (posted_count_ < kPostedRecvs) post_packet_recv();
      break;
    }
    any = true;
    // The oldest receive is done: its buffer is free once its packet was handed over
    // (below), before the next post, which may reuse it.
    posted_head_ = (posted_head_ + 1) & (kPostedRecvs - 1);
    --posted_count_;
    if (err != MPI_SUCCESS) {  // truncated: larger than any sender may make it (dropped)
      record_failure(MpiCall::kTest, err);
      Stats::bump(stats_.packets_dropped);
      if (flag == 0 && oldest.req != MPI_REQUEST_NULL) {  // (an injected failure: still posted)
        MPI_Cancel(&oldest.req);
        MPI_Wait(&oldest.req, MPI_STATUS_IGNORE);
      }
      post_packet_recv();
      continue;
    }
    const int len = packet_bytes(st);
    Stats::bump(stats_.bytes_received, len);
    char* data = oldest.buf + kHeadroom;
    if (st.MPI_TAG == kBundleTag) {
      deliver_bundle(st.MPI_SOURCE, data, static_cast<size_t>(len));
      post_packet_recv();
      continue;
    }
    Stats::bump(stats_.packets_received);
    if (len <= static_cast<int>(kSmallPacketBytes)) {  // handed over in place
      sink_->on_record(st.MPI_SOURCE, data, static_cast<size_t>(len));
      // relaxed: as above.  The waiter's packet: it returns first; a later test that
      // finds nothing posts the slot again (see "The posted receives").
      if (watch != nullptr && (watch->load(std::memory_order_relaxed) & mask) != 0) break;
      post_packet_recv();
      continue;
    }
    // A larger packet gets a block of its own (with the headroom the sink builds its
    // envelope in): a copy, since handing over the posted buffer would cost an
    // allocation of kMaxPacketBytes per packet - above glibc's mmap threshold.
    char* block = static_cast<char*>(std::malloc(kHeadroom + static_cast<size_t>(len) + 1));
    std::memcpy(block + kHeadroom, data, static_cast<size_t>(len));
    post_packet_recv();
    sink_->on_packet(st.MPI_SOURCE, block, static_cast<size_t>(len));
  }
  return any;
}

void Engine::deliver_bundle(int src, const char* data, size_t len) {
  sink_->bundle_begin();
  size_t pos = 0;
  while (pos + kRecordHeader <= len) {
    uint32_t head[2];
    std::memcpy(head, data + pos, kRecordHeader);
    size_t n = head[0];
    if (pos + kRecordHeader + n > len) break;  // malformed: drop the rest
    Stats::bump(stats_.packets_received);
    sink_->on_record(src, data + pos + kRecordHeader, n);
    pos += record_size(n);
  }
  sink_->bundle_end();
}

bool Engine::test_active() {
  if (requests_.empty()) return false;
  // Sends that only free their buffer when done are nobody's wait: test them every
  // kLazyTestPasses passes (or once many piled up), not in every pass of a waiter.
  if (waited_ == 0 && lazy_passes_++ < kLazyTestPasses && requests_.size() < 64) return false;
  lazy_passes_ = 0;
  int n = static_cast<int>(requests_.size());
  indices_.resize(n);
  statuses_.resize(n);
  int outcount = 0;
  int err = injected(MpiCall::kTestsome)
                ? MPI_ERR_OTHER
                : MPI_Testsome(n, requests_.data(), &outcount, indices_.data(), statuses_.data());
  if (err != MPI_SUCCESS && err != MPI_ERR_IN_STATUS) {
    // MPI could not test them: complete them all with its error (their state is unknown,
    // and waiting on would hang their waiters).
    record_failure(MpiCall::kTestsome, err);
    for (int i = 0; i < n; ++i) {
      const Active a = active_[static_cast<size_t>(i)];
      if (a.done != nullptr) a.done->on_complete(MPI_Status{}, err, MpiCall::kTestsome);
      if (a.free_buf != nullptr) std::free(a.free_buf);
    }
    requests_.clear();
    active_.clear();
    waited_ = transfers_ = receives_ = 0;
    return true;
  }
  if (outcount == MPI_UNDEFINED || outcount == 0) return false;
  for (int k = 0; k < outcount; ++k) {
    int i = indices_[k];
    int e = err == MPI_ERR_IN_STATUS ? statuses_[k].MPI_ERROR : MPI_SUCCESS;
    Active a = active_[i];
    if (a.done != nullptr) --waited_;
    if (a.transfer) --transfers_;
    if (a.call == MpiCall::kRecvData || a.call == MpiCall::kTestsome) --receives_;
    if (e != MPI_SUCCESS) record_failure(a.call, e);
    if (a.done != nullptr) a.done->on_complete(statuses_[k], e, a.call);
    if (a.free_buf != nullptr) std::free(a.free_buf);
  }
  // Compact: MPI_Testsome set the completed requests to MPI_REQUEST_NULL.
  size_t w = 0;
  for (size_t r = 0; r < requests_.size(); ++r) {
    if (requests_[r] == MPI_REQUEST_NULL) continue;
    requests_[w] = requests_[r];
    active_[w] = active_[r];
    ++w;
  }
  requests_.resize(w);
  active_.resize(w);
  return true;
}

void Engine::idle(Backoff& backoff, int64_t aside_ns, bool transfers) {
  const bool aside = aside_ns > 0;
  int64_t ns = aside ? aside_ns : backoff.pause();
  if (ns == 0) return;
  if (!aside && transfers && ns > kTransferPollNs) ns = kTransferPollNs;
  // relaxed: the futex compares the value itself; sleeping_ and queued_ are ordered
  // by the seq_cst fences here and in submit() (Dekker pairing).
  uint32_t seen = wake_word_.load(std::memory_order_relaxed);
  sleeping_.store(aside ? kStandingAside : kAsleep, std::memory_order_relaxed);
  // seq_cst fence: pairs with the fence in submit().
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if ((aside || queued_.load(std::memory_order_relaxed) == 0) &&
      !stopping_.load(std::memory_order_acquire)) {
    Stats::bump(stats_.sleeps);
    futex_wait(wake_word_, seen, ns);
  }
  sleeping_.store(kAwake, std::memory_order_relaxed);  // relaxed: only makes submit() skip a wake
}

void Engine::run() {
  tid_.store(static_cast<int>(syscall(SYS_gettid)), std::memory_order_release);  // pairs: stop()
  Backoff backoff(policy_);
  int64_t aside_ns = kAsideMinNs;  // the next sleep while standing aside for a helper
  uint32_t seen_entered = 0;       // helpers that had entered at the previous look
  for (;;) {
    Stats::bump(stats_.loops);
    // relaxed: helpers_ is a hint (see "Standing aside" in engine.h).
    const uint64_t helpers = helpers_.load(std::memory_order_relaxed);
    const uint32_t entered = static_cast<uint32_t>(helpers >> 32);
    const bool helped = (helpers & kHelperCount) != 0 || entered != seen_entered;
    seen_entered = entered;
    if (helped || !take_baton()) {
      // A waiting endpoint thread is progressing: let it have the core.  Each look
      // that finds it still at it doubles the next sleep (see "Standing aside").
      idle(backoff, aside_ns, false);
      aside_ns = aside_ns * 2 < kAsideMaxNs ? aside_ns * 2 : kAsideMaxNs;
      continue;
    }
    aside_ns = kAsideMinNs;
    bool work = pass();
    // Held flushes leave within kHoldNs: poll for them instead of sleeping.
    const bool holding = !held_.empty();
    const bool transfers = transfers_ > 0;  // (read under the baton)
    // relaxed: a command pushed after this load is seen by the stop check's next round.
    // Receives left at the stop are no one's any more (see stop()): only sends count.
    bool drained = static_cast<int>(requests_.size()) == receives_ && !holding &&
                   !hook_pending_ && queued_.load(std::memory_order_relaxed) == 0;
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
