#include "runtime/comm.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <new>
#include <thread>
#include <unordered_map>

#include "base/mpi_calls.h"
#include "runtime/error.h"
#include "runtime/exchange.h"
#include "runtime/node.h"
#include "runtime/p2p.h"
#include "runtime/request.h"
#include "runtime/runtime.h"

namespace ep::runtime {

// ---- CommShared / Endpoint ----------------------------------------------------------

CommShared::Round& CommShared::join_round(int local_index, uint64_t* n) {
  if (joined_.size() != local.size()) joined_.resize(local.size(), 0);
  *n = joined_[static_cast<size_t>(local_index)]++;
  Round& r = rounds_[*n];  // (std::map: the reference stays valid until erased)
  return r;
}

std::shared_ptr<void> CommShared::local_round(int local_index, std::string mine,
                                              const RoundFn& fn) {
  const int n_local = static_cast<int>(local.size());
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t n = 0;
  Round& r = join_round(local_index, &n);
  if (r.contrib.size() != local.size()) r.contrib.resize(local.size());
  r.contrib[static_cast<size_t>(local_index)] = std::move(mine);
  if (++r.arrived == n_local) {
    // Run fn without the lock: it communicates, and the other endpoints of this
    // fragment wait for this round (none can leave it before its result is set).
    std::vector<std::string> contrib = std::move(r.contrib);
    lock.unlock();
    std::shared_ptr<void> result = fn(contrib);
    lock.lock();
    r.result = result;
    r.done = true;
    if (++r.departed == n_local) rounds_.erase(n);
    lock.unlock();
    round_done_.notify();
    return result;
  }
  lock.unlock();
  // The others wait for the last (runtime/wait.h).  The round stays until every
  // caller has taken its result.
  wait_until(
      round_done_,
      [&] {
        std::lock_guard<std::mutex> g(mu_);
        return r.done;
      },
      Drive::kNo, Crowd::kYes);
  std::lock_guard<std::mutex> g(mu_);
  std::shared_ptr<void> result = r.result;
  if (++r.departed == n_local) rounds_.erase(n);
  return result;
}

void CommShared::local_round_async(int local_index, std::shared_ptr<void> part,
                                   const LaunchFn& launch) {
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t n = 0;
  Round& r = join_round(local_index, &n);
  if (r.parts.size() != local.size()) r.parts.resize(local.size());
  r.parts[static_cast<size_t>(local_index)] = std::move(part);
  if (++r.arrived < static_cast<int>(local.size())) return;
  std::vector<std::shared_ptr<void>> parts = std::move(r.parts);
  rounds_.erase(n);  // nobody waits for a nonblocking round
  lock.unlock();
  launch(parts);
}

Endpoint::Endpoint(CommShared* c, int r, int li)
    : comm(c), rank(r), local_index(li), matcher(&deliver, &materialize) {
  matcher.set_arrivals(&arrivals);
}

moodycamel::ProducerToken& Endpoint::token_for(Endpoint* dest) {
  if (dest->comm != comm) {  // another fragment: intercommunicator or merged groups
    std::unique_ptr<moodycamel::ProducerToken>& t = other_tokens[dest];
    if (!t) t = std::make_unique<moodycamel::ProducerToken>(dest->matcher.inbox());
    return *t;
  }
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

uint32_t ContextTable::allocate() {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = next_;
    next_ += 2;  // id + 1 is the shadow's (same chunk: kChunk is even)
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

// Creates this process's fragment of a communicator with `num_local` endpoints and
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
  auto* s = new CommShared;  // the shadow: libep's own traffic on this communicator
  s->ctx = c->ctx + 1;
  s->tag_ub = c->tag_ub;
  s->is_shadow = true;
  for (int i = 0; i < num_local; ++i) s->local.push_back(std::make_unique<Endpoint>(s, -1, i));
  c->coll = s;
  // Rings before the context ids are known to anyone: a peer's first record finds them.
  rt->node.attach(c);
  rt->node.attach(s);
  rt->contexts.publish(s->ctx, s);
  rt->contexts.publish(c->ctx, c);
  return c;
}

// The fragments of a group with addresses `addr`: the lowest rank of each (proc, ctx),
// ascending; each rank's fragment; whether every fragment's ranks are contiguous.
void fragments_of(const std::vector<EpAddr>& addr, std::vector<int>* leaders,
                  std::vector<int>* frag_of, bool* grouped) {
  leaders->clear();
  frag_of->assign(addr.size(), 0);
  std::unordered_map<uint64_t, int> frag;  // (proc, ctx) -> fragment index
  for (size_t r = 0; r < addr.size(); ++r) {
    uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(addr[r].proc)) << 32) | addr[r].ctx;
    auto it = frag.find(key);
    if (it == frag.end()) {
      it = frag.emplace(key, static_cast<int>(leaders->size())).first;
      leaders->push_back(static_cast<int>(r));
    }
    (*frag_of)[r] = it->second;
  }
  *grouped = true;
  for (size_t r = 1; r < addr.size(); ++r) *grouped &= (*frag_of)[r] >= (*frag_of)[r - 1];
}

