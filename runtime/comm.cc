#include "runtime/comm.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "runtime/error.h"
#include "runtime/p2p.h"
#include "runtime/runtime.h"

namespace ep::runtime {

// ---- CommShared / Endpoint ----------------------------------------------------------

void* CommShared::local_once(const std::function<void*()>& fn) {
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t gen = gen_;
  if (++arrived_ == static_cast<int>(local.size())) {
    result_ = fn();
    arrived_ = 0;
    ++gen_;
    cv_.notify_all();
    return result_;
  }
  cv_.wait(lock, [&] { return gen_ != gen; });
  return result_;
}

Endpoint::Endpoint(CommShared* c, int r, int li)
    : comm(c), rank(r), local_index(li), matcher(&deliver, &materialize) {}

moodycamel::ProducerToken& Endpoint::token_for(Endpoint* dest) {
  size_t i = static_cast<size_t>(dest->local_index);
  if (local_tokens.size() <= i) local_tokens.resize(comm->local.size());
  if (!local_tokens[i]) {
    local_tokens[i] = std::make_unique<moodycamel::ProducerToken>(dest->matcher.inbox());
  }
  return *local_tokens[i];
}

// ---- ContextTable -------------------------------------------------------------------

ContextTable::ContextTable() : chunks_(new std::atomic<std::atomic<CommShared*>*>[kMaxChunks]) {
  // relaxed: the table is published to other threads by EP_Init's release store.
  for (uint32_t i = 0; i < kMaxChunks; ++i) chunks_[i].store(nullptr, std::memory_order_relaxed);
}

ContextTable::~ContextTable() {
  // relaxed: EP_Finalize, after the progress thread stopped.
  for (uint32_t i = 0; i < kMaxChunks; ++i) delete[] chunks_[i].load(std::memory_order_relaxed);
  delete[] chunks_;
}

std::atomic<CommShared*>* ContextTable::chunk(uint32_t id) const {
  if (id / kChunk >= kMaxChunks) return nullptr;
  // acquire: pairs with the release store of a new chunk in allocate().
  return chunks_[id / kChunk].load(std::memory_order_acquire);
}

uint32_t ContextTable::allocate() {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = next_++;
  }
  // relaxed: chunks are only created under mu_, which we hold.
  if (chunks_[id / kChunk].load(std::memory_order_relaxed) == nullptr) {
    auto* c = new std::atomic<CommShared*>[kChunk];
    for (uint32_t i = 0; i < kChunk; ++i) c[i].store(nullptr, std::memory_order_relaxed);
    chunks_[id / kChunk].store(c, std::memory_order_release);  // pairs with chunk()
  }
  return id;
}

void ContextTable::publish(uint32_t id, CommShared* c) {
  chunk(id)[id % kChunk].store(c, std::memory_order_release);  // pairs with lookup()
}

void ContextTable::unpublish(uint32_t id) {
  chunk(id)[id % kChunk].store(nullptr, std::memory_order_release);  // pairs with lookup()
}

void ContextTable::recycle(uint32_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(id);
}

CommShared* ContextTable::lookup(uint32_t id) const {
  std::atomic<CommShared*>* c = chunk(id);
  return c == nullptr ? nullptr : c[id % kChunk].load(std::memory_order_acquire);
}

std::vector<CommShared*> ContextTable::all() const {
  std::vector<CommShared*> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (uint32_t id = 1; id < next_; ++id) {
    if (CommShared* c = lookup(id)) out.push_back(c);
  }
  return out;
}

// ---- creation ------------------------------------------------------------------------

namespace {

// Creates this process's part of a communicator with `num_local` endpoints and
// publishes its context id at once: a peer may send as soon as *its* creation
// returned, possibly before ours did, and the progress thread must find the
// endpoints then (their inboxes queue the early messages).  Membership (addr, ids,
// ranks) is filled in by finish() before any handle reaches the user; the progress
// thread only reads `local`.
CommShared* begin(int num_local) {
  Runtime* rt = runtime();
  auto* c = new CommShared;
  c->ctx = rt->contexts.allocate();
  c->tag_ub = (1 << 28) - 1;
  for (int i = 0; i < num_local; ++i) c->local.push_back(std::make_unique<Endpoint>(c, -1, i));
  c->live_handles.store(num_local, std::memory_order_relaxed);  // relaxed: published below
  rt->contexts.publish(c->ctx, c);
  return c;
}

void finish(CommShared* c, std::vector<EpAddr> addr, std::vector<Identity> ids,
            MPI_Comm proc_comm) {
  Runtime* rt = runtime();
  c->size = static_cast<int>(addr.size());
  c->addr = std::move(addr);
  c->ids = std::move(ids);
  c->proc_comm = proc_comm;
  for (int r = 0; r < c->size; ++r) c->multi_process |= c->addr[r].proc != rt->world_rank;
  for (int r = 0; r < c->size; ++r) {
    if (c->addr[r].proc == rt->world_rank) c->local[c->addr[r].local]->rank = r;
  }
}

// Undoes begin() when creation fails before anything was sent to the new context.
void abandon(CommShared* c) {
  Runtime* rt = runtime();
  rt->contexts.unpublish(c->ctx);
  rt->contexts.recycle(c->ctx);
  delete c;
}

// On the progress thread: delete a communicator once no matcher is running on it.
void retire(void* arg) {
  auto* c = static_cast<CommShared*>(arg);
  Runtime* rt = runtime();
  for (auto& ep : c->local) {
    if (ep->matcher.busy()) {  // a sender thread is still leaving a matcher: later
      progress::Command again;
      again.kind = progress::Command::kRun;
      again.fn = &retire;
      again.arg = c;
      rt->engine.submit(again);
      return;
    }
  }
  rt->contexts.recycle(c->ctx);
  delete c;
}

}  // namespace

