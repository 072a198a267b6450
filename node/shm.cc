#include "node/shm.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>

namespace ep::node {
namespace {

uint64_t compute_node_key() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::string id(host);
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string line;
  if (std::getline(boot, line)) id += line;
  return std::hash<std::string>()(id);
}

void set_error(std::string* error, const char* call) {
  if (error != nullptr) *error = std::string(call) + ": " + std::strerror(errno);
}

}  // namespace

uint64_t random_cookie() {
  std::random_device rd;
  uint64_t v = 0;
  while (v == 0) v = rd() | (static_cast<uint64_t>(rd()) << 32);  // 0 means "none" to callers
  return v;
}

uint64_t node_key() {
  static const uint64_t key = compute_node_key();
  return key;
}

bool create_memfd(const char* name, size_t len, Memfd* out, std::string* error) {
  *out = Memfd{};
  const int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) {
    set_error(error, "memfd_create");
    return false;
  }
  // memfd files start with mode 0777: only the owner may open it through /proc.
  if (fchmod(fd, 0600) != 0) {
    set_error(error, "fchmod");
    close(fd);
    return false;
  }
  if (ftruncate(fd, static_cast<off_t>(len)) != 0) {
    set_error(error, "ftruncate");
    close(fd);
    return false;
  }
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    set_error(error, "mmap");
    close(fd);
    return false;
  }
  out->fd = fd;
  out->base = static_cast<char*>(p);
  out->len = len;
  return true;
}

void close_memfd_fd(Memfd* m) {
  if (m->fd >= 0) close(m->fd);
  m->fd = -1;
}

void destroy_memfd(Memfd* m) {
  if (m->base != nullptr) munmap(m->base, m->len);
  close_memfd_fd(m);
  *m = Memfd{};
}

char* map_peer(int pid, int fd, size_t len, size_t cookie_offset, uint64_t cookie) {
  if (pid <= 0 || fd < 0 || len < cookie_offset + sizeof(uint64_t)) return nullptr;
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  const int f = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (f < 0) return nullptr;
  // A file shorter than announced is not the segment (and mapping past its end would
  // fault); one of the right length is checked by its cookie below.
  struct stat st;
  void* p = MAP_FAILED;
  if (fstat(f, &st) == 0 && st.st_size >= static_cast<off_t>(len)) {
    p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
  }
  close(f);
  if (p == MAP_FAILED) return nullptr;
  uint64_t seen = 0;
  std::memcpy(&seen, static_cast<char*>(p) + cookie_offset, sizeof(seen));
  if (seen != cookie) {
    munmap(p, len);
    return nullptr;
  }
  return static_cast<char*>(p);
}

void unmap_peer(char* base, size_t len) {
  if (base != nullptr) munmap(base, len);
}

}  // namespace ep::node
