#include "rma/segment.h"

#include <sys/uio.h>

#include <cstdlib>
#include <new>
#include <vector>

#include "node/cma.h"
#include "node/shm.h"

namespace ep::rma {
namespace {

// The shared segment's header (kSegHeader bytes in front of the window memory).
struct SegHeader {
  std::atomic<uint32_t> lock{0};
  uint64_t cookie = 0;  // random; proves a mapping is the segment it should be
};
static_assert(sizeof(SegHeader) <= kSegHeader, "the header fits");

}  // namespace

bool allocate_segment(Win* w, bool with_memory, size_t extra) {
  w->seg_len = kSegHeader + extra + (with_memory ? static_cast<size_t>(w->size) : 0);
  node::Memfd m;
  if (!node::create_memfd("ep-window", w->seg_len, &m)) return false;
  w->memfd = m.fd;
  w->seg = m.base;
  auto* h = new (w->seg) SegHeader;
  h->cookie = node::random_cookie();
  w->acc_lock = &h->lock;
  if (with_memory) {
    w->base = w->seg + kSegHeader;
    w->mem_in_seg = true;
  }
  return true;
}

uint64_t segment_cookie(const Win* w) {
  return w->seg != nullptr ? reinterpret_cast<const SegHeader*>(w->seg)->cookie : 0;
}

bool map_segment(Target* t, int pid, int fd, size_t len, uint64_t cookie) {
  char* p = node::map_peer(pid, fd, len, offsetof(SegHeader, cookie), cookie);
  if (p == nullptr) return false;
  t->segment = p;
  t->segment_len = len;
  t->mapped_lock = &reinterpret_cast<SegHeader*>(p)->lock;
  return true;
}

void probe_cma(Target* t, int pid, uint64_t cookie_at, uint64_t cookie) {
  if (node::cma_probe(pid, cookie_at, cookie)) t->cma_pid = pid;
}

bool cma_copy(Target& t, int64_t off, const Layout& tl, char* local, bool write) {
  std::vector<struct iovec> riov;
  riov.reserve(tl.blocks.size());
  for (const Block& b : tl.blocks) {
    riov.push_back(
        {reinterpret_cast<void*>(t.remote_base + off + b.off), static_cast<size_t>(b.len)});
  }
  if (!node::cma_transfer(t.cma_pid, write, local, riov.data(), riov.size())) {
    t.cma_pid = 0;
    return false;
  }
  return true;
}

void release_memory(Win* w) {
  for (Target& t : w->targets) {
    if (t.segment != nullptr) node::unmap_peer(t.segment, t.segment_len);
    t.segment = t.mapped = nullptr;
  }
  if (w->allocated && !w->mem_in_seg) std::free(w->base);
  node::Memfd m{w->memfd, w->seg, w->seg_len};
  node::destroy_memfd(&m);
  w->seg = nullptr;
  w->memfd = -1;
}

}  // namespace ep::rma
