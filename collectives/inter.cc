// inter.cc - the collectives on intercommunicators, blocking and nonblocking: phases 1
// and 3 of engine.h for every family MPI 3.1 defines there (all but Scan and Exscan).
//
// Design.  Every intercommunicator collective moves data only from one group to the
// other (MPI 3.1 section 5.2.2: a rooted one from the root to the other group or back,
// an all-to-all one both ways; a reduction gives each group the other group's
// combination).  So each runs as one engine operation (engine.h) on the
// intercommunicator's own fragment, with the same hierarchical shape as the intra
// ones: the fragment's endpoints arrive and the last combines their inputs into this
// fragment's blob(s) (phase 1); one round of hidden messages goes between the
// fragments of the two groups (Pattern::kPeers, on the intercommunicator's shadow,
// whose point-to-point addresses the remote group, to the remote fragments' leaders:
// CommShared::remote_frag_leaders); the finisher writes the local parts (phase 3).
// No group-internal step is needed, hence no hidden union intracommunicator: no extra
// context ids, nothing to build in each creation path (create, dup, idup, create from
// a group, split), and nonblocking forms and asynchronous progress come from the
// engine as for intracommunicators.  The round is flat (each fragment talks to every
// remote fragment it must: a root's fragment to all of them); fragments are processes
// (two per process when the groups share one), so that is one message per process pair.
//
// Per family (A: the root's group, B: the other):
//   barrier          every fragment sends an empty blob to every remote fragment and
//                    waits for theirs: it finishes once all of the other group entered;
//   bcast            the root's fragment sends the data to every fragment of B;
//   gather(v)        every fragment of B sends its ranks' blocks to the root's fragment;
//   scatter(v)       the root's fragment sends each fragment of B its ranks' blocks;
//   allgather(v)     every fragment sends its ranks' blocks to every remote fragment;
//   alltoall(v,w)    every fragment sends each remote fragment the blocks for its ranks;
//   reduce           every fragment of B sends its contribution to the root's fragment;
//   allreduce,       every fragment sends its contribution to every remote fragment;
//   reduce_scatter   each combines the other group's and writes its ranks' results.
// A contribution is the fragment's partial (its inputs combined in rank order) when the
// op is commutative or the fragment's group is grouped (each fragment's ranks
// contiguous), else every rank's input; the receiver decides the same way from the
// same group table (remote_grouped) and combines in the other group's rank order, so
// non-commutative ops see x0 op (x1 op (... op x(n-1))) of the other group.
// The other fragments of A (without the root) do nothing (Pattern::kNone).
//
// Threading, memory ordering: as every engine operation (engine.h).
#include <cstdlib>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "base/mpi_calls.h"
#include "base/types.h"
#include "collectives/coll.h"
#include "collectives/internal.h"
#include "collectives/reduce_util.h"
#include "runtime/exchange.h"

