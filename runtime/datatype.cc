#include "runtime/datatype.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "base/mpi_calls.h"
#include "progress/fast_tls.h"
#include "runtime/datatype_decode.h"

namespace ep::runtime {

BuiltinSlot g_builtin[256];

namespace {

// ---- The process-wide table ------------------------------------------------------------
//
// A fixed array of buckets, each a list of entries pushed at its head.  An entry is
// made for a handle value the first time one of its types is described and stays
// (MPICH reuses handle values, so there are no more entries than handles it ever
// gave out at once); its `desc` holds the handle's current description, or nullptr
// once the type was freed.  Readers walk the lists with no lock: an entry's key and
// link are written before the release store that links it, and never change.
struct Entry {
  uint32_t key = 0;
  Entry* next = nullptr;                       // written once, before the entry is linked
  std::atomic<const TypeDesc*> desc{nullptr};  // the table's reference, or nullptr
};

constexpr size_t kBuckets = 4096;

// Everything here is never destroyed: delete callbacks and thread exits may run after
// static destruction began (MPI_Finalize, detached threads).
struct Table {
  std::atomic<Entry*> buckets[kBuckets] = {};
  // Serializes first descriptions (which call MPI; a type is described once).  Never
  // held by the delete callback, so holding it while calling MPI cannot deadlock with
  // a MPI_Type_free whose callback waits for us.
  std::mutex describe_mu;
  // Guards linking entries and storing into `desc`; never held while calling MPI.
  std::mutex write_mu;
  // Threads between loading an entry's desc and taking a reference on it: a
  // description whose last reference went is freed only when nobody is there.
  std::atomic<int64_t> takers{0};
  std::mutex graveyard_mu;
  std::vector<const TypeDesc*> graveyard;   // guarded by graveyard_mu
  std::atomic<bool> graveyard_full{false};  // graveyard is not empty
  std::atomic<int64_t> live{0};             // descriptions not yet freed
  int keyval = MPI_KEYVAL_INVALID;          // written by datatype_init (one thread)
};

Table& table() {
  static Table* t = new Table;
  return *t;
}

size_t bucket_of(uint32_t key) {
  uint32_t h = key * 0x9e3779b1u;
  return (h >> 16 ^ h) & (kBuckets - 1);
}

uint32_t key_of(MPI_Datatype type) { return static_cast<uint32_t>(type); }

Entry* find_entry(uint32_t key) {
  Table& t = table();
  // acquire: pairs with the release store that linked the head (its key and next).
  for (Entry* e = t.buckets[bucket_of(key)].load(std::memory_order_acquire); e != nullptr;
       e = e->next) {
    if (e->key == key) return e;
  }
  return nullptr;
}

// Under write_mu.
Entry* find_or_link_entry(uint32_t key) {
  if (Entry* e = find_entry(key)) return e;
  Table& t = table();
  auto* e = new Entry;
  e->key = key;
  std::atomic<Entry*>& head = t.buckets[bucket_of(key)];
  e->next = head.load(std::memory_order_relaxed);  // relaxed: writers hold write_mu
  head.store(e, std::memory_order_release);        // release: pairs with find_entry
  return e;
}

void free_desc(const TypeDesc* d) {
  delete d;
  table().live.fetch_sub(1, std::memory_order_relaxed);  // relaxed: a count for tests
}

// Frees the graveyard's descriptions if no taker can still reach them.
void drain_graveyard() {
  Table& t = table();
  std::vector<const TypeDesc*> dead;
  {
    std::lock_guard<std::mutex> lock(t.graveyard_mu);
    // seq_cst: orders this load after the stores that unlinked the descriptions (see
    // take_reference).
    if (t.takers.load() != 0) return;
    dead.swap(t.graveyard);
    t.graveyard_full.store(false, std::memory_order_relaxed);  // relaxed: a hint
  }
  for (const TypeDesc* d : dead) free_desc(d);
}

// A reference on the entry's current description, or nullptr if it has none (or its
// last reference went meanwhile).  Lock-free: the description's memory stays valid
// while we are counted in `takers`, and a count of 0 is never raised again.
const TypeDesc* take_reference(Entry* e) {
  Table& t = table();
  const TypeDesc* got = nullptr;
  // seq_cst (takers, desc): a releaser that unlinked a description (seq_cst store of
  // desc) and then reads takers == 0 knows every later taker loads the new desc.
  t.takers.fetch_add(1);
  const TypeDesc* d = e->desc.load();
  if (d != nullptr) {
    // relaxed: the reference orders nothing; the desc's contents were published by
    // the release store into e->desc that the load above read.
    int64_t n = d->refs.load(std::memory_order_relaxed);
    while (n > 0 && !d->refs.compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) {
    }
    if (n > 0) {
      if (e->desc.load() == d) {
        got = d;
      } else {
        type_release_desc(d);  // retired meanwhile: not the handle's type any more
      }
    }
  }
  t.takers.fetch_sub(1);
  if (t.graveyard_full.load(std::memory_order_relaxed)) drain_graveyard();  // relaxed: a hint
  return got;
}

// ---- Each thread's cache ----------------------------------------------------------------
//
// 64 sets of 2 ways, each way a handle, its entry and a reference on the description
// it had; a way is valid while the entry still holds that description.  The older
// way of a full set is evicted (its reference released).
struct CacheWay {
  uint32_t key = 0;
  Entry* entry = nullptr;
  const TypeDesc* desc = nullptr;  // one reference
};
struct TypeCache {
  static constexpr size_t kSets = 64;
  CacheWay ways[kSets][2];
  uint8_t older[kSets] = {};  // which way of the set to evict next
  ~TypeCache() {
    for (auto& set : ways) {
      for (CacheWay& w : set) {
        if (w.desc != nullptr) type_release_desc(w.desc);
      }
    }
  }
};
constinit thread_local TypeCache* t_cache EP_FAST_TLS = nullptr;
// Frees this thread's cache (releasing its references) when the thread exits.
struct TypeCacheOwner {
  ~TypeCacheOwner() {
    delete t_cache;
    t_cache = nullptr;
  }
};
thread_local TypeCacheOwner t_cache_owner;

TypeCache* cache() {
  if (t_cache == nullptr) {
    static_cast<void>(&t_cache_owner);  // constructed here: registers the exit hook
    t_cache = new TypeCache;
  }
  return t_cache;
}

size_t set_of(uint32_t key) { return (key ^ key >> 12) & (TypeCache::kSets - 1); }

// The description the calling thread's cache holds for `key`, if still current.
const TypeDesc* cache_hit(uint32_t key) {
  TypeCache* c = t_cache;
  if (c == nullptr) return nullptr;
  const size_t s = set_of(key);
  for (int w = 0; w < 2; ++w) {
    const CacheWay& way = c->ways[s][w];
    // acquire: pairs with the release store of a new description into the entry (a
    // reference we hold cannot be freed, so equality means this is still the one).
    if (way.key == key && way.desc != nullptr &&
        way.entry->desc.load(std::memory_order_acquire) == way.desc) {
      c->older[s] = static_cast<uint8_t>(1 - w);
      return way.desc;
    }
  }
  return nullptr;
}

// Keeps `d` (whose reference the caller passes on) for `key` in this thread's cache.
void cache_insert(uint32_t key, Entry* e, const TypeDesc* d) {
  TypeCache* c = cache();
  const size_t s = set_of(key);
  int w = c->older[s];
  for (int k = 0; k < 2; ++k) {
    if (c->ways[s][k].key == key || c->ways[s][k].desc == nullptr) {
      w = k;  // the handle's stale way, or a free one
      break;
    }
  }
  CacheWay& way = c->ways[s][w];
  const TypeDesc* old = way.desc;
  way = CacheWay{key, e, d};
  c->older[s] = static_cast<uint8_t>(1 - w);
  if (old != nullptr) type_release_desc(old);
}

// ---- Retirement ---------------------------------------------------------------------------

// The keyval's delete callback: MPI_Type_free (or the overwrite of the attribute)
// retires the description; the attribute's value is the table's reference.
int on_type_delete(MPI_Datatype type, int /*keyval*/, void* attr, void* /*extra*/) {
  Table& t = table();
  const auto* d = static_cast<const TypeDesc*>(attr);
  {
    std::lock_guard<std::mutex> lock(t.write_mu);
    if (Entry* e = find_entry(key_of(type)); e != nullptr && e->desc.load() == d) {
      e->desc.store(nullptr);  // seq_cst: see take_reference
    }
  }
  type_release_desc(d);
  return MPI_SUCCESS;
}

// ---- Builtin types ------------------------------------------------------------------------

// A private MPI_COMM_SELF duplicate that returns errors: MPI_Pack of 0 elements on it
// fails for a derived type that was never committed (MPI has no query for that).
MPI_Comm g_check_comm = MPI_COMM_NULL;

bool describe_builtin(MPI_Datatype type, TypeInfo* info) {
  MPI_Count size = 0, lb = 0, extent = 0, tlb = 0, textent = 0;
  if (EP_MPI(MPI_Type_size_x(type, &size)) != MPI_SUCCESS) return false;
  if (EP_MPI(MPI_Type_get_extent_x(type, &lb, &extent)) != MPI_SUCCESS) return false;
  if (EP_MPI(MPI_Type_get_true_extent_x(type, &tlb, &textent)) != MPI_SUCCESS) return false;
  if (size != textent || extent != textent) return false;  // a pair type with a hole
  info->size = size;
  info->extent = extent;
  info->true_lb = tlb;
  info->contiguous = true;
  info->named = true;
  info->desc = nullptr;
  BuiltinSlot& s = g_builtin[static_cast<unsigned>(type) & 255];
  uint32_t expected = BuiltinSlot::kEmpty;
  // relaxed: the claim orders nothing; the release store publishes.
  if (s.state.compare_exchange_strong(expected, BuiltinSlot::kFilling, std::memory_order_relaxed)) {
    s.type = type;
    s.info = *info;
    s.state.store(BuiltinSlot::kReady, std::memory_order_release);
  }
  return true;
}

// The first description of `type` (or another thread's, found under describe_mu):
// published in the table, one reference returned to the caller.
const TypeDesc* describe_first(MPI_Datatype type) {
  Table& t = table();
  const uint32_t key = key_of(type);
  std::lock_guard<std::mutex> lock(t.describe_mu);
  if (Entry* e = find_entry(key)) {
    if (const TypeDesc* d = take_reference(e)) return d;
  }
  auto* d = new TypeDesc;
  if (!describe_new(type, g_check_comm, d)) {
    delete d;
    return nullptr;
  }
  t.live.fetch_add(1, std::memory_order_relaxed);  // relaxed: a count for tests
  // The table's reference and the caller's; published below.  relaxed: not yet shared.
  d->refs.store(2, std::memory_order_relaxed);
  // A predefined type is never freed: its description stays.  A derived one carries
  // our attribute, whose delete callback retires it (the table's reference).
  if (!d->info.named && t.keyval != MPI_KEYVAL_INVALID &&
      EP_MPI(MPI_Type_set_attr(type, t.keyval, d)) != MPI_SUCCESS) {
    free_desc(d);
    return nullptr;
  }
  {
    std::lock_guard<std::mutex> wlock(t.write_mu);
    Entry* e = find_or_link_entry(key);
    e->desc.store(d);  // seq_cst (a release): publishes the description
  }
  return d;
}

}  // namespace

void type_release_desc(const TypeDesc* d) {
  // acq_rel: the last release frees after every holder's reads (acquire sees them).
  if (d->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  Table& t = table();
  {
    std::lock_guard<std::mutex> lock(t.graveyard_mu);
    t.graveyard.push_back(d);
    t.graveyard_full.store(true, std::memory_order_relaxed);  // relaxed: a hint
  }
  drain_graveyard();
}

void datatype_init() {
  Table& t = table();
  if (t.keyval == MPI_KEYVAL_INVALID) {
    EP_MPI(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, on_type_delete, &t.keyval, nullptr));
  }
  EP_MPI(MPI_Comm_dup(MPI_COMM_SELF, &g_check_comm));
  EP_MPI(MPI_Comm_set_errhandler(g_check_comm, MPI_ERRORS_RETURN));
}

void datatype_finalize() {
  if (g_check_comm != MPI_COMM_NULL) EP_MPI(MPI_Comm_free(&g_check_comm));
}

bool describe_slow(MPI_Datatype type, TypeInfo* info) {
  if (type == MPI_DATATYPE_NULL) return false;
  // A builtin type fills its slot; one whose slot another type took, or with a hole,
  // is described as a derived type is (then remembered by handle, for good).
  if (is_builtin_type(type) &&
      // acquire: pairs with describe_builtin's release store of kReady.
      g_builtin[static_cast<unsigned>(type) & 255].state.load(std::memory_order_acquire) ==
          BuiltinSlot::kEmpty &&
      describe_builtin(type, info)) {
    return true;
  }
  const uint32_t key = key_of(type);
  if (const TypeDesc* d = cache_hit(key)) {
    *info = d->info;
    return true;
  }
  const TypeDesc* d = nullptr;
  Entry* e = find_entry(key);
  if (e != nullptr) d = take_reference(e);
  if (d == nullptr) {
    d = describe_first(type);
    if (d == nullptr) return false;
    e = find_entry(key);
  }
  cache_insert(key, e, d);
  *info = d->info;
  return true;
}

const TypeDesc* cached_desc(MPI_Datatype type) { return cache_hit(key_of(type)); }

int64_t live_descs() {
  drain_graveyard();
  return table().live.load(std::memory_order_relaxed);  // relaxed: a count for tests
}

void pack(const void* buf, int count, const TypeInfo& ti, void* out) {
  const int64_t bytes = ti.size * count;
  if (bytes == 0) return;
  if (ti.contiguous) {
    copy_bytes(out, static_cast<const char*>(buf) + ti.true_lb, static_cast<size_t>(bytes));
    return;
  }
  pack_elements(*ti.desc->root, ti.extent, static_cast<const char*>(buf), count,
                static_cast<char*>(out));
}

void unpack(const void* in, int64_t bytes, void* buf, int count, const TypeInfo& ti) {
  if (ti.size == 0 || bytes <= 0) return;
  int64_t whole = bytes / ti.size;
  if (whole > count) whole = count;
  const int64_t nbytes = whole * ti.size;
  if (nbytes == 0) return;  // (buf may be NULL for count 0)
  if (ti.contiguous) {
    copy_bytes(static_cast<char*>(buf) + ti.true_lb, in, static_cast<size_t>(nbytes));
    return;
  }
  unpack_elements(*ti.desc->root, ti.extent, static_cast<const char*>(in), whole,
                  static_cast<char*>(buf));
}

void copy(const void* sbuf, int scount, const TypeInfo& sti, void* rbuf, int rcount,
          const TypeInfo& rti, int64_t bytes) {
  if (bytes <= 0) return;
  if (sti.contiguous) {
    unpack(static_cast<const char*>(sbuf) + sti.true_lb, bytes, rbuf, rcount, rti);
    return;
  }
  if (rti.contiguous && bytes == sti.size * scount) {
    pack(sbuf, scount, sti, static_cast<char*>(rbuf) + rti.true_lb);
    return;
  }
  // Both sides have gaps: through a packed copy (on the stack when small).
  const auto total = static_cast<size_t>(sti.size * scount);
  alignas(16) char small[1024];
  std::vector<char> big;
  char* tmp = small;
  if (total > sizeof small) {
    big.resize(total);
    tmp = big.data();
  }
  pack(sbuf, scount, sti, tmp);
  unpack(tmp, bytes, rbuf, rcount, rti);
}

}  // namespace ep::runtime
