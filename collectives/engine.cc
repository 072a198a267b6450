// engine.cc - the engine (engine.h): arrival, the schedules among fragments and
// their pass hook, finish; the per-fragment state.
#include "collectives/engine.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/mpi_calls.h"
#include "collectives/fast.h"
#include "collectives/internal.h"
#include "runtime/exchange.h"
#include "runtime/request.h"
#include "runtime/team.h"
#include "runtime/transport.h"

namespace ep::collectives {
namespace {

// The collective state of one fragment (CommShared::coll_state).
struct FragState {
  explicit FragState(int n) : fast(n) {}
  std::mutex mu;
  std::map<int, std::unique_ptr<CollOp>> arriving;  // by tag, guarded by mu
  std::vector<std::unique_ptr<CollOp>> active;      // started, guarded by mu
  std::atomic<bool> advancing{false};               // one advancing thread at a time
  FastState fast;                                   // the blocking tree collectives (fast.h)
};

// Fragments with active operations.  A fragment enters in run() and leaves in
// poll_schedules() (on the baton holder) once it has none; CommShared::coll_active is 1
// meanwhile, so the fragment is not deleted (runtime's retire() also runs on the baton
// holder).
std::mutex g_mu;  // guards g_frags and lazy FragState creation
std::vector<CommShared*> g_frags;
std::atomic<int> g_nfrags{0};  // g_frags.size(), a hint for poll_schedules()

FragState* state_of(CommShared* c) {
  // acquire: pairs with the release store below (the FragState is fully built).
  if (void* s = c->coll_state.load(std::memory_order_acquire)) return static_cast<FragState*>(s);
  std::lock_guard<std::mutex> lock(g_mu);
  if (c->coll_state.load(std::memory_order_relaxed) == nullptr) {  // relaxed: under g_mu
    c->coll_state_free = [](void* p) { delete static_cast<FragState*>(p); };
    c->coll_state_busy = [](void* p) {
      const FastState& fast = static_cast<FragState*>(p)->fast;
      return fast.node != nullptr && fast.node->busy();
    };
    auto* fs = new FragState(static_cast<int>(c->local.size()));
    c->coll_state.store(fs, std::memory_order_release);
  }
  return static_cast<FragState*>(c->coll_state.load(std::memory_order_relaxed));
}

int nfrags(const CollOp& op) { return static_cast<int>(op.c->frag_leaders.size()); }

// The fragments whose blobs `in` holds: the remote group's on an intercommunicator.
int in_frags(const CollOp& op) {
  return static_cast<int>(op.c->inter ? op.c->remote_frag_leaders.size()
                                      : op.c->frag_leaders.size());
}

// The shadow endpoint through which this fragment's leader talks.
Endpoint* leader(const CollOp& op) { return op.c->coll->local[0].get(); }

// The rank the shadow leader addresses for `frag`: on an intercommunicator (kPeers) a
// rank of the remote group, which is what its point-to-point addresses.
int leader_rank(const CollOp& op, int frag) {
  return op.c->inter ? op.c->remote_frag_leaders[frag] : op.c->frag_leaders[frag];
}

void post_send(CollOp& op, int frag, std::string data) {
  op.sends.push_back(std::make_unique<runtime::HiddenSend>(leader(op), leader_rank(op, frag),
                                                           op.tag, std::move(data)));
}

// Sends op.out, which the op keeps (it is also this fragment's own input to finish):
// shared, not copied.  The op outlives its sends (round_done drops them first).
void post_send_out(CollOp& op, int frag) {
  const std::string* shared = &op.out;
  op.sends.push_back(
      std::make_unique<runtime::HiddenSend>(leader(op), leader_rank(op, frag), op.tag, shared));
}

void post_recv(CollOp& op, int frag) {
  op.recvs.push_back(
      std::make_unique<runtime::HiddenRecv>(leader(op), leader_rank(op, frag), op.tag));
  op.recv_from.push_back(frag);
}

// Posts the messages of the current round; false if the schedule has no such round.
bool post_round(CollOp& op) {
  const int n = nfrags(op), me = op.c->my_frag;
  switch (op.pattern) {
    case Pattern::kNone:
      return false;
    case Pattern::kAllgather:
      if (op.round > 0) return false;
      for (int f = 0; f < n; ++f) {
        if (f == me) continue;
        post_recv(op, f);
        post_send_out(op, f);
      }
      return true;
    case Pattern::kGather:
      if (op.round > 0) return false;
      if (me == op.root_frag) {
        for (int f = 0; f < n; ++f) {
          if (f != me) post_recv(op, f);
        }
      } else {
        post_send(op, op.root_frag, std::move(op.out));
      }
      return true;
    case Pattern::kScatter:
      if (op.round > 0) return false;
      if (me == op.root_frag) {
        for (int f = 0; f < n; ++f) {
          if (f != me) post_send(op, f, std::move(op.out_for[f]));
        }
      } else {
        post_recv(op, op.root_frag);
      }
      return true;
    case Pattern::kAlltoall:
      if (op.round > 0) return false;
      for (int f = 0; f < n; ++f) {
        if (f == me) continue;
        post_recv(op, f);
        post_send(op, f, std::move(op.out_for[f]));
      }
      return true;
    case Pattern::kPeers:
      if (op.round > 0) return false;
      for (int f : op.peer_recvs) post_recv(op, f);
      for (int f : op.peer_sends) {
        if (op.out_for.empty()) {
          post_send_out(op, f);
        } else {
          post_send(op, f, std::move(op.out_for[f]));
        }
      }
      return true;
    case Pattern::kBcast: {
      int parent = -1;
      std::vector<int> children;
      runtime::binomial_tree(me, op.root_frag, n, &parent, &children);
      if (op.round == 0) {  // receive from the parent
        if (parent >= 0) post_recv(op, parent);
        return true;
      }
      if (op.round == 1) {  // forward to the children
        for (int ch : children) post_send_out(op, ch);
        return true;
      }
      return false;
    }
  }
  return false;
}

// Tests the round's messages; on completion files the received blobs.
bool round_done(CollOp& op) {
  // Test every message, without stopping at the first pending one: a receive's test
  // posts its payload receive, which a peer's pending send may be waiting for.
  bool done = true;
  for (auto& s : op.sends) done &= s->test();
  for (auto& r : op.recvs) done &= r->test();
  if (!done) return false;
  for (size_t i = 0; i < op.recvs.size(); ++i) {
    op.in[op.recv_from[i]] = std::move(op.recvs[i]->data());
  }
  if (op.pattern == Pattern::kBcast && op.round == 0 && !op.recvs.empty()) {
    op.out = std::move(op.in[op.recv_from[0]]);  // what we forward (and finish reads)
  }
  op.sends.clear();
  op.recvs.clear();
  op.recv_from.clear();
  return true;
}

void complete_parts(CollOp& op) {
  if (op.done != nullptr) {  // start_fragment's: no requests
    op.done(op.done_arg);
    return;
  }
  for (Part& p : op.parts) runtime::request_complete(p.req);
}

void finish_op(CollOp& op) {
  const int me = op.c->my_frag;
  if (op.c->inter) {
    // kPeers or kNone: `in` holds the remote group's blobs only
  } else if (op.pattern == Pattern::kScatter && me == op.root_frag) {
    op.in[me] = std::move(op.out_for[me]);
  } else if (op.pattern == Pattern::kAlltoall) {
    op.in[me] = std::move(op.out_for[me]);
  } else if (op.pattern == Pattern::kBcast) {
    op.in[op.root_frag] = std::move(op.out);  // the sends of it are done
  } else if (op.pattern != Pattern::kScatter) {
    op.in[me] = std::move(op.out);
  }
  op.finish();
  complete_parts(op);
}

// Advances op's schedule; true when it finished (outputs written, requests complete).
bool step(CollOp& op, bool* progressed) {
  for (;;) {
    if (!round_done(op)) return false;
    *progressed = true;
    ++op.round;
    if (!post_round(op)) {
      finish_op(op);
      return true;
    }
  }
}

// Advances every active operation of one fragment (if no other thread does).
bool advance(FragState* fs) {
  if (fs->advancing.load(std::memory_order_relaxed) ||
      fs->advancing.exchange(true, std::memory_order_acquire)) {  // pairs: release below
    return false;
  }
  bool progressed = false;
  // Scratch reused by this thread: no allocation in the passes of a waiting thread.
  thread_local std::vector<CollOp*> ops, done;
  ops.clear();
  done.clear();
  {
    std::lock_guard<std::mutex> lock(fs->mu);
    for (auto& op : fs->active) ops.push_back(op.get());
  }
  for (CollOp* op : ops) {
    if (step(*op, &progressed)) done.push_back(op);
  }
  if (!done.empty()) {
    std::lock_guard<std::mutex> lock(fs->mu);
    auto& a = fs->active;
    a.erase(std::remove_if(a.begin(), a.end(),
                           [&](const std::unique_ptr<CollOp>& p) {
                             return std::find(done.begin(), done.end(), p.get()) != done.end();
                           }),
            a.end());
  }
  fs->advancing.store(false, std::memory_order_release);  // pairs with the exchange above
  return progressed;
}

void run(std::unique_ptr<CollOp> op, FragState* fs) {
  op->start();
  const int n = nfrags(*op);
  op->in.assign(static_cast<size_t>(in_frags(*op)), std::string());
  if ((n == 1 && op->pattern != Pattern::kPeers) || op->pattern == Pattern::kNone) {
    finish_op(*op);
    return;
  }
  op->round = 0;
  post_round(*op);
  CommShared* c = op->c;
  {
    std::lock_guard<std::mutex> lock(fs->mu);
    fs->active.push_back(std::move(op));
  }
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (std::find(g_frags.begin(), g_frags.end(), c) == g_frags.end()) {
      g_frags.push_back(c);
      // relaxed: g_mu orders it for poll_schedules().
      c->coll_active.store(1, std::memory_order_relaxed);
    }
    g_nfrags.store(static_cast<int>(g_frags.size()), std::memory_order_relaxed);  // hint
  }
  // The round's sends leave now, not with the next pass: the operation may complete
  // within advance() below (the peers' blobs already arrived), and then no waiter of
  // ours would run a pass - the peers would wait for the next operation to push ours.
  runtime::start_queued();
  advance(fs);
  // Waiters on these requests run engine passes (needs_engine) and so this hook; the
  // progress thread runs it too, so the operation completes without any waiter.
}

}  // namespace