int comm_create_endpoints(MPI_Comm parent, int num_ep, EP_Comm comms[]) {
  Runtime* rt = runtime();
  int prank = 0, psize = 0;
  MPI_Comm_rank(parent, &prank);
  MPI_Comm_size(parent, &psize);
  CommShared* c = begin(num_ep > 0 ? num_ep : 0);
  // Per process: num_ep, world rank, context id, origin counter.
  long long mine[4] = {num_ep, rt->world_rank, c->ctx,
                       // relaxed: only uniqueness matters
                       rt->next_origin.fetch_add(1, std::memory_order_relaxed)};
  std::vector<long long> all(4 * static_cast<size_t>(psize));
  MPI_Allgather(mine, 4, MPI_LONG_LONG, all.data(), 4, MPI_LONG_LONG, parent);
  for (int p = 0; p < psize; ++p) {
    if (all[4 * p] < 0) {
      abandon(c);
      return fail(EP_ERR_ARG, "EP_Comm_create_endpoints",
                  "num_ep %lld on parent rank %d is negative", all[4 * p], p);
    }
  }
  MPI_Comm proc_comm = MPI_COMM_NULL;
  MPI_Comm_split(parent, num_ep > 0 ? 0 : MPI_UNDEFINED, prank, &proc_comm);
  if (num_ep == 0) {
    abandon(c);
    return EP_SUCCESS;
  }
  uint64_t origin = (static_cast<uint64_t>(all[1]) << 32) | static_cast<uint64_t>(all[3]);
  std::vector<EpAddr> addr;
  std::vector<Identity> ids;
  for (int p = 0; p < psize; ++p) {
    for (long long i = 0; i < all[4 * p]; ++i) {
      addr.push_back(EpAddr{static_cast<int>(all[4 * p + 1]),
                            static_cast<uint32_t>(all[4 * p + 2]), static_cast<uint16_t>(i)});
      ids.push_back(Identity{origin, static_cast<int>(addr.size()) - 1});
    }
  }
  finish(c, std::move(addr), std::move(ids), proc_comm);
  for (int i = 0; i < num_ep; ++i) comms[i] = reinterpret_cast<EP_Comm>(c->local[i].get());
  return EP_SUCCESS;
}

int comm_dup(Endpoint* ep, Endpoint** out) {
  CommShared* old = ep->comm;
  void* made = old->local_once([old]() -> void* {
    Runtime* rt = runtime();
    CommShared* c = begin(static_cast<int>(old->local.size()));
    int nprocs = 0;
    MPI_Comm_size(old->proc_comm, &nprocs);
    std::vector<long long> ctxs(nprocs * 2);
    long long mine[2] = {rt->world_rank, c->ctx};
    MPI_Allgather(mine, 2, MPI_LONG_LONG, ctxs.data(), 2, MPI_LONG_LONG, old->proc_comm);
    MPI_Comm proc_comm;
    MPI_Comm_dup(old->proc_comm, &proc_comm);
    std::vector<EpAddr> addr = old->addr;
    for (EpAddr& a : addr) {
      for (int p = 0; p < nprocs; ++p) {
        if (ctxs[2 * p] == a.proc) a.ctx = static_cast<uint32_t>(ctxs[2 * p + 1]);
      }
    }
    finish(c, std::move(addr), old->ids, proc_comm);
    return c;
  });
  auto* c = static_cast<CommShared*>(made);
  Endpoint* n = c->local[ep->local_index].get();
  n->errhandler = ep->errhandler;
  *out = n;
  return EP_SUCCESS;
}

void comm_free(Endpoint* ep) {
  CommShared* c = ep->comm;
  ep->magic = 0;
  // acq_rel: the last handle's release sees every other endpoint's last use.
  if (c->live_handles.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  Runtime* rt = runtime();
  rt->contexts.unpublish(c->ctx);
  MPI_Comm_free(&c->proc_comm);
  progress::Command cmd;
  cmd.kind = progress::Command::kRun;
  cmd.fn = &retire;
  cmd.arg = c;
  rt->engine.submit(cmd);
}

int comm_compare(Endpoint* a, Endpoint* b) {
  if (a->comm == b->comm) return EP_IDENT;
  if (a->comm->ids == b->comm->ids) return EP_CONGRUENT;
  if (a->comm->size != b->comm->size) return EP_UNEQUAL;
  auto key = [](const Identity& x, const Identity& y) {
    return x.origin != y.origin ? x.origin < y.origin : x.rank < y.rank;
  };
  std::vector<Identity> x = a->comm->ids, y = b->comm->ids;
  std::sort(x.begin(), x.end(), key);
  std::sort(y.begin(), y.end(), key);
  return x == y ? EP_SIMILAR : EP_UNEQUAL;
}

void comm_free_all() {
  Runtime* rt = runtime();
  for (CommShared* c : rt->contexts.all()) {
    rt->contexts.unpublish(c->ctx);
    if (c->proc_comm != MPI_COMM_NULL) MPI_Comm_free(&c->proc_comm);
    delete c;
  }
}

}  // namespace ep::runtime
