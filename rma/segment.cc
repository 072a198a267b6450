#include "rma/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <new>
#include <random>
#include <string>
#include <vector>

namespace ep::rma {
namespace {

// The shared segment's header (kSegHeader bytes in front of the window memory).
struct SegHeader {
  std::atomic<uint32_t> lock{0};
  uint64_t cookie = 0;  // random; proves a mapping is the segment it should be
};
static_assert(sizeof(SegHeader) <= kSegHeader, "the header fits");

uint64_t compute_node_key() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::string id(host);
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string line;
  if (std::getline(boot, line)) id += line;
  return std::hash<std::string>()(id);
}

}  // namespace

uint64_t random_cookie() {
  return std::random_device()() | (static_cast<uint64_t>(std::random_device()()) << 32);
}

uint64_t node_key() {
  static const uint64_t key = compute_node_key();
  return key;
}

bool allocate_segment(Win* w, bool with_memory, size_t extra) {
  w->seg_len = kSegHeader + extra + (with_memory ? static_cast<size_t>(w->size) : 0);
  w->memfd = memfd_create("ep-window", MFD_CLOEXEC);
  if (w->memfd < 0 || ftruncate(w->memfd, static_cast<off_t>(w->seg_len)) != 0) return false;
  void* p = mmap(nullptr, w->seg_len, PROT_READ | PROT_WRITE, MAP_SHARED, w->memfd, 0);
  if (p == MAP_FAILED) return false;
  w->seg = static_cast<char*>(p);
  auto* h = new (w->seg) SegHeader;
  h->cookie = random_cookie();
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
  std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  int f = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (f < 0) return false;
  // A file shorter than announced is not the segment (and mapping past its end would
  // fault); one of the right length is checked by its cookie below.
  struct stat st;
  if (fstat(f, &st) != 0 || st.st_size < static_cast<off_t>(len)) {
    close(f);
    return false;
  }
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
  close(f);
  if (p == MAP_FAILED) return false;
  auto* h = static_cast<SegHeader*>(p);
  if (h->cookie != cookie) {
    munmap(p, len);
    return false;
  }
  t->segment = static_cast<char*>(p);
  t->segment_len = len;
  t->mapped_lock = &h->lock;
  return true;
}

void probe_cma(Target* t, int pid, uint64_t cookie_at, uint64_t cookie) {
  uint64_t seen = 0;
  struct iovec local = {&seen, sizeof(seen)};
  struct iovec remote = {reinterpret_cast<void*>(cookie_at), sizeof(seen)};
  if (process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(sizeof(seen)) &&
      seen == cookie) {
    t->cma_pid = pid;
  }
}

bool cma_copy(Target& t, int64_t off, const Layout& tl, char* local, bool write) {
  constexpr size_t kIovMax = 1024;  // IOV_MAX on Linux
  std::vector<struct iovec> riov;
  int64_t done = 0;
  for (size_t i = 0; i < tl.blocks.size();) {
    riov.clear();
    int64_t batch = 0;
    for (; i < tl.blocks.size() && riov.size() < kIovMax; ++i) {
      const Block& b = tl.blocks[i];
      riov.push_back(
          {reinterpret_cast<void*>(t.remote_base + off + b.off), static_cast<size_t>(b.len)});
      batch += b.len;
    }
    struct iovec liov = {local + done, static_cast<size_t>(batch)};
    ssize_t n = write ? process_vm_writev(t.cma_pid, &liov, 1, riov.data(), riov.size(), 0)
                      : process_vm_readv(t.cma_pid, &liov, 1, riov.data(), riov.size(), 0);
    if (n != static_cast<ssize_t>(batch)) {
      t.cma_pid = 0;
      return false;
    }
    done += batch;
  }
  return true;
}

void release_memory(Win* w) {
  for (Target& t : w->targets) {
    if (t.segment != nullptr) munmap(t.segment, t.segment_len);
    t.segment = t.mapped = nullptr;
  }
  if (w->allocated && !w->mem_in_seg) std::free(w->base);
  if (w->seg != nullptr) munmap(w->seg, w->seg_len);
  if (w->memfd >= 0) close(w->memfd);
  w->seg = nullptr;
  w->memfd = -1;
}

}  // namespace ep::rma
