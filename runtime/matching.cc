#include "runtime/matching.h"

#include <algorithm>
#include <cstdlib>

#include "runtime/datatype.h"

namespace ep::runtime {

Matcher::~Matcher() {
  // Unmatched arrivals belong to nobody any more.
  Envelope* e = nullptr;
  while (inbox_.try_dequeue(e)) unexpected_.add(materialize_(e));
  while (Envelope* u = unexpected_.pop_any()) {
    if (u->kind == Envelope::kLocalRndv && u->sreq != nullptr) request_complete(u->sreq);
    std::free(u->block);
  }
}

void Matcher::kick() {
  // acq_rel: release publishes our push to the matcher; acquire (when we become the
  // matcher) synchronizes-with the previous matcher's release CAS in run_rounds().
  if (line_.work.fetch_add(1, std::memory_order_acq_rel) != 0) return;
  run_rounds(1);
}

void Matcher::run_rounds(uint32_t seen) {
  process_all();
  finish_rounds(seen);
}

void Matcher::finish_rounds(uint32_t seen) {
  // acq_rel CAS: on success releases the lists to the next matcher; on failure
  // (someone kicked; `seen` is reloaded) acquires their pushes and we run another round.
  while (!line_.work.compare_exchange_strong(seen, 0, std::memory_order_acq_rel,
                                             std::memory_order_acquire)) {
    process_all();
  }
}

void Matcher::post(MatchOp* op) {
  uint32_t expected = 0;
  // No active matcher: become it and handle the op in place (after anything queued
  // earlier), sparing the queue.  acquire: pairs with the previous matcher's release.
  if (line_.work.compare_exchange_strong(expected, 1, std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
    handle(op);  // the queues hold nothing we must see first (see "In place" in matching.h)
    finish_rounds(1);
    return;
  }
  posts_.push(op);
  kick();
}

void Matcher::process_all() {
  Envelope* e = nullptr;
  while (inbox_.try_dequeue(e)) arrive(e);
  MatchOp* op = nullptr;
  while (posts_.try_pop(op)) handle(op);
}

Request* Matcher::posted_head() const {
  // relaxed: matcher-private but for the waiter's collect()/withdraw (see matching.h).
  return head_of(line_.head_req.load(std::memory_order_relaxed));
}

void Matcher::append_posted(MatchOp* op) {
  if (posted_head() == nullptr) {  // (then posted_ is empty)
    load_head(op);
    return;
  }
  posted_.add(op);
  line_.head_next = posted_.first();
}

bool Matcher::deliver_on_line(Envelope* e, uintptr_t h) {
  Line& l = line_;
  if (l.head_next != nullptr || e->kind != Envelope::kEager ||
      static_cast<uint64_t>(e->bytes) > kLineBytes || e->bytes > l.head_cap || l.head_elem == 0 ||
      whole_elements(e->bytes, l.head_elem) != e->bytes) {
    return false;
  }
  const int64_t n = e->bytes;
  l.res_source = e->src_rank;
  l.res_tag = e->tag;
  copy_bytes(l.res_data, e->data, static_cast<size_t>(n));
  if (e->block != nullptr) std::free(e->block);  // may hold *e itself: after its last read
  // release: publishes the result fields to collect()'s acquire.
  l.head_req.store((h & ~kBitsMask) | kDelivered | static_cast<uintptr_t>(n) << kBytesShift,
                   std::memory_order_release);
  return true;
}

bool Matcher::collect(const Request* r, LineResult* out) {
  Line& l = line_;
  // acquire: pairs with deliver_on_line's release store.
  const uintptr_t h = l.head_req.load(std::memory_order_acquire);
  if ((h & kDelivered) == 0 || (h & ~kBitsMask) != reinterpret_cast<uintptr_t>(r)) return false;
  out->source = l.res_source;
  out->tag = l.res_tag;
  out->bytes = static_cast<int64_t>((h & kBitsMask) >> kBytesShift);
  copy_bytes(out->data, l.res_data,
             std::min(static_cast<size_t>(out->bytes), static_cast<size_t>(kLineBytes)));
  // relaxed: nobody else writes head_req while a delivered head waits (matching.h);
  // our own next post, which rewrites the fields, takes the line with an acquire.
  l.head_req.store(0, std::memory_order_relaxed);
  return true;
}

bool Matcher::withdraw_line(Request* r) {
  if (!hold()) return false;
  r->op.line_wait = false;  // a later load_head of this op sets no flag
  // relaxed: we hold the line (hold() acquired it), so no matcher writes head_req now;
  // release() publishes the cleared flag to the next one.
  const uintptr_t h = line_.head_req.load(std::memory_order_relaxed);
  if ((h & kDelivered) == 0 && (h & kLineWait) != 0 &&
      (h & ~kBitsMask) == reinterpret_cast<uintptr_t>(r)) {
    line_.head_req.store(h & ~kLineWait, std::memory_order_relaxed);
  }
  release();
  return true;
}

void Matcher::report(MatchOp* op, const Envelope* u) {
  op->found = true;
  op->status.EP_SOURCE = u->src_rank;
  op->status.EP_TAG = u->tag;
  op->status.EP_ERROR = EP_SUCCESS;
  op->status.ep_bytes_ = u->bytes;
  op->done.set();  // publishes the result (Flag: release)
}

void Matcher::arrive_rest(Envelope* e, Request* head) {
  // The head did not match: the earliest posted receive of the others that does.
  if (head != nullptr && line_.head_next != nullptr) {
    if (MatchOp* p = posted_.find(e->src_rank, e->tag)) {
      posted_.remove(p);
      line_.head_next = posted_.first();
      deliver_(p->req, p->target, e);
      return;
    }
  }
  e = materialize_(e);
  unexpected_.add(e);
  if (arrivals_ != nullptr) arrivals_->notify();  // a blocking probe may wait for it
}

void Matcher::handle(MatchOp* op) {
  if (op->kind == MatchOp::kCancel) {
    MatchOp& c = op->req->op;  // op->req is never null
    if (posted_head() == op->req) {
      pop_head();
      op->found = true;
    } else if (c.indexed != PostedIndex::kOut) {
      posted_.remove(&c);
      line_.head_next = posted_.first();
      op->found = true;
    }
    op->done.set();  // publishes the result (Flag: release)
    return;
  }
  if (Envelope* u = unexpected_.find(op->source, op->tag)) {
    if (op->kind == MatchOp::kProbe) {
      report(op, u);
      return;
    }
    unexpected_.take(u);
    if (op->kind == MatchOp::kMprobe) {
      op->env = u;
      report(op, u);
      return;
    }
    deliver_(op->req, op->target, u);
    return;
  }
  if (op->kind != MatchOp::kRecv) {  // probe found nothing
    op->done.set();  // publishes the result (Flag: release)
    return;
  }
  append_posted(op);
}

}  // namespace ep::runtime