// Fills in membership: addresses and identities by rank (local group), fragments,
// this fragment's endpoints' ranks and their positions among this process's ranks.
void finish(CommShared* c, std::vector<EpAddr> addr, std::vector<Identity> ids) {
  Runtime* rt = runtime();
  c->size = static_cast<int>(addr.size());
  c->addr = std::move(addr);
  c->ids = std::move(ids);
  c->frag_leaders.clear();
  c->frag_of.assign(static_cast<size_t>(c->size), 0);
  std::unordered_map<uint64_t, int> frag;  // (proc, ctx) -> fragment index
  int in_proc = 0;
  for (int r = 0; r < c->size; ++r) {
    const EpAddr& a = c->addr[r];
    uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(a.proc)) << 32) | a.ctx;
    auto it = frag.find(key);
    if (it == frag.end()) {
      it = frag.emplace(key, static_cast<int>(c->frag_leaders.size())).first;
      c->frag_leaders.push_back(r);
    }
    c->frag_of[r] = it->second;
    if (a.proc != rt->world_rank) {
      c->multi_process = true;
      continue;
    }
    if (a.ctx == c->ctx) {
      c->my_frag = it->second;
      Endpoint* ep = c->local[a.local].get();
      ep->rank = r;
      ep->proc_local_rank = in_proc;
    }
    ++in_proc;
  }
  c->proc_local_size = in_proc;
  c->grouped = true;
  for (int r = 1; r < c->size; ++r) c->grouped &= c->frag_of[r] >= c->frag_of[r - 1];
  for (const EpAddr& a : c->remote_addr) c->multi_process |= a.proc != rt->world_rank;
  if (rt->node.on()) {  // where point-to-point peers live, for the node transport
    for (int r = 0; r < c->peer_size(); ++r) {
      const int proc = c->peer(r).proc;
      if (proc == rt->world_rank) continue;
      (rt->node.peer(proc) != nullptr ? c->node_peers : c->off_node) = true;
    }
    c->node_routes.reset(new std::atomic<uint64_t>[static_cast<size_t>(c->peer_size())]());
  }
  if (c->inter)
    fragments_of(c->remote_addr, &c->remote_frag_leaders, &c->remote_frag_of, &c->remote_grouped);
  if (CommShared* s = c->coll) {  // the shadow has the same membership, contexts + 1
    auto shift = [](std::vector<EpAddr> v) {
      for (EpAddr& a : v) ++a.ctx;
      return v;
    };
    s->size = c->size;
    s->addr = shift(c->addr);
    s->ids = c->ids;
    s->frag_leaders = c->frag_leaders;
    s->frag_of = c->frag_of;
    s->my_frag = c->my_frag;
    s->proc_local_size = c->proc_local_size;
    s->multi_process = c->multi_process;
    s->inter = c->inter;
    s->remote_size = c->remote_size;
    s->remote_addr = shift(c->remote_addr);
    s->remote_ids = c->remote_ids;
    s->node_peers = c->node_peers;
    s->off_node = c->off_node;
    if (c->node_routes) {
      s->node_routes.reset(new std::atomic<uint64_t>[static_cast<size_t>(s->peer_size())]());
    }
    for (size_t i = 0; i < c->local.size(); ++i) {
      s->local[i]->rank = c->local[i]->rank;
      s->local[i]->proc_local_rank = c->local[i]->proc_local_rank;
    }
  }
}

// Undoes begin() when creation fails before anything was sent to the new context.
void abandon(CommShared* c) {
  Runtime* rt = runtime();
  rt->contexts.unpublish(c->ctx);
  rt->contexts.unpublish(c->coll->ctx);
  rt->contexts.recycle(c->ctx);
  delete c;  // and its shadow
}

// On the progress thread: delete a communicator once no matcher is running on it.
void retire(void* arg) {
  auto* c = static_cast<CommShared*>(arg);
  Runtime* rt = runtime();
  // acquire: pairs with the collective engine's release when an operation finished.
  bool busy = c->coll_active.load(std::memory_order_acquire) != 0;
  for (auto& ep : c->local) busy |= ep->matcher.busy() || node_endpoint_busy(ep.get());
  for (auto& ep : c->coll->local) busy |= ep->matcher.busy() || node_endpoint_busy(ep.get());
  for (CommShared* x : {c, c->coll}) {
    // acquire: pairs with the release that published the state (collectives' state_of).
    void* state = x->coll_state.load(std::memory_order_acquire);
    busy |= state != nullptr && x->coll_state_busy != nullptr && x->coll_state_busy(state);
  }
  {
    if (busy) {  // a sender thread is still leaving a matcher: later
      progress::Command again;
      again.kind = progress::Command::kRun;
      again.fn = &retire;
      again.arg = c;
      engine().submit(again);
      return;
    }
  }
  rt->contexts.recycle(c->ctx);
  delete c;
}

// Identities order groups (compare, merge).
bool id_less(const Identity& x, const Identity& y) {
  return x.origin != y.origin ? x.origin < y.origin : x.rank < y.rank;
}

// Serialized addresses and identities of a group.
std::string write_group(const std::vector<EpAddr>& addr, const std::vector<Identity>& ids) {
  BlobWriter w;
  w.put<uint64_t>(addr.size());
  for (size_t r = 0; r < addr.size(); ++r) {
    w.put<int>(addr[r].proc);
    w.put<uint32_t>(addr[r].ctx);
    w.put<uint16_t>(addr[r].local);
    w.put<uint64_t>(ids[r].origin);
    w.put<int>(ids[r].rank);
  }
  return w.take();
}

