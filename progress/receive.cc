// receive.cc - the packets coming in: the ring of receives posted in advance, a pass's
// and a waiter's polls of the oldest one, and bundles unpacked into records.
// Everything here runs on the baton holder.
#include <cassert>
#include <cstdlib>
#include <cstring>

#include "progress/engine.h"
#include "progress/mpi_count.h"

namespace ep::progress {

void Engine::post_packet_recv() {
  assert(holds_baton());
  PostedRecv& p = posted_[(posted_head_ + posted_count_) & (kPostedRecvs - 1)];
  const int err = injected(MpiCall::kRecvPacket)
                      ? MPI_ERR_OTHER
                      : (count_engine_mpi_call(),
                         MPI_Irecv(p.buf + kHeadroom, static_cast<int>(kMaxPacketBytes), MPI_BYTE,
                                   MPI_ANY_SOURCE, MPI_ANY_TAG, packet_comm_, &p.req));
  if (err != MPI_SUCCESS) {  // not posted: the next pass tries again
    record_failure(MpiCall::kRecvPacket, err);
    return;
  }
  ++posted_count_;
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

bool Engine::poll_packets(const std::atomic<uint32_t>* watch, uint32_t mask) {
  assert(holds_baton());
  bool any = false;
  for (int i = 0; i < 64; ++i) {
    // relaxed: only ends the loop early (the watch: see Engine::pass).
    if (any && watch != nullptr && (watch->load(std::memory_order_relaxed) & mask) != 0) break;
    // Waiters' packets used up every posted receive.
    if (posted_count_ == 0) post_packet_recv();
    PostedRecv& oldest = posted_[posted_head_];
    int flag = 0;
    MPI_Status st;
    const int err = injected(MpiCall::kTest)
                        ? MPI_ERR_TRUNCATE
                        : (count_engine_mpi_call(), MPI_Test(&oldest.req, &flag, &st));
    base::cross_process_acquire();  // a packet of another process, if flag
    if (!flag && err == MPI_SUCCESS) {
      // Nothing arrived: post again one receive that a waiter's packet left free, while
      // posting delays nobody.
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
      // finds nothing posts the slot again.
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

void PacketSink::on_record(int src_proc, const char* packet, size_t len) {
  char* block = static_cast<char*>(std::malloc(Engine::kHeadroom + len + 1));
  std::memcpy(block + Engine::kHeadroom, packet, len);
  on_packet(src_proc, block, len);
}

}  // namespace ep::progress
