// dynamic.cc - a dynamic window's regions (EP_Win_attach / EP_Win_detach) and the range
// check every access makes against them (see "Dynamic windows" in rma/window.h).
// attach/detach run on the owning endpoint's thread; attached() on whichever thread
// accesses the memory, under regions_mu.
#include <algorithm>
#include <cstdint>
#include <mutex>
#include <shared_mutex>

#include "rma/window.h"
#include "runtime/error.h"

namespace ep::rma {

using runtime::fail;

namespace {

// The first region whose base is above addr.
std::vector<Region>::const_iterator above(const std::vector<Region>& rs, uintptr_t addr) {
  return std::upper_bound(rs.begin(), rs.end(), addr,
                          [](uintptr_t a, const Region& r) { return a < r.base; });
}

int check_dynamic(const Win* w, const char* call) {
  if (w->flavor == Flavor::kDynamic) return EP_SUCCESS;
  return fail(EP_ERR_WIN, call, "the window was not made by EP_Win_create_dynamic");
}

}  // namespace

bool attached(const Win* w, uintptr_t addr, uint64_t len) {
  auto it = above(w->regions, addr);
  if (it == w->regions.begin()) return false;
  const Region& r = *(it - 1);
  return addr - r.base <= r.len && len <= r.len - (addr - r.base);
}

int win_attach(Win* w, void* base, MPI_Aint size, const char* call) {
  int err = check_dynamic(w, call);
  if (err != EP_SUCCESS) return err;
  if (size < 0) return fail(EP_ERR_ARG, call, "size %lld is negative", static_cast<long long>(size));
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
  return EP_SUCCESS;
}

}  // namespace ep::rma
