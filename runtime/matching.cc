#include "runtime/matching.h"

#include <cstdlib>

namespace ep::runtime {

Matcher::~Matcher() {
  // Unmatched arrivals belong to nobody any more.
  Envelope* e = nullptr;
  while (inbox_.try_dequeue(e)) {
    e->next = unexpected_head_;
    unexpected_head_ = e;
  }
  for (Envelope* u = unexpected_head_; u != nullptr;) {
    Envelope* n = u->next;
    if (u->kind == Envelope::kLocalRndv && u->sreq != nullptr) request_complete(u->sreq);
    std::free(u->block);
    u = n;
  }
}

void Matcher::kick() {
  // acq_rel: release publishes our push to the matcher; acquire (when we become the
  // matcher) synchronizes-with the previous matcher's release CAS in run_rounds().
  if (work_.fetch_add(1, std::memory_order_acq_rel) != 0) return;
  run_rounds(1);
}

void Matcher::run_rounds(uint32_t seen) {
  process_all();
  finish_rounds(seen);
}

void Matcher::finish_rounds(uint32_t seen) {
  // acq_rel CAS: on success releases the lists to the next matcher; on failure
  // (someone kicked; `seen` is reloaded) acquires their pushes and we run another round.
  while (!work_.compare_exchange_strong(seen, 0, std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
    process_all();
  }
}

void Matcher::post(MatchOp* op) {
  uint32_t expected = 0;
  // No active matcher: become it and handle the op in place (after anything queued
  // earlier), sparing the queue.  acquire: pairs with the previous matcher's release.
  if (work_.compare_exchange_strong(expected, 1, std::memory_order_acquire,
                                    std::memory_order_relaxed)) {
    handle(op);  // the queues hold nothing we must see first (see "In place" in matching.h)
    finish_rounds(1);
    return;
  }
  posts_.push(op);
  kick();
}

bool Matcher::try_deliver_direct(Envelope* e) {
  uint32_t expected = 0;
  // acquire: pairs with the release CAS of the previous matcher.
  if (!work_.compare_exchange_strong(expected, 1, std::memory_order_acquire,
                                     std::memory_order_relaxed)) {
    return false;
  }
  arrive(e);  // the queues hold nothing we must see first (see "In place" in matching.h)
  finish_rounds(1);
  return true;
}

void Matcher::process_all() {
  Envelope* e = nullptr;
  while (inbox_.try_dequeue(e)) arrive(e);
  MatchOp* op = nullptr;
  while (posts_.try_pop(op)) handle(op);
}

void Matcher::unlink_posted(MatchOp* prev, MatchOp* p) {
  if (prev == nullptr) posted_head_ = p->next; else prev->next = p->next;
  if (posted_tail_ == p) posted_tail_ = prev;
  p->next = nullptr;
}

void Matcher::report(MatchOp* op, const Envelope* u) {
  op->found = true;
  op->status.EP_SOURCE = u->src_rank;
  op->status.EP_TAG = u->tag;
  op->status.EP_ERROR = EP_SUCCESS;
  op->status.ep_bytes_ = u->bytes;
  op->done.store(1, std::memory_order_release);  // pairs with the poster's acquire
}

void Matcher::arrive(Envelope* e) {
  MatchOp* prev = nullptr;
  for (MatchOp* p = posted_head_; p != nullptr; prev = p, p = p->next) {
    if (!envelope_matches(p->source, p->tag, *e)) continue;
    unlink_posted(prev, p);
    deliver_(p->req, e);
    return;
  }
  e = materialize_(e);
  e->next = nullptr;
  if (unexpected_tail_ == nullptr) unexpected_head_ = e; else unexpected_tail_->next = e;
  unexpected_tail_ = e;
}

void Matcher::handle(MatchOp* op) {
  if (op->kind == MatchOp::kCancel) {
    MatchOp* prev = nullptr;
    for (MatchOp* p = posted_head_; p != nullptr; prev = p, p = p->next) {
      if (p->req != op->req) continue;
      unlink_posted(prev, p);
      op->found = true;
      break;
    }
    op->done.store(1, std::memory_order_release);  // pairs with the poster's acquire
    return;
  }
  Envelope* prev = nullptr;
  for (Envelope* u = unexpected_head_; u != nullptr; prev = u, u = u->next) {
    if (!envelope_matches(op->source, op->tag, *u)) continue;
    if (op->kind == MatchOp::kProbe) {
      report(op, u);
      return;
    }
    if (prev == nullptr) unexpected_head_ = u->next; else prev->next = u->next;
    if (unexpected_tail_ == u) unexpected_tail_ = prev;
    u->next = nullptr;
    if (op->kind == MatchOp::kMprobe) {
      op->env = u;
      report(op, u);
      return;
    }
    deliver_(op->req, u);
    return;
  }
  if (op->kind != MatchOp::kRecv) {  // probe found nothing
    op->done.store(1, std::memory_order_release);  // pairs with the poster's acquire
    return;
  }
  op->next = nullptr;
  if (posted_tail_ == nullptr) posted_head_ = op; else posted_tail_->next = op;
  posted_tail_ = op;
}

}  // namespace ep::runtime