void read_group(BlobReader& rd, std::vector<EpAddr>* addr, std::vector<Identity>* ids) {
  uint64_t n = rd.get<uint64_t>();
  addr->resize(n);
  ids->resize(n);
  for (uint64_t r = 0; r < n; ++r) {
    (*addr)[r].proc = rd.get<int>();
    (*addr)[r].ctx = rd.get<uint32_t>();
    (*addr)[r].local = rd.get<uint16_t>();
    (*ids)[r].origin = rd.get<uint64_t>();
    (*ids)[r].rank = rd.get<int>();
  }
}

// The addresses of `old`'s ranks in a new communicator with the same fragments, given
// each fragment's new context id (by fragment index).
std::vector<EpAddr> readdress(const CommShared* old, const std::vector<std::string>& frag_ctx) {
  std::vector<EpAddr> addr = old->addr;
  for (int r = 0; r < old->size; ++r) {
    BlobReader rd(frag_ctx[old->frag_of[r]]);
    addr[r].ctx = rd.get<uint32_t>();
  }
  return addr;
}

std::string ctx_blob(uint32_t ctx) {
  BlobWriter w;
  w.put<uint32_t>(ctx);
  return w.take();
}

}  // namespace

CommShared* fragment_begin(int num_local) { return begin(num_local); }

void fragment_finish(CommShared* c, std::vector<EpAddr> addr, std::vector<Identity> ids) {
  finish(c, std::move(addr), std::move(ids));
}

int comm_create_endpoints(MPI_Comm parent, int num_ep, CommHandle comms[]) {
  Runtime* rt = runtime();
  int psize = 0;
  EP_MPI(MPI_Comm_size(parent, &psize));
  CommShared* c = begin(num_ep > 0 ? num_ep : 0);
  // Per process: num_ep, world rank, context id, origin counter.
  long long mine[4] = {num_ep, rt->world_rank, c->ctx,
                       // relaxed: only uniqueness matters
                       rt->next_origin.fetch_add(1, std::memory_order_relaxed)};
  std::vector<long long> all(4 * static_cast<size_t>(psize));
  // Nonblocking, and waited for like any libep wait (runtime/wait.h): a blocking MPI
  // collective would hold MPICH's lock against the progress thread for the whole wait.
  MPI_Request req = MPI_REQUEST_NULL;
  EP_MPI(MPI_Iallgather(mine, 4, MPI_LONG_LONG, all.data(), 4, MPI_LONG_LONG, parent, &req));
  wait_mpi(&req, 1);
  for (int p = 0; p < psize; ++p) {
    if (all[4 * p] < 0) {
      abandon(c);
      return fail(EP_ERR_ARG, "EP_Comm_create_endpoints",
                  "num_ep %lld on parent rank %d is negative", all[4 * p], p);
    }
  }
  if (num_ep == 0) {
    abandon(c);
    return EP_SUCCESS;
  }
  uint64_t origin = (static_cast<uint64_t>(all[1]) << 32) | static_cast<uint64_t>(all[3]);
  std::vector<EpAddr> addr;
  std::vector<Identity> ids;
  for (int p = 0; p < psize; ++p) {
    for (long long i = 0; i < all[4 * p]; ++i) {
      addr.push_back(EpAddr{static_cast<int>(all[4 * p + 1]), static_cast<uint32_t>(all[4 * p + 2]),
                            static_cast<uint16_t>(i)});
      ids.push_back(Identity{origin, static_cast<int>(addr.size()) - 1});
    }
  }
  finish(c, std::move(addr), std::move(ids));
  for (int i = 0; i < num_ep; ++i) comms[i] = reinterpret_cast<CommHandle>(c->local[i].get());
  return EP_SUCCESS;
}

namespace {

// The new fragment of a dup of intracommunicator `old` (once per fragment, by the
// thread acting for it): one new fragment per old fragment, same addresses otherwise.
CommShared* dup_fragment(CommShared* old, int tag) {
  CommShared* c = begin(static_cast<int>(old->local.size()));
  std::vector<std::string> ctxs = frag_allgather(old, tag, ctx_blob(c->ctx));
  finish(c, readdress(old, ctxs), old->ids);
  return c;
}

// Dup of an intracommunicator.  Returns the new fragment of ep's fragment.
CommShared* dup_intra(Endpoint* ep) {
  CommShared* old = ep->comm;
  const int tag = hidden_tag(ep);
  std::shared_ptr<void> made =
      old->local_round(ep->local_index, std::string(), [old, tag](std::vector<std::string>&) {
        return std::shared_ptr<void>(dup_fragment(old, tag), [](CommShared*) {});
      });
  return static_cast<CommShared*>(made.get());
}

// The hidden local_comm endpoint that stands for intercomm endpoint `ep`.
Endpoint* local_side(Endpoint* ep) { return ep->comm->local_comm->local[ep->local_index].get(); }

// The new fragments of one group of an intercommunicator being made: the half `h`
// and its hidden local_comm `d`, with the whole group's addresses in both.
struct Halves {
  CommShared* h = nullptr;
  CommShared* d = nullptr;
  std::vector<EpAddr> haddr, daddr;
};

// The new fragments of lc's fragment for the halves being made (once per fragment, by
// the thread acting for it): begun, and the group's addresses exchanged.
std::shared_ptr<Halves> halves_fragment(CommShared* lc, int tag) {
  auto hv = std::make_shared<Halves>();
  hv->h = begin(static_cast<int>(lc->local.size()));
  hv->d = begin(static_cast<int>(lc->local.size()));
  BlobWriter w;
  w.put<uint32_t>(hv->h->ctx);
  w.put<uint32_t>(hv->d->ctx);
  std::vector<std::string> frags = frag_allgather(lc, tag, w.take());
  hv->haddr = hv->daddr = lc->addr;
  for (int r = 0; r < lc->size; ++r) {
    BlobReader rd(frags[lc->frag_of[r]]);
    hv->haddr[r].ctx = rd.get<uint32_t>();
    hv->daddr[r].ctx = rd.get<uint32_t>();
  }
  return hv;
}

// Collective over the endpoints of the intracommunicator of `lep`.
std::shared_ptr<Halves> make_halves(Endpoint* lep) {
  CommShared* lc = lep->comm;
  const int tag = hidden_tag(lep);
  return std::static_pointer_cast<Halves>(
      lc->local_round(lep->local_index, std::string(), [lc, tag](std::vector<std::string>&) {
        return std::static_pointer_cast<void>(halves_fragment(lc, tag));
      }));
}

// Once per fragment (inside a local_round fn): finish both fragments of `hv`, or
// abandon them if the creation failed.
void complete_halves(CommShared* lc, Halves& hv, bool ok, const std::string& remote) {
  if (!ok) {
    abandon(hv.h);
    abandon(hv.d);
    return;
  }
  BlobReader rd(remote);
  CommShared* h = hv.h;
  read_group(rd, &h->remote_addr, &h->remote_ids);
  h->inter = true;
  h->remote_size = static_cast<int>(h->remote_addr.size());
  h->local_comm = hv.d;
  finish(hv.d, hv.daddr, lc->ids);
  finish(h, hv.haddr, lc->ids);
}

Endpoint* adopt(CommShared* c, const Endpoint* from, int local_index) {
  Endpoint* n = c->local[local_index].get();
  errhandler_assign(&n->errhandler, from->errhandler);
  return n;
}

}  // namespace

