#include "node/segment.h"

#include <unistd.h>

#include <cstddef>
#include <new>

namespace ep::node {
namespace {

constexpr uint64_t kPage = 4096;
uint64_t round_up(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }

std::atomic<uint32_t>* directory(char* base, uint64_t dir_offset) {
  return reinterpret_cast<std::atomic<uint32_t>*>(base + dir_offset);
}

}  // namespace

uint32_t ring_capacity_for(int64_t eager_limit) {
  const uint64_t largest = Ring::record_len(static_cast<uint64_t>(eager_limit) + 64);
  uint64_t cap = 64 * 1024;
  while (cap < 2 * largest) cap *= 2;
  return static_cast<uint32_t>(cap);
}

bool Segment::create(uint32_t ring_capacity, uint64_t staging_bytes, std::string* error) {
  const uint64_t stride = round_up(kRingHeaderBytes + ring_capacity, kPage);
  const uint64_t dir_offset = kHeaderBytes;
  const uint64_t rings_offset = round_up(dir_offset + uint64_t{kDirEntries} * 4, kPage);
  const uint64_t staging_offset = rings_offset + stride * kMaxRings;
  staging_bytes = round_up(staging_bytes, kPage);
  const uint64_t cells_offset = staging_offset + staging_bytes;
  const uint64_t length = cells_offset + uint64_t{sizeof(CollCell)} * kMaxRings;
  if (!create_memfd("ep-node", length, &mem_, error)) return false;
  // The memory is zero: every atomic starts as 0 (RingHeader's and Doorbell's initial
  // values), the directory is empty, every ring empty.
  auto* h = new (mem_.base) SegmentHeader;
  h->magic = kSegmentMagic;
  h->version = kLayoutVersion;
  h->pid = static_cast<int32_t>(getpid());
  h->cookie = random_cookie();
  h->length = mem_.len;
  h->ring_count = kMaxRings;
  h->ring_capacity = ring_capacity;
  h->ring_stride = stride;
  h->dir_offset = dir_offset;
  h->rings_offset = rings_offset;
  h->staging_offset = staging_offset;
  h->staging_length = staging_bytes;
  h->cells_offset = cells_offset;
  for (uint32_t i = 0; i < kMaxRings; ++i) {
    // relaxed: peers map the segment only after it was announced (an MPI exchange).
    ring(static_cast<int>(i)).header()->ctx.store(kNoCtx, std::memory_order_relaxed);
  }
  used_.assign(kMaxRings, 0);
  owners_.assign(kMaxRings, Owner{kNoCtx, 0, 0});
  gen_.assign(kMaxRings, 0);
  return true;
}

void Segment::destroy() {
  destroy_memfd(&mem_);
  used_.clear();
  owners_.clear();
  gen_.clear();
  staged_.clear();
}

int Segment::assign(uint32_t ctx, int n, bool publish) {
  if (n <= 0 || (ctx >= kDirEntries) == publish || ctx == kNoCtx) return -1;
  std::lock_guard<std::mutex> lock(mu_);
  int first = -1;
  for (int i = 0, run = 0; i < static_cast<int>(kMaxRings); ++i) {
    run = used_[i] ? 0 : run + 1;
    if (run == n) {
      first = i - n + 1;
      break;
    }
  }
  if (first < 0) return -1;
  for (int i = first; i < first + n; ++i) {
    used_[i] = 1;
    owners_[i] = Owner{ctx, static_cast<uint16_t>(i - first), ++gen_[i]};
    RingHeader* r = ring(i).header();
    // release: the directory's release below publishes them anyway; these pair with
    // resolve()'s acquire loads of a producer that read an older directory entry.
    r->generation.store(owners_[i].generation, std::memory_order_release);
    r->local.store(owners_[i].local, std::memory_order_release);
    r->ctx.store(ctx, std::memory_order_release);
    // The new owner's node collectives count from where the last owner's stopped (it
    // retired after every reader was done: arrive == done).  relaxed: this process
    // alone writes its cells; the directory's release below publishes it.
    CollCell* cell = this->cell(i);
    cell->base.store(cell->arrive.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  // release: pairs with the acquire in PeerSegment::resolve.
  if (publish) {
    directory(mem_.base, header()->dir_offset)[ctx].store(static_cast<uint32_t>(first) + 1,
                                                          std::memory_order_release);
  }
  return first;
}

void Segment::release_rings(uint32_t ctx, int first, int n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ctx < kDirEntries) {
    // Only its own entry: the context id may already name a newer communicator whose
    // rings were published meanwhile (ids are recycled before the old fragment is
    // deleted).  release: as in assign_rings (a producer that sees 0 sends nothing).
    uint32_t mine = static_cast<uint32_t>(first) + 1;
    directory(mem_.base, header()->dir_offset)[ctx].compare_exchange_strong(
        mine, 0, std::memory_order_release, std::memory_order_relaxed);
  }
  for (int i = first; i < first + n; ++i) {
    used_[i] = 0;
    owners_[i] = Owner{kNoCtx, 0, ++gen_[i]};
    RingHeader* r = ring(i).header();
    r->ctx.store(kNoCtx, std::memory_order_release);  // pairs with resolve()'s acquire
    r->generation.store(owners_[i].generation, std::memory_order_release);
  }
}

Owner Segment::owner(int i) const {
  std::lock_guard<std::mutex> lock(const_cast<std::mutex&>(mu_));
  return owners_[i];
}

int64_t Segment::stage_alloc(uint64_t bytes) {
  const uint64_t len = round_up(bytes > 0 ? bytes : 1, 64);
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t pool = header()->staging_length;
  uint64_t at = 0;
  for (const auto& [off, used] : staged_) {
    if (off - at >= len) break;
    at = off + used;
  }
  if (at > pool || pool - at < len) return -1;
  staged_.emplace(at, len);
  return static_cast<int64_t>(at);
}

void Segment::stage_free(int64_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  staged_.erase(static_cast<uint64_t>(offset));
}

bool PeerSegment::map(int pid, int fd, uint64_t length, uint64_t cookie) {
  unmap();
  char* p = map_peer(pid, fd, length, offsetof(SegmentHeader, cookie), cookie);
  if (p == nullptr) return false;
  // Everything the layout says is checked once and copied: the peer's later writes to
  // its header change nothing here.
  const auto* h = reinterpret_cast<const SegmentHeader*>(p);
  const uint64_t cap = h->ring_capacity, stride = h->ring_stride, count = h->ring_count;
  const bool ok =
      h->magic == kSegmentMagic && h->version == kLayoutVersion && h->pid == pid &&
      h->length == length && count > 0 && count <= kMaxRings && cap >= Ring::kMinCapacity &&
      (cap & (cap - 1)) == 0 && cap <= (uint64_t{1} << 30) && stride >= kRingHeaderBytes + cap &&
      h->dir_offset >= kHeaderBytes && h->dir_offset + uint64_t{kDirEntries} * 4 <= h->rings_offset &&
      h->rings_offset + stride * count <= h->staging_offset && h->staging_offset <= length &&
      h->staging_length <= length - h->staging_offset &&
      h->cells_offset >= h->staging_offset + h->staging_length &&
      h->cells_offset % alignof(CollCell) == 0 && h->cells_offset <= length &&
      uint64_t{sizeof(CollCell)} * count <= length - h->cells_offset;
  if (!ok) {
    unmap_peer(p, length);
    return false;
  }
  base_ = p;
  length_ = length;
  pid_ = pid;
  ring_count_ = static_cast<uint32_t>(count);
  ring_capacity_ = static_cast<uint32_t>(cap);
  ring_stride_ = stride;
  rings_offset_ = h->rings_offset;
  dir_offset_ = h->dir_offset;
  staging_offset_ = h->staging_offset;
  staging_length_ = h->staging_length;
  cells_offset_ = h->cells_offset;
  hints_.reset(new std::atomic<uint64_t>[count]());
  turns_.reset(new std::atomic<bool>[count]());
  return true;
}

void PeerSegment::unmap() {
  unmap_peer(base_, length_);
  base_ = nullptr;
  length_ = 0;
}

int PeerSegment::resolve(uint32_t ctx, uint16_t local, uint32_t* generation) const {
  if (ctx >= kDirEntries) return -1;
  // acquire: pairs with the release in Segment::assign_rings.
  const uint32_t e = directory(base_, dir_offset_)[ctx].load(std::memory_order_acquire);
  if (e == 0) return -1;
  const uint64_t i = uint64_t{e} - 1 + local;
  if (i >= ring_count_) return -1;
  RingHeader* r = ring(static_cast<int>(i)).header();
  // acquire: pairs with the release stores of the owner fields (assign_rings).
  *generation = r->generation.load(std::memory_order_acquire);
  if (r->ctx.load(std::memory_order_acquire) != ctx ||
      r->local.load(std::memory_order_acquire) != local) {
    return -1;
  }
  return static_cast<int>(i);
}

}  // namespace ep::node