namespace ep::collectives {
namespace {

using runtime::BlobReader;
using runtime::BlobWriter;

bool is_commutative(MPI_Op op) {
  int flag = 1;
  EP_MPI(MPI_Op_commutative(op, &flag));
  return flag != 0;
}

// What the families share: the roots of the parts, the remote fragments.  Holes
// (engine.h, "Erroneous endpoints") contribute and receive nothing; a hole that knows
// no root says nothing of this fragment's role.
class InterOp : public CollOp {
 protected:
  // A part whose root argument is known (nullptr: this fragment knows no root).
  const Part* informed() const {
    for (const Part& p : parts) {
      if (p.knows != Knows::kNothing) return &p;
    }
    return nullptr;
  }
  // The endpoints of the root's group pass kRoot or kProcNull, the others a remote rank.
  bool in_root_group() const {
    const Part* p = informed();
    return p->root == kRoot || p->root == kProcNull;
  }
  // The root's part, if it is here (a hole or not).
  Part* root_part() {
    for (Part& p : parts) {
      if (p.knows != Knows::kNothing && p.root == kRoot) return &p;
    }
    return nullptr;
  }
  // (Not in the root's group) the remote fragment holding the root.
  int remote_root_frag() const { return c->remote_frag_of[informed()->root]; }
  std::vector<int> all_remote() const {
    std::vector<int> v(c->remote_frag_leaders.size());
    std::iota(v.begin(), v.end(), 0);
    return v;
  }
  // Sends to and receives from every remote fragment.
  void exchange_all() {
    pattern = Pattern::kPeers;
    peer_sends = peer_recvs = all_remote();
  }
  // Receives from the root's fragment (root_frag is set for finish).
  void receive_from_root() {
    pattern = Pattern::kPeers;
    root_frag = remote_root_frag();
    peer_recvs = {root_frag};
  }
  // Blobs for each remote fragment, by remote fragment.
  std::vector<BlobWriter> writers() const { return std::vector<BlobWriter>(all_remote().size()); }
  void take_out_for(std::vector<BlobWriter>& w) {
    out_for.clear();
    for (BlobWriter& x : w) out_for.push_back(x.take());
  }
};

class BarrierOp final : public InterOp {
 public:
  void start() override { exchange_all(); }
  void finish() override {}
};

class BcastOp final : public InterOp {
 public:
  void start() override {
    if (informed() == nullptr) return;  // kNone (engine.h, "Erroneous endpoints")
    if (!in_root_group()) {
      receive_from_root();
      return;
    }
    Part* r = root_part();
    if (r == nullptr) return;  // kNone
    if (!r->hole) out = pack_n(r->rbuf, r->rcount, r->rti);
    pattern = Pattern::kPeers;
    peer_sends = all_remote();
  }
  void finish() override {
    if (informed() == nullptr || in_root_group()) return;
    for (Part& p : parts) {
      if (!p.hole) unpack_n(in[root_frag], p.rbuf, p.rcount, p.rti);
    }
  }
};

// Gather(v), Allgather(v): blocks by remote rank in the receivers' rcounts/rdispls.
class GatherOp final : public InterOp {
 public:
  explicit GatherOp(bool all) : all_(all) {}
  void start() override {
    if (!all_ && informed() == nullptr) return;  // kNone
    if (!all_ && in_root_group()) {
      if (root_part() == nullptr) return;  // kNone
      pattern = Pattern::kPeers;
      peer_recvs = all_remote();
      return;
    }
    BlobWriter w;
    for (const Part& p : parts) {
      if (!p.hole) put_ranked(w, p.rank, pack_n(p.sbuf, p.scount, p.sti));
    }
    out = w.take();
    if (all_) {
      exchange_all();
    } else {
      pattern = Pattern::kPeers;
      peer_sends = {remote_root_frag()};
    }
  }
  void finish() override {
    if (!all_ && root_part() == nullptr) return;  // no result here
    for (const std::string& blob : in) {
      for_ranked(blob, [&](int r, std::string& b) {
        for (Part& p : parts) {
          if (p.hole || (!all_ && p.root != kRoot)) continue;
          unpack_n(b, elem(p.rbuf, p.rdispls[r], p.rti), p.rcounts[r], p.rti);
        }
      });
    }
  }

 private:
  bool all_;
};

// Scatter(v): the root's blocks by remote rank in its scounts/sdispls.
class ScatterOp final : public InterOp {
 public:
  void start() override {
    if (informed() == nullptr) return;  // kNone
    if (!in_root_group()) {
      receive_from_root();
      return;
    }
    Part* r = root_part();
    if (r == nullptr) return;  // kNone
    std::vector<BlobWriter> w = writers();
    for (int d = 0; d < c->remote_size && !r->hole; ++d) {
      put_ranked(w[c->remote_frag_of[d]], d,
                 pack_n(elem(r->sbuf, r->sdispls[d], r->sti), r->scounts[d], r->sti));
    }
    take_out_for(w);
    pattern = Pattern::kPeers;
    peer_sends = all_remote();
  }
  void finish() override {
    if (informed() == nullptr || in_root_group()) return;
    for_ranked(in[root_frag], [&](int r, std::string& b) {
      Part* p = part_of_rank(*this, r);
      if (p != nullptr && !p->hole) unpack_n(b, p->rbuf, p->rcount, p->rti);
    });
  }
};

// Alltoall(v), and Alltoallw (w_: a datatype per remote rank, displacements in bytes):
// counts and displacements by remote rank.
class AlltoallOp final : public InterOp {
 public:
  explicit AlltoallOp(bool w) : w_(w) {}
  void start() override {
    std::vector<BlobWriter> w = writers();
    for (const Part& p : parts) {
      if (p.hole) continue;
      for (int d = 0; d < c->remote_size; ++d) {
        BlobWriter& x = w[c->remote_frag_of[d]];
        x.put<int>(p.rank);
        x.put<int>(d);
        x.put_bytes(pack_peer_block(p, /*receive_side=*/false, w_, d));
      }
    }
    take_out_for(w);
    exchange_all();
  }
  void finish() override { unpack_peer_blocks(*this, w_); }