bool poll_schedules(bool* pending) {
  // relaxed: a hint; a fragment registered after this load is polled by the next pass.
  if (g_nfrags.load(std::memory_order_relaxed) == 0) return false;
  // Only the baton holder polls (one pass at a time): one scratch vector will do.
  static std::vector<CommShared*>* frags = new std::vector<CommShared*>;  // never freed
  {
    std::lock_guard<std::mutex> lock(g_mu);
    frags->assign(g_frags.begin(), g_frags.end());
  }
  bool progressed = false;
  for (CommShared* c : *frags) {
    // acquire: pairs with state_of's release store (run() made the state first).
    auto* fs = static_cast<FragState*>(c->coll_state.load(std::memory_order_acquire));
    progressed |= advance(fs);
    std::lock_guard<std::mutex> lock(fs->mu);
    if (!fs->active.empty()) {
      *pending = true;
    } else {
      std::lock_guard<std::mutex> glock(g_mu);
      g_frags.erase(std::remove(g_frags.begin(), g_frags.end(), c), g_frags.end());
      g_nfrags.store(static_cast<int>(g_frags.size()), std::memory_order_relaxed);  // hint
      // release: pairs with the acquire in runtime's retire(); the fragment may go now.
      c->coll_active.store(0, std::memory_order_release);
    }
  }
  return progressed;
}

