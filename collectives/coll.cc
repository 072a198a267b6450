#include "collectives/coll.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/types.h"
#include "runtime/error.h"
#include "runtime/exchange.h"
#include "runtime/reduce.h"
#include "runtime/runtime.h"
#include "runtime/team.h"

namespace ep::collectives {
namespace {

using runtime::BlobReader;
using runtime::BlobWriter;

// Element `i` of a buffer of `type` (MPI's extent arithmetic).
const char* elem(const void* base, int64_t i, const TypeInfo& ti) {
  return static_cast<const char*>(base) + i * ti.extent;
}
char* elem(void* base, int64_t i, const TypeInfo& ti) {
  return static_cast<char*>(base) + i * ti.extent;
}

// Helper teams (runtime/team.h): a step over `count` elements of `ti` runs in chunks
// shared with the team's waiting members when it is large enough; false: do it alone.
// Copy steps run on one thread otherwise, so they are shared as soon as other members
// are joined (they take the chunks left when they reach leave/sync); combining has
// oneTBB otherwise, so it is shared only with members already waiting.  Not shared
// when the process has one core's share or less (engine.h, process_cores): the
// members' chunks then only contend with the node's other processes (a 4 MiB
// allreduce on 2 processes x 1 endpoint, tools/bench/team_bench: 1176-1398 us alone,
// 1524-1913 us shared).
bool team_chunks(runtime::Team* team, int count, const TypeInfo& ti,
                 const std::function<void(int64_t, int64_t)>& fn,
                 runtime::TeamShare share = runtime::TeamShare::kIfJoined) {
  if (team == nullptr || ti.size == 0 || ti.size * count < kParallelBytes || process_cores() < 2) {
    return false;
  }
  const int64_t grain = std::max<int64_t>(1, kTeamGrainBytes / ti.size);
  return runtime::team_parallel_for(team, count, grain, fn, share);
}

std::string pack_n(const void* buf, int count, MPI_Datatype type, const TypeInfo& ti,
                   runtime::Team* team = nullptr) {
  std::string out(static_cast<size_t>(ti.size * count), '\0');
  if (out.empty()) return out;
  char* o = out.data();
  if (!team_chunks(team, count, ti, [&](int64_t b, int64_t e) {
        runtime::pack(elem(buf, b, ti), static_cast<int>(e - b), type, ti, o + b * ti.size);
      })) {
    runtime::pack(buf, count, type, ti, o);
  }
  return out;
}

void unpack_n(const std::string& data, void* buf, int count, MPI_Datatype type, const TypeInfo& ti,
              runtime::Team* team = nullptr) {
  if (data.empty()) return;
  const char* in = data.data();
  // Chunks only for a whole payload (a short one unpacks whole elements only).
  if (static_cast<int64_t>(data.size()) == ti.size * count &&
      team_chunks(team, count, ti, [&](int64_t b, int64_t e) {
        runtime::unpack(in + b * ti.size, (e - b) * ti.size, elem(buf, b, ti),
                        static_cast<int>(e - b), type, ti);
      })) {
    return;
  }
  runtime::unpack(in, static_cast<int64_t>(data.size()), buf, count, type, ti);
}

// Large scratch blocks are kept for the next reduction: a fresh multi-MiB block costs a
// page fault per 4 KiB on first touch (more than the copies themselves), and the
// allocator returns freed ones to the system.  At most kPoolBlocks blocks and
// kPoolBytes bytes are kept, each block used by one TypedBuffer at a time.  Thread-safe
// (mu_).
class ScratchPool {
 public:
  static constexpr size_t kMinBytes = static_cast<size_t>(kParallelBytes);
  static constexpr size_t kPoolBlocks = 4;
  static constexpr size_t kMaxBytes = size_t{32} << 20;   // larger blocks are not kept
  static constexpr size_t kPoolBytes = size_t{64} << 20;  // kept in all

  std::unique_ptr<char[]> take(size_t bytes, size_t* cap) {
    if (bytes >= kMinBytes && bytes <= kMaxBytes) {
      std::lock_guard<std::mutex> lock(mu_);
      // The smallest block that fits.
      size_t best = blocks_.size();
      for (size_t i = 0; i < blocks_.size(); ++i) {
        if (blocks_[i].cap >= bytes &&
            (best == blocks_.size() || blocks_[i].cap < blocks_[best].cap)) {
          best = i;
        }
      }
      if (best != blocks_.size()) {
        std::unique_ptr<char[]> m = std::move(blocks_[best].mem);
        *cap = blocks_[best].cap;
        blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(best));
        bytes_ -= *cap;
        return m;
      }
    }
    *cap = bytes;
    return std::unique_ptr<char[]>(new char[bytes]);  // uninitialized: written before read
  }
  void give(std::unique_ptr<char[]> mem, size_t cap) {
    if (cap < kMinBytes || cap > kMaxBytes) return;
    std::lock_guard<std::mutex> lock(mu_);
    // Make room by dropping smaller blocks; keep the new one only if that suffices.
    while (!blocks_.empty() && (blocks_.size() == kPoolBlocks || bytes_ + cap > kPoolBytes)) {
      auto it = std::min_element(blocks_.begin(), blocks_.end(),
                                 [](const Block& a, const Block& b) { return a.cap < b.cap; });
      if (it->cap >= cap) return;
      bytes_ -= it->cap;
      blocks_.erase(it);
    }
    blocks_.push_back(Block{std::move(mem), cap});
    bytes_ += cap;
  }
  // Frees every kept block (EP_Finalize).
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    blocks_.clear();
    bytes_ = 0;
  }

