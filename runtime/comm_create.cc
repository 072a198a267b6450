// comm_create.cc - EP_Comm_create_group: a communicator made by the members of a group
// alone (the parent's other endpoints take no part).
//
// The fragment machinery of dup and split (CommShared::local_round, frag_allgather)
// needs every local endpoint of a parent fragment, so creation by a group uses its own
// exchange, hidden point-to-point on the parent's shadow (runtime/exchange.h) under
// the tag kCreateGroupTagBase - tag, which no other hidden traffic uses:
//   1. In each process, the member with the lowest group rank is its *builder*: it
//      begins this process's fragment of the new communicator (one fragment per
//      process, its endpoints in group-rank order).
//   2. Every builder but group rank 0's sends its fragment's context id to group rank
//      0, which answers each with the context ids of all processes.
//   3. Each builder finishes its fragment (addresses and identities of every rank) and
//      sends the fragment's address to the process's other members, which take their
//      endpoints from it.
// Each directed pair of members carries at most one message per creation, so two
// creations in a row under one tag cannot mix (point-to-point is non-overtaking), and
// creations by disjoint groups at once share no endpoint.  Every wait is a hidden
// receive, so it waits as libep waits (runtime/wait.h).
//
// Memory ordering: the fragment is fully built (fragment_finish) before its address is
// sent; a hidden message's data is published by its request's completion, so a member
// that received the address sees the finished fragment.
#include <climits>
#include <map>
#include <utility>
#include <vector>

#include "runtime/comm.h"
#include "runtime/exchange.h"
#include "runtime/runtime.h"
#include "runtime/errhandler.h"

namespace ep::runtime {
namespace {

// User tags are 0..(1 << 28) - 1 (tag_ub): the creation tags lie below the intercomm
// ones (runtime/exchange.h) and above INT_MIN.
static_assert(kCreateGroupTagBase < kIntercommTagBase - ((1 << 28) - 1) &&
                  static_cast<long long>(kCreateGroupTagBase) - ((1 << 28) - 1) > INT_MIN,
              "creation tags overlap other hidden tags");

// The context id of each process's fragment, by world rank.
using CtxTable = std::map<int, uint32_t>;

std::string write_table(const CtxTable& t) {
  BlobWriter w;
  for (const auto& [proc, ctx] : t) {
    w.put<int>(proc);
    w.put<uint32_t>(ctx);
  }
  return w.take();
}

CtxTable read_table(const std::string& s) {
  CtxTable t;
  BlobReader rd(s);
  while (!rd.done()) {
    const int proc = rd.get<int>();
    t[proc] = rd.get<uint32_t>();
  }
  return t;
}

// Where the members live: each one's parent rank and process, and each process's
// builder (its member of lowest group rank).
struct Plan {
  std::vector<int> prank;      // parent rank, by group rank
  std::vector<int> proc;       // world rank of the process, by group rank
  std::vector<int> local;      // index in its process's fragment, by group rank
  std::map<int, int> builder;  // process -> group rank of its builder
  std::vector<int> here;       // group ranks of this process's members, ascending
};

Plan make_plan(const CommShared* old, const std::vector<Identity>& members) {
  std::map<std::pair<uint64_t, int>, int> rank_of;
  for (int r = 0; r < old->size; ++r) rank_of[{old->ids[r].origin, old->ids[r].rank}] = r;
  const int me = runtime()->world_rank;
  Plan p;
  std::map<int, int> count;  // members seen so far per process
  for (size_t i = 0; i < members.size(); ++i) {
    const int r = rank_of.at({members[i].origin, members[i].rank});
    const int proc = old->addr[r].proc;
    p.prank.push_back(r);
    p.proc.push_back(proc);
    p.local.push_back(count[proc]++);
    p.builder.emplace(proc, static_cast<int>(i));
    if (proc == me) p.here.push_back(static_cast<int>(i));
  }
  return p;
}

// Steps 2 and 3 at a builder: learn every process's context id, finish the fragment.
void build(Endpoint* ep, const Plan& p, const std::vector<Identity>& members, int tag,
           CommShared* c) {
  const int me = runtime()->world_rank;
  CtxTable table;
  if (p.here[0] == 0) {  // group rank 0 gathers and answers
    table[me] = c->ctx;
    for (const auto& [proc, b] : p.builder) {
      if (proc == me) continue;
      const std::string ctx = recv_hidden(ep, p.prank[b], tag);
      BlobReader rd(ctx);
      table[proc] = rd.get<uint32_t>();
    }
    const std::string all = write_table(table);
    for (const auto& [proc, b] : p.builder) {
      if (proc != me) send_hidden(ep, p.prank[b], tag, all);
    }
  } else {
    BlobWriter w;
    w.put<uint32_t>(c->ctx);
    send_hidden(ep, p.prank[0], tag, w.take());
    table = read_table(recv_hidden(ep, p.prank[0], tag));
  }
  std::vector<EpAddr> addr(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    addr[i] = EpAddr{p.proc[i], table.at(p.proc[i]), static_cast<uint16_t>(p.local[i])};
  }
  fragment_finish(c, std::move(addr), members);
}

}  // namespace

int comm_create_group(Endpoint* ep, const std::vector<Identity>& members, int tag, Endpoint** out) {
  const CommShared* old = ep->comm;
  const Plan p = make_plan(old, members);
  const int htag = kCreateGroupTagBase - tag;
  const Identity& self = old->ids[ep->rank];
  int gr = -1;
  for (int i : p.here) {
    if (members[static_cast<size_t>(i)] == self) gr = i;
  }
  CommShared* c = nullptr;
  if (gr == p.here[0]) {  // this process's builder
    c = fragment_begin(static_cast<int>(p.here.size()));
    build(ep, p, members, htag, c);
    BlobWriter w;
    w.put<CommShared*>(c);
    const std::string addr = w.take();
    for (size_t j = 1; j < p.here.size(); ++j) send_hidden(ep, p.prank[p.here[j]], htag, addr);
  } else {
    const std::string got = recv_hidden(ep, p.prank[p.here[0]], htag);
    BlobReader rd(got);
    c = rd.get<CommShared*>();
  }
  Endpoint* n = c->local[static_cast<size_t>(p.local[gr])].get();
  errhandler_assign(&n->errhandler, ep->errhandler);
  *out = n;
  return EP_SUCCESS;
}

}  // namespace ep::runtime
