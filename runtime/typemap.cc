#include "runtime/typemap.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "runtime/datatype.h"

namespace ep::runtime {
namespace {

int64_t saturating_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > kMaxRunCount / b ? kMaxRunCount : std::min(kMaxRunCount, a * b);
}

// An element's bounds: [lo, hi) of the nodes with data, ignoring empty ones.
struct Bounds {
  bool any = false;
  int64_t lo = 0, hi = 0;
  void add(int64_t l, int64_t h) {
    lo = any ? std::min(lo, l) : l;
    hi = any ? std::max(hi, h) : h;
    any = true;
  }
};

NodePtr empty_node() {
  static const NodePtr empty = std::make_shared<TypeNode>();
  return empty;
}

// Appends `r` to `out`, merged with the last run when adjacent.
void append_run(std::vector<Run>* out, Run r) {
  if (r.len <= 0) return;
  if (!out->empty() && out->back().off + out->back().len == r.off) {
    out->back().len += r.len;
    return;
  }
  out->push_back(r);
}

}  // namespace

NodePtr make_run(int64_t off, int64_t len) { return make_runs({Run{off, len}}); }

NodePtr make_runs(std::vector<Run> runs) {
  auto n = std::make_shared<TypeNode>();
  n->kind = TypeNode::kRuns;
  Bounds b;
  for (const Run& r : runs) {
    if (r.len <= 0) continue;
    append_run(&n->runs, r);
    n->size += r.len;
    b.add(r.off, r.off + r.len);
  }
  n->lo = b.lo;
  n->hi = b.hi;
  n->nruns = static_cast<int64_t>(n->runs.size());
  return n;
}

NodePtr shift(const NodePtr& node, int64_t by) {
  if (by == 0 || node->size == 0) return node;
  auto n = std::make_shared<TypeNode>(*node);
  n->lo += by;
  n->hi += by;
  switch (n->kind) {
    case TypeNode::kRuns:
      for (Run& r : n->runs) r.off += by;
      break;
    case TypeNode::kLoop:
      n->offset += by;
      break;
    case TypeNode::kList:
      for (int64_t& d : n->disps) d += by;
      break;
  }
  return n;
}

NodePtr make_loop(int64_t count, int64_t stride, const NodePtr& child, int64_t offset) {
  if (count <= 0 || child->size == 0) return empty_node();
  if (count == 1) return shift(child, offset);
  if (const Run* r = child->single(); r != nullptr && r->len == stride) {
    return make_run(offset + r->off, count * r->len);
  }
  if (child->kind == TypeNode::kRuns &&
      count * static_cast<int64_t>(child->runs.size()) <= kMaxFlatRuns) {
    std::vector<Run> runs;
    runs.reserve(static_cast<size_t>(count) * child->runs.size());
    for (int64_t i = 0; i < count; ++i) {
      for (const Run& r : child->runs) runs.push_back(Run{offset + i * stride + r.off, r.len});
    }
    return make_runs(std::move(runs));
  }
  auto n = std::make_shared<TypeNode>();
  n->kind = TypeNode::kLoop;
  n->count = count;
  n->stride = stride;
  n->offset = offset;
  n->children.push_back(child);
  n->size = count * child->size;
  const int64_t last = (count - 1) * stride;
  n->lo = offset + child->lo + std::min<int64_t>(0, last);
  n->hi = offset + child->hi + std::max<int64_t>(0, last);
  n->nruns = saturating_mul(count, child->nruns);
  return n;
}

