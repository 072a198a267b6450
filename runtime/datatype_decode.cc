#include "runtime/datatype_decode.h"

#include <climits>
#include <cstdint>
#include <vector>

#include "base/mpi_calls.h"

namespace ep::runtime {
namespace {

// A type's size and bounds as MPI computes them.
struct Bounds {
  int64_t size = 0, lb = 0, extent = 0, true_lb = 0, true_extent = 0;
};

bool query(MPI_Datatype t, Bounds* b) {
  MPI_Count size = 0, lb = 0, extent = 0, tlb = 0, textent = 0;
  if (EP_MPI(MPI_Type_size_x(t, &size)) != MPI_SUCCESS) return false;
  if (EP_MPI(MPI_Type_get_extent_x(t, &lb, &extent)) != MPI_SUCCESS) return false;
  if (EP_MPI(MPI_Type_get_true_extent_x(t, &tlb, &textent)) != MPI_SUCCESS) return false;
  *b = Bounds{size, lb, extent, tlb, textent};
  return true;
}

// The decoding agrees with MPI: same size, same true bounds.
bool agrees(const NodePtr& root, const Bounds& b) {
  if (root == nullptr || root->size != b.size) return false;
  return b.size == 0 || (root->lo == b.true_lb && root->hi == b.true_lb + b.true_extent);
}

// A flattened list of runs, its arithmetic stretches (equal lengths, equal steps; at
// least kMinLoop of them) as loops: a darray's thousands of rows cost a node each way.
NodePtr compress(const std::vector<Run>& runs) {
  if (static_cast<int64_t>(runs.size()) <= kMaxFlatRuns) return make_runs(runs);
  constexpr size_t kMinLoop = 4;
  std::vector<int64_t> disps;
  std::vector<NodePtr> pieces;
  std::vector<Run> flat;  // runs waiting for a piece of their own
  auto flush = [&] {
    if (flat.empty()) return;
    disps.push_back(0);
    pieces.push_back(make_runs(flat));
    flat.clear();
  };
  for (size_t i = 0; i < runs.size();) {
    size_t j = i + 1;
    if (j < runs.size()) {
      const int64_t step = runs[j].off - runs[i].off;
      while (j < runs.size() && runs[j].len == runs[i].len &&
             runs[j].off - runs[j - 1].off == step) {
        ++j;
      }
      if (j - i >= kMinLoop) {
        flush();
        disps.push_back(0);
        pieces.push_back(
            make_loop(static_cast<int64_t>(j - i), step, make_run(0, runs[i].len), runs[i].off));
        i = j;
        continue;
      }
    }
    flat.push_back(runs[i]);
    ++i;
  }
  flush();
  return make_list(disps, pieces);
}

// Reads a committed datatype's constructor tree (MPI_Type_get_contents), recursively.
class Decoder {
 public:
  explicit Decoder(MPI_Comm comm) : comm_(comm) {}

  // One element of `t`, or nullptr if it cannot be decoded (the caller probes).
  NodePtr decode(MPI_Datatype t, int depth) {
    if (depth > kMaxDepth) return nullptr;
    int ni = 0, na = 0, nd = 0, combiner = 0;
    if (EP_MPI(MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner)) != MPI_SUCCESS) return nullptr;
    if (combiner == MPI_COMBINER_NAMED) return named(t);
    std::vector<int> ints(static_cast<size_t>(ni));
    std::vector<MPI_Aint> aints(static_cast<size_t>(na));
    std::vector<MPI_Datatype> types(static_cast<size_t>(nd));
    if (EP_MPI(MPI_Type_get_contents(t, ni, na, nd, ints.data(), aints.data(), types.data())) !=
        MPI_SUCCESS) {
      return nullptr;
    }
    NodePtr node = from_contents(t, combiner, ints, aints, types, depth);
    // The derived types get_contents returned are new handles of ours (MPI 3.1 4.1.13).
    for (MPI_Datatype& c : types) {
      int cni = 0, cna = 0, cnd = 0, cc = 0;
      EP_MPI(MPI_Type_get_envelope(c, &cni, &cna, &cnd, &cc));
      if (cc != MPI_COMBINER_NAMED) EP_MPI(MPI_Type_free(&c));
    }
    return node;
  }

 private:
  static constexpr int kMaxDepth = 1000;

  // A predefined type: its bytes, one run unless it has a hole (MPI_SHORT_INT's
  // padding), which the probe finds.
  NodePtr named(MPI_Datatype t) {
    Bounds b;
    if (!query(t, &b)) return nullptr;
    if (b.size == b.true_extent) return make_run(b.true_lb, b.size);
    return probe_typemap(t, comm_);
  }

