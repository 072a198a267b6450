// handles.cc - the handle tables' slow paths (handles.h).
#include "mpi/handles.h"

#include <new>

namespace ep::mpi {

Table g_tables[kKinds] = {Table(Kind::kComm), Table(Kind::kRequest), Table(Kind::kGroup),
                          Table(Kind::kWin), Table(Kind::kMessage)};

// The initial-exec variables have external linkage, as libep's own: initial-exec
// relocations against local TLS symbols of libep_mpi.so were resolved to wrong offsets
// (Debian 12: glibc 2.36, binutils 2.40), so that two variables overlapped.
__thread IndexCache* t_index_cache __attribute__((tls_model("initial-exec"))) = nullptr;
// Set when the thread's cache is gone (the thread exits): its indexes go straight to the
// global stack from then on.
__thread bool t_index_cache_gone __attribute__((tls_model("initial-exec"))) = false;

namespace {

// Gives the thread's cached indexes back when it exits.
struct CacheHolder {
  IndexCache* cache = nullptr;
  ~CacheHolder() {
    if (cache == nullptr) return;
    t_index_cache = nullptr;
    t_index_cache_gone = true;
    for (int k = 0; k < kKinds; ++k) {
      for (uint32_t j = 0; j < cache->n[k]; ++j) g_tables[k].release_index(cache->idx[k][j]);
    }
    delete cache;
  }
};
thread_local CacheHolder t_holder;

// The calling thread's cache, made at its first use; null past the thread's exit.
IndexCache* own_cache() {
  if (t_index_cache == nullptr && !t_index_cache_gone) {
    t_index_cache = new IndexCache;
    t_holder.cache = t_index_cache;
  }
  return t_index_cache;
}

}  // namespace

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

uint32_t Table::acquire_slow() {
  const int k = static_cast<int>(kind_);
  IndexCache* c = own_cache();
  if (c == nullptr) {  // a thread past its exit: no cache any more
    const uint32_t i = pop();
    if (i != 0) return i;
    const uint32_t f = fresh_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a counter
    return f <= kMaxIndex && install_chunk(f >> kChunkBits) ? f : 0;
  }
  if (c->n[k] == 0) {
    // Refill: from the stack first, then fresh indexes, a batch at a time.
    while (c->n[k] < kCacheBatch) {
      const uint32_t i = pop();
      if (i == 0) break;
      c->idx[k][c->n[k]++] = i;
    }
    if (c->n[k] == 0) {
      // relaxed: a counter; the slots are published by install_chunk.
      const uint32_t f = fresh_.fetch_add(kCacheBatch, std::memory_order_relaxed);
      for (uint32_t i = f + kCacheBatch; i-- > f;) {
        if (i > kMaxIndex || !install_chunk(i >> kChunkBits)) continue;
        c->idx[k][c->n[k]++] = i;
      }
      if (c->n[k] == 0) return 0;  // the table is full
    }
  }
  return c->idx[k][--c->n[k]];
}

void Table::release_slow(uint32_t i) {
  const int k = static_cast<int>(kind_);
  IndexCache* c = own_cache();
  if (c == nullptr) {
    push(i, i);
    return;
  }
  if (c->n[k] == kCacheMax) {
    // Give the older half back as one chain: the bottom kCacheBatch entries.
    for (uint32_t j = 0; j + 1 < kCacheBatch; ++j) {
      // relaxed: published by the release CAS in push().
      slot(c->idx[k][j])->next.store(c->idx[k][j + 1], std::memory_order_relaxed);
    }
    push(c->idx[k][0], c->idx[k][kCacheBatch - 1]);
    for (uint32_t j = kCacheBatch; j < kCacheMax; ++j) c->idx[k][j - kCacheBatch] = c->idx[k][j];
    c->n[k] -= kCacheBatch;
  }
  c->idx[k][c->n[k]++] = i;
}

}  // namespace ep::mpi
