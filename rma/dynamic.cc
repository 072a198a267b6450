// dynamic.cc - a dynamic window's regions (EP_Win_attach / EP_Win_detach) and the range
// check every access makes against them (see "Dynamic windows" in rma/window.h).
// attach/detach run on the owning endpoint's thread; attached() on whichever thread
// accesses the memory, under regions_mu.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <shared_mutex>

#include "rma/window.h"
#include "runtime/error.h"
#include "runtime/wait.h"

namespace ep::rma {

using runtime::fail;

namespace {

// The first region whose base is above addr.
std::vector<Region>::const_iterator above(const std::vector<Region>& rs, uintptr_t addr) {
  return std::upper_bound(rs.begin(), rs.end(), addr,
                          [](uintptr_t a, const Region& r) { return a < r.base; });
}

// Rewrites w's published table from w->regions (the owner's thread, under the exclusive
// regions_mu; see RegionTable for the protocol).
void publish(Win* w) {
  RegionTable* t = w->published;
  if (t == nullptr) return;
  const uint64_t v = t->version.load(std::memory_order_relaxed);
  t->version.store(v + 1, std::memory_order_relaxed);
  // release: the odd version is visible before any entry changes (pairs with the
  // reader's acquire fence before its second version load).
  std::atomic_thread_fence(std::memory_order_release);
  const size_t n = w->regions.size();
  if (n > RegionTable::kMax) {
    t->count.store(RegionTable::kMax + 1, std::memory_order_relaxed);
  } else {
    for (size_t i = 0; i < n; ++i) {
      t->entries[i].base.store(w->regions[i].base, std::memory_order_relaxed);
      t->entries[i].len.store(w->regions[i].len, std::memory_order_relaxed);
    }
    t->count.store(static_cast<uint32_t>(n), std::memory_order_relaxed);
  }
  // release: the entries happen-before a reader's acquire load of the even version.
  t->version.store(v + 2, std::memory_order_release);
}

// One attempt at reading the table: the answer, or 2 if the snapshot was torn.
int try_published(const RegionTable* t, uintptr_t addr, uint64_t len) {
  // acquire: pairs with the writer's release store of the even version.
  const uint64_t v1 = t->version.load(std::memory_order_acquire);
  if ((v1 & 1) != 0) return 2;
  const uint32_t n = t->count.load(std::memory_order_relaxed);
  int answer = -1;
  if (n <= RegionTable::kMax) {
    // The last entry whose base is <= addr (binary search).
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
      const uint32_t mid = (lo + hi) / 2;
      if (t->entries[mid].base.load(std::memory_order_relaxed) <= addr) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    answer = 0;
    if (lo > 0) {
      const uint64_t b = t->entries[lo - 1].base.load(std::memory_order_relaxed);
      const uint64_t l = t->entries[lo - 1].len.load(std::memory_order_relaxed);
      answer = (addr - b <= l && len <= l - (addr - b)) ? 1 : 0;
    }
  }
  // acquire: the entries were read before the version is read again (pairs with the
  // writer's release fence after its odd version).
  std::atomic_thread_fence(std::memory_order_acquire);
  return t->version.load(std::memory_order_relaxed) == v1 ? answer : 2;
}

int check_dynamic(const Win* w, const char* call) {
  if (w->flavor == Flavor::kDynamic) return EP_SUCCESS;
  return fail(EP_ERR_WIN, call, "the window was not made by EP_Win_create_dynamic");
}

}  // namespace

int attached_published(const RegionTable* t, uintptr_t addr, uint64_t len) {
  for (;;) {
    const int r = try_published(t, addr, len);
    if (r != 2) return r;
    runtime::cpu_relax();  // the owner is rewriting the table: a few stores
  }
}

bool attached(const Win* w, uintptr_t addr, uint64_t len) {
  auto it = above(w->regions, addr);
  if (it == w->regions.begin()) return false;
  const Region& r = *(it - 1);
  return addr - r.base <= r.len && len <= r.len - (addr - r.base);
}

int win_attach(Win* w, void* base, MPI_Aint size, const char* call) {
  int err = check_dynamic(w, call);
  if (err != EP_SUCCESS) return err;
  if (size < 0)
    return fail(EP_ERR_ARG, call, "size %lld is negative", static_cast<long long>(size));
  if (base == nullptr) return fail(EP_ERR_ARG, call, "base is NULL");
  const Region r{reinterpret_cast<uintptr_t>(base), static_cast<uint64_t>(size)};
  std::unique_lock<std::shared_mutex> g(w->regions_mu);
  auto it = above(w->regions, r.base);
  // Overlap with the region before (it ends after our base) or after (it starts inside us).
  const bool before = it != w->regions.begin() && (it - 1)->base + (it - 1)->len > r.base;
  const bool after = it != w->regions.end() && it->base < r.base + r.len;
  const bool same = it != w->regions.begin() && (it - 1)->base == r.base;
  if (before || after || same) {
    return fail(EP_ERR_ARG, call,
                "[%p, +%lld) overlaps memory already attached to this endpoint's window", base,
                static_cast<long long>(size));
  }
  w->regions.insert(it, r);
  publish(w);
  return EP_SUCCESS;
}

int win_detach(Win* w, const void* base, const char* call) {
  int err = check_dynamic(w, call);
  if (err != EP_SUCCESS) return err;
  if (base == nullptr) return fail(EP_ERR_ARG, call, "base is NULL");
  const uintptr_t b = reinterpret_cast<uintptr_t>(base);
  std::unique_lock<std::shared_mutex> g(w->regions_mu);  // waits for accesses in flight
  auto it = above(w->regions, b);
  if (it == w->regions.begin() || (it - 1)->base != b) {
    return fail(EP_ERR_RMA_RANGE, call, "base %p is not the base of an attached region", base);
  }
  w->regions.erase(it - 1);
  publish(w);
  return EP_SUCCESS;
}

}  // namespace ep::rma