  int64_t extent_of(MPI_Datatype t) {
    MPI_Count lb = 0, extent = 0;
    EP_MPI(MPI_Type_get_extent_x(t, &lb, &extent));
    return extent;
  }

  // Blocks of `child` (each bl[i] elements) at byte displacements disps[i].
  static NodePtr blocks(const NodePtr& child, int64_t ext, const std::vector<int64_t>& bl,
                        const std::vector<int64_t>& disps) {
    std::vector<NodePtr> pieces;
    pieces.reserve(bl.size());
    NodePtr last;  // equal block lengths share their node (make_list then sees a loop)
    int64_t last_bl = -1;
    for (int64_t b : bl) {
      if (b != last_bl) {
        last = make_loop(b, ext, child);
        last_bl = b;
      }
      pieces.push_back(last);
    }
    return make_list(disps, pieces);
  }

  NodePtr from_contents(MPI_Datatype t, int combiner, const std::vector<int>& ints,
                        const std::vector<MPI_Aint>& aints, const std::vector<MPI_Datatype>& types,
                        int depth) {
    auto child = [&](size_t i) { return decode(types[i], depth + 1); };
    switch (combiner) {
      case MPI_COMBINER_DUP:
      case MPI_COMBINER_RESIZED:  // lb and extent only space the parent's elements
        return child(0);
      case MPI_COMBINER_CONTIGUOUS: {
        NodePtr c = child(0);
        return c == nullptr ? nullptr : make_loop(ints[0], extent_of(types[0]), c);
      }
      case MPI_COMBINER_VECTOR:
      case MPI_COMBINER_HVECTOR:
      case MPI_COMBINER_HVECTOR_INTEGER: {
        NodePtr c = child(0);
        if (c == nullptr) return nullptr;
        const int64_t ext = extent_of(types[0]);
        const int64_t stride = combiner == MPI_COMBINER_VECTOR ? ints[2] * ext
                               : !aints.empty()                ? int64_t{aints[0]}
                                                               : int64_t{ints[2]};
        return make_loop(ints[0], stride, make_loop(ints[1], ext, c));
      }
      case MPI_COMBINER_INDEXED:
      case MPI_COMBINER_HINDEXED:
      case MPI_COMBINER_HINDEXED_INTEGER: {
        NodePtr c = child(0);
        if (c == nullptr) return nullptr;
        const int64_t ext = extent_of(types[0]);
        const int n = ints[0];
        std::vector<int64_t> bl(static_cast<size_t>(n)), disps(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) {
          bl[i] = ints[1 + i];
          disps[i] = combiner == MPI_COMBINER_INDEXED ? ints[1 + n + i] * ext
                     : !aints.empty()                 ? int64_t{aints[i]}
                                                      : int64_t{ints[1 + n + i]};
        }
        return blocks(c, ext, bl, disps);
      }
      case MPI_COMBINER_INDEXED_BLOCK:
      case MPI_COMBINER_HINDEXED_BLOCK: {
        NodePtr c = child(0);
        if (c == nullptr) return nullptr;
        const int64_t ext = extent_of(types[0]);
        const int n = ints[0];
        std::vector<int64_t> bl(static_cast<size_t>(n), ints[1]), disps(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) {
          disps[i] = combiner == MPI_COMBINER_INDEXED_BLOCK ? ints[2 + i] * ext : aints[i];
        }
        return blocks(c, ext, bl, disps);
      }
      case MPI_COMBINER_STRUCT:
      case MPI_COMBINER_STRUCT_INTEGER: {
        const int n = ints[0];
        std::vector<int64_t> disps(static_cast<size_t>(n));
        std::vector<NodePtr> pieces(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) {
          NodePtr c = child(static_cast<size_t>(i));
          if (c == nullptr) return nullptr;
          pieces[i] = make_loop(ints[1 + i], extent_of(types[i]), c);
          disps[i] = !aints.empty() ? int64_t{aints[i]} : int64_t{ints[1 + n + i]};
        }
        return make_list(disps, pieces);
      }
      case MPI_COMBINER_SUBARRAY:
        return subarray(ints, types[0], depth);
      case MPI_COMBINER_F90_REAL:
      case MPI_COMBINER_F90_COMPLEX:
      case MPI_COMBINER_F90_INTEGER:
        return named(t);  // a predefined type by another name
      default:            // MPI_COMBINER_DARRAY and anything else: the caller probes
        return nullptr;
    }
  }