 private:
  struct Block {
    std::unique_ptr<char[]> mem;
    size_t cap;
  };
  std::mutex mu_;
  std::vector<Block> blocks_;  // guarded by mu_
  size_t bytes_ = 0;           // sum of blocks_' caps, guarded by mu_
};

ScratchPool& scratch_pool() {
  static ScratchPool* pool = new ScratchPool;  // never destroyed: used until exit
  return *pool;
}

}  // namespace

void release_scratch() { scratch_pool().clear(); }

namespace {

// A scratch buffer of `count` elements of `type`, laid out as in user memory.
class TypedBuffer {
 public:
  TypedBuffer(int count, MPI_Datatype type) {
    MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
    MPI_Type_get_extent(type, &lb, &extent);
    MPI_Type_get_true_extent(type, &tlb, &textent);
    size_t span = count > 0 ? static_cast<size_t>(textent + (count - 1) * extent) : 0;
    mem_ = scratch_pool().take(span + 1, &cap_);  // every use writes it before reading
    base_ = mem_.get() - tlb;
  }
  ~TypedBuffer() { scratch_pool().give(std::move(mem_), cap_); }
  TypedBuffer(const TypedBuffer&) = delete;
  TypedBuffer& operator=(const TypedBuffer&) = delete;
  void* get() { return base_; }

 private:
  std::unique_ptr<char[]> mem_;
  size_t cap_ = 0;
  char* base_;
};

// Runs chunk(b, e) over [0, count) elements: shared with a helper team's waiting
// members if the starter has one (the TBB pool is not theirs), else in parallel oneTBB
// chunks when large and the process has cores of its own to spare (process_cores()),
// else at once.
template <class Chunk>
void reduction_chunks(int count, const OpArgs& a, Chunk&& chunk) {
  if (count == 0) return;
  const int64_t bytes = a.ti.size * count;
#if defined(EP_SANITIZER_THREAD)
  // oneTBB's scheduler lives in libtbb.so, which is not instrumented: TSAN would report
  // its internal hand-offs as races.  Under TSAN the chunks run on this thread.
  const bool parallel = false;
#else
  const bool parallel = process_cores() >= 2;
#endif
  if (team_chunks(a.team, count, a.ti, chunk, runtime::TeamShare::kIfWaiting)) return;
  if (!parallel || bytes < kParallelBytes || a.ti.size == 0) {
    chunk(0, count);
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kParallelBytes / 4 / a.ti.size);
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, count, grain),
                    [&](const tbb::blocked_range<int64_t>& r) { chunk(r.begin(), r.end()); });
}

// acc = x op acc, element-wise.  Predefined ops on predefined types run in libep's
// vectorized loops (runtime/reduce.h), the rest in MPI_Reduce_local.
void reduce_into(const void* x, void* acc, int count, const OpArgs& a) {
  reduction_chunks(count, a, [&](int64_t b, int64_t e) {
    if (!runtime::reduce_builtin(elem(x, b, a.ti), elem(acc, b, a.ti), e - b, a.type, a.op)) {
      MPI_Reduce_local(elem(x, b, a.ti), elem(acc, b, a.ti), static_cast<int>(e - b), a.type, a.op);
    }
  });
}

void copy_n(const void* src, void* dst, int count, const OpArgs& a);

// out = x op y in one pass where libep's loops apply (else a copy and a reduction);
// `out` is apart from both.
void combine_into(const void* x, const void* y, void* out, int count, const OpArgs& a) {
  if (!runtime::reduce_builtin3(x, y, out, 0, a.type, a.op)) {  // not covered: two passes
    copy_n(y, out, count, a);
    reduce_into(x, out, count, a);
    return;
  }
  reduction_chunks(count, a, [&](int64_t b, int64_t e) {
    runtime::reduce_builtin3(elem(x, b, a.ti), elem(y, b, a.ti), elem(out, b, a.ti), e - b, a.type,
                             a.op);
  });
}

