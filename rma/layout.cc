#include "rma/layout.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <initializer_list>
#include <type_traits>

#include "base/mpi_calls.h"
#include "runtime/datatype.h"
#include "runtime/reduce.h"

namespace ep::rma {

using runtime::is_complex;
using runtime::is_floating;
using runtime::is_integer;
using runtime::is_logical;
using runtime::is_pair;

namespace {

// A predefined contiguous type's description from the runtime's builtin table (filled
// by the first use, then read without an MPI call); false for any other type.
bool builtin_info(MPI_Datatype t, runtime::TypeInfo* ti) {
  return runtime::is_builtin_type(t) && runtime::describe(t, ti) && ti->named && ti->contiguous;
}

int combiner_of(MPI_Datatype t) {
  int ni = 0, na = 0, nd = 0, combiner = 0;
  EP_MPI(MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner));
  return combiner;
}

class Flattener {
 public:
  explicit Flattener(Layout* out) : out_(out) {}

  // `n` consecutive elements of `t` (one extent apart) starting at `disp`.
  void emit(MPI_Datatype t, int64_t disp, int64_t n) {
    if (n <= 0 || failed_) return;
    runtime::TypeInfo ti;
    if (builtin_info(t, &ti)) {  // the common case, without asking MPI
      note_basic(t, ti.size);
      if (ti.size == ti.extent) {
        append(disp + ti.true_lb, n * ti.size);
      } else {
        for (int64_t i = 0; i < n; ++i) append(disp + ti.true_lb + i * ti.extent, ti.size);
      }
      return;
    }
    MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
    EP_MPI(MPI_Type_get_extent(t, &lb, &extent));
    EP_MPI(MPI_Type_get_true_extent(t, &tlb, &textent));
    if (combiner_of(t) == MPI_COMBINER_NAMED) {
      note_basic(t, textent);
      if (textent == extent) {
        append(disp + tlb, n * textent);
      } else {
        for (int64_t i = 0; i < n; ++i) append(disp + tlb + i * extent, textent);
      }
      return;
    }
    int size = 0;
    EP_MPI(MPI_Type_size(t, &size));
    one(t, disp);  // the first element also finds the element type
    if (size == textent && extent == textent) {
      append(disp + tlb + extent, (n - 1) * extent);  // a dense run: one block
    } else {
      for (int64_t i = 1; i < n && !failed_; ++i) one(t, disp + i * extent);
    }
  }

  bool failed() const { return failed_; }
  const char* why() const { return why_; }