NodePtr make_list(const std::vector<int64_t>& disps, const std::vector<NodePtr>& children) {
  std::vector<int64_t> d;
  std::vector<NodePtr> c;
  bool all_runs = true;
  int64_t nruns = 0;
  for (size_t i = 0; i < children.size(); ++i) {
    if (children[i]->size == 0) continue;
    d.push_back(disps[i]);
    c.push_back(children[i]);
    all_runs = all_runs && children[i]->kind == TypeNode::kRuns;
    nruns = std::min(kMaxRunCount, nruns + children[i]->nruns);
  }
  if (c.empty()) return empty_node();
  if (c.size() == 1) return shift(c[0], d[0]);
  if (all_runs && nruns <= kMaxFlatRuns) {
    std::vector<Run> runs;
    runs.reserve(static_cast<size_t>(nruns));
    for (size_t i = 0; i < c.size(); ++i) {
      for (const Run& r : c[i]->runs) runs.push_back(Run{d[i] + r.off, r.len});
    }
    return make_runs(std::move(runs));
  }
  // One child at evenly spaced displacements (an indexed block type over a regular
  // pattern): a loop.
  bool regular = true;
  for (size_t i = 1; i < c.size() && regular; ++i) {
    regular = c[i] == c[0] && d[i] - d[i - 1] == d[1] - d[0];
  }
  if (regular) return make_loop(static_cast<int64_t>(c.size()), d[1] - d[0], c[0], d[0]);
  auto n = std::make_shared<TypeNode>();
  n->kind = TypeNode::kList;
  Bounds b;
  for (size_t i = 0; i < c.size(); ++i) {
    n->size += c[i]->size;
    b.add(d[i] + c[i]->lo, d[i] + c[i]->hi);
  }
  n->lo = b.lo;
  n->hi = b.hi;
  n->nruns = nruns;
  n->disps = std::move(d);
  n->children = std::move(c);
  return n;
}

namespace {

// One run between memory and the stream, in the direction kPack says.
template <bool kPack>
[[gnu::always_inline]] inline void move(char* mem, char* stream, size_t len) {
  if constexpr (kPack) {
    copy_bytes(stream, mem, len);
  } else {
    copy_bytes(mem, stream, len);
  }
}

// `count` runs of L bytes, `stride` apart from `at`: a fixed-size copy the compiler
// turns into one load and one store.
template <bool kPack, size_t L>
void strided_fixed(char* at, int64_t stride, int64_t count, char*& s) {
  for (int64_t i = 0; i < count; ++i, at += stride, s += L) {
    if constexpr (kPack) {
      std::memcpy(s, at, L);
    } else {
      std::memcpy(at, s, L);
    }
  }
}

template <bool kPack>
void strided(char* at, int64_t stride, int64_t len, int64_t count, char*& s) {
  if (len == stride) {  // (a contiguous span)
    move<kPack>(at, s, static_cast<size_t>(len * count));
    s += len * count;
    return;
  }
  switch (len) {
    case 4:
      return strided_fixed<kPack, 4>(at, stride, count, s);
    case 8:
      return strided_fixed<kPack, 8>(at, stride, count, s);
    case 16:
      return strided_fixed<kPack, 16>(at, stride, count, s);
    default:
      for (int64_t i = 0; i < count; ++i, at += stride, s += len) {
        move<kPack>(at, s, static_cast<size_t>(len));
      }
  }
}

template <bool kPack>
void walk(const TypeNode& n, char* base, char*& s) {
  switch (n.kind) {
    case TypeNode::kRuns:
      for (const Run& r : n.runs) {
        move<kPack>(base + r.off, s, static_cast<size_t>(r.len));
        s += r.len;
      }
      return;
    case TypeNode::kLoop: {
      const TypeNode& c = *n.children[0];
      char* at = base + n.offset;
      if (const Run* r = c.single()) {
        strided<kPack>(at + r->off, n.stride, r->len, n.count, s);
        return;
      }
      for (int64_t i = 0; i < n.count; ++i, at += n.stride) walk<kPack>(c, at, s);
      return;
    }
    case TypeNode::kList:
      for (size_t i = 0; i < n.children.size(); ++i)
        walk<kPack>(*n.children[i], base + n.disps[i], s);
      return;
  }
}

template <bool kPack>
void elements(const TypeNode& root, int64_t extent, char* buf, int64_t count, char* s) {
  if (root.size == 0 || count <= 0) return;
  if (const Run* r = root.single()) {
    strided<kPack>(buf + r->off, extent, r->len, count, s);
    return;
  }
  for (int64_t i = 0; i < count; ++i, buf += extent) walk<kPack>(root, buf, s);
}

}  // namespace

void pack_elements(const TypeNode& root, int64_t extent, const char* buf, int64_t count,
                   char* out) {
  elements<true>(root, extent, const_cast<char*>(buf), count, out);
}

void unpack_elements(const TypeNode& root, int64_t extent, const char* in, int64_t count,
                     char* buf) {
  elements<false>(root, extent, buf, count, const_cast<char*>(in));
}

}  // namespace ep::runtime