namespace {
// An operation's references on its arguments' datatype (OpArgs::held, keeper).
void hold_args(OpArgs* a) {
  a->held = a->ti;
  if (a->op != MPI_OP_NULL && !a->ti.named) EP_MPI(MPI_Type_dup(a->type, &a->keeper));
}
}  // namespace

Request* arrive(Endpoint* ep, Part part, const std::function<std::unique_ptr<CollOp>()>& make) {
  CommShared* c = ep->comm;
  FragState* fs = state_of(c);
  const int tag = runtime::hidden_tag(ep);
  Request* r = runtime::request_new(runtime::RequestKind::kColl, /*user_handle=*/true);
  r->needs_engine = c->frag_leaders.size() > 1 || c->inter;
  part.req = r;
  part.rank = ep->rank;
  std::unique_ptr<CollOp> started;
  {
    std::lock_guard<std::mutex> lock(fs->mu);
    std::unique_ptr<CollOp>& slot = fs->arriving[tag];
    if (!slot) {
      slot = make();
      if (part.knows == Knows::kAll) hold_args(&slot->args);  // (a hole's may be invalid)
      slot->c = c;
      slot->tag = tag;
      slot->knows = part.knows;
      slot->parts.resize(c->local.size());
      slot->missing = static_cast<int>(c->local.size());
    } else if (part.knows > slot->knows) {  // better informed: the op rests on our args
      std::unique_ptr<CollOp> better = make();
      if (part.knows == Knows::kAll) hold_args(&better->args);
      better->c = c;
      better->tag = tag;
      better->knows = part.knows;
      better->parts = std::move(slot->parts);
      better->missing = slot->missing;
      better->args.team = slot->args.team;
      slot->args.team = nullptr;
      slot = std::move(better);
    }
    if (slot->args.team == nullptr) {
      if (runtime::Team* team = runtime::current_team()) {  // a team member started it
        team->ref();
        slot->args.team = team;
      }
    }
    part.hold_types();
    slot->parts[static_cast<size_t>(ep->local_index)] = std::move(part);
    if (--slot->missing == 0) {
      started = std::move(slot);
      fs->arriving.erase(tag);
    }
  }
  if (started) run(std::move(started), fs);
  return r;
}