int comm_dup(Endpoint* ep, Endpoint** out) {
  CommShared* old = ep->comm;
  if (!old->inter) {
    *out = adopt(dup_intra(ep), ep, ep->local_index);
    return EP_SUCCESS;
  }
  // Intercommunicator: each group makes its new fragments, then the two rank-0
  // endpoints swap their group's addresses over the old intercommunicator.
  const int tag = hidden_tag(ep);
  Endpoint* lep = local_side(ep);
  CommShared* ld = old->local_comm;
  std::shared_ptr<Halves> hv = make_halves(lep);
  std::string remote;
  if (ep->rank == 0) remote = sendrecv_hidden(ep, 0, tag, write_group(hv->haddr, ld->ids), 0, tag);
  bcast(lep, 0, std::move(remote), [ld, hv](std::string& data) {
    complete_halves(ld, *hv, true, data);
    return std::shared_ptr<void>();
  });
  *out = adopt(hv->h, ep, ep->local_index);
  return EP_SUCCESS;
}

namespace {

// What one fragment's round of EP_Comm_split produced for its local endpoints.
struct SplitMade {
  std::vector<Endpoint*> by_local;  // new endpoint of each old local endpoint (or null)
  int bad_rank = -1;                // an endpoint that passed an invalid colour
  int bad_color = 0;
};

// Every rank's choice, as the fragments swap them.
struct SplitRec {
  int color = kUndefined, key = 0, local = -1;
  uint32_t ctx = 0;  // the context of the fragment made for it (0: none)
};

// This fragment's local choices: a fragment begun for each colour used here, its local
// order the new rank order (key, then old rank); new_local[i] is local endpoint i's index
// in its colour's fragment.
std::map<int, CommShared*> begin_colors(const std::vector<int>& colors,
                                        const std::vector<int>& keys, std::vector<int>* new_local) {
  const int n = static_cast<int>(colors.size());
  auto order = [&](int a, int b) { return keys[a] != keys[b] ? keys[a] < keys[b] : a < b; };
  std::map<int, std::vector<int>> members;  // colour -> local indices, new order
  for (int i = 0; i < n; ++i) {
    if (colors[i] != kUndefined && colors[i] >= 0) members[colors[i]].push_back(i);
  }
  std::map<int, CommShared*> made;
  new_local->assign(static_cast<size_t>(n), -1);
  for (auto& [col, v] : members) {
    std::sort(v.begin(), v.end(), order);
    made[col] = begin(static_cast<int>(v.size()));
    for (size_t j = 0; j < v.size(); ++j) (*new_local)[v[j]] = static_cast<int>(j);
  }
  return made;
}

// Every rank's SplitRec: this fragment's written, then swapped among the fragments.
std::vector<SplitRec> swap_choices(CommShared* old, int tag, const std::vector<int>& colors,
                                   const std::vector<int>& keys, const std::vector<int>& new_local,
                                   std::map<int, CommShared*>& made) {
  BlobWriter w;
  for (size_t i = 0; i < colors.size(); ++i) {
    w.put<int>(old->local[i]->rank);
    w.put<int>(colors[i]);
    w.put<int>(keys[i]);
    w.put<uint32_t>(new_local[i] >= 0 ? made[colors[i]]->ctx : 0);
    w.put<int>(new_local[i]);
  }
  std::vector<SplitRec> recs(static_cast<size_t>(old->size));
  for (const std::string& f : frag_allgather(old, tag, w.take())) {
    BlobReader rd(f);
    while (!rd.done()) {
      const int r = rd.get<int>();
      SplitRec x;
      x.color = rd.get<int>();
      x.key = rd.get<int>();
      x.ctx = rd.get<uint32_t>();
      x.local = rd.get<int>();
      if (r >= 0 && r < old->size) recs[r] = x;
    }
  }
  return recs;
}

// Finishes colour `col`'s fragment: its members in new rank order (key, then old rank).
void finish_color(CommShared* old, CommShared* c, int col, const std::vector<SplitRec>& recs) {
  std::vector<int> ranks;
  for (int r = 0; r < old->size; ++r) {
    if (recs[r].color == col) ranks.push_back(r);
  }
  std::stable_sort(ranks.begin(), ranks.end(),
                   [&](int a, int b) { return recs[a].key < recs[b].key; });
  std::vector<EpAddr> addr;
  std::vector<Identity> ids;
  for (int r : ranks) {
    addr.push_back(EpAddr{old->addr[r].proc, recs[r].ctx, static_cast<uint16_t>(recs[r].local)});
    ids.push_back(old->ids[r]);
  }
  finish(c, std::move(addr), std::move(ids));
}

// The last local arrival's part of EP_Comm_split (local_round's fn).
std::shared_ptr<void> split_round(CommShared* old, int tag, std::vector<std::string>& contrib) {
  const int n = static_cast<int>(contrib.size());
  std::vector<int> colors(n), keys(n);
  for (int i = 0; i < n; ++i) {
    BlobReader rd(contrib[i]);
    colors[i] = rd.get<int>();
    keys[i] = rd.get<int>();
  }
  std::vector<int> new_local;
  std::map<int, CommShared*> made = begin_colors(colors, keys, &new_local);
  const std::vector<SplitRec> recs = swap_choices(old, tag, colors, keys, new_local, made);
  auto m = std::make_shared<SplitMade>();
  m->by_local.assign(n, nullptr);
  for (int r = 0; r < old->size && m->bad_rank < 0; ++r) {
    if (recs[r].color != kUndefined && recs[r].color < 0) {
      m->bad_rank = r;
      m->bad_color = recs[r].color;
    }
  }
  for (auto& [col, c] : made) {
    if (m->bad_rank >= 0) {
      abandon(c);
    } else {
      finish_color(old, c, col, recs);
    }
  }
  if (m->bad_rank < 0) {
    for (int i = 0; i < n; ++i) {
      if (new_local[i] >= 0) m->by_local[i] = made[colors[i]]->local[new_local[i]].get();
    }
  }
  return std::static_pointer_cast<void>(m);
}

}  // namespace

