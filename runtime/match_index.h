// match_index.h - keyed FIFO indexes: the matcher's posted receives and unexpected
// messages found in constant time, in MPI's order.
//
// What it is: items are kept in FIFO bins keyed by (source, tag).  A posted receive's key
// is its match criteria, wildcards included ((kAnySource, t), (s, kAnyTag) and
// (kAnySource, kAnyTag) are keys of their own); a message's key is its envelope.  Every
// item of a bin matches exactly the same things, so the earliest item of a bin that
// matches is its first, and the earliest item overall that matches is the earliest (by
// sequence number, given when it joined) of the matching bins' first items.
//   PostedIndex (MatchOp): also one list of all items in post order (first(): the
//     earliest posted).  Lazy bins: a receive joins its bin only when a find() needs
//     it - every receive posted since the last find() then joins, in post order, so
//     bins stay in post order and each receive is binned at most once.  A stream whose
//     messages all go to the first posted receive (the matcher's line) never bins.  find(s, t): the earliest posted receive that matches a message
//     (s, t) - at most four bins: (s,t), (any,t), and for t >= 0 (s,any), (any,any),
//     each looked up only while a receive of that kind is posted.  O(1).
//     remove(op): O(1) for a bin's first (every matched receive), else the bin's length
//     (a cancel).
//   UnexpectedIndex (Envelope): find(s, t) for a specific receive looks up bin (s, t),
//     O(1); a wildcard receive compares the first items of all bins (O(bins), not
//     O(messages)).  take(e) removes a bin's first (every match is one).
// Bins live in an open-addressed table; emptied bins stay until the table needs room,
// then a rebuild drops them (amortized O(1) per add).
//
// Threading: single-threaded; a Matcher's indexes are touched only by its current
// matcher (matching.h), which hands them over with its line's acquire/release.
//
// Memory ordering: none of its own (see Threading).
#ifndef EP_RUNTIME_MATCH_INDEX_H_
#define EP_RUNTIME_MATCH_INDEX_H_

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "base/types.h"
#include "runtime/request.h"

namespace ep::runtime {

struct Envelope;

// A bin's key: (source, tag) as one word.
inline uint64_t match_key(int source, int tag) {
  return static_cast<uint64_t>(static_cast<uint32_t>(source)) << 32 | static_cast<uint32_t>(tag);
}

// The table of FIFO bins, keyed by match_key.  Item: the bins' element type.
template <class Item>
class BinTable {
 public:
  struct Bin {
    uint64_t key;
    Item* first;
    Item* last;
  };
  BinTable() = default;
  BinTable(const BinTable&) = delete;
  BinTable& operator=(const BinTable&) = delete;
  ~BinTable() { std::free(slots_); }

  // The bin of `k`, or nullptr if it has none.  The last bin found is remembered: a
  // stream's receives and messages share one key.
  Bin* lookup(uint64_t k) const {
    if (recent_ != nullptr && recent_->key == k) return recent_;
    if (slots_ == nullptr) return nullptr;
    for (uint64_t i = hash(k) & mask_;; i = (i + 1) & mask_) {
      Bin* b = &slots_[i];
      if (b->key == k) return recent_ = b;
      if (b->key == kEmptyKey) return nullptr;
    }
  }
  // The bin of `k`, made (empty) if it has none.
  Bin* get(uint64_t k) {
    if (Bin* b = lookup(k)) return b;
    if ((used_ + 1) * 2 > capacity()) rebuild();
    for (uint64_t i = hash(k) & mask_;; i = (i + 1) & mask_) {
      Bin* b = &slots_[i];
      if (b->key != kEmptyKey) continue;
      *b = Bin{k, nullptr, nullptr};
      ++used_;
      return recent_ = b;
    }
  }
  // Calls f(bin) for every non-empty bin.
  template <class F>
  void each(F f) const {
    for (uint64_t i = 0; i < capacity(); ++i) {
      if (slots_[i].key != kEmptyKey && slots_[i].first != nullptr) f(slots_[i]);
    }
  }

