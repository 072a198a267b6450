// ops_reduce.cc - the reduction collective families (Reduce, Allreduce,
// Reduce_scatter(_block), Scan, Exscan): phases 1 and 3 of engine.h, on the engine's
// path; which layouts combine per fragment and which send every input: coll.h.
#include <memory>
#include <string>
#include <vector>

#include "base/mpi_calls.h"
#include "base/types.h"
#include "collectives/coll.h"
#include "collectives/internal.h"
#include "collectives/reduce_util.h"
#include "runtime/exchange.h"

namespace ep::collectives {
namespace {

using runtime::BlobWriter;

bool commutative(MPI_Op op) {
  int flag = 1;
  EP_MPI(MPI_Op_commutative(op, &flag));
  return flag != 0;
}

// Reduce, Allreduce, Reduce_scatter(_block).
class ReduceOp final : public CollOp {
 public:
  explicit ReduceOp(Kind kind) : kind_(kind) {}
  void start() override {
    pattern = kind_ == Kind::kReduce ? Pattern::kGather : Pattern::kAllgather;
    root_frag = kind_ == Kind::kReduce ? c->frag_of[args.root] : 0;
    ordered_ = commutative(args.op) || c->grouped;
    if (ordered_) {  // this fragment's partial, in rank order
      std::vector<const void*> xs;
      for (const Part& p : parts) xs.push_back(input_of(p));
      if (args.ti.contiguous) {  // combined straight into the blob
        out = runtime::take_blob(static_cast<size_t>(args.ti.size * args.count));
        reduce_all(xs, typed(out), args.count, args);
      } else {
        TypedBuffer acc(args.count, args.ti);
        reduce_all(xs, acc.get(), args.count, args);
        out = pack_n(acc.get(), args.count, args.ti, args.team);
      }
    } else {  // every rank's input
      BlobWriter w;
      for (const Part& p : parts) put_ranked(w, p.rank, pack_n(input_of(p), args.count, args.ti));
      out = w.take();
    }
  }
  void finish() override {
    if (kind_ == Kind::kReduce && c->my_frag != root_frag) return;
    if (ordered_ && args.ti.contiguous && kind_ != Kind::kReduceScatter) {
      finish_in_place();
      return;
    }
    TypedBuffer acc(args.count, args.ti), tmp(args.count, args.ti);
    if (ordered_) {
      const int n = static_cast<int>(in.size());
      unpack_n(in[n - 1], acc.get(), args.count, args.ti, args.team);
      for (int f = n - 2; f >= 0; --f) {
        unpack_n(in[f], tmp.get(), args.count, args.ti, args.team);
        reduce_into(tmp.get(), acc.get(), args.count, args);
      }
    } else {
      std::vector<std::string> by_rank(static_cast<size_t>(c->size));
      for (const std::string& blob : in) {
        for_ranked(blob, [&](int r, std::string& b) { by_rank[r] = std::move(b); });
      }
      unpack_n(by_rank[c->size - 1], acc.get(), args.count, args.ti);
      for (int r = c->size - 2; r >= 0; --r) {
        unpack_n(by_rank[r], tmp.get(), args.count, args.ti);
        reduce_into(tmp.get(), acc.get(), args.count, args);
      }
    }
    for (Part& p : parts) {
      if (kind_ == Kind::kAllreduce || (kind_ == Kind::kReduce && p.rank == args.root)) {
        copy_n(acc.get(), p.rbuf, args.count, args);
      } else if (kind_ == Kind::kReduceScatter) {
        int64_t offset = 0;
        for (int r = 0; r < p.rank; ++r) offset += p.rcounts[r];
        copy_n(elem(acc.get(), offset, args.ti), p.rbuf, p.rcounts[p.rank], args);
      }
    }
  }

 private:
  // The blobs are the fragments' partials in packed = typed layout (contiguous type):
  // combine them in fragment order straight into the first output buffer, without
  // scratch, then copy that to the other outputs.
  void finish_in_place() {
    void* target = nullptr;
    for (Part& p : parts) {
      if (kind_ == Kind::kAllreduce || p.rank == args.root) {
        target = p.rbuf;
        break;
      }
    }
    if (target == nullptr || args.count == 0) return;
    std::vector<const void*> xs;
    for (std::string& blob : in) xs.push_back(typed(blob));
    reduce_all(xs, target, args.count, args);
    for (Part& p : parts) {
      if (p.rbuf != target && (kind_ == Kind::kAllreduce || p.rank == args.root)) {
        copy_n(target, p.rbuf, args.count, args);
      }
    }
  }
  // A blob of packed elements of a contiguous type, addressed as a typed buffer.
  void* typed(std::string& blob) const { return blob.data() - args.ti.true_lb; }

  Kind kind_;
  bool ordered_ = true;
};

// Scan, Exscan: every fragment gets every input and applies the op in rank order.
class ScanOp final : public CollOp {
 public:
  explicit ScanOp(bool exclusive) : exclusive_(exclusive) {}
  void start() override {
    pattern = Pattern::kAllgather;
    BlobWriter w;
    for (const Part& p : parts) put_ranked(w, p.rank, pack_n(input_of(p), args.count, args.ti));
    out = w.take();
  }
  void finish() override {
    std::vector<std::string> by_rank(static_cast<size_t>(c->size));
    for (const std::string& blob : in) {
      for_ranked(blob, [&](int r, std::string& b) { by_rank[r] = std::move(b); });
    }
    TypedBuffer acc(args.count, args.ti), tmp(args.count, args.ti);
    for (Part& p : parts) {
      const int last = exclusive_ ? p.rank - 1 : p.rank;  // x0 op ... op x(last)
      if (last < 0) continue;  // Exscan at rank 0: the receive buffer is undefined
      unpack_n(by_rank[last], acc.get(), args.count, args.ti);
      for (int q = last - 1; q >= 0; --q) {
        unpack_n(by_rank[q], tmp.get(), args.count, args.ti);
        reduce_into(tmp.get(), acc.get(), args.count, args);
      }
      copy_n(acc.get(), p.rbuf, args.count, args);
    }
  }

 private:
  bool exclusive_;
};

}  // namespace

std::unique_ptr<CollOp> make_reduce_op(Kind kind) { return std::make_unique<ReduceOp>(kind); }

std::unique_ptr<CollOp> make_scan_op(bool exclusive) { return std::make_unique<ScanOp>(exclusive); }

}  // namespace ep::collectives