int comm_split(Endpoint* ep, int color, int key, Endpoint** out) {
  CommShared* old = ep->comm;
  const int tag = hidden_tag(ep);
  BlobWriter mine;
  mine.put<int>(color);
  mine.put<int>(key);
  std::shared_ptr<void> res = old->local_round(
      ep->local_index, mine.take(),
      [old, tag](std::vector<std::string>& contrib) { return split_round(old, tag, contrib); });
  auto* m = static_cast<SplitMade*>(res.get());
  if (m->bad_rank >= 0) {
    return fail(EP_ERR_ARG, "EP_Comm_split",
                "color %d at rank %d is negative (and not EP_UNDEFINED)", m->bad_color,
                m->bad_rank);
  }
  Endpoint* n = m->by_local[ep->local_index];
  if (n != nullptr) errhandler_assign(&n->errhandler, ep->errhandler);
  *out = n;
  return EP_SUCCESS;
}

int intercomm_create(Endpoint* ep, int local_leader, Endpoint* peer, int remote_leader, int tag,
                     Endpoint** out) {
  const char* call = "EP_Intercomm_create";
  CommShared* lc = ep->comm;
  std::shared_ptr<Halves> hv = make_halves(ep);
  // The leader swaps group tables with the remote leader over peer_comm and checks
  // them; its verdict (and the remote table) reaches its group by a broadcast.
  BlobWriter verdict;
  if (ep->rank == local_leader) {
    int code = EP_SUCCESS;
    std::string msg, remote;
    if (peer == nullptr) {
      code = EP_ERR_COMM;
      msg = "peer_comm at the local leader is not a valid communicator";
    } else if (peer->comm->inter) {
      code = EP_ERR_COMM;
      msg = "peer_comm at the local leader is an intercommunicator";
    } else if (tag < 0 || tag > peer->comm->tag_ub) {
      code = EP_ERR_TAG;
      msg = "tag " + std::to_string(tag) + " is not in 0..EP_Comm_tag_ub (" +
            std::to_string(peer->comm->tag_ub) + ")";
    } else if (remote_leader < 0 || remote_leader >= peer->comm->size) {
      code = EP_ERR_RANK;
      msg = "remote_leader " + std::to_string(remote_leader) +
            " is not a rank of peer_comm (size " + std::to_string(peer->comm->size) + ")";
    } else {
      const int itag = kIntercommTagBase - tag;
      remote = sendrecv_hidden(peer, remote_leader, itag, write_group(hv->haddr, lc->ids),
                               remote_leader, itag);
      std::vector<EpAddr> raddr;
      std::vector<Identity> rids;
      BlobReader rd(remote);
      read_group(rd, &raddr, &rids);
      for (size_t i = 0; i < rids.size() && code == EP_SUCCESS; ++i) {
        for (int r = 0; r < lc->size; ++r) {
          if (lc->ids[r] == rids[i]) {
            code = EP_ERR_GROUP;
            msg = "the groups overlap: local rank " + std::to_string(r) + " is also rank " +
                  std::to_string(i) + " of the remote group";
            break;
          }
        }
      }
    }
    verdict.put<int>(code);
    verdict.put_bytes(msg);
    verdict.put_bytes(remote);
  }
  auto result = std::static_pointer_cast<std::string>(
      bcast(ep, local_leader, verdict.take(), [lc, hv](std::string& data) {
        BlobReader rd(data);
        int code = rd.get<int>();
        rd.get_bytes();
        complete_halves(lc, *hv, code == EP_SUCCESS, rd.get_bytes());
        return std::make_shared<std::string>(data);
      }));
  BlobReader rd(*result);
  int code = rd.get<int>();
  std::string msg = rd.get_bytes();
  if (code != EP_SUCCESS) {
    return fail(code, call, "%s (found by local leader %d)", msg.c_str(), local_leader);
  }
  *out = adopt(hv->h, ep, ep->local_index);
  return EP_SUCCESS;
}