 private:
  bool w_;
};

// Reduce, Allreduce, Reduce_scatter(_block) (args.count: the whole vector; for
// Reduce_scatter the parts' rcounts index the local group).
class ReduceOp final : public InterOp {
 public:
  explicit ReduceOp(Kind kind) : kind_(kind) {}
  void start() override {
    if (kind_ == Kind::kReduce && informed() == nullptr) return;  // kNone
    if (kind_ == Kind::kReduce && in_root_group()) {
      if (root_part() == nullptr) return;  // kNone
      pattern = Pattern::kPeers;
      peer_recvs = all_remote();
      return;
    }
    out = contribution();
    if (kind_ == Kind::kReduce) {
      pattern = Pattern::kPeers;
      peer_sends = {remote_root_frag()};
    } else {
      exchange_all();
    }
  }
  void finish() override {
    if (kind_ == Kind::kReduce && root_part() == nullptr) return;  // no result here
    if (!has_data()) return;
    TypedBuffer acc(args.count, args.ti);
    if (!combine_remote(acc.get())) return;  // the other group sent nothing
    for (Part& p : parts) {
      if (p.hole) continue;
      if (kind_ == Kind::kAllreduce || (kind_ == Kind::kReduce && p.root == kRoot)) {
        copy_n(acc.get(), p.rbuf, args.count, args);
      } else if (kind_ == Kind::kReduceScatter) {
        int64_t offset = 0;
        for (int r = 0; r < p.rank; ++r) offset += p.rcounts[r];
        copy_n(elem(acc.get(), offset, args.ti), p.rbuf, p.rcounts[p.rank], args);
      }
    }
  }

 private:
  // This fragment's contribution: its partial in rank order, or every rank's input
  // (nothing from holes: empty if all are).
  std::string contribution() {
    if (!has_data()) return std::string();
    if (is_commutative(args.op) || c->grouped) {
      std::vector<const void*> xs;
      for (const Part& p : parts) {
        if (!p.hole) xs.push_back(p.sbuf);
      }
      TypedBuffer acc(args.count, args.ti);
      reduce_all(xs, acc.get(), args.count, args);
      return pack_n(acc.get(), args.count, args.ti, args.team);
    }
    BlobWriter w;
    for (const Part& p : parts) {
      if (!p.hole) put_ranked(w, p.rank, pack_n(p.sbuf, args.count, args.ti));
    }
    return w.take();
  }
  // acc = the other group's combination, in its rank order; empty contributions (holes)
  // add nothing.  False if every contribution was empty (acc unwritten).
  bool combine_remote(void* acc) {
    TypedBuffer tmp(args.count, args.ti);
    std::vector<std::string> by_rank;
    if (is_commutative(args.op) || c->remote_grouped) {
      by_rank = std::move(in);  // partials by remote fragment = rank order
    } else {
      by_rank.resize(static_cast<size_t>(c->remote_size));
      for (const std::string& blob : in) {
        for_ranked(blob, [&](int r, std::string& b) { by_rank[r] = std::move(b); });
      }
    }
    in.clear();
    int last = static_cast<int>(by_rank.size()) - 1;
    while (last >= 0 && by_rank[last].empty()) --last;
    if (last < 0) return args.count == 0;
    unpack_n(by_rank[last], acc, args.count, args.ti, args.team);
    for (int i = last - 1; i >= 0; --i) {
      if (by_rank[i].empty()) continue;
      unpack_n(by_rank[i], tmp.get(), args.count, args.ti, args.team);
      reduce_into(tmp.get(), acc, args.count, args);
    }
    return true;
  }

  Kind kind_;
};

std::unique_ptr<CollOp> make_inter_op(Kind kind) {
  switch (kind) {
    case Kind::kBarrier:
      return std::make_unique<BarrierOp>();
    case Kind::kBcast:
      return std::make_unique<BcastOp>();
    case Kind::kGather:
      return std::make_unique<GatherOp>(false);
    case Kind::kAllgather:
      return std::make_unique<GatherOp>(true);
    case Kind::kScatter:
      return std::make_unique<ScatterOp>();
    case Kind::kAlltoall:
      return std::make_unique<AlltoallOp>(/*w=*/false);
    case Kind::kAlltoallw:
      return std::make_unique<AlltoallOp>(/*w=*/true);
    case Kind::kReduce:
    case Kind::kAllreduce:
    case Kind::kReduceScatter:
      return std::make_unique<ReduceOp>(kind);
    case Kind::kScan:
    case Kind::kExscan:
      break;  // MPI defines no Scan or Exscan on intercommunicators; api/ refuses them
  }
  std::abort();
}

}  // namespace

Request* inter_start(Endpoint* ep, Kind kind, Part part, const OpArgs& args) {
  part.root = args.root;
  if (part.knows == Knows::kNothing && !rooted(kind)) part.knows = Knows::kRoot;
  return arrive(ep, std::move(part), [kind, &args] {
    std::unique_ptr<CollOp> op = make_inter_op(kind);
    op->args = args;
    return op;
  });
}

}  // namespace ep::collectives
