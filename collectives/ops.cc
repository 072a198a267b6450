// ops.cc - the data-movement collective families (Barrier, Bcast, Gather(v),
// Allgather(v), Scatter(v), Alltoall(v,w)): phases 1 and 3 of engine.h; make_op and start.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/types.h"
#include "collectives/coll.h"
#include "collectives/internal.h"
#include "collectives/reduce_util.h"
#include "runtime/exchange.h"

namespace ep::collectives {

using runtime::BlobReader;
using runtime::BlobWriter;

std::string pack_peer_block(const Part& p, bool receive_side, bool w, int d) {
  const void* base = receive_side ? p.rbuf : p.sbuf;
  const std::vector<int>& cnt = receive_side ? p.rcounts : p.scounts;
  const std::vector<int64_t>& dsp = receive_side ? p.rdispls : p.sdispls;
  if (w) {
    const std::vector<TypeInfo>& tis = receive_side ? p.rtis : p.stis;
    return pack_n(static_cast<const char*>(base) + dsp[d], cnt[d], tis[d]);
  }
  const TypeInfo& ti = receive_side ? p.rti : p.sti;
  return pack_n(elem(base, dsp[d], ti), cnt[d], ti);
}

void unpack_peer_blocks(CollOp& op, bool w) {
  for (const std::string& blob : op.in) {
    BlobReader rd(blob);
    while (!rd.done()) {
      const int src = rd.get<int>();
      const int dst = rd.get<int>();
      std::string b = rd.get_bytes();
      Part* p = part_of_rank(op, dst);
      if (p == nullptr || p->hole) continue;
      if (w) {
        unpack_n(b, static_cast<char*>(p->rbuf) + p->rdispls[src], p->rcounts[src], p->rtis[src]);
      } else {
        unpack_n(b, elem(p->rbuf, p->rdispls[src], p->rti), p->rcounts[src], p->rti);
      }
    }
  }
}

namespace {

class BarrierOp final : public CollOp {
 public:
  void start() override { pattern = Pattern::kAllgather; }
  void finish() override {}
};

class BcastOp final : public CollOp {
 public:
  void start() override {
    if (knows == Knows::kNothing) return;  // kNone (engine.h, "Erroneous endpoints")
    pattern = Pattern::kBcast;
    root_frag = c->frag_of[args.root];
    Part* r = part_of_rank(*this, args.root);
    if (r != nullptr && !r->hole) out = pack_n(r->rbuf, r->rcount, r->rti);
  }
  void finish() override {
    const std::string& data = in[root_frag];
    for (Part& p : parts) {
      if (p.rank != args.root && !p.hole) unpack_n(data, p.rbuf, p.rcount, p.rti);
    }
  }
};

// Gather(v), Allgather(v).
class GatherOp final : public CollOp {
 public:
  explicit GatherOp(bool all) : all_(all) {}
  void start() override {
    if (!all_ && knows == Knows::kNothing) return;  // kNone
    pattern = all_ ? Pattern::kAllgather : Pattern::kGather;
    root_frag = all_ ? 0 : c->frag_of[args.root];
    BlobWriter w;
    for (const Part& p : parts) {
      if (p.hole) continue;
      if (p.sbuf == in_place()) {  // the block already sits in the receive buffer
        put_ranked(w, p.rank,
                   pack_n(elem(p.rbuf, p.rdispls[p.rank], p.rti), p.rcounts[p.rank], p.rti));
      } else {
        put_ranked(w, p.rank, pack_n(p.sbuf, p.scount, p.sti));
      }
    }
    out = w.take();
  }
  void finish() override {
    if (!all_ && c->my_frag != root_frag) return;
    for (const std::string& blob : in) {
      for_ranked(blob, [&](int r, std::string& b) {
        for (Part& p : parts) {
          if (p.hole || (!all_ && p.rank != args.root) || (p.sbuf == in_place() && r == p.rank)) {
            continue;
          }
          unpack_n(b, elem(p.rbuf, p.rdispls[r], p.rti), p.rcounts[r], p.rti);
        }
      });
    }
  }

 private:
  bool all_;
};

// Scatter(v).
class ScatterOp final : public CollOp {
 public:
  void start() override {
    if (knows == Knows::kNothing) return;  // kNone
    pattern = Pattern::kScatter;
    root_frag = c->frag_of[args.root];
    Part* root = part_of_rank(*this, args.root);
    if (root == nullptr) return;
    if (root->hole) {  // nothing to send: an empty blob for every fragment
      out_for.assign(c->frag_leaders.size(), std::string());
      return;
    }
    std::vector<BlobWriter> w(c->frag_leaders.size());
    for (int r = 0; r < c->size; ++r) {
      put_ranked(
          w[c->frag_of[r]], r,
          pack_n(elem(root->sbuf, root->sdispls[r], root->sti), root->scounts[r], root->sti));
    }
    out_for.clear();
    for (BlobWriter& x : w) out_for.push_back(x.take());
  }
  void finish() override {
    for_ranked(in[c->my_frag == root_frag ? c->my_frag : root_frag], [&](int r, std::string& b) {
      Part* p = part_of_rank(*this, r);
      if (p == nullptr || p->hole || (r == args.root && p->rbuf == in_place())) return;
      unpack_n(b, p->rbuf, p->rcount, p->rti);
    });
  }
};

// Alltoall(v), and Alltoallw (w_: a datatype per peer, displacements in bytes).
class AlltoallOp final : public CollOp {
 public:
  explicit AlltoallOp(bool w) : w_(w) {}
  void start() override {
    pattern = Pattern::kAlltoall;
    std::vector<BlobWriter> w(c->frag_leaders.size());
    for (const Part& p : parts) {
      if (p.hole) continue;
      // Under EP_IN_PLACE the blocks to send sit where the received ones go.
      const bool in_place = p.sbuf == ep::in_place();
      for (int d = 0; d < c->size; ++d) {
        BlobWriter& x = w[c->frag_of[d]];
        x.put<int>(p.rank);
        x.put<int>(d);
        x.put_bytes(pack_peer_block(p, in_place, w_, d));
      }
    }
    out_for.clear();
    for (BlobWriter& x : w) out_for.push_back(x.take());
  }
  void finish() override { unpack_peer_blocks(*this, w_); }

 private:
  bool w_;
};

std::unique_ptr<CollOp> make_op(Kind kind) {
  switch (kind) {
    case Kind::kBarrier:
      return std::make_unique<BarrierOp>();
    case Kind::kBcast:
      return std::make_unique<BcastOp>();
    case Kind::kReduce:
    case Kind::kAllreduce:
    case Kind::kReduceScatter:
      return make_reduce_op(kind);
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
    case Kind::kScan:
      return make_scan_op(/*exclusive=*/false);
    case Kind::kExscan:
      return make_scan_op(/*exclusive=*/true);
  }
  return nullptr;
}

}  // namespace

Part* part_of_rank(CollOp& op, int rank) {
  const runtime::EpAddr& a = op.c->addr[rank];
  if (op.c->frag_of[rank] != op.c->my_frag) return nullptr;
  return &op.parts[a.local];
}

Request* start(Endpoint* ep, Kind kind, Part part, const OpArgs& args) {
  // A kind without a root needs no more than a hole knows of it (engine.h).
  if (part.knows == Knows::kNothing && !rooted(kind)) part.knows = Knows::kRoot;
  if (ep->comm->inter) return inter_start(ep, kind, std::move(part), args);
  return arrive(ep, std::move(part), [kind, &args] {
    std::unique_ptr<CollOp> op = make_op(kind);
    op->args = args;
    return op;
  });
}

}  // namespace ep::collectives