int intercomm_merge(Endpoint* ep, bool high, Endpoint** out) {
  CommShared* h = ep->comm;
  CommShared* ld = h->local_comm;
  Endpoint* lep = local_side(ep);
  const int tag = hidden_tag(ep);
  const int tag2 = hidden_tag(lep);
  struct Merged {
    CommShared* m = nullptr;
    std::vector<EpAddr> addr;  // this group's ranks in the new communicator's fragments
    int high = 0;              // the group's `high` (its rank 0's)
  };
  // Each fragment of this group makes its new fragment; the group learns the addresses.
  auto mg = std::static_pointer_cast<Merged>(ld->local_round(
      lep->local_index, std::string(1, high ? 1 : 0), [ld, tag2](std::vector<std::string>& c) {
        auto mg = std::make_shared<Merged>();
        mg->m = begin(static_cast<int>(ld->local.size()));
        BlobWriter w;
        w.put<uint32_t>(mg->m->ctx);
        w.put<int>(c[0][0]);
        std::vector<std::string> frags = frag_allgather(ld, tag2, w.take());
        mg->addr = ld->addr;
        for (int r = 0; r < ld->size; ++r) {
          BlobReader rd(frags[ld->frag_of[r]]);
          mg->addr[r].ctx = rd.get<uint32_t>();
        }
        BlobReader rd0(frags[0]);  // fragment 0 holds rank 0
        rd0.get<uint32_t>();
        mg->high = rd0.get<int>();
        return std::static_pointer_cast<void>(mg);
      }));
  std::string remote;
  if (ep->rank == 0) {
    BlobWriter w;
    w.put<int>(mg->high);
    w.put_bytes(write_group(mg->addr, ld->ids));
    remote = sendrecv_hidden(ep, 0, tag, w.take(), 0, tag);
  }
  // Every fragment of the group gets the remote group's data and builds the result.
  bcast(lep, 0, std::move(remote), [ld, mg](std::string& data) {
    BlobReader rd(data);
    int rhigh = rd.get<int>();
    std::string g = rd.get_bytes();
    BlobReader gr(g);
    std::vector<EpAddr> raddr;
    std::vector<Identity> rids;
    read_group(gr, &raddr, &rids);
    // The low group first; on a tie, the group whose rank 0 has the smaller identity.
    bool mine_first =
        mg->high != rhigh ? mg->high == 0 : (rids.empty() || id_less(ld->ids[0], rids[0]));
    std::vector<EpAddr> addr = mine_first ? mg->addr : raddr;
    std::vector<Identity> ids = mine_first ? ld->ids : rids;
    const std::vector<EpAddr>& a2 = mine_first ? raddr : mg->addr;
    const std::vector<Identity>& i2 = mine_first ? rids : ld->ids;
    addr.insert(addr.end(), a2.begin(), a2.end());
    ids.insert(ids.end(), i2.begin(), i2.end());
    finish(mg->m, std::move(addr), std::move(ids));
    return std::shared_ptr<void>();
  });
  *out = adopt(mg->m, ep, ep->local_index);
  return EP_SUCCESS;
}

// EP_Comm_create on an intercommunicator: the members of each group's `members` make
// an intracommunicator (a split of the hidden local_comm), the two groups learn each
// other's first member from the rank-0 endpoints, and those two swap the new groups'
// tables as comm_dup's do.  The temporary intracommunicator is freed at the end.
int intercomm_create_from_group(Endpoint* ep, const std::vector<Identity>& members, int pos,
                                Endpoint** out) {
  CommShared* h = ep->comm;
  Endpoint* lep = local_side(ep);
  const int tag = hidden_tag(ep);
  *out = nullptr;
  Endpoint* sub = nullptr;
  comm_split(lep, pos >= 0 ? 0 : kUndefined, pos, &sub);
  int first = -1;  // the local rank of this group's first member
  for (int r = 0; r < h->size && !members.empty(); ++r) {
    if (h->ids[r] == members[0]) first = r;
  }
  std::string lead;
  if (ep->rank == 0) {
    BlobWriter w;
    w.put<int>(first);
    lead = sendrecv_hidden(ep, 0, tag, w.take(), 0, tag);
  }
  const std::string remote_first = bcast(lep, 0, std::move(lead));
  BlobReader rd(remote_first);
  const int remote_leader = rd.get<int>();
  if (sub == nullptr) return EP_SUCCESS;
  if (remote_leader < 0) {  // the other group is empty: nobody gets a communicator
    comm_free(sub);
    return EP_SUCCESS;
  }
  CommShared* sc = sub->comm;
  std::shared_ptr<Halves> hv = make_halves(sub);
  std::string remote;
  if (sub->rank == 0) {
    remote = sendrecv_hidden(ep, remote_leader, tag - 1, write_group(hv->haddr, sc->ids),
                             remote_leader, tag - 1);
  }
  bcast(sub, 0, std::move(remote), [sc, hv](std::string& data) {
    complete_halves(sc, *hv, true, data);
    return std::shared_ptr<void>();
  });
  *out = adopt(hv->h, ep, sub->local_index);
  comm_free(sub);
  return EP_SUCCESS;
}