 private:
  void one(MPI_Datatype t, int64_t disp) {
    int ni = 0, na = 0, nd = 0, combiner = 0;
    EP_MPI(MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner));
    if (combiner == MPI_COMBINER_NAMED) {
      emit(t, disp, 1);
      return;
    }
    std::vector<int> ints(static_cast<size_t>(ni));
    std::vector<MPI_Aint> aints(static_cast<size_t>(na));
    std::vector<MPI_Datatype> types(static_cast<size_t>(nd));
    EP_MPI(MPI_Type_get_contents(t, ni, na, nd, ints.data(), aints.data(), types.data()));
    auto extent_of = [](MPI_Datatype c) {
      MPI_Aint lb = 0, extent = 0;
      EP_MPI(MPI_Type_get_extent(c, &lb, &extent));
      return static_cast<int64_t>(extent);
    };
    switch (combiner) {
      case MPI_COMBINER_DUP:
      case MPI_COMBINER_RESIZED:  // lb/extent only space the parent's elements
        one(types[0], disp);
        break;
      case MPI_COMBINER_CONTIGUOUS:
        emit(types[0], disp, ints[0]);
        break;
      case MPI_COMBINER_VECTOR:
      case MPI_COMBINER_HVECTOR: {
        int64_t stride = combiner == MPI_COMBINER_VECTOR
                             ? static_cast<int64_t>(ints[2]) * extent_of(types[0])
                             : static_cast<int64_t>(aints[0]);
        for (int i = 0; i < ints[0]; ++i) emit(types[0], disp + i * stride, ints[1]);
        break;
      }
      case MPI_COMBINER_INDEXED:
      case MPI_COMBINER_HINDEXED: {
        const int n = ints[0];
        const int64_t ext = extent_of(types[0]);
        for (int i = 0; i < n; ++i) {
          int64_t d = combiner == MPI_COMBINER_INDEXED ? ints[1 + n + i] * ext : aints[i];
          emit(types[0], disp + d, ints[1 + i]);
        }
        break;
      }
      case MPI_COMBINER_INDEXED_BLOCK:
      case MPI_COMBINER_HINDEXED_BLOCK: {
        const int64_t ext = extent_of(types[0]);
        for (int i = 0; i < ints[0]; ++i) {
          int64_t d = combiner == MPI_COMBINER_INDEXED_BLOCK ? ints[2 + i] * ext : aints[i];
          emit(types[0], disp + d, ints[1]);
        }
        break;
      }
      case MPI_COMBINER_STRUCT:
        for (int i = 0; i < ints[0]; ++i) emit(types[i], disp + aints[i], ints[1 + i]);
        break;
      default:
        failed_ = true;
        why_ =
            "is a subarray, darray or Fortran datatype, which one-sided operations of "
            "libep do not support";
        break;
    }
    for (MPI_Datatype& c : types) {
      if (combiner_of(c) != MPI_COMBINER_NAMED) EP_MPI(MPI_Type_free(&c));
    }
  }

  void append(int64_t off, int64_t len) {
    if (len <= 0) return;
    if (!out_->blocks.empty()) {
      Block& last = out_->blocks.back();
      if (last.off + last.len == off) {
        last.len += len;
        return;
      }
    }
    out_->blocks.push_back(Block{off, len, 0});
  }

  void note_basic(MPI_Datatype t, int64_t elem) {
    if (!have_basic_) {
      have_basic_ = true;
      out_->basic = t;
      out_->elem = elem > 0 ? elem : 1;
    } else if (t != out_->basic) {
      out_->basic = MPI_DATATYPE_NULL;  // mixed element types
    }
  }

  Layout* out_;
  bool have_basic_ = false;
  bool failed_ = false;
  const char* why_ = "";
};

// The block holding stream position `a` (blocks are sorted by pos).
size_t find_block(const Layout& l, int64_t a) {
  auto it = std::upper_bound(l.blocks.begin(), l.blocks.end(), a,
                             [](int64_t v, const Block& b) { return v < b.pos; });
  return it == l.blocks.begin() ? 0 : static_cast<size_t>(it - l.blocks.begin()) - 1;
}

template <class F>
void for_pieces(const Layout& l, int64_t a, int64_t b, F&& fn) {
  if (a >= b) return;
  for (size_t i = find_block(l, a); i < l.blocks.size(); ++i) {
    const Block& blk = l.blocks[i];
    if (blk.pos >= b) break;
    int64_t from = std::max(a, blk.pos), to = std::min(b, blk.pos + blk.len);
    if (from < to) fn(blk.off + (from - blk.pos), to - from, from - a);
  }
}

}  // namespace

bool layout_of(int count, MPI_Datatype type, Layout* out, const char** why) {
  *out = Layout();
  Flattener f(out);
  f.emit(type, 0, count);
  if (f.failed()) {
    *why = f.why();
    return false;
  }
  int64_t pos = 0;
  for (Block& b : out->blocks) {
    b.pos = pos;
    pos += b.len;
    if (&b == &out->blocks.front() || b.off < out->lo) out->lo = b.off;
    if (&b == &out->blocks.front() || b.off + b.len > out->hi) out->hi = b.off + b.len;
  }
  out->bytes = pos;
  return true;
}