void run_for_fragment(CommShared* c, std::vector<Part> parts, std::unique_ptr<CollOp> op) {
  FragState* fs = state_of(c);
  // Every local endpoint's count advances, as if each had called start (one tag for all).
  const int tag = runtime::hidden_tag(c->local[0].get());
  for (size_t i = 1; i < c->local.size(); ++i) runtime::hidden_tag(c->local[i].get());
  op->c = c;
  op->tag = tag;
  op->knows = Knows::kNothing;
  for (size_t i = 0; i < parts.size(); ++i) {
    parts[i].rank = c->local[i]->rank;
    parts[i].req = nullptr;
    if (parts[i].knows > op->knows) op->knows = parts[i].knows;
  }
  op->parts = std::move(parts);
  op->args.team = runtime::current_team();  // the caller is the member that started it
  if (op->args.team != nullptr) op->args.team->ref();
  run(std::move(op), fs);
}

void Part::hold_types() {
  for (const TypeInfo* ti : {&sti, &rti}) {
    if (ti->desc != nullptr) held.emplace_back(*ti);
  }
  for (const std::vector<TypeInfo>* v : {&stis, &rtis}) {
    for (const TypeInfo& ti : *v) {
      if (ti.desc != nullptr) held.emplace_back(ti);
    }
  }
}

CollOp::~CollOp() {
  if (args.team != nullptr) args.team->unref();
  if (args.keeper != MPI_DATATYPE_NULL) EP_MPI(MPI_Type_free(&args.keeper));
  // Large blobs go back for the next operation (runtime/exchange.h).
  runtime::give_blob(std::move(out));
  for (std::string& b : in) runtime::give_blob(std::move(b));
  for (std::string& b : out_for) runtime::give_blob(std::move(b));
}

FastState* fast_state(CommShared* c) { return &state_of(c)->fast; }

}  // namespace ep::collectives
