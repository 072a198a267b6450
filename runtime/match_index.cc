#include "runtime/match_index.h"

#include "runtime/matching.h"
#include "runtime/request.h"

namespace ep::runtime {

void PostedIndex::bin_rest() {
  for (MatchOp* op = unbinned_; op != nullptr; op = op->next) {
    op->bin_next = nullptr;
    op->indexed = kBinned;
    BinTable<MatchOp>::Bin* b = bins_.get(match_key(op->source, op->tag));
    if (b->last != nullptr)
      b->last->bin_next = op;
    else
      b->first = op;
    b->last = op;
    ++kinds_[kind(op->source, op->tag)];
  }
  unbinned_ = nullptr;
}

void PostedIndex::unbin(MatchOp* op) {
  BinTable<MatchOp>::Bin* b = bins_.lookup(match_key(op->source, op->tag));  // op is in it
  if (b->first == op) {
    b->first = op->bin_next;
    if (b->first == nullptr) b->last = nullptr;
  } else {  // a cancel: op is further down its bin
    MatchOp* p = b->first;
    while (p->bin_next != op) p = p->bin_next;
    p->bin_next = op->bin_next;
    if (b->last == op) b->last = p;
  }
  op->bin_next = nullptr;
  --kinds_[kind(op->source, op->tag)];
}

void PostedIndex::consider(MatchOp*& best, int k, int source, int tag) const {
  if (kinds_[k] == 0) return;
  const BinTable<MatchOp>::Bin* b = bins_.lookup(match_key(source, tag));
  if (b == nullptr || b->first == nullptr) return;
  if (best == nullptr || b->first->seq < best->seq) best = b->first;
}

MatchOp* PostedIndex::find_binned(int src, int tag) const {
  MatchOp* best = nullptr;
  consider(best, 0, src, tag);
  consider(best, 1, kAnySource, tag);
  if (tag >= 0) {  // kAnyTag matches tags >= 0 only (envelope_matches)
    consider(best, 2, src, kAnyTag);
    consider(best, 3, kAnySource, kAnyTag);
  }
  return best;
}

void UnexpectedIndex::add(Envelope* e) {
  e->seq = ++seq_;
  e->next = nullptr;
  BinTable<Envelope>::Bin* b = bins_.get(match_key(e->src_rank, e->tag));
  if (b->last != nullptr)
    b->last->next = e;
  else
    b->first = e;
  b->last = e;
  ++n_;
}

Envelope* UnexpectedIndex::find_in(int source, int tag) const {
  if (source != kAnySource && tag != kAnyTag) {
    const BinTable<Envelope>::Bin* b = bins_.lookup(match_key(source, tag));
    return b != nullptr ? b->first : nullptr;
  }
  // A wildcard: the earliest of the matching bins' first messages.
  Envelope* best = nullptr;
  bins_.each([&](const BinTable<Envelope>::Bin& b) {
    Envelope* e = b.first;
    if (!envelope_matches(source, tag, *e)) return;
    // modulo 2^32: fewer than 2^31 messages wait at once
    if (best == nullptr || static_cast<int32_t>(e->seq - best->seq) < 0) best = e;
  });
  return best;
}

void UnexpectedIndex::take(Envelope* e) {
  BinTable<Envelope>::Bin* b = bins_.lookup(match_key(e->src_rank, e->tag));  // e is its first
  b->first = e->next;
  if (b->first == nullptr) b->last = nullptr;
  e->next = nullptr;
  --n_;
}

Envelope* UnexpectedIndex::pop_any() {
  Envelope* any = nullptr;
  bins_.each([&](const BinTable<Envelope>::Bin& b) {
    if (any == nullptr) any = b.first;
  });
  if (any != nullptr) take(any);
  return any;
}

}  // namespace ep::runtime