void gather(const char* base, const Layout& l, int64_t a, int64_t b, char* out) {
  for_pieces(l, a, b, [&](int64_t off, int64_t len, int64_t at) {
    std::memcpy(out + at, base + off, static_cast<size_t>(len));
  });
}

void scatter(char* base, const Layout& l, int64_t a, int64_t b, const char* in) {
  for_pieces(l, a, b, [&](int64_t off, int64_t len, int64_t at) {
    std::memcpy(base + off, in + at, static_cast<size_t>(len));
  });
}

void copy(const char* src, const Layout& sl, char* dst, const Layout& dl) {
  for (const Block& d : dl.blocks) gather(src, sl, d.pos, d.pos + d.len, dst + d.off);
}

void pieces(const Layout& l, int64_t a, int64_t b, std::vector<Block>* out) {
  for_pieces(l, a, b, [&](int64_t off, int64_t len, int64_t at) {
    out->push_back(Block{off, len, a + at});
  });
}

bool is_predefined_op(MPI_Op op) {
  return op == MPI_MAX || op == MPI_MIN || op == MPI_SUM || op == MPI_PROD || op == MPI_LAND ||
         op == MPI_BAND || op == MPI_LOR || op == MPI_BOR || op == MPI_LXOR || op == MPI_BXOR ||
         op == MPI_MAXLOC || op == MPI_MINLOC || op == MPI_REPLACE || op == MPI_NO_OP;
}

bool op_allows(MPI_Op op, MPI_Datatype t) {
  if (op == MPI_REPLACE || op == MPI_NO_OP) return true;
  if (op == MPI_MAX || op == MPI_MIN) return is_integer(t) || is_floating(t);
  if (op == MPI_SUM || op == MPI_PROD) return is_integer(t) || is_floating(t) || is_complex(t);
  if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR) return is_integer(t) || is_logical(t);
  if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR) return is_integer(t) || t == MPI_BYTE;
  if (op == MPI_MAXLOC || op == MPI_MINLOC) return is_pair(t);
  return false;
}

bool cas_allows(MPI_Datatype t) { return is_integer(t) || is_logical(t) || t == MPI_BYTE; }

void reduce(const char* in, char* target, int64_t n, MPI_Datatype basic, MPI_Op op) {
  if (op == MPI_NO_OP || n <= 0) return;
  if (op != MPI_REPLACE && runtime::reduce_builtin(in, target, n, basic, op)) return;
  MPI_Aint lb = 0, extent = 0;
  EP_MPI(MPI_Type_get_extent(basic, &lb, &extent));
  if (op == MPI_REPLACE) {  // the last element ends at its true extent, not its extent
    MPI_Aint tlb = 0, textent = 0;
    EP_MPI(MPI_Type_get_true_extent(basic, &tlb, &textent));
    std::memcpy(target, in, static_cast<size_t>((n - 1) * extent + textent));
    return;
  }
  constexpr int64_t kStep = INT_MAX / 2;
  for (int64_t done = 0; done < n; done += kStep) {
    int k = static_cast<int>(std::min(kStep, n - done));
    EP_MPI(MPI_Reduce_local(in + done * extent, target + done * extent, k, basic, op));
  }
}

void reduce_stream(const char* in, char* inout, int64_t bytes, int64_t elem, MPI_Datatype basic,
                   MPI_Op op) {
  runtime::TypeInfo ti;
  MPI_Aint lb = 0, extent = 0;
  if (builtin_info(basic, &ti)) {
    extent = ti.extent;
  } else {
    EP_MPI(MPI_Type_get_extent(basic, &lb, &extent));
  }
  if (extent == elem) {
    reduce(in, inout, bytes / elem, basic, op);
    return;
  }
  // A pair type with a hole (e.g. MPI_LONG_DOUBLE_INT): one element at a time.
  for (int64_t at = 0; at + elem <= bytes; at += elem) reduce(in + at, inout + at, 1, basic, op);
}

}  // namespace ep::rma