namespace {

// Every rank's (colour, key) of one group, by rank.
struct Choices {
  std::vector<int> colors, keys;
  // The rank that becomes rank 0 of colour `col`'s group: the smallest (key, rank).
  int leader_of(int col) const {
    int best = -1;
    for (int r = 0; r < static_cast<int>(colors.size()); ++r) {
      if (colors[r] == col && (best < 0 || keys[r] < keys[best])) best = r;
    }
    return best;
  }
  // A rank with an invalid colour (negative, not EP_UNDEFINED), or -1.
  int bad() const {
    for (int r = 0; r < static_cast<int>(colors.size()); ++r) {
      if (colors[r] != kUndefined && colors[r] < 0) return r;
    }
    return -1;
  }
};

Choices read_choices(const std::string& blob) {
  Choices ch;
  BlobReader rd(blob);
  while (!rd.done()) {
    ch.colors.push_back(rd.get<int>());
    ch.keys.push_back(rd.get<int>());
  }
  return ch;
}

}  // namespace

// EP_Comm_split of an intercommunicator: each group gathers its (colour, key) choices
// and the rank-0 endpoints swap them, so every endpoint knows both groups' choices.
// Then each group splits its hidden local_comm by the colours that both groups use,
// and for each such colour the two new groups' rank-0 endpoints swap their tables as
// comm_dup's do (over the old intercommunicator, one message pair per colour).
int intercomm_split(Endpoint* ep, int color, int key, Endpoint** out) {
  Endpoint* lep = local_side(ep);
  const int tag = hidden_tag(ep);
  *out = nullptr;
  BlobWriter w;
  w.put<int>(color);
  w.put<int>(key);
  std::string mine;
  for (std::string& b : allgather(lep, w.take())) mine += b;
  std::string theirs;
  if (ep->rank == 0) theirs = sendrecv_hidden(ep, 0, tag, mine, 0, tag);
  theirs = bcast(lep, 0, std::move(theirs));
  const Choices local = read_choices(mine), remote = read_choices(theirs);
  const int bad_local = local.bad(), bad_remote = remote.bad();
  if (bad_local >= 0 || bad_remote >= 0) {
    const bool here = bad_local >= 0;
    const int r = here ? bad_local : bad_remote;
    return fail(EP_ERR_ARG, "EP_Comm_split",
                "color %d at rank %d of the %s group is negative (and not EP_UNDEFINED)",
                (here ? local : remote).colors[r], r, here ? "local" : "remote");
  }
  const int remote_leader = color == kUndefined ? -1 : remote.leader_of(color);
  Endpoint* sub = nullptr;
  comm_split(lep, remote_leader >= 0 ? color : kUndefined, key, &sub);
  if (sub == nullptr) return EP_SUCCESS;
  CommShared* sc = sub->comm;
  std::shared_ptr<Halves> hv = make_halves(sub);
  std::string table;
  if (sub->rank == 0) {
    table = sendrecv_hidden(ep, remote_leader, tag - 1, write_group(hv->haddr, sc->ids),
                            remote_leader, tag - 1);
  }
  bcast(sub, 0, std::move(table), [sc, hv](std::string& data) {
    complete_halves(sc, *hv, true, data);
    return std::shared_ptr<void>();
  });
  *out = adopt(hv->h, ep, sub->local_index);
  comm_free(sub);
  return EP_SUCCESS;
}

Endpoint* local_peer(Endpoint* ep, int rank) {
  CommShared* c = ep->comm;
  const EpAddr& a = c->peer(rank);
  if (a.proc != runtime()->world_rank) return nullptr;
  CommShared* d = a.ctx == c->ctx ? c : runtime()->contexts.lookup(a.ctx);
  return d == nullptr ? nullptr : d->local[a.local].get();
}

namespace {

void unpublish_and_retire(CommShared* c) {
  Runtime* rt = runtime();
  rt->contexts.unpublish(c->ctx);
  rt->contexts.unpublish(c->coll->ctx);
  progress::Command cmd;
  cmd.kind = progress::Command::kRun;
  cmd.fn = &retire;
  cmd.arg = c;
  engine().submit(cmd);
}

// Drops one handle of fragment c (a user's, or an idup's hold on its parent); the last
// one unpublishes it and has it deleted.
void release_handle(CommShared* c) {
  // acq_rel: the last handle's release sees every other holder's last use.
  if (c->live_handles.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (c->local_comm != nullptr) unpublish_and_retire(c->local_comm);
  unpublish_and_retire(c);
}

}  // namespace

void comm_free(Endpoint* ep) {
  ep->magic = 0;
  release_handle(ep->comm);
}

// ---- idup -----------------------------------------------------------------------------

namespace {

// The idup worker threads: one per nonblocking round of a fragment (see comm_idup).  A
// thread is joined by the next launch after it ended, or by comm_join_workers.
class Workers {
 public:
  void launch(std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    reap();
    auto w = std::make_unique<Worker>();
    Worker* p = w.get();
    p->thread = std::thread([p, fn = std::move(fn)] {
      fn();
      p->ended.store(true, std::memory_order_release);  // pairs with the acquire in reap()
    });
    list_.push_back(std::move(w));
  }
  void join_all() {
    std::vector<std::unique_ptr<Worker>> all;
    {
      std::lock_guard<std::mutex> lock(mu_);
      all.swap(list_);
    }
    for (auto& w : all) w->thread.join();
  }

