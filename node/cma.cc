#include "node/cma.h"

#include <cerrno>

namespace ep::node {

bool cma_probe(int pid, uint64_t at, uint64_t cookie) {
  uint64_t seen = 0;
  struct iovec local = {&seen, sizeof(seen)};
  struct iovec remote = {reinterpret_cast<void*>(at), sizeof(seen)};
  return process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(sizeof(seen)) &&
         seen == cookie;
}

bool cma_read(int pid, uint64_t remote, void* local, size_t n, int* err) {
  char* to = static_cast<char*>(local);
  size_t done = 0;
  while (done < n) {
    struct iovec l = {to + done, n - done};
    struct iovec r = {reinterpret_cast<void*>(remote + done), n - done};
    const ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      *err = errno;
      return false;
    }
    if (got == 0) {  // (a partial copy reports what it moved; none means it cannot go on)
      *err = EIO;
      return false;
    }
    done += static_cast<size_t>(got);
  }
  return true;
}

bool cma_transfer(int pid, bool write, char* local, const struct iovec* remote, size_t n_remote) {
  constexpr size_t kIovMax = 1024;  // IOV_MAX on Linux
  size_t done = 0;
  for (size_t i = 0; i < n_remote;) {
    const size_t k = n_remote - i < kIovMax ? n_remote - i : kIovMax;
    size_t batch = 0;
    for (size_t j = i; j < i + k; ++j) batch += remote[j].iov_len;
    struct iovec liov = {local + done, batch};
    const ssize_t n = write ? process_vm_writev(pid, &liov, 1, remote + i, k, 0)
                            : process_vm_readv(pid, &liov, 1, remote + i, k, 0);
    if (n != static_cast<ssize_t>(batch)) return false;
    done += batch;
    i += k;
  }
  return true;
}

}  // namespace ep::node