// out = x0 op (x1 op (... op x(n-1))) for n >= 1 inputs, out apart from all of them
// (or, for n == 1, the input itself).
void reduce_all(const std::vector<const void*>& xs, void* out, int count, const OpArgs& a) {
  const int n = static_cast<int>(xs.size());
  if (n == 1) {
    if (xs[0] != out) copy_n(xs[0], out, count, a);  // a lone in-place input is there
    return;
  }
  combine_into(xs[n - 2], xs[n - 1], out, count, a);
  for (int i = n - 3; i >= 0; --i) reduce_into(xs[i], out, count, a);
}

void copy_n(const void* src, void* dst, int count, const OpArgs& a) {
  if (team_chunks(a.team, count, a.ti, [&](int64_t b, int64_t e) {
        const int n = static_cast<int>(e - b);
        runtime::copy(elem(src, b, a.ti), n, a.type, a.ti, elem(dst, b, a.ti), n, a.type, a.ti,
                      a.ti.size * n);
      })) {
    return;
  }
  runtime::copy(src, count, a.type, a.ti, dst, count, a.type, a.ti, a.ti.size * count);
}

const void* input_of(const Part& p) { return p.sbuf == in_place() ? p.rbuf : p.sbuf; }

bool commutative(MPI_Op op) {
  int flag = 1;
  MPI_Op_commutative(op, &flag);
  return flag != 0;
}

Part* part_of_rank(CollOp& op, int rank) {
  const runtime::EpAddr& a = op.c->addr[rank];
  if (op.c->frag_of[rank] != op.c->my_frag) return nullptr;
  return &op.parts[a.local];
}

// Per-rank blobs: (rank, bytes) pairs.
void put_ranked(BlobWriter& w, int rank, const std::string& bytes) {
  w.put<int>(rank);
  w.put_bytes(bytes);
}

template <class F>
void for_ranked(const std::string& blob, F&& f) {
  BlobReader rd(blob);
  while (!rd.done()) {
    int r = rd.get<int>();
    std::string b = rd.get_bytes();
    f(r, b);
  }
}

class BarrierOp final : public CollOp {
 public:
  void start() override { pattern = Pattern::kAllgather; }
  void finish() override {}
};

