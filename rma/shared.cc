// shared.cc - EP_Win_allocate_shared and EP_Win_shared_query (see "Shared windows" in
// rma/window.h).  Runs on the creating endpoint's thread.
//
// The segment: a memfd made by rank 0 of the window's communicator,
//   [0, 64)                       a header with a random cookie (checks each mapping),
//   [64, 64 + 64n)                rank r's accumulate lock at 64 + 64r (own cache line),
//   [data, data + sum of sizes)   rank r's memory at data + sizes of ranks < r: contiguous
//                                 in rank order (also with alloc_shared_noncontig, which
//                                 permits, not requires, gaps).
// Every endpoint maps the whole segment (open /proc/<pid>/fd/<fd> of rank 0's process),
// so each target is `mapped` for every origin, and operations on a shared window are
// always done by the origin thread in its mapping (rma/ops.cc's run_direct) - the
// passive-target lock of another process's endpoint still goes through its handler.
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "node/shm.h"
#include "rma/segment.h"
#include "rma/table.h"
#include "rma/window.h"
#include "runtime/error.h"
#include "runtime/exchange.h"
#include "runtime/runtime.h"

namespace ep::rma {

using runtime::fail;

namespace {

constexpr size_t kLine = 64;

struct Layout0 {
  std::vector<int64_t> sizes, offs;
  std::vector<int32_t> units;
  size_t len = 0;
};

// Step 1: every verdict, node and size; the segment's layout.  Returns the error every
// endpoint reports, or EP_SUCCESS.
int agree(runtime::Endpoint* ep, MPI_Aint size, int disp_unit, int local_error, Layout0* l,
          const char* call) {
  runtime::BlobWriter bw;
  bw.put<int32_t>(local_error);
  bw.put<uint64_t>(node::node_key());
  bw.put<int64_t>(size);
  bw.put<int32_t>(disp_unit);
  std::vector<std::string> all = runtime::allgather(ep, bw.take());
  const size_t n = all.size();
  int bad = -1, other_node = -1;
  uint64_t first_node = 0;
  l->sizes.resize(n);
  l->units.resize(n);
  l->offs.resize(n);
  size_t data = kLine + kLine * n;
  for (size_t r = 0; r < n; ++r) {
    runtime::BlobReader rd(all[r]);
    if (rd.get<int32_t>() != EP_SUCCESS && bad < 0) bad = static_cast<int>(r);
    const uint64_t node = rd.get<uint64_t>();
    if (r == 0) first_node = node;
    if (node != first_node && other_node < 0) other_node = static_cast<int>(r);
    l->sizes[r] = rd.get<int64_t>();
    l->units[r] = rd.get<int32_t>();
    l->offs[r] = static_cast<int64_t>(data);
    data += static_cast<size_t>(l->sizes[r] > 0 ? l->sizes[r] : 0);
  }
  l->len = data;
  if (bad >= 0) {
    if (local_error != EP_SUCCESS) return local_error;
    return fail(EP_ERR_ARG, call, "endpoint %d passed an invalid argument; no window was created",
                bad);
  }
  if (other_node >= 0) {
    return fail(EP_ERR_COMM, call,
                "endpoint %d of the communicator is on another node than endpoint 0: a shared "
                "window needs every endpoint on one node",
                other_node);
  }
  return EP_SUCCESS;
}

// Step 2: rank 0 makes the segment and announces {pid, fd, cookie}; everybody maps it.
// Returns the mapping (nullptr on failure); rank 0 keeps the descriptor in *fd.
char* map_all(runtime::Endpoint* ep, size_t len, int* fd) {
  runtime::BlobWriter bw;
  node::Memfd m;
  *fd = -1;
  if (ep->rank == 0) {
    const uint64_t cookie = node::random_cookie();
    if (node::create_memfd("ep-shared-window", len, &m)) {
      *fd = m.fd;
      std::memcpy(m.base, &cookie, sizeof(cookie));
    }
    bw.put<int32_t>(static_cast<int32_t>(getpid()));
    bw.put<int32_t>(m.base != nullptr ? m.fd : -1);
    bw.put<uint64_t>(cookie);
  }
  const std::string got = runtime::bcast(ep, 0, bw.take());
  if (ep->rank == 0) return m.base;
  runtime::BlobReader rd(got);
  const int pid = rd.get<int32_t>(), rfd = rd.get<int32_t>();
  const uint64_t cookie = rd.get<uint64_t>();
  if (rfd < 0) return nullptr;
  return node::map_peer(pid, rfd, len, 0, cookie);
}

}  // namespace

int win_create_shared(runtime::Endpoint* ep, MPI_Aint size, int disp_unit, int local_error,
                      Win** out, const char* call) {
  Layout0 l;
  int err = agree(ep, size, disp_unit, local_error, &l, call);
  if (err != EP_SUCCESS) return err;
  int fd = -1;
  char* seg = map_all(ep, l.len, &fd);
  auto* w = new Win;
  w->flavor = Flavor::kShared;
  w->allocated = true;
  w->mem_in_seg = true;
  w->size = size;
  w->disp_unit = disp_unit;
  w->seg = seg;
  w->seg_len = l.len;
  w->memfd = fd;
  const int me = ep->rank;
  if (seg != nullptr) {
    w->base = seg + l.offs[me];
    w->acc_lock = new (seg + kLine + kLine * me) std::atomic<uint32_t>(0);
  }
  w->id = table().add(w);
  runtime::BlobWriter bw;
  bw.put<int32_t>(seg != nullptr ? EP_SUCCESS : EP_ERR_COMM);
  bw.put<uint32_t>(w->id);
  std::vector<std::string> all = runtime::allgather(ep, bw.take());
  const int n = static_cast<int>(all.size());
  int bad = -1;
  w->targets.resize(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    runtime::BlobReader rd(all[r]);
    if (rd.get<int32_t>() != EP_SUCCESS && bad < 0) bad = r;
    Target& t = w->targets[r];
    t.id = rd.get<uint32_t>();
    t.proc = ep->comm->addr[r].proc;
    t.size = l.sizes[r];
    t.disp_unit = l.units[r];
    if (seg == nullptr) continue;
    t.mapped = seg + l.offs[r];
    t.mapped_lock = reinterpret_cast<std::atomic<uint32_t>*>(seg + kLine + kLine * r);
    if (t.proc == runtime::runtime()->world_rank) t.local = table().find(t.id);
  }
  if (bad < 0) err = runtime::comm_dup(ep, &w->ep);
  if (bad >= 0 || err != EP_SUCCESS) {
    table().remove(w->id);
    release_memory(w);
    delete w;
    if (err != EP_SUCCESS) return err;
    return fail(EP_ERR_COMM, call,
                "endpoint %d could not map the shared segment; no window was created", bad);
  }
  // Every endpoint entered the dup after mapping: the descriptor is no longer needed.
  if (w->memfd >= 0) {
    close(w->memfd);
    w->memfd = -1;
  }
  w->issued.assign(static_cast<size_t>(n), 0);
  w->acked.reset(new std::atomic<uint64_t>[static_cast<size_t>(n)]());
  w->issued_reads.assign(static_cast<size_t>(n), 0);
  w->acked_reads.reset(new std::atomic<uint64_t>[static_cast<size_t>(n)]());
  w->locked.assign(static_cast<size_t>(n), 0);
  w->remote_error.reset(new std::atomic<int>[static_cast<size_t>(n)]());
  w->in_start.assign(static_cast<size_t>(n), 0);
  *out = w;
  return EP_SUCCESS;
}

int win_shared_query(Win* w, int rank, MPI_Aint* size, int* disp_unit, void** base,
                     const char* call) {
  if (w->flavor != Flavor::kShared) {
    return fail(EP_ERR_WIN, call, "the window was not made by EP_Win_allocate_shared");
  }
  const int n = static_cast<int>(w->targets.size());
  if (rank == kProcNull) {
    for (rank = 0; rank < n && w->targets[rank].size == 0; ++rank) {
    }
    if (rank == n) {
      *size = 0;
      *disp_unit = w->targets.empty() ? 1 : w->targets[0].disp_unit;
      *base = nullptr;
      return EP_SUCCESS;
    }
  }
  if (rank < 0 || rank >= n) {
    return fail(EP_ERR_RANK, call, "rank %d is not a rank of the window (size %d)", rank, n);
  }
  const Target& t = w->targets[rank];
  *size = static_cast<MPI_Aint>(t.size);
  *disp_unit = t.disp_unit;
  *base = t.mapped;
  return EP_SUCCESS;
}

}  // namespace ep::rma
