// handles.cc - the handle tables (handles.h).
#include "mpi/handles.h"

#include <new>

namespace ep::mpi {

namespace {

constexpr uint32_t kCacheMax = 64;    // indexes a thread keeps per kind
constexpr uint32_t kCacheBatch = 32;  // moved to or from the global stack at once

Table g_tables[kKinds] = {Table(Kind::kComm), Table(Kind::kRequest), Table(Kind::kGroup),
                          Table(Kind::kWin), Table(Kind::kMessage)};

}  // namespace

// A thread's free indexes of every kind.  Reached through an initial-exec pointer (the
// object itself is too large for the static TLS reserve of a dlopen'ed library); the
// holder's destructor gives the indexes back when the thread exits.
struct Table::Cache {
  uint32_t n[kKinds] = {};
  uint32_t idx[kKinds][kCacheMax];
};

namespace {

__attribute__((tls_model("initial-exec"))) thread_local Table::Cache* t_cache = nullptr;
__attribute__((tls_model("initial-exec"))) thread_local bool t_cache_gone = false;

struct CacheHolder {
  Table::Cache* cache = nullptr;
  ~CacheHolder() {
    if (cache == nullptr) return;
    t_cache = nullptr;
    t_cache_gone = true;  // indexes released from now on go straight to the stack
    for (int k = 0; k < kKinds; ++k) {
      for (uint32_t j = 0; j < cache->n[k]; ++j) {
        g_tables[k].release_index(cache->idx[k][j]);
      }
    }
    delete cache;
  }
};
thread_local CacheHolder t_holder;

}  // namespace

Table& table(Kind k) { return g_tables[static_cast<int>(k)]; }

Table::Cache& Table::cache() {
  Cache* c = t_cache;
  if (c == nullptr) {
    c = new Cache;
    t_holder.cache = c;
    t_cache = c;
  }
  return *c;
}

bool Table::install_chunk(uint32_t chunk) {
  if (chunk >= kMaxChunks) return false;
  if (chunks_[chunk].load(std::memory_order_acquire) != nullptr) return true;
  Slot* fresh = new (std::nothrow) Slot[kChunkSize];
  if (fresh == nullptr) return false;
  Slot* expected = nullptr;
  // release: publishes the constructed slots; pairs with the acquire in slot().
  if (!chunks_[chunk].compare_exchange_strong(expected, fresh, std::memory_order_release,
                                              std::memory_order_acquire)) {
    delete[] fresh;  // another thread installed it first
  }
  return true;
}

void Table::push(uint32_t first, uint32_t last) {
  uint64_t head = free_head_.load(std::memory_order_acquire);
  for (;;) {
    // relaxed: published by the release half of the CAS below.
    slot(last)->next.store(static_cast<uint32_t>(head), std::memory_order_relaxed);
    const uint64_t tagged = ((head >> 32) + 1) << 32 | first;
    // acq_rel: release publishes the links; acquire pairs with other pushes and pops.
    if (free_head_.compare_exchange_weak(head, tagged, std::memory_order_acq_rel,
                                         std::memory_order_acquire)) {
      return;
    }
  }
}

uint32_t Table::pop() {
  uint64_t head = free_head_.load(std::memory_order_acquire);
  for (;;) {
    const uint32_t i = static_cast<uint32_t>(head);
    if (i == 0) return 0;
    // relaxed: the acquire load/CAS of the head that showed i ordered the push's link
    // before this read.  A stale value (i popped and pushed again meanwhile) fails the
    // tagged CAS below.
    const uint32_t next = slot(i)->next.load(std::memory_order_relaxed);
    const uint64_t tagged = ((head >> 32) + 1) << 32 | next;
    if (free_head_.compare_exchange_weak(head, tagged, std::memory_order_acq_rel,
                                         std::memory_order_acquire)) {
      return i;
    }
  }
}

uint32_t Table::acquire_index() {
  const int k = static_cast<int>(kind_);
  if (t_cache_gone) {  // a thread past its exit: no cache any more
    const uint32_t i = pop();
    if (i != 0) return i;
    const uint32_t f = fresh_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a counter
    return f <= kMaxIndex && install_chunk(f >> kChunkBits) ? f : 0;
  }
  Cache& c = cache();
  if (c.n[k] == 0) {
    // Refill: from the stack first, then fresh indexes, a batch at a time.
    while (c.n[k] < kCacheBatch) {
      const uint32_t i = pop();
      if (i == 0) break;
      c.idx[k][c.n[k]++] = i;
    }
    if (c.n[k] == 0) {
      // relaxed: a counter; the slots are published by install_chunk.
      const uint32_t f = fresh_.fetch_add(kCacheBatch, std::memory_order_relaxed);
      for (uint32_t i = f + kCacheBatch; i-- > f;) {
        if (i > kMaxIndex || !install_chunk(i >> kChunkBits)) continue;
        c.idx[k][c.n[k]++] = i;
      }
      if (c.n[k] == 0) return 0;  // the table is full
    }
  }
  return c.idx[k][--c.n[k]];
}

void Table::release_index(uint32_t i) {
  const int k = static_cast<int>(kind_);
  if (t_cache_gone) {
    push(i, i);
    return;
  }
  Cache& c = cache();
  if (c.n[k] == kCacheMax) {
    // Give the older half back as one chain: the bottom kCacheBatch entries.
    for (uint32_t j = 0; j + 1 < kCacheBatch; ++j) {
      // relaxed: published by the release CAS in push().
      slot(c.idx[k][j])->next.store(c.idx[k][j + 1], std::memory_order_relaxed);
    }
    push(c.idx[k][0], c.idx[k][kCacheBatch - 1]);
    for (uint32_t j = kCacheBatch; j < kCacheMax; ++j) c.idx[k][j - kCacheBatch] = c.idx[k][j];
    c.n[k] -= kCacheBatch;
  }
  c.idx[k][c.n[k]++] = i;
}

int Table::make(void* obj, int owner, void* aux) {
  const uint32_t i = acquire_index();
  if (i == 0) return 0;
  Slot* s = slot(i);
  // relaxed: published by the release store of obj.
  s->owner.store(owner, std::memory_order_relaxed);
  s->aux.store(aux, std::memory_order_relaxed);
  s->obj.store(obj, std::memory_order_release);  // release: pairs with the acquire in get()
  return encode(kind_, i);
}

void Table::release(int h) {
  const uint32_t i = index_of(h);
  Slot* s = slot(i);
  // relaxed: the index is reused only after release_index, whose stack CAS (or this
  // thread's own cache) orders these stores before the next owner's writes.
  s->aux.store(nullptr, std::memory_order_relaxed);
  s->obj.store(nullptr, std::memory_order_relaxed);
  release_index(i);
}

}  // namespace ep::mpi