class BcastOp final : public CollOp {
 public:
  void start() override {
    pattern = Pattern::kBcast;
    root_frag = c->frag_of[args.root];
    if (Part* r = part_of_rank(*this, args.root))
      out = pack_n(r->rbuf, r->rcount, r->rtype, r->rti);
  }
  void finish() override {
    const std::string& data = in[root_frag];
    for (Part& p : parts) {
      if (p.rank != args.root) unpack_n(data, p.rbuf, p.rcount, p.rtype, p.rti);
    }
  }
};

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
        TypedBuffer acc(args.count, args.type);
        reduce_all(xs, acc.get(), args.count, args);
        out = pack_n(acc.get(), args.count, args.type, args.ti, args.team);
      }
    } else {  // every rank's input
      BlobWriter w;
      for (const Part& p : parts)
        put_ranked(w, p.rank, pack_n(input_of(p), args.count, args.type, args.ti));
      out = w.take();
    }
  }
  void finish() override {
    if (kind_ == Kind::kReduce && c->my_frag != root_frag) return;
    if (ordered_ && args.ti.contiguous && kind_ != Kind::kReduceScatter) {
      finish_in_place();
      return;
    }
    TypedBuffer acc(args.count, args.type), tmp(args.count, args.type);
    if (ordered_) {
      const int n = static_cast<int>(in.size());
      unpack_n(in[n - 1], acc.get(), args.count, args.type, args.ti, args.team);
      for (int f = n - 2; f >= 0; --f) {
        unpack_n(in[f], tmp.get(), args.count, args.type, args.ti, args.team);
        reduce_into(tmp.get(), acc.get(), args.count, args);
      }
    } else {
      std::vector<std::string> by_rank(static_cast<size_t>(c->size));
      for (const std::string& blob : in) {
        for_ranked(blob, [&](int r, std::string& b) { by_rank[r] = std::move(b); });
      }
      unpack_n(by_rank[c->size - 1], acc.get(), args.count, args.type, args.ti);
      for (int r = c->size - 2; r >= 0; --r) {
        unpack_n(by_rank[r], tmp.get(), args.count, args.type, args.ti);
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

// Gather(v), Allgather(v).
class GatherOp final : public CollOp {
 public:
  explicit GatherOp(bool all) : all_(all) {}
  void start() override {
    pattern = all_ ? Pattern::kAllgather : Pattern::kGather;
    root_frag = all_ ? 0 : c->frag_of[args.root];
    BlobWriter w;
    for (const Part& p : parts) {
      if (p.sbuf == in_place()) {  // the block already sits in the receive buffer
        put_ranked(
            w, p.rank,
            pack_n(elem(p.rbuf, p.rdispls[p.rank], p.rti), p.rcounts[p.rank], p.rtype, p.rti));
      } else {
        put_ranked(w, p.rank, pack_n(p.sbuf, p.scount, p.stype, p.sti));
      }
    }
    out = w.take();
  }
  void finish() override {
    if (!all_ && c->my_frag != root_frag) return;
    for (const std::string& blob : in) {
      for_ranked(blob, [&](int r, std::string& b) {
        for (Part& p : parts) {
          if ((!all_ && p.rank != args.root) || (p.sbuf == in_place() && r == p.rank)) continue;
          unpack_n(b, elem(p.rbuf, p.rdispls[r], p.rti), p.rcounts[r], p.rtype, p.rti);
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
    pattern = Pattern::kScatter;
    root_frag = c->frag_of[args.root];
    Part* root = part_of_rank(*this, args.root);
    if (root == nullptr) return;
    std::vector<BlobWriter> w(c->frag_leaders.size());
    for (int r = 0; r < c->size; ++r) {
      put_ranked(w[c->frag_of[r]], r,
                 pack_n(elem(root->sbuf, root->sdispls[r], root->sti), root->scounts[r],
                        root->stype, root->sti));
    }
    out_for.clear();
    for (BlobWriter& x : w) out_for.push_back(x.take());
  }
  void finish() override {
    for_ranked(in[c->my_frag == root_frag ? c->my_frag : root_frag], [&](int r, std::string& b) {
      Part* p = part_of_rank(*this, r);
      if (p == nullptr || (r == args.root && p->rbuf == in_place())) return;
      unpack_n(b, p->rbuf, p->rcount, p->rtype, p->rti);
    });
  }
};

// Alltoall(v).
class AlltoallOp final : public CollOp {
 public:
  void start() override {
    pattern = Pattern::kAlltoall;
    std::vector<BlobWriter> w(c->frag_leaders.size());
    for (const Part& p : parts) {
      const bool in_place = p.sbuf == ep::in_place();
      const void* base = in_place ? p.rbuf : p.sbuf;
      const std::vector<int>& cnt = in_place ? p.rcounts : p.scounts;
      const std::vector<int>& dsp = in_place ? p.rdispls : p.sdispls;
      const TypeInfo& ti = in_place ? p.rti : p.sti;
      MPI_Datatype t = in_place ? p.rtype : p.stype;
      for (int d = 0; d < c->size; ++d) {
        BlobWriter& x = w[c->frag_of[d]];
        x.put<int>(p.rank);
        x.put<int>(d);
        x.put_bytes(pack_n(elem(base, dsp[d], ti), cnt[d], t, ti));
      }
    }
    out_for.clear();
    for (BlobWriter& x : w) out_for.push_back(x.take());
  }
  void finish() override {
    for (const std::string& blob : in) {
      BlobReader rd(blob);
      while (!rd.done()) {
        int src = rd.get<int>();
        int dst = rd.get<int>();
        std::string b = rd.get_bytes();
        Part* p = part_of_rank(*this, dst);
        if (p != nullptr)
          unpack_n(b, elem(p->rbuf, p->rdispls[src], p->rti), p->rcounts[src], p->rtype, p->rti);
      }
    }
  }
};

// Scan, Exscan: every fragment gets every input and applies the op in rank order.
class ScanOp final : public CollOp {
 public:
  explicit ScanOp(bool exclusive) : exclusive_(exclusive) {}
  void start() override {
    pattern = Pattern::kAllgather;
    BlobWriter w;
    for (const Part& p : parts)
      put_ranked(w, p.rank, pack_n(input_of(p), args.count, args.type, args.ti));
    out = w.take();
  }
  void finish() override {
    std::vector<std::string> by_rank(static_cast<size_t>(c->size));
    for (const std::string& blob : in) {
      for_ranked(blob, [&](int r, std::string& b) { by_rank[r] = std::move(b); });
    }
    TypedBuffer acc(args.count, args.type), tmp(args.count, args.type);
    for (Part& p : parts) {
      const int last = exclusive_ ? p.rank - 1 : p.rank;  // x0 op ... op x(last)
      if (last < 0) continue;  // Exscan at rank 0: the receive buffer is undefined
      unpack_n(by_rank[last], acc.get(), args.count, args.type, args.ti);
      for (int q = last - 1; q >= 0; --q) {
        unpack_n(by_rank[q], tmp.get(), args.count, args.type, args.ti);
        reduce_into(tmp.get(), acc.get(), args.count, args);
      }
      copy_n(acc.get(), p.rbuf, args.count, args);
    }
  }

 private:
  bool exclusive_;
};

// ---- The blocking fast path (engine.h) ---------------------------------------------

// The predefined ops a collective reduction may use (MPI_REPLACE and MPI_NO_OP are for
// accumulates only); all of them are commutative.
bool predefined_op(MPI_Op op) {
  for (MPI_Op p : {MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD, MPI_LAND, MPI_BAND, MPI_LOR, MPI_BOR,
                   MPI_LXOR, MPI_BXOR, MPI_MAXLOC, MPI_MINLOC}) {
    if (op == p) return true;
  }
  return false;
}

// Makes fs->pcomm on the first fast operation: one rank per fragment, in fragment
// order, when every fragment is in its own process.  Every fragment's last arrival
// calls this in the same operation, so the collective MPI_Comm_create_group matches.
void make_pcomm(CommShared* c, FastState* fs) {
  fs->pcomm_tried = true;
  const int n = static_cast<int>(c->frag_leaders.size());
  std::vector<int> procs(static_cast<size_t>(n));
  for (int f = 0; f < n; ++f) procs[f] = c->addr[c->frag_leaders[f]].proc;
  std::vector<int> sorted = procs;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return;  // shared
  // The tag tells concurrent creations apart (other communicators' first operations
  // on other threads).  Fragment 0's context id is unique in its process among live
  // communicators, and every member knows it.
  int world = 1, *tag_ub = nullptr, flag = 0;
  MPI_Comm_size(base_comm(), &world);
  MPI_Comm_get_attr(base_comm(), MPI_TAG_UB, &tag_ub, &flag);
  const int64_t ub = flag != 0 ? *tag_ub : 32767;
  const runtime::EpAddr& first = c->addr[c->frag_leaders[0]];
  const int tag = static_cast<int>((static_cast<int64_t>(first.ctx / 2) * world + first.proc) % ub);
  // All fragments make it or none (a creation some process skipped would hang): each
  // sends its vote to every other.  The votes are MPI messages on the base
  // communicator, not libep messages: a process whose vote is complete enters the
  // blocking MPI_Comm_create_group, which keeps MPICH's global lock from its progress
  // thread - had its own vote still waited in the engine for that thread, the others
  // would wait until MPICH let the lock go (the first allreduce on a new communicator
  // took 740 us on 2 x 2 so, one process's vote or creation taking 230-640 us).
  const char mine_ok = reserve_process_comm() ? 1 : 0;
  std::vector<char> votes(static_cast<size_t>(n), 0);
  std::vector<MPI_Request> reqs;
  reqs.reserve(2 * static_cast<size_t>(n));
  for (int f = 0; f < n; ++f) {
    if (f == c->my_frag) continue;
    reqs.emplace_back();
    MPI_Irecv(&votes[f], 1, MPI_CHAR, procs[f], tag, base_comm(), &reqs.back());
    reqs.emplace_back();
    MPI_Isend(&mine_ok, 1, MPI_CHAR, procs[f], tag, base_comm(), &reqs.back());
  }
  votes[c->my_frag] = mine_ok;
  const bool all_ok =
      runtime::wait_mpi(reqs.data(), static_cast<int>(reqs.size())) == MPI_SUCCESS &&
      std::all_of(votes.begin(), votes.end(), [](char v) { return v == 1; });
  if (!all_ok) {
    if (mine_ok) release_process_comm();
    return;
  }
  MPI_Group all = MPI_GROUP_NULL, mine = MPI_GROUP_NULL;
  MPI_Comm_group(base_comm(), &all);
  MPI_Group_incl(all, n, procs.data(), &mine);
  MPI_Comm pcomm = MPI_COMM_NULL;
  if (MPI_Comm_create_group(base_comm(), mine, tag, &pcomm) == MPI_SUCCESS) {
    MPI_Comm_set_errhandler(pcomm, MPI_ERRORS_RETURN);
    fs->pcomm = pcomm;
  } else {
    release_process_comm();
  }
  MPI_Group_free(&mine);
  MPI_Group_free(&all);
}

// The exchange among fragments on the process-level communicator `pc` (rank = fragment):
// recursive doubling for a commutative op (every predefined op is), any number of
// fragments - the first 2*rem (rem = n minus the largest power of two in n) fold into
// pairs before and get the result after.  `acc` holds this fragment's partial and
// receives the total; `tmp` holds one more such buffer.  Point-to-point instead of
// MPI_Allreduce: MPICH's blocking collectives hold
// its global lock against the progress thread for the whole wait, and its nonblocking
// ones cost twice as much for a few bytes; these waits (runtime::wait_mpi) serve the
// engine.  Tags tell the steps apart; one fragment's operations are sequential and
// per-pair order keeps operations apart.
int exchange(MPI_Comm pc, int me, int n, void* acc, void* tmp, const OpArgs& a) {
  constexpr int kPreTag = 1, kPostTag = 2, kRoundTag = 8;
  // Sends `sbuf` and/or receives into `rbuf` (either may be NULL with count 0, so
  // whether to send and receive are told apart from the buffers).
  enum Dir { kSend = 1, kRecv = 2, kBoth = 3 };
  auto step = [&](int peer, int tag, Dir dir, const void* sbuf, void* rbuf) {
    MPI_Request r[2];
    int k = 0;
    if ((dir & kRecv) != 0) MPI_Irecv(rbuf, a.count, a.type, peer, tag, pc, &r[k++]);
    if ((dir & kSend) != 0) MPI_Isend(sbuf, a.count, a.type, peer, tag, pc, &r[k++]);
    return runtime::wait_mpi(r, k);
  };
  int pof2 = 1;
  while (pof2 * 2 <= n) pof2 *= 2;
  const int rem = n - pof2;
  int err = MPI_SUCCESS;
  int newrank = me - rem;
  if (me < 2 * rem) {
    if (me % 2 == 0) {
      err = step(me + 1, kPreTag, kSend, acc, nullptr);
      newrank = -1;
    } else {
      err = step(me - 1, kPreTag, kRecv, nullptr, tmp);
      reduce_into(tmp, acc, a.count, a);
      newrank = me / 2;
    }
  }
  for (int mask = 1, round = 0; newrank >= 0 && mask < pof2 && err == MPI_SUCCESS;
       mask <<= 1, ++round) {
    const int pn = newrank ^ mask;
    const int peer = pn < rem ? pn * 2 + 1 : pn + rem;
    err = step(peer, kRoundTag + round, kBoth, acc, tmp);
    reduce_into(tmp, acc, a.count, a);
  }
  if (me < 2 * rem && err == MPI_SUCCESS) {
    err = me % 2 != 0 ? step(me - 1, kPostTag, kSend, acc, nullptr)
                      : step(me + 1, kPostTag, kRecv, nullptr, acc);
  }
  return err;
}

// The large exchange (more than kFastBytes, contiguous type; engine.h, "The blocking
// fast path", large): a ring reduce-scatter, then a ring allgather, among the n fragments on
// `pc` (rank = fragment), with the local combine folded into it.  The vector is cut
// into n blocks; in reduce-scatter step s a fragment sends block me-s to its right
// neighbour and receives block me-s-1 from its left one; after n-1 steps it holds the
// total of block me+1, and the allgather's n-1 steps pass the totals around.  Each
// fragment combines its endpoints' inputs for a block only when the block first goes
// out or comes in (block me before step 0; every other block together with the
// partial received for it), in cache-sized pieces, and writes a block to the other
// outputs as soon as it holds the block's total - so each input is read once, each
// output written once, and (n-1)/n of the vector travels each way twice instead of
// all of it once.  Counted in vector-sized reads plus writes per process, 2 x 2 takes
// 7 instead of the engine path's 10 (combine, swap whole partials, combine, copy out).
//   xs    the inputs, local rank order        acc   the output that combines (apart
//   outs  every other output                        from every input)
//   tmp   scratch of one block
// Every block's total is computed by one fragment and copied to the rest, so all
// endpoints get the same bits.  Tags kRingTag + step; one fragment's operations are
// sequential and per-pair order keeps operations apart.
constexpr int64_t kPieceBytes = 16 * 1024;  // a piece of a block (fits L1 with its inputs)

int ring_exchange(MPI_Comm pc, int me, int n, const std::vector<const void*>& xs, void* acc,
                  const std::vector<void*>& outs, void* tmp, const OpArgs& a) {
  constexpr int kRingTag = 64;
  const TypeInfo& ti = a.ti;
  auto off = [&](int j) { return static_cast<int64_t>(a.count) * j / n; };
  auto len = [&](int j) { return static_cast<int>(off(j + 1) - off(j)); };
  auto blk = [&](int j) { return ((j % n) + n) % n; };
  // acc[block j] = x0 op (x1 op ...) [op extra], then, if `total`, copied to outs;
  // piece by piece so that each piece is still in cache for the next pass over it.
  auto combine = [&](int j, const void* extra, bool total) {
    const int64_t j0 = off(j);
    const int64_t piece = std::max<int64_t>(1, kPieceBytes / ti.extent);
    reduction_chunks(len(j), a, [&](int64_t b, int64_t e) {
      std::vector<const void*> px(xs.size());
      for (int64_t p = b; p < e; p += piece) {
        const int k = static_cast<int>(std::min(e, p + piece) - p);
        for (size_t i = 0; i < xs.size(); ++i) px[i] = elem(xs[i], j0 + p, ti);
        void* target = elem(acc, j0 + p, ti);
        reduce_all(px, target, k, a);
        if (extra != nullptr) reduce_into(elem(extra, p, ti), target, k, a);
        if (total) {
          for (void* o : outs) copy_n(target, elem(o, j0 + p, ti), k, a);
        }
      }
    });
  };
  auto swap = [&](int tag, int sj, int rj, void* rbuf) {
    MPI_Request r[2];
    MPI_Irecv(rbuf, len(rj), a.type, blk(me - 1), tag, pc, &r[0]);
    MPI_Isend(elem(acc, off(sj), ti), len(sj), a.type, blk(me + 1), tag, pc, &r[1]);
    return runtime::wait_mpi(r, 2);
  };
  combine(me, nullptr, false);
  for (int s = 0; s < n - 1; ++s) {  // reduce-scatter
    const int rj = blk(me - s - 1);
    if (int err = swap(kRingTag + s, blk(me - s), rj, tmp); err != MPI_SUCCESS) return err;
    combine(rj, tmp, s == n - 2);
  }
  for (int s = 0; s < n - 1; ++s) {  // allgather
    const int rj = blk(me - s);
    void* target = elem(acc, off(rj), ti);
    if (int err = swap(kRingTag + n + s, blk(me + 1 - s), rj, target); err != MPI_SUCCESS) {
      return err;
    }
    for (void* o : outs) copy_n(target, elem(o, off(rj), ti), len(rj), a);
  }
  return MPI_SUCCESS;
}

// A scratch buffer of the op's count and type, made at the first get(): on the stack
// when a contiguous type fits kFastBytes, else a TypedBuffer.
class FastScratch {
 public:
  explicit FastScratch(const OpArgs& a) : a_(a) {}
  void* get() {
    if (ptr_ != nullptr) return ptr_;
    if (a_.ti.contiguous && a_.ti.true_lb == 0 && a_.ti.extent == a_.ti.size &&
        a_.ti.size * a_.count <= kFastBytes) {
      ptr_ = stack_;
    } else {
      heap_ = std::make_unique<TypedBuffer>(a_.count, a_.type);
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

// The last arrival's work: every slot has arrived.  Returns an EP_* code.
int fast_last(CommShared* c, FastState* fs, const OpArgs& a) {
  const int nfrag = static_cast<int>(c->frag_leaders.size());
  if (nfrag > 1 && !fs->pcomm_tried) make_pcomm(c, fs);
  // The partial of this fragment (local rank order), then the result, in `acc`: the
  // output buffer of an endpoint that did not pass EP_IN_PLACE (combining needs a
  // target apart from every input), else scratch.  A lone endpoint's buffers serve as
  // they are.
  std::vector<FastState::Slot>& slots = fs->slots;
  const void* in = slots[0].in;
  void* acc = slots[0].out;
  FastScratch scratch(a), tmp(a);
  const bool ring = nfrag > 1 && fs->pcomm != MPI_COMM_NULL && a.ti.size * a.count > kFastBytes;
  std::vector<const void*> xs;  // the inputs, when something combines them
  if (slots.size() > 1 || ring) {
    for (const FastState::Slot& s : slots) xs.push_back(s.in);
  }
  if (slots.size() > 1) {
    acc = nullptr;
    for (const FastState::Slot& s : slots) {
      if (s.in != s.out) {
        acc = s.out;
        break;
      }
    }
    if (acc == nullptr) acc = scratch.get();  // every endpoint passed EP_IN_PLACE
  }
  if (ring) {
    std::vector<void*> outs;
    for (const FastState::Slot& s : slots) {
      if (s.out != acc) outs.push_back(s.out);
    }
    // One block of scratch: the largest block has ceil(count / nfrag) elements.
    TypedBuffer block((a.count + nfrag - 1) / nfrag, a.type);
    return runtime::from_mpi(
        ring_exchange(fs->pcomm, c->my_frag, nfrag, xs, acc, outs, block.get(), a));
  }
  if (slots.size() > 1) {
    reduce_all(xs, acc, a.count, a);
    in = acc;
  }
  int err = EP_SUCCESS;
  if (nfrag > 1 && fs->pcomm != MPI_COMM_NULL) {
    if (in != acc) copy_n(in, acc, a.count, a);
    err = runtime::from_mpi(exchange(fs->pcomm, c->my_frag, nfrag, acc, tmp.get(), a));
  } else if (nfrag > 1) {
    std::vector<std::string> blobs =
        runtime::frag_allgather(c, kFastTag, pack_n(in, a.count, a.type, a.ti));
    unpack_n(blobs[nfrag - 1], acc, a.count, a.type, a.ti);
    for (int f = nfrag - 2; f >= 0; --f) {
      unpack_n(blobs[f], tmp.get(), a.count, a.type, a.ti);
      reduce_into(tmp.get(), acc, a.count, a);
    }
  } else if (in != acc) {
    copy_n(in, acc, a.count, a);
  }
  for (const FastState::Slot& s : slots) {
    if (s.out != acc) copy_n(acc, s.out, a.count, a);
  }
  return err;
}

std::unique_ptr<CollOp> make_op(Kind kind) {
  switch (kind) {
    case Kind::kBarrier:
      return std::make_unique<BarrierOp>();
    case Kind::kBcast:
      return std::make_unique<BcastOp>();
    case Kind::kReduce:
    case Kind::kAllreduce:
    case Kind::kReduceScatter:
      return std::make_unique<ReduceOp>(kind);
    case Kind::kGather:
      return std::make_unique<GatherOp>(false);
    case Kind::kAllgather:
      return std::make_unique<GatherOp>(true);
    case Kind::kScatter:
      return std::make_unique<ScatterOp>();
    case Kind::kAlltoall:
      return std::make_unique<AlltoallOp>();
    case Kind::kScan:
      return std::make_unique<ScanOp>(false);
    case Kind::kExscan:
      return std::make_unique<ScanOp>(true);
  }
  return nullptr;
}

Endpoint* local_side(Endpoint* ep) { return ep->comm->local_comm->local[ep->local_index].get(); }

}  // namespace

bool run_fast(Endpoint* ep, Kind kind, const Part& part, const OpArgs& a, int* err) {
  // Barriers stay on the engine's path: see engine.h ("Why not barriers").
  if (kind != Kind::kAllreduce || !predefined_op(a.op) ||
      (a.ti.size * a.count > kFastBytes && !a.ti.contiguous)) {
    return false;
  }
  CommShared* c = ep->comm;
  FastState* fs = fast_state(c);
  FastState::Slot& slot = fs->slots[static_cast<size_t>(ep->local_index)];
  slot.in = input_of(part);
  slot.out = part.rbuf;
  const uint32_t gen = fs->gen.load(std::memory_order_acquire);  // pairs: fetch_add below
  const int n = static_cast<int>(fs->slots.size());
  // acq_rel: releases our slot; the last acquires every slot (one release sequence).
  if (fs->arrived.fetch_add(1, std::memory_order_acq_rel) == n - 1) {
    // A helper team's waiting members take chunks of a large combine (runtime/team.h),
    // as on the engine's path; the reference keeps the team while they may run them.
    OpArgs la = a;
    if (a.ti.size * a.count > kFastBytes && (la.team = runtime::current_team()) != nullptr) {
      la.team->ref();
    }
    fs->err = fast_last(c, fs, la);
    if (la.team != nullptr) la.team->unref();
    *err = fs->err;
    fs->arrived.store(0, std::memory_order_relaxed);  // published by the fetch_add below
    fs->gen.fetch_add(1, std::memory_order_release);  // publishes outputs, err, the reset
    fs->released.notify();
    return true;
  }
  // acquire: pairs with the last arrival's release increment.
  runtime::wait_until(fs->released,
                      [fs, gen] { return fs->gen.load(std::memory_order_acquire) != gen; });
  *err = fs->err;
  return true;
}

Request* start(Endpoint* ep, Kind kind, Part part, const OpArgs& args) {
  return arrive(ep, std::move(part), [kind, &args] {
    std::unique_ptr<CollOp> op = make_op(kind);
    op->args = args;
    return op;
  });
}

// ---- intercommunicators ------------------------------------------------------------

int inter_barrier(Endpoint* ep) {
  // Everyone of my group arrived; the rank-0 endpoints swap that news; then release.
  const int tag = runtime::hidden_tag(ep);
  Endpoint* lep = local_side(ep);
  runtime::barrier(lep);
  if (ep->rank == 0) runtime::sendrecv_hidden(ep, 0, tag, std::string(), 0, tag);
  runtime::bcast(lep, 0, std::string());
  return EP_SUCCESS;
}

int inter_bcast(Endpoint* ep, void* buf, int count, MPI_Datatype type, const TypeInfo& ti,
                int root) {
  const int tag = runtime::hidden_tag(ep);
  if (root == kRoot) {  // the root sends to rank 0 of the other group
    runtime::send_hidden(ep, 0, tag, pack_n(buf, count, type, ti));
    return EP_SUCCESS;
  }
  if (root == kProcNull) return EP_SUCCESS;  // the rest of the root's group
  std::string data;
  if (ep->rank == 0) data = runtime::recv_hidden(ep, root, tag);
  data = runtime::bcast(local_side(ep), 0, std::move(data));
  unpack_n(data, buf, count, type, ti);
  return EP_SUCCESS;
}

int inter_allreduce(Endpoint* ep, const void* sbuf, void* rbuf, int count, MPI_Datatype type,
                    const TypeInfo& ti, MPI_Op op) {
  // Each group reduces its own data (an allreduce on its local_comm); the rank-0
  // endpoints swap the results; each group receives the other group's reduction.
  const int tag = runtime::hidden_tag(ep);
  Endpoint* lep = local_side(ep);
  OpArgs a;
  a.op = op;
  a.count = count;
  a.type = type;
  a.ti = ti;
  TypedBuffer own(count, type);
  Part part;
  part.sbuf = sbuf;
  part.rbuf = own.get();
  Request* r = start(lep, Kind::kAllreduce, part, a);
  runtime::request_wait(r);
  runtime::request_unref(r);
  std::string other;
  if (ep->rank == 0)
    other = runtime::sendrecv_hidden(ep, 0, tag, pack_n(own.get(), count, type, ti), 0, tag);
  unpack_n(runtime::bcast(lep, 0, std::move(other)), rbuf, count, type, ti);
  return EP_SUCCESS;
}

}  // namespace ep::collectives
