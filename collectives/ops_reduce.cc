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
    if (knows == Knows::kNothing) return;  // kNone (engine.h, "Erroneous endpoints")
    pattern = kind_ == Kind::kReduce ? Pattern::kGather : Pattern::kAllgather;
    root_frag = kind_ == Kind::kReduce ? c->frag_of[args.root] : 0;
    if (!has_data()) return;  // holes only: an empty blob (args may be unknown)
    ordered_ = commutative(args.op) || c->grouped;
    if (ordered_) {  // this fragment's partial, in rank order
      std::vector<const void*> xs;
      for (const Part& p : parts) {
        if (!p.hole) xs.push_back(input_of(p));
      }
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
      for (const Part& p : parts) {
        if (!p.hole) put_ranked(w, p.rank, pack_n(input_of(p), args.count, args.ti));
      }
      out = w.take();
    }
  }
  void finish() override {
    if (kind_ == Kind::kReduce && c->my_frag != root_frag) return;
    if (!has_data()) return;  // nothing to write here
    // An empty blob is a fragment of holes' (engine.h): it adds nothing.  Partials of
    // nothing (count 0) are empty too, and adding nothing changes nothing.
    if (ordered_ && args.ti.contiguous && kind_ != Kind::kReduceScatter) {
      finish_in_place();
      return;
    }
    TypedBuffer acc(args.count, args.ti), tmp(args.count, args.ti);
    std::vector<std::string*> xs;  // the contributions in rank order
    std::vector<std::string> by_rank;
    if (ordered_) {
      for (std::string& blob : in) xs.push_back(&blob);
    } else {
      by_rank.resize(static_cast<size_t>(c->size));
      for (const std::string& blob : in) {
        for_ranked(blob, [&](int r, std::string& b) { by_rank[r] = std::move(b); });
      }
      for (std::string& b : by_rank) xs.push_back(&b);
    }
    int last = static_cast<int>(xs.size()) - 1;
    while (last >= 0 && xs[last]->empty()) --last;
    if (last < 0) return;
    unpack_n(*xs[last], acc.get(), args.count, args.ti, args.team);
    for (int i = last - 1; i >= 0; --i) {
      if (xs[i]->empty()) continue;
      unpack_n(*xs[i], tmp.get(), args.count, args.ti, args.team);
      reduce_into(tmp.get(), acc.get(), args.count, args);
    }
    for (Part& p : parts) {
      if (p.hole) continue;
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
      if (!p.hole && (kind_ == Kind::kAllreduce || p.rank == args.root)) {
        target = p.rbuf;
        break;
      }
    }
    if (target == nullptr || args.count == 0) return;
    std::vector<const void*> xs;
    for (std::string& blob : in) {
      if (!blob.empty()) xs.push_back(typed(blob));
    }
    reduce_all(xs, target, args.count, args);
    for (Part& p : parts) {
      if (!p.hole && p.rbuf != target && (kind_ == Kind::kAllreduce || p.rank == args.root)) {
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
    for (const Part& p : parts) {
      if (!p.hole) put_ranked(w, p.rank, pack_n(input_of(p), args.count, args.ti));
    }
    out = w.take();
  }
  void finish() override {
    if (!has_data()) return;
    std::vector<std::string> by_rank(static_cast<size_t>(c->size));
    std::vector<bool> have(static_cast<size_t>(c->size), false);  // a hole's rank has none
    for (const std::string& blob : in) {
      for_ranked(blob, [&](int r, std::string& b) {
        by_rank[r] = std::move(b);
        have[r] = true;
      });
    }
    TypedBuffer acc(args.count, args.ti), tmp(args.count, args.ti);
    for (Part& p : parts) {
      if (p.hole) continue;
      int last = exclusive_ ? p.rank - 1 : p.rank;  // x0 op ... op x(last)
      while (last >= 0 && !have[last]) --last;
      if (last < 0) continue;  // Exscan at rank 0: the receive buffer is undefined
      unpack_n(by_rank[last], acc.get(), args.count, args.ti);
      for (int q = last - 1; q >= 0; --q) {
        if (!have[q]) continue;
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
