// reduce_util.h - the data steps of the collectives: pack, unpack, copy and combine
// typed buffers, in parallel chunks when large, and the scratch buffers they use.
//
// What it is: the helpers through which the collective families (ops_*.cc), the
// blocking fast path (fast.cc, pcomm.cc) and the intercommunicator families (inter.cc)
// touch user data.  Reductions compute acc = x op acc element-wise:
// predefined ops on predefined types in libep's vectorized loops (runtime/reduce.h),
// everything else in MPI_Reduce_local, so user ops and every datatype work.  A step
// over `count` elements runs in chunks:
//   combine  (reduction_chunks) shared with the waiting members of the starter's
//            helper team if it has one (runtime/team.h), else in oneTBB chunks from
//            kParallelBytes on when the process has cores to spare (process_cores() >= 2;
//            never under TSAN, which cannot see into libtbb), else at once;
//   copy     (pack_n, unpack_n, copy_n) shared with a helper team's joined members,
//            else on the calling thread.
// Nothing is shared with a team when process_cores() < 2: chunks would only contend
// with the node's other processes.  Large scratch blocks are kept for the next
// reduction (ScratchPool: a fresh multi-MiB block costs a page fault per 4 KiB on first
// touch); release_scratch() frees them (EP_Finalize).
//
// Threading: every step runs on the calling thread (an op's starter or finisher, the
// fast path's last arrival), which may hand
// chunks to team members or oneTBB workers; it returns when every chunk is done, and
// distinct chunks touch distinct elements.  The scratch pool is thread-safe (its
// mutex); a TypedBuffer belongs to the thread that made it.
//
// Memory ordering: a chunk's writes by a team member happen before the step returns
// (the job's release increment of its done count, acquired by the poster:
// runtime/team.h); a oneTBB worker's, before parallel_for returns.  A scratch block
// given back under the pool's mutex happens before the next take that hands it out.
#ifndef EP_COLLECTIVES_REDUCE_UTIL_H_
#define EP_COLLECTIVES_REDUCE_UTIL_H_

#include <mpi.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/engine.h"
#include "runtime/datatype.h"
#include "runtime/team.h"

namespace ep::collectives {

// A step of at least this many bytes runs in parallel chunks (see above).
constexpr int64_t kParallelBytes = 256 * 1024;
// Chunk size of the steps a helper team shares (runtime/team.h): a few chunks per
// 1 MiB, so two or three threads balance and each chunk stays in L2.
constexpr int64_t kTeamGrainBytes = 128 * 1024;

// Element `i` of a buffer of `type` (MPI's extent arithmetic).
inline const char* elem(const void* base, int64_t i, const TypeInfo& ti) {
  return static_cast<const char*>(base) + i * ti.extent;
}
inline char* elem(void* base, int64_t i, const TypeInfo& ti) {
  return static_cast<char*>(base) + i * ti.extent;
}

// Runs fn(b, e) over [0, count) in chunks shared with `team`'s members when the step is
// large enough and `share` allows; false: nothing ran, do it alone.
bool team_chunks(runtime::Team* team, int count, const TypeInfo& ti,
                 const std::function<void(int64_t, int64_t)>& fn,
                 runtime::TeamShare share = runtime::TeamShare::kIfJoined);

// `count` elements described by `ti` at `buf`, packed; and back.  unpack_n writes whole
// elements only if `data` is short.
std::string pack_n(const void* buf, int count, const TypeInfo& ti, runtime::Team* team = nullptr);
void unpack_n(const std::string& data, void* buf, int count, const TypeInfo& ti,
              runtime::Team* team = nullptr);

// A scratch buffer of `count` elements of a type, laid out as in user memory
// (uninitialized: every use writes it before reading).  Large ones come from the pool.
class TypedBuffer {
 public:
  TypedBuffer(int count, const TypeInfo& ti);
  ~TypedBuffer();
  TypedBuffer(const TypedBuffer&) = delete;
  TypedBuffer& operator=(const TypedBuffer&) = delete;
  void* get() { return base_; }

 private:
  std::unique_ptr<char[]> mem_;
  size_t cap_ = 0;
  char* base_;
};

// Runs chunk(b, e) over [0, count) elements (see "combine" above).
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

// acc = x op acc, element-wise (a.op, a.type).
void reduce_into(const void* x, void* acc, int count, const OpArgs& a);
// out = x op y, `out` apart from both: one pass where libep's loops apply.
void combine_into(const void* x, const void* y, void* out, int count, const OpArgs& a);
// out = x0 op (x1 op (... op x(n-1))) for n >= 1 inputs, out apart from all of them
// (or, for n == 1, the input itself).
void reduce_all(const std::vector<const void*>& xs, void* out, int count, const OpArgs& a);
// dst = src, `count` elements of a.type.
void copy_n(const void* src, void* dst, int count, const OpArgs& a);

}  // namespace ep::collectives

#endif  // EP_COLLECTIVES_REDUCE_UTIL_H_
