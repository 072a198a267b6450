// fast.cc - the blocking barrier, bcast, reduce and allreduce on the fragment's tree
// (fast.h): what each endpoint contributes, how nodes combine, the plan round 1's
// completer makes, and how the members carry it out.
#include "collectives/fast.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/mpi_calls.h"
#include "base/types.h"
#include "collectives/coll.h"
#include "collectives/internal.h"
#include "collectives/reduce_util.h"
#include "runtime/error.h"
#include "runtime/exchange.h"
#include "runtime/reduce.h"
#include "runtime/team.h"

namespace ep::collectives {
namespace {

// What the members do after round 1 (TreeRelease::plan).
enum Plan : uint32_t {
  kDone,        // nothing: the completer did it all, or there is nothing to do
  kResult,      // each receiver takes its result from the release's data
  kShareAll,    // allreduce in shares: combine, round 2, copy, round 3
  kShareRoot,   // reduce in shares into the root's buffer, round 2
  kShareBcast,  // each receiver copies from the root's buffer, round 2
  kNodeBcast,   // each receiver unpacks FastState::node_buf, round 2
};

// The predefined ops a collective reduction may use (MPI_REPLACE and MPI_NO_OP are for
// accumulates only); all of them are commutative.
bool predefined_op(MPI_Op op) {
  for (MPI_Op p : {MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD, MPI_LAND, MPI_BAND, MPI_LOR, MPI_BOR,
                   MPI_LXOR, MPI_BXOR, MPI_MAXLOC, MPI_MINLOC}) {
    if (op == p) return true;
  }
  return false;
}

int64_t bytes_of(const OpArgs& a) { return a.ti.size * a.count; }

// Elements laid out as their packed bytes.
bool dense(const TypeInfo& ti) { return ti.contiguous && ti.true_lb == 0; }

// An allreduce among several fragments that the exchange on pcomm (or its fallback)
// can carry: any other goes to the engine.
bool exchange_ok(const OpArgs& a) {
  return predefined_op(a.op) && (bytes_of(a) <= kFastBytes || a.ti.contiguous);
}

// Whether a reduction's inputs travel by value through the slots (fast.h); `node`: the
// fragments meet in a node group made by an earlier operation (a reduce then goes as an
// allreduce does).
bool by_value(Kind kind, const OpArgs& a, int nfrag, bool node = false) {
  const int64_t bytes = bytes_of(a);
  if (bytes <= 0 || bytes > kTreeInline || !dense(a.ti)) return false;
  return nfrag == 1 ||
         ((kind == Kind::kAllreduce || (kind == Kind::kReduce && node)) && exchange_ok(a));
}

// The size of a bcast's data, packed (the root's and every receiver's agree).
int64_t bcast_bytes(const Part& p) { return p.rti.size * p.rcount; }

// out = items[0] op (items[1] op (... op items[k-1])) for k >= 1 dense values of `a`,
// `out` apart from all of them.
void combine_values(const void* const* items, int k, void* out, const OpArgs& a) {
  const size_t bytes = static_cast<size_t>(bytes_of(a));
  if (k == 1) {
    runtime::copy_bytes(out, items[0], bytes);
    return;
  }
  if (!runtime::reduce_builtin3(items[k - 2], items[k - 1], out, a.count, a.type, a.op)) {
    runtime::copy_bytes(out, items[k - 1], bytes);
    EP_MPI(MPI_Reduce_local(items[k - 2], out, a.count, a.type, a.op));
  }
  for (int j = k - 3; j >= 0; --j) {
    if (!runtime::reduce_builtin(items[j], out, a.count, a.type, a.op)) {
      EP_MPI(MPI_Reduce_local(items[j], out, a.count, a.type, a.op));
    }
  }
}

// The tree's combine (tree.h) of one node, on whichever thread completes it: the
// subtree's best-informed arrival and, for a reduction by value, its partial in rank
// order - into the release's data at the root.
struct Combine {
  FastState* fs;
  bool reduction;
  void operator()(int node) const {
    FastState::Member& m = fs->members[node];
    TreeSlot* s = fs->slots.get() + node;
    const OpArgs* best = m.args;
    Knows knows = m.part->knows;
    const void* items[32];
    int k = 0;
    if (reduction && (s->own & kTreeData) != 0) items[k++] = s->in;
    tree_for_children(node, fs->table.n, [&](int ch) {
      const FastState::Member& cm = fs->members[ch];
      if (cm.sub_knows > knows) {
        knows = cm.sub_knows;
        best = cm.sub_args;
      }
      const TreeSlot* cs = fs->slots.get() + ch;
      if ((cs->sub & kTreeData) != 0) items[k++] = (cs->sub & kTreeInAcc) != 0 ? cs->acc : cs->in;
    });
    m.sub_args = best;
    m.sub_knows = knows;
    // Items come from valid endpoints only, which know all: `best` describes them.
    if (k == 0) {
      s->sub = 0;
    } else if (node == 0) {
      combine_values(items, k, fs->release.data, *best);
      s->sub = kTreeData;
    } else if (k == 1 && items[0] == s->in) {
      s->sub = kTreeData;  // the member's own input alone: its parent reads it there
    } else {
      combine_values(items, k, s->acc, *best);
      s->sub = kTreeData | kTreeInAcc;
    }
  }
};

// ---- Round 1's completer ----------------------------------------------------------------

// The end of the engine way, on the thread that finishes the operation (start_fragment):
// releases round 1, whose plan (kDone) the completer wrote before it started it.
void release_engine_round(void* arg) {
  FastState* fs = static_cast<FastState*>(arg);
  tree_release(fs->table, fs->engine_round);
}

// The engine way: one operation for the whole fragment; its finisher releases `round`
// (the completer then waits like the others, running engine passes).
void start_engine(CommShared* c, FastState* fs, Kind kind, const OpArgs& a, uint32_t round) {
  const int n = fs->table.n;
  std::vector<Part> parts(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) parts[k] = *fs->members[k].part;
  fs->engine_round = round;
  start_fragment(c, kind, std::move(parts), a, &release_engine_round, fs);
}

// Whether round 1 ends in an engine operation (start_engine) by what an endpoint knows:
// its waiters then run the engine's passes.  A hole that does not know the op guesses no.
bool engine_way(CommShared* c, const FastState* fs, Kind kind, const Part& part,
                const OpArgs& a) {
  if (c->frag_leaders.size() < 2) return false;
  // acquire: pairs with the completer's release once the node way is made.
  if (kind != Kind::kAllreduce && fs->node_on.load(std::memory_order_acquire)) {
    // The node way, but for a reduce that does not go by value.
    return kind == Kind::kReduce && part.knows == Knows::kAll && bytes_of(a) > 0 &&
           !by_value(kind, a, 2, /*node=*/true);
  }
  if (kind != Kind::kAllreduce) return true;
  return part.knows == Knows::kAll && !exchange_ok(a);
}

// A scratch buffer of the op's count and type, made at the first get(): on the stack
// when a dense type fits kFastBytes, else a TypedBuffer.
class FastScratch {
 public:
  explicit FastScratch(const OpArgs& a) : a_(a) {}
  void* get() {
    if (ptr_ != nullptr) return ptr_;
    if (dense(a_.ti) && bytes_of(a_) <= kFastBytes) {
      ptr_ = stack_;
    } else {
      heap_ = std::make_unique<TypedBuffer>(a_.count, a_.ti);
      ptr_ = heap_->get();
    }
    return ptr_;
  }