 private:
  struct Worker {
    std::thread thread;
    std::atomic<bool> ended{false};
  };
  void reap() {  // mu_ held
    for (auto it = list_.begin(); it != list_.end();) {
      // acquire: pairs with the release store at the end of the thread's function.
      if ((*it)->ended.load(std::memory_order_acquire)) {
        (*it)->thread.join();
        it = list_.erase(it);
      } else {
        ++it;
      }
    }
  }
  std::mutex mu_;
  std::vector<std::unique_ptr<Worker>> list_;  // guarded by mu_
};

Workers& workers() {
  static Workers* const w = new Workers;  // never deleted: used until the process ends
  return *w;
}

// One endpoint's part of an idup round.
struct IdupPart {
  Request* req;
  IdupDone done;
};

// Each local endpoint's completion, once its new handle exists in fragment c.
void idup_complete(CommShared* old, CommShared* c,
                   const std::vector<std::shared_ptr<void>>& parts) {
  for (size_t i = 0; i < parts.size(); ++i) {
    auto* p = static_cast<IdupPart*>(parts[i].get());
    p->done(c->local[i].get());
    request_complete(p->req);  // release: publishes what done() wrote
    release_handle(old);       // this endpoint's hold on the parent (comm_idup)
  }
}

// The worker's job for an intercommunicator: comm_dup's inter path for a whole fragment
// (the group's new fragments; the fragment of rank 0 swaps the group's addresses with
// the remote rank 0 for it; a broadcast over the group).  Tags: see comm_idup.
void idup_inter_work(CommShared* old, const int tags[3],
                     const std::vector<std::shared_ptr<void>>& parts) {
  CommShared* ld = old->local_comm;
  std::shared_ptr<Halves> hv = halves_fragment(ld, tags[1]);
  std::string remote;
  if (ld->my_frag == 0) {  // this fragment holds rank 0 (fragments ascend by rank)
    Endpoint* e0 = old->local[old->addr[0].local].get();
    remote = sendrecv_hidden(e0, 0, tags[0], write_group(hv->haddr, ld->ids), 0, tags[0]);
  }
  complete_halves(ld, *hv, true, frag_bcast(ld, tags[2], 0, std::move(remote)));
  idup_complete(old, hv->h, parts);
}

}  // namespace

void comm_idup(Endpoint* ep, Request* r, IdupDone done) {
  CommShared* old = ep->comm;
  // The parent stays published until the worker is done with it, even if the user
  // frees every handle meanwhile.  relaxed: the caller holds a handle (the count
  // cannot reach 0 meanwhile).
  old->live_handles.fetch_add(1, std::memory_order_relaxed);
  auto part = std::make_shared<IdupPart>(IdupPart{r, std::move(done)});
  if (!old->inter) {
    const int tag = hidden_tag(ep);
    old->local_round_async(ep->local_index, std::move(part),
                           [old, tag](std::vector<std::shared_ptr<void>>& parts) {
                             workers().launch([old, tag, parts = std::move(parts)] {
                               idup_complete(old, dup_fragment(old, tag), parts);
                             });
                           });
    return;
  }
  // Intercommunicator: the tags comm_dup takes (the intercommunicator's, then two of
  // the hidden local_comm's); the round is the local_comm's.
  Endpoint* lep = local_side(ep);
  const int t0 = hidden_tag(ep), t1 = hidden_tag(lep), t2 = hidden_tag(lep);
  old->local_comm->local_round_async(
      lep->local_index, std::move(part),
      [old, t0, t1, t2](std::vector<std::shared_ptr<void>>& parts) {
        workers().launch([old, t0, t1, t2, parts = std::move(parts)] {
          const int tags[3] = {t0, t1, t2};
          idup_inter_work(old, tags, parts);
        });
      });
}

void comm_join_workers() { workers().join_all(); }

int comm_compare(Endpoint* a, Endpoint* b) {
  const CommShared* x = a->comm;
  const CommShared* y = b->comm;
  if (x == y) return kIdent;
  if (x->inter != y->inter) return kUnequal;
  auto same_members = [](std::vector<Identity> p, std::vector<Identity> q) {
    if (p.size() != q.size()) return false;
    std::sort(p.begin(), p.end(), id_less);
    std::sort(q.begin(), q.end(), id_less);
    return p == q;
  };
  bool congruent = x->ids == y->ids && (!x->inter || x->remote_ids == y->remote_ids);
  if (congruent) return kCongruent;
  bool similar =
      same_members(x->ids, y->ids) && (!x->inter || same_members(x->remote_ids, y->remote_ids));
  return similar ? kSimilar : kUnequal;
}

void comm_free_all() {
  Runtime* rt = runtime();
  std::vector<CommShared*> owners;  // shadows are deleted with their communicator
  for (CommShared* c : rt->contexts.all()) {
    if (!c->is_shadow) owners.push_back(c);
  }
  for (CommShared* c : owners) {
    rt->contexts.unpublish(c->coll->ctx);
    rt->contexts.unpublish(c->ctx);
    delete c;
  }
}

}  // namespace ep::runtime
