#include "runtime/matching.h"

#include <cstdlib>

namespace ep::runtime {

Matcher::~Matcher() {
  // Unmatched arrivals belong to nobody any more.
  Envelope* e = nullptr;
  while (inbox_.try_dequeue(e)) {
    e->next = line_.unexpected_head;
    line_.unexpected_head = e;
  }
  for (Envelope* u = line_.unexpected_head; u != nullptr;) {
    Envelope* n = u->next;
    if (u->kind == Envelope::kLocalRndv && u->sreq != nullptr) request_complete(u->sreq);
    std::free(u->block);
    u = n;
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

bool Matcher::hold() {
  uint32_t expected = 0;
  // acquire: pairs with the release CAS of the previous matcher (finish_rounds).
  return line_.work.compare_exchange_strong(expected, 1, std::memory_order_acquire,
                                            std::memory_order_relaxed);
}

bool Matcher::try_deliver_direct(Envelope* e) {
  if (!hold()) return false;
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

void Matcher::load_head(MatchOp* op) {
  Line& l = line_;
  if (op == nullptr) {
    l.head_req = nullptr;
    l.head_next = nullptr;
    return;
  }
  l.head_source = op->source;
  l.head_tag = op->tag;
  l.head_dst = op->target.dst;
  l.head_cap = op->target.cap;
  l.head_elem = op->target.elem;
  l.head_req = op->req;
  l.head_next = op->next;
}

void Matcher::append_posted(MatchOp* op) {
  op->next = nullptr;
  Line& l = line_;
  if (l.head_req == nullptr) {
    load_head(op);
  } else if (l.head_next == nullptr) {  // the head is the tail: its link lives in the copy
    l.head_next = op;
  } else {
    l.posted_tail->next = op;
  }
  l.posted_tail = op;
}

void Matcher::pop_head() {
  MatchOp* next = line_.head_next;
  if (next == nullptr) line_.posted_tail = nullptr;
  load_head(next);
}

void Matcher::unlink_after(MatchOp* prev, MatchOp* p) {
  Line& l = line_;
  if (prev == &l.head_req->op)
    l.head_next = p->next;
  else
    prev->next = p->next;
  if (l.posted_tail == p) l.posted_tail = prev;
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
  const Line& l = line_;
  if (l.head_req != nullptr) {
    if (envelope_matches(l.head_source, l.head_tag, *e)) {
      // Delivery reads only the copy; once it completed the request may be reused, so
      // the head is popped afterwards, from the copy too.
      deliver_(l.head_req, RecvTarget{l.head_dst, l.head_cap, l.head_elem}, e);
      pop_head();
      return;
    }
    MatchOp* prev = &l.head_req->op;
    for (MatchOp* p = l.head_next; p != nullptr; prev = p, p = p->next) {
      if (!envelope_matches(p->source, p->tag, *e)) continue;
      unlink_after(prev, p);
      deliver_(p->req, p->target, e);
      return;
    }
  }
  e = materialize_(e);
  e->next = nullptr;
  if (unexpected_tail_ == nullptr)
    line_.unexpected_head = e;
  else
    unexpected_tail_->next = e;
  unexpected_tail_ = e;
}

void Matcher::handle(MatchOp* op) {
  if (op->kind == MatchOp::kCancel) {
    const Line& l = line_;
    if (l.head_req == op->req) {  // op->req is never null
      pop_head();
      op->found = true;
    } else if (l.head_req != nullptr) {
      MatchOp* prev = &l.head_req->op;
      for (MatchOp* p = l.head_next; p != nullptr; prev = p, p = p->next) {
        if (p->req != op->req) continue;
        unlink_after(prev, p);
        op->found = true;
        break;
      }
    }
    op->done.store(1, std::memory_order_release);  // pairs with the poster's acquire
    return;
  }
  Envelope* prev = nullptr;
  for (Envelope* u = line_.unexpected_head; u != nullptr; prev = u, u = u->next) {
    if (!envelope_matches(op->source, op->tag, *u)) continue;
    if (op->kind == MatchOp::kProbe) {
      report(op, u);
      return;
    }
    if (prev == nullptr)
      line_.unexpected_head = u->next;
    else
      prev->next = u->next;
    if (unexpected_tail_ == u) unexpected_tail_ = prev;
    u->next = nullptr;
    if (op->kind == MatchOp::kMprobe) {
      op->env = u;
      report(op, u);
      return;
    }
    deliver_(op->req, op->target, u);
    return;
  }
  if (op->kind != MatchOp::kRecv) {                // probe found nothing
    op->done.store(1, std::memory_order_release);  // pairs with the poster's acquire
    return;
  }
  append_posted(op);
}

}  // namespace ep::runtime