 private:
  const OpArgs& a_;
  alignas(64) char stack_[kFastBytes];
  std::unique_ptr<TypedBuffer> heap_;
  void* ptr_ = nullptr;
};

// Zeros of the op's count and type at `buf` (what a fragment of holes adds).
void fill_zeros(void* buf, const OpArgs& a) {
  unpack_n(std::string(static_cast<size_t>(bytes_of(a)), '\0'), buf, a.count, a.ti);
}

// The node way of the exchange (dense types): slot-sized pieces of every fragment's
// partial through the cells, each combined by every fragment in fragment order (the same
// bits everywhere), as the fallback below combines.
void node_exchange(runtime::NodeGroup* g, const void* in, void* acc, const OpArgs& a) {
  const int64_t size = a.ti.size;
  const int64_t per = runtime::NodeGroup::kSlotBytes / size;
  const int n = g->size();
  for (int64_t at = 0; at < a.count; at += per) {
    const int k = static_cast<int>(std::min<int64_t>(per, a.count - at));
    const size_t bytes = static_cast<size_t>(k * size);
    runtime::copy_bytes(g->slot(), static_cast<const char*>(in) + at * size, bytes);
    g->arrive();
    g->wait();
    char* out = static_cast<char*>(acc) + at * size;
    runtime::copy_bytes(out, g->data(n - 1), bytes);
    for (int f = n - 2; f >= 0; --f) reduce_into(g->data(f), out, k, a);
    g->finish();
  }
}

// The node way of a barrier among fragments.
void node_barrier(runtime::NodeGroup* g) {
  g->arrive();
  g->wait();
  g->finish();
}

// The node way of a bcast among fragments: the root's fragment packs the data and passes
// it through its slot, a header and slot-sized pieces per operation; every fragment
// finds the root's by the header (a fragment that knows nothing of the arguments still
// follows), learns the size from it in the first piece, and gets the data for its
// members: in the release's data when it fits there (kResult), else in node_buf
// (kNodeBcast).  Nothing to do when the root is a hole or nobody knows it.
struct NodeBcastHead {
  uint32_t root;  // 1: this fragment holds the root, a valid endpoint
  uint32_t unused;
  int64_t bytes;  // packed size of the data
};

void node_bcast(CommShared* c, FastState* fs, Knows knows, const OpArgs& a) {
  runtime::NodeGroup* g = fs->node.get();
  TreeRelease& rel = fs->release;
  const Part* root = nullptr;
  if (knows != Knows::kNothing && c->frag_of[a.root] == c->my_frag) {
    root = fs->members[c->addr[a.root].local].part;
    if (root->hole) root = nullptr;
  }
  std::string data;
  if (root != nullptr) {
    data.resize(static_cast<size_t>(bcast_bytes(*root)));
    runtime::pack(root->rbuf, root->rcount, root->rti, data.data());
  }
  constexpr int64_t kRoom = runtime::NodeGroup::kSlotBytes - sizeof(NodeBcastHead);
  int src = -1;
  int64_t total = static_cast<int64_t>(data.size());  // the root's; the others' below
  int64_t at = 0;
  do {
    const NodeBcastHead head{root != nullptr ? 1u : 0u, 0, static_cast<int64_t>(data.size())};
    char* slot = g->slot();
    std::memcpy(slot, &head, sizeof head);
    if (root != nullptr && at < total) {
      std::memcpy(slot + sizeof head, data.data() + at,
                  static_cast<size_t>(std::min(kRoom, total - at)));
    }
    g->arrive();
    g->wait();
    if (at == 0) {  // the first piece: whose data, how much
      for (int f = 0; f < g->size() && src < 0; ++f) {
        NodeBcastHead h;
        std::memcpy(&h, g->data(f), sizeof h);
        if (h.root == 1 && h.bytes > 0) {
          src = f;
          total = h.bytes;
        }
      }
      if (root == nullptr && src >= 0) data.resize(static_cast<size_t>(total));
    }
    if (src >= 0 && root == nullptr) {
      std::memcpy(data.data() + at, g->data(src) + sizeof(NodeBcastHead),
                  static_cast<size_t>(std::min(kRoom, total - at)));
    }
    g->finish();
    at += kRoom;
  } while (at < total);
  if (src < 0) return;  // kDone
  if (total <= kTreeInline) {
    std::memcpy(rel.data, data.data(), static_cast<size_t>(total));
    rel.bytes = total;
    rel.plan = kResult;
  } else {
    fs->node_buf = std::move(data);
    rel.bytes = total;
    rel.plan = kNodeBcast;
  }
}

// The exchange among fragments: this fragment's partial `in` (which may be `acc`), the
// total into `acc`.  Returns an EP_* code.
int exchange_partial(CommShared* c, FastState* fs, const void* in, void* acc, const OpArgs& a) {
  const int nfrag = static_cast<int>(c->frag_leaders.size());
  if (fs->node != nullptr && dense(a.ti) && a.ti.size <= runtime::NodeGroup::kSlotBytes) {
    node_exchange(fs->node.get(), in, acc, a);
    return EP_SUCCESS;
  }
  if (fs->pcomm != MPI_COMM_NULL && bytes_of(a) > kFastBytes) {  // the ring (contiguous)
    // A helper team's waiting members take chunks of the ring's combine steps
    // (runtime/team.h); the reference keeps the team while they may run them.  The
    // ring reads `in` block by block as it goes (no copy of it beforehand).
    OpArgs la = a;
    if ((la.team = runtime::current_team()) != nullptr) la.team->ref();
    TypedBuffer block((a.count + nfrag - 1) / nfrag, a.ti);
    const int err = runtime::from_mpi(
        ring_exchange(fs->pcomm, c->my_frag, nfrag, {in}, acc, {}, block.get(), la));
    if (la.team != nullptr) la.team->unref();
    return err;
  }
  if (in != acc) copy_n(in, acc, a.count, a);
  FastScratch tmp(a);
  if (fs->pcomm != MPI_COMM_NULL) {
    return runtime::from_mpi(exchange(fs->pcomm, c->my_frag, nfrag, acc, tmp.get(), a));
  }
  // The fallback: every fragment's partial through frag_allgather on kFastTag, combined
  // in fragment order.
  std::vector<std::string> blobs =
      runtime::frag_allgather(c, kFastTag, pack_n(acc, a.count, a.ti));
  unpack_n(blobs[nfrag - 1], acc, a.count, a.ti);
  for (int f = nfrag - 2; f >= 0; --f) {
    unpack_n(blobs[f], tmp.get(), a.count, a.ti);
    reduce_into(tmp.get(), acc, a.count, a);
  }
  return EP_SUCCESS;
}

// Shares: numbers the valid endpoints (FastState::Member::share); returns how many.
int number_shares(FastState* fs) {
  int v = 0;
  for (int k = 0; k < fs->table.n; ++k) {
    FastState::Member& m = fs->members[k];
    m.share = m.part->hole ? -1 : v++;
  }
  return v;
}

// Plans a reduction or bcast of one fragment, or an allreduce's exchange among several.
void plan_allreduce(CommShared* c, FastState* fs, bool root_has_data, const OpArgs& a) {
  TreeRelease& rel = fs->release;
  const int nfrag = static_cast<int>(c->frag_leaders.size());
  if (bytes_of(a) == 0) return;  // every fragment skips (count 0)
  if (nfrag == 1) {
    if (by_value(Kind::kAllreduce, a, nfrag)) {
      if (root_has_data) rel.plan = kResult;  // else holes only
      return;
    }
    fs->shares = number_shares(fs);
    if (fs->shares > 0) rel.plan = kShareAll;
    return;
  }
  if (!fs->pcomm_tried && fs->node == nullptr) make_pcomm(c, fs);
  if (by_value(Kind::kAllreduce, a, nfrag)) {
    // A fragment of holes that knows the arguments adds zeros (what a hole contributes
    // is unspecified) so that the other fragments' exchange goes on.
    if (!root_has_data) fill_zeros(rel.data, a);
    rel.err = exchange_partial(c, fs, rel.data, rel.data, a);
    rel.plan = kResult;
    return;
  }
  fs->shares = number_shares(fs);
  if (fs->shares == 1) {  // a lone valid endpoint: its input is the partial, no shares
    for (int k = 0; k < fs->table.n; ++k) {
      const Part& p = *fs->members[k].part;
      if (!p.hole) rel.err = exchange_partial(c, fs, input_of(p), p.rbuf, a);
    }
    return;
  }
  // The fragment's partial goes to an output that is not also its endpoint's input,
  // else to scratch; the exchange runs in round 2.
  fs->acc = nullptr;
  for (int k = 0; k < fs->table.n && fs->acc == nullptr; ++k) {
    const Part& p = *fs->members[k].part;
    if (!p.hole && input_of(p) != p.rbuf) fs->acc = p.rbuf;
  }
  if (fs->acc == nullptr) {
    fs->scratch = std::make_unique<TypedBuffer>(a.count, a.ti);
    fs->acc = fs->scratch->get();
    if (fs->shares == 0) fill_zeros(fs->acc, a);
  }
  rel.plan = kShareAll;
}

// Plans a barrier, bcast or reduce of one fragment: nothing to do for a barrier, a root
// nobody knows or a root that is a hole.
void plan_rooted(CommShared* c, FastState* fs, Kind kind, Knows knows, const OpArgs& a) {
  TreeRelease& rel = fs->release;
  if (kind == Kind::kBarrier || knows == Knows::kNothing) return;
  const int rl = c->addr[a.root].local;
  fs->root_local = rl;
  const Part& root = *fs->members[rl].part;
  if (root.hole) return;
  if (kind == Kind::kBcast) {
    const int64_t bytes = bcast_bytes(root);
    if (bytes == 0) return;
    if ((fs->slots[rl].own & kTreeData) != 0) {  // packed into the root's slot
      std::memcpy(rel.data, fs->slots[rl].in, static_cast<size_t>(bytes));
      rel.bytes = bytes;
      rel.plan = kResult;
    } else {
      rel.plan = kShareBcast;
    }
    return;
  }
  // Reduce: the root is valid, so `a` is an informed arrival's.
  if (bytes_of(a) == 0) return;
  if (by_value(kind, a, 1)) {
    rel.plan = kResult;
  } else {
    fs->shares = number_shares(fs);
    rel.plan = kShareRoot;
  }
}

// Round 1's completer: decides the plan from the best-informed arrival (the root's
// subtree is the whole fragment) and does what falls to it.  False: it must release
// `round` itself; true: an engine operation's finisher will (start_engine).
bool complete_round1(CommShared* c, FastState* fs, Kind kind, uint32_t round) {
  TreeRelease& rel = fs->release;
  rel.err = EP_SUCCESS;
  rel.plan = kDone;
  const FastState::Member& top = fs->members[0];
  const Knows knows = top.sub_knows;
  const OpArgs& a = *top.sub_args;
  fs->plan_args = &a;
  const int nfrag = static_cast<int>(c->frag_leaders.size());
  // Whether the members knew of the node group when they arrived (it was made by an
  // earlier operation): the same answer in every fragment.
  bool node_known = fs->node != nullptr;
  if (nfrag > 1 && !fs->node_tried) {  // every fragment's first operation
    fs->node_tried = true;
    fs->node = runtime::NodeGroup::make(c);
    // release: pairs with the acquire loads of engine_way and contribute.
    if (fs->node != nullptr) fs->node_on.store(true, std::memory_order_release);
  }
  if (kind == Kind::kAllreduce) {
    // A fragment of holes that knows nothing skips the exchange (engine.h).
    if (knows != Knows::kAll) return false;
    if (nfrag > 1 && !exchange_ok(a)) {
      start_engine(c, fs, kind, a, round);
      return true;
    }
    plan_allreduce(c, fs, (fs->slots[0].sub & kTreeData) != 0, a);
    return false;
  }
  if (nfrag > 1 && fs->node != nullptr) {
    switch (kind) {
      case Kind::kBarrier:
        node_barrier(fs->node.get());
        return false;
      case Kind::kBcast:
        node_bcast(c, fs, knows, a);
        return false;
      case Kind::kReduce:
        // By value, as an allreduce of the fragments' partials (the root takes it); a
        // fragment of holes adds zeros, one that knows nothing skips (as allreduce).
        if (knows == Knows::kNothing || bytes_of(a) == 0) return false;
        if (node_known && by_value(kind, a, nfrag, /*node=*/true)) {
          if ((fs->slots[0].sub & kTreeData) == 0) fill_zeros(fs->release.data, a);
          node_exchange(fs->node.get(), fs->release.data, fs->release.data, a);
          fs->release.plan = kResult;
          return false;
        }
        break;
      default:
        break;
    }
  }
  if (nfrag > 1) {  // barrier, bcast, reduce among fragments: the engine's messages
    start_engine(c, fs, kind, a, round);
    return true;
  }
  plan_rooted(c, fs, kind, knows, a);
  return false;
}

// ---- The members ------------------------------------------------------------------------

// What endpoint `me` puts into its slot before it arrives (TreeSlot::own).
uint32_t contribute(Endpoint* ep, Kind kind, const Part& part, const OpArgs& a, TreeSlot* s) {
  if (part.hole) return 0;
  const int nfrag = static_cast<int>(ep->comm->frag_leaders.size());
  if (kind == Kind::kAllreduce || kind == Kind::kReduce) {
    // acquire: pairs with the release of the completer that made the node group.
    const bool node = nfrag > 1 && fast_state(ep->comm)->node_on.load(std::memory_order_acquire);
    if (!by_value(kind, a, nfrag, node)) return 0;
    runtime::copy_bytes(s->in, input_of(part), static_cast<size_t>(bytes_of(a)));
    return kTreeData;
  }
  if (kind == Kind::kBcast && ep->rank == a.root && nfrag == 1) {
    const int64_t bytes = bcast_bytes(part);
    if (bytes == 0 || bytes > kTreeInline) return 0;
    runtime::pack(part.rbuf, part.rcount, part.rti, s->in);
    return kTreeData;
  }
  return 0;
}

// kResult: the receivers take the release's data.
void take_result(Endpoint* ep, Kind kind, const Part& part, const OpArgs& a, FastState* fs) {
  if (part.hole) return;
  const TreeRelease& rel = fs->release;
  switch (kind) {
    case Kind::kAllreduce:
      runtime::copy_bytes(part.rbuf, rel.data, static_cast<size_t>(bytes_of(a)));
      return;
    case Kind::kReduce:
      if (ep->rank == a.root) {
        runtime::copy_bytes(part.rbuf, rel.data, static_cast<size_t>(bytes_of(a)));
      }
      return;
    case Kind::kBcast:
      if (ep->rank != a.root) {
        runtime::unpack(rel.data, rel.bytes, part.rbuf, part.rcount, part.rti);
      }
      return;
    default:
      return;
  }
}

// The range [*b, *e) of share s of `shares` over `count` elements.
void share_range(int count, int s, int shares, int64_t* b, int64_t* e) {
  *b = static_cast<int64_t>(count) * s / shares;
  *e = static_cast<int64_t>(count) * (s + 1) / shares;
}

// Combines this endpoint's share of every valid input, in rank order, into `target`
// (the share's place in the full vector); through scratch when `target` is also an
// input there (EP_IN_PLACE).
void combine_share(FastState* fs, int share, void* target, const OpArgs& la) {
  int64_t b = 0, e = 0;
  share_range(la.count, share, fs->shares, &b, &e);
  if (b == e) return;
  const int len = static_cast<int>(e - b);
  std::vector<const void*> xs;
  xs.reserve(static_cast<size_t>(fs->shares));
  void* out = elem(target, b, la.ti);
  bool aliased = false;
  for (int k = 0; k < fs->table.n; ++k) {
    const Part& p = *fs->members[k].part;
    if (p.hole) continue;
    xs.push_back(elem(input_of(p), b, la.ti));
    aliased |= xs.back() == out;
  }
  if (!aliased || xs.size() == 1) {  // (a lone input in place is its own result)
    reduce_all(xs, out, len, la);
    return;
  }
  TypedBuffer tmp(len, la.ti);
  reduce_all(xs, tmp.get(), len, la);
  copy_n(tmp.get(), out, len, la);
}

// kShareAll, kShareRoot and kShareBcast on endpoint `ep`.  Returns the EP_* code.
int run_shares(Endpoint* ep, const Part& part, FastState* fs) {
  const int me = ep->local_index;
  const TreeTable& t = fs->table;
  const uint32_t plan = fs->release.plan;
  const FastState::Member& m = fs->members[me];
  if (plan == kShareBcast) {
    const Part& root = *fs->members[fs->root_local].part;
    if (!part.hole && me != fs->root_local) {
      runtime::copy(root.rbuf, root.rcount, root.rti, part.rbuf, part.rcount, part.rti,
                    std::min(bcast_bytes(root), bcast_bytes(part)));
    }
    tree_sync(t, me, [] {});  // the root's buffer stays until every copy is done
    return EP_SUCCESS;
  }
  // Each endpoint combines its share on its own thread: oneTBB's chunks only when the
  // process has cores to spare beyond the fragment's endpoints.
  OpArgs la = *fs->plan_args;
  la.parallel = process_cores() > t.n;
  if ((la.team = runtime::current_team()) != nullptr) la.team->ref();
  const bool multi = ep->comm->frag_leaders.size() > 1;
  if (m.share >= 0) {
    void* target =
        plan == kShareRoot ? fs->members[fs->root_local].part->rbuf : (multi ? fs->acc : part.rbuf);
    combine_share(fs, m.share, target, la);
  }
  CommShared* c = ep->comm;
  tree_sync(t, me, [c, fs, multi, plan] {
    fs->release.err = EP_SUCCESS;
    if (plan == kShareAll && multi) {
      fs->release.err = exchange_partial(c, fs, fs->acc, fs->acc, *fs->plan_args);
    }
  });
  const int err = fs->release.err;
  if (plan == kShareAll) {
    if (multi) {
      if (!part.hole && part.rbuf != fs->acc) copy_n(fs->acc, part.rbuf, la.count, la);
    } else if (m.share >= 0) {
      for (int k = 0; k < t.n; ++k) {  // the shares the others computed, from their outputs
        const FastState::Member& o = fs->members[k];
        if (o.share < 0 || k == me) continue;
        int64_t b = 0, e = 0;
        share_range(la.count, o.share, fs->shares, &b, &e);
        if (b < e) {
          copy_n(elem(o.part->rbuf, b, la.ti), elem(part.rbuf, b, la.ti), static_cast<int>(e - b),
                 la);
        }
      }
    }
    tree_sync(t, me, [fs] {  // every output stays until the others copied from it
      fs->scratch.reset();
      fs->acc = nullptr;
    });
  }
  if (la.team != nullptr) la.team->unref();
  return err;
}

}  // namespace

FastState::FastState(int n)
    : slots(new TreeSlot[static_cast<size_t>(n)]),
      slot_addr(static_cast<size_t>(n)),
      members(new Member[static_cast<size_t>(n)]) {
  for (int k = 0; k < n; ++k) slot_addr[k] = &slots[k];
  table.n = n;
  table.slot = slot_addr.data();
  table.release = &release;
  // Waiters yield at every poll: the member still on its way, or the completer, may
  // need this core - other processes' threads count too, which process_cores() does
  // not see (docs/perf/collectives.md, "The tree").
  table.crowd = runtime::Crowd::kYes;
}

bool run_fast(Endpoint* ep, Kind kind, const Part& part, const OpArgs& a, int* err) {
  if (ep->comm->inter) return false;  // intercommunicators stay on the engine
  if (kind != Kind::kBarrier && kind != Kind::kBcast && kind != Kind::kReduce &&
      kind != Kind::kAllreduce) {
    return false;
  }
  CommShared* c = ep->comm;
  FastState* fs = fast_state(c);
  const int me = ep->local_index;
  FastState::Member& m = fs->members[me];
  m.part = &part;
  m.args = &a;
  TreeSlot* s = fs->slots.get() + me;
  s->own = contribute(ep, kind, part, a, s);
  const TreeTable& t = fs->table;
  const uint32_t round = tree_round(t);
  const Combine combine{fs, kind == Kind::kAllreduce || kind == Kind::kReduce};
  const runtime::Drive drive =
      engine_way(c, fs, kind, part, a) ? runtime::Drive::kYes : runtime::Drive::kNo;
  if (!tree_arrive(t, me, combine)) {
    tree_wait(t, round, drive);
  } else if (complete_round1(c, fs, kind, round)) {
    tree_wait(t, round, runtime::Drive::kYes);  // an engine operation's finisher releases it
  } else {
    tree_release(t, round);
  }
  switch (fs->release.plan) {
    case kDone:
      *err = fs->release.err;
      return true;
    case kResult:
      *err = fs->release.err;
      take_result(ep, kind, part, a, fs);
      return true;
    case kNodeBcast:
      *err = EP_SUCCESS;
      if (!part.hole && ep->rank != a.root) {
        runtime::unpack(fs->node_buf.data(), std::min(fs->release.bytes, bcast_bytes(part)),
                        part.rbuf, part.rcount, part.rti);
      }
      tree_sync(t, me, [fs] { fs->node_buf.clear(); });  // node_buf stays until all unpacked
      return true;
    default:
      *err = run_shares(ep, part, fs);
      return true;
  }
}

}  // namespace ep::collectives