  // ints: ndims, sizes[ndims], subsizes[ndims], starts[ndims], order.  The typemap
  // walks the subarray in the array's storage order, from the array's start (its lb,
  // 0, and extent, the whole array, are the parent's business).
  NodePtr subarray(const std::vector<int>& ints, MPI_Datatype old, int depth) {
    const int nd = ints[0];
    const int* sizes = &ints[1];
    const int* subsizes = &ints[1 + nd];
    const int* starts = &ints[1 + 2 * nd];
    const bool c_order = ints[1 + 3 * nd] == MPI_ORDER_C;
    NodePtr node = decode(old, depth + 1);
    if (node == nullptr) return nullptr;
    const int64_t ext = extent_of(old);
    std::vector<int64_t> stride(static_cast<size_t>(nd));
    int64_t offset = 0, s = ext;
    for (int k = 0; k < nd; ++k) {  // fastest dimension first
      const int d = c_order ? nd - 1 - k : k;
      stride[d] = s;
      offset += starts[d] * s;
      s *= sizes[d];
    }
    for (int k = 0; k < nd; ++k) {
      const int d = c_order ? nd - 1 - k : k;
      node = make_loop(subsizes[d], stride[d], node);
    }
    return shift(node, offset);
  }

  MPI_Comm comm_;
};

}  // namespace

NodePtr probe_typemap(MPI_Datatype type, MPI_Comm comm) {
  constexpr int64_t kMaxProbeBytes = int64_t{1} << 28;
  Bounds b;
  if (!query(type, &b)) return nullptr;
  if (b.size == 0) return make_runs({});
  if (b.true_extent <= 0 || b.true_extent > kMaxProbeBytes || b.size > INT_MAX) return nullptr;
  int passes = 1;
  while (passes < 8 && (int64_t{1} << (8 * passes)) < b.true_extent) ++passes;
  std::vector<unsigned char> scratch(static_cast<size_t>(b.true_extent));
  std::vector<unsigned char> packed(static_cast<size_t>(b.size * passes));
  // The buffer address whose element's true lower bound is scratch[0].
  void* base = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(scratch.data()) -
                                       static_cast<uintptr_t>(b.true_lb));
  for (int k = 0; k < passes; ++k) {
    for (size_t i = 0; i < scratch.size(); ++i) {
      scratch[i] = static_cast<unsigned char>(i >> (8 * k));
    }
    int pos = 0;
    if (EP_MPI(MPI_Pack(base, 1, type, packed.data() + k * b.size, static_cast<int>(b.size), &pos,
                        comm)) != MPI_SUCCESS ||
        pos != b.size) {
      return nullptr;
    }
  }
  std::vector<Run> runs;
  for (int64_t j = 0; j < b.size; ++j) {
    int64_t off = 0;
    for (int k = 0; k < passes; ++k) off |= int64_t{packed[k * b.size + j]} << (8 * k);
    off += b.true_lb;
    if (!runs.empty() && runs.back().off + runs.back().len == off) {
      ++runs.back().len;
    } else {
      runs.push_back(Run{off, 1});
    }
  }
  return compress(runs);
}

bool describe_new(MPI_Datatype type, MPI_Comm check_comm, TypeDesc* d) {
  if (type == MPI_DATATYPE_NULL) return false;
  int ni = 0, na = 0, nd = 0, combiner = 0;
  if (EP_MPI(MPI_Type_get_envelope(type, &ni, &na, &nd, &combiner)) != MPI_SUCCESS) return false;
  const bool named = combiner == MPI_COMBINER_NAMED;
  const MPI_Comm comm = check_comm != MPI_COMM_NULL ? check_comm : MPI_COMM_SELF;
  if (!named && check_comm != MPI_COMM_NULL) {
    // A derived type must be committed to be used in communication.
    char scratch = 0;
    int pos = 0;
    if (EP_MPI(MPI_Pack(&scratch, 0, type, &scratch, 0, &pos, check_comm)) != MPI_SUCCESS) {
      return false;
    }
  }
  Bounds b;
  if (!query(type, &b)) return false;
  NodePtr root = Decoder(comm).decode(type, 0);
  if (!agrees(root, b)) root = probe_typemap(type, comm);
  if (!agrees(root, b)) return false;
  const Run* one = root->single();
  const bool contiguous =
      b.size == 0 ? b.extent == 0 : one != nullptr && one->len == b.size && b.extent == b.size;
  d->info.size = b.size;
  d->info.extent = b.extent;
  d->info.true_lb = b.true_lb;
  d->info.contiguous = contiguous;
  d->info.named = named;
  d->info.desc = contiguous ? nullptr : d;
  d->true_extent = b.true_extent;
  d->root = std::move(root);
  return true;
}

}  // namespace ep::runtime
