// commands.cc - what a pass starts and tests: commands (packets, bundles, payloads,
// outbox flushes, held flushes) and the outstanding MPI requests they leave.
// Everything here runs on the baton holder.
#include <cassert>
#include <cstdlib>
#include <cstring>

#include "progress/engine.h"
#include "progress/mpi_count.h"

namespace ep::progress {

void Engine::track(MPI_Request req, Completion* done, void* free_buf, MpiCall call, bool transfer) {
  requests_.push_back(req);
  active_.push_back(Active{done, free_buf, call, transfer});
  if (done != nullptr) ++waited_;
  if (transfer) ++transfers_;
  if (call == MpiCall::kRecvData || call == MpiCall::kTestsome) ++receives_;
}

void Engine::execute(const Command& c) {
  assert(holds_baton());
  MPI_Request req = MPI_REQUEST_NULL;
  int err = MPI_SUCCESS;
  MpiCall call = MpiCall::kSendPacket;
  switch (c.kind) {
    case Command::kSendPacket:
      err = injected(call)
                ? MPI_ERR_OTHER
                : (count_engine_mpi_call(), MPI_Isend(c.buf, static_cast<int>(c.len), MPI_BYTE,
                                                      c.peer, kPacketTag, packet_comm_, &req));
      Stats::bump(stats_.packets_sent);
      break;
    case Command::kSendData:
      call = MpiCall::kSendData;
      err = injected(call) ? MPI_ERR_OTHER
                           : (count_engine_mpi_call(), MPI_Isend(c.buf, c.count, c.type, c.peer,
                                                                 c.data_tag, data_comm_, &req));
      Stats::bump(stats_.data_sent);
      break;
    case Command::kRecvData:
      call = MpiCall::kRecvData;
      err = injected(call) ? MPI_ERR_OTHER
                           : (count_engine_mpi_call(), MPI_Irecv(c.buf, c.count, c.type, c.peer,
                                                                 c.data_tag, data_comm_, &req));
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
        held_.push_back(Held{o, now_ns() + kHoldNs});  // (a burst of its thread: engine.h)
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

void Engine::flush_outbox(Outbox* outbox) {
  assert(holds_baton());
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
                      : (count_engine_mpi_call(), MPI_Isend(data, static_cast<int>(len), MPI_BYTE,
                                                            peer, tag, packet_comm_, &req));
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
  assert(holds_baton());
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
  assert(holds_baton());
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

bool Engine::test_active() {
  assert(holds_baton());
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
                : (count_engine_mpi_call(),
                   MPI_Testsome(n, requests_.data(), &outcount, indices_.data(), statuses_.data()));
  base::cross_process_acquire();  // what completed came from other processes
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

}  // namespace ep::progress