 private:
  // A free slot's key: source and tag both INT_MIN, never a key.
  static constexpr uint64_t kEmptyKey = 0x8000000080000000ull;
  static uint64_t hash(uint64_t k) {
    k *= 0x9e3779b97f4a7c15ull;
    return k ^ (k >> 29);
  }
  uint64_t capacity() const { return slots_ == nullptr ? 0 : mask_ + 1; }
  // Drops the emptied bins; the table doubles while live bins fill a quarter of it.
  void rebuild() {
    uint64_t live = 0;
    each([&](const Bin&) { ++live; });
    uint64_t cap = 16;
    while ((live + 1) * 4 > cap) cap *= 2;
    Bin* old = slots_;
    const uint64_t old_cap = capacity();
    recent_ = nullptr;
    slots_ = static_cast<Bin*>(std::malloc(cap * sizeof(Bin)));
    if (slots_ == nullptr) std::abort();  // out of memory: no way to keep MPI's order
    for (uint64_t i = 0; i < cap; ++i) slots_[i] = Bin{kEmptyKey, nullptr, nullptr};
    mask_ = cap - 1;
    used_ = 0;
    for (uint64_t i = 0; i < old_cap; ++i) {
      const Bin& o = old[i];
      if (o.key == kEmptyKey || o.first == nullptr) continue;
      uint64_t j = hash(o.key) & mask_;
      while (slots_[j].key != kEmptyKey) j = (j + 1) & mask_;
      slots_[j] = o;
      ++used_;
    }
    std::free(old);
  }

  Bin* slots_ = nullptr;
  mutable Bin* recent_ = nullptr;  // the last bin found (a slot of slots_), or nullptr
  uint64_t mask_ = 0;
  uint64_t used_ = 0;  // slots with a key (live or emptied bins)
};

// Posted receives (MatchOp's next/prev: the post-order list; bin_next: the bin; seq;
// indexed: kOut, kListed or kBinned).
class PostedIndex {
 public:
  bool empty() const { return first_ == nullptr; }
  MatchOp* first() const { return first_; }  // the earliest posted, or nullptr

  // Appends `op` (key: its source and tag) after every receive posted before.  Binning
  // waits for the first find() that needs it (see "Lazy bins").
  void add(MatchOp* op) {
    op->seq = ++seq_;
    op->next = nullptr;
    op->prev = last_;
    if (last_ != nullptr)
      last_->next = op;
    else
      first_ = op;
    last_ = op;
    op->indexed = kListed;
    if (unbinned_ == nullptr) unbinned_ = op;
  }
  // Removes `op` (in the index).
  void remove(MatchOp* op) {
    if (op->indexed == kBinned) {
      unbin(op);
    } else if (op == unbinned_) {
      unbinned_ = op->next;
    }
    if (op->prev != nullptr)
      op->prev->next = op->next;
    else
      first_ = op->next;
    if (op->next != nullptr)
      op->next->prev = op->prev;
    else
      last_ = op->prev;
    op->next = op->prev = nullptr;
    op->indexed = kOut;
  }
  // The earliest posted receive that matches a message from `src` with tag `tag`
  // (envelope_matches' rule: kAnyTag matches tags >= 0 only), or nullptr.
  MatchOp* find(int src, int tag) {
    if (unbinned_ != nullptr) bin_rest();
    return find_binned(src, tag);
  }
  // MatchOp::indexed: not in the index, in its post-order list only, also in its bin.
  static constexpr uint8_t kOut = 0, kListed = 1, kBinned = 2;

 private:
  static int kind(int source, int tag) {
    return (source == kAnySource ? 1 : 0) + (tag == kAnyTag ? 2 : 0);
  }
  MatchOp* find_binned(int src, int tag) const;
  void consider(MatchOp*& best, int k, int source, int tag) const;
  // Puts unbinned_ and every op after it into their bins (in post order).
  void bin_rest();
  void unbin(MatchOp* op);

  MatchOp* unbinned_ = nullptr;  // the first op not in a bin; every later one is not either
  MatchOp* first_ = nullptr;
  MatchOp* last_ = nullptr;
  uint64_t seq_ = 0;
  int64_t kinds_[4] = {0, 0, 0, 0};  // receives per kind(): specific, any source, any tag, both
  BinTable<MatchOp> bins_;
};

// Unexpected messages (Envelope's next: the bin; seq: arrival number, 32 bits compared
// modulo 2^32 - fewer than 2^31 messages wait at once).
class UnexpectedIndex {
 public:
  bool empty() const { return n_ == 0; }
  // Appends `e` (key: its src_rank and tag) after every message added before.
  void add(Envelope* e);
  // The earliest message that receive criteria (source, tag) match, or nullptr.  The
  // empty case inline: every receive posted before its message asks.
  Envelope* find(int source, int tag) const { return n_ == 0 ? nullptr : find_in(source, tag); }
  // Removes `e`, a result of find().
  void take(Envelope* e);
  // Removes and returns some message (nullptr when none is left): for the teardown.
  Envelope* pop_any();

 private:
  Envelope* find_in(int source, int tag) const;
  uint32_t seq_ = 0;
  int64_t n_ = 0;
  BinTable<Envelope> bins_;
};

}  // namespace ep::runtime

#endif  // EP_RUNTIME_MATCH_INDEX_H_
