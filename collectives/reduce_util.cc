// reduce_util.cc - pack, unpack, copy and combine typed buffers; the scratch pool.
#include "collectives/reduce_util.h"

#include <algorithm>
#include <mutex>

#include "base/mpi_calls.h"
#include "collectives/coll.h"
#include "runtime/reduce.h"

namespace ep::collectives {
namespace {

// Large scratch blocks kept for the next reduction (reduce_util.h).  At most kPoolBlocks
// blocks and kPoolBytes bytes are kept, each block used by one TypedBuffer at a time.
// Thread-safe (mu_).
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

TypedBuffer::TypedBuffer(int count, const TypeInfo& ti) {
  const int64_t textent = runtime::true_extent(ti);
  size_t span = count > 0 ? static_cast<size_t>(textent + (count - 1) * ti.extent) : 0;
  mem_ = scratch_pool().take(span + 1, &cap_);  // every use writes it before reading
  base_ = mem_.get() - ti.true_lb;
}

TypedBuffer::~TypedBuffer() { scratch_pool().give(std::move(mem_), cap_); }

// Copy steps run on one thread otherwise, so they are shared as soon as other members
// are joined (they take the chunks left when they reach leave/sync); combining has
// oneTBB otherwise, so it is shared only with members already waiting (kIfWaiting).
bool team_chunks(runtime::Team* team, int count, const TypeInfo& ti,
                 const std::function<void(int64_t, int64_t)>& fn, runtime::TeamShare share) {
  if (team == nullptr || ti.size == 0 || ti.size * count < kParallelBytes || process_cores() < 2) {
    return false;
  }
  const int64_t grain = std::max<int64_t>(1, kTeamGrainBytes / ti.size);
  return runtime::team_parallel_for(team, count, grain, fn, share);
}

std::string pack_n(const void* buf, int count, const TypeInfo& ti, runtime::Team* team) {
  std::string out(static_cast<size_t>(ti.size * count), '\0');
  if (out.empty()) return out;
  char* o = out.data();
  if (!team_chunks(team, count, ti, [&](int64_t b, int64_t e) {
        runtime::pack(elem(buf, b, ti), static_cast<int>(e - b), ti, o + b * ti.size);
      })) {
    runtime::pack(buf, count, ti, o);
  }
  return out;
}

void unpack_n(const std::string& data, void* buf, int count, const TypeInfo& ti,
              runtime::Team* team) {
  if (data.empty()) return;
  const char* in = data.data();
  // Chunks only for a whole payload (a short one unpacks whole elements only).
  if (static_cast<int64_t>(data.size()) == ti.size * count &&
      team_chunks(team, count, ti, [&](int64_t b, int64_t e) {
        runtime::unpack(in + b * ti.size, (e - b) * ti.size, elem(buf, b, ti),
                        static_cast<int>(e - b), ti);
      })) {
    return;
  }
  runtime::unpack(in, static_cast<int64_t>(data.size()), buf, count, ti);
}

void reduce_into(const void* x, void* acc, int count, const OpArgs& a) {
  reduction_chunks(count, a, [&](int64_t b, int64_t e) {
    if (!runtime::reduce_builtin(elem(x, b, a.ti), elem(acc, b, a.ti), e - b, a.type, a.op)) {
      EP_MPI(MPI_Reduce_local(elem(x, b, a.ti), elem(acc, b, a.ti), static_cast<int>(e - b), a.type,
                              a.op));
    }
  });
}

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
        runtime::copy(elem(src, b, a.ti), n, a.ti, elem(dst, b, a.ti), n, a.ti, a.ti.size * n);
      })) {
    return;
  }
  runtime::copy(src, count, a.ti, dst, count, a.ti, a.ti.size * count);
}

}  // namespace ep::collectives
