// attr.cc - the C entry points of attribute caching (MPI 3.1 section 6.7): keyvals,
// set/get/delete, the predefined callbacks and EP_TAG_UB; and what dup, idup and free
// do with a handle's attributes (api/attr.h).
//
// A keyval is kKeyvalBase + its index in the registry; indices are never reused, so a
// freed keyval is told apart from every live one.  MPI leaves the outcome of a failed
// delete callback to the implementation ("erroneous"); libep keeps the attribute then
// (EP_Comm_delete_attr, EP_Comm_set_attr's replacement, EP_Comm_free - which then frees
// nothing) and returns the callback's code, as MPICH does.
#include "api/attr.h"

#include <deque>
#include <mutex>
#include <utility>
#include <vector>

#include "ep/ep.h"

namespace {

using namespace ep::api;  // NOLINT(build/namespaces): the shared entry-point helpers

constexpr int kKeyvalBase = 0x10000000;
constexpr int kKeyvalLimit = 0x10000000;  // indices below this
static_assert(EP_TAG_UB < kKeyvalBase || EP_TAG_UB >= kKeyvalBase + kKeyvalLimit,
              "EP_TAG_UB is outside the user keyvals");
static_assert(EP_KEYVAL_INVALID < kKeyvalBase || EP_KEYVAL_INVALID >= kKeyvalBase + kKeyvalLimit,
              "EP_KEYVAL_INVALID is outside the user keyvals");

struct Keyval {
  EP_Comm_copy_attr_function* copy_fn = nullptr;
  EP_Comm_delete_attr_function* delete_fn = nullptr;
  void* extra_state = nullptr;
  int refs = 1;        // the user's keyval and every attribute using it
  bool freed = false;  // EP_Comm_free_keyval was called
};

// The process's keyvals (see attr.h).  Entries are never removed.
class Registry {
 public:
  int create(EP_Comm_copy_attr_function* c, EP_Comm_delete_attr_function* d, void* extra) {
    std::lock_guard<std::mutex> lock(mu_);
    if (keyvals_.size() >= static_cast<size_t>(kKeyvalLimit)) return EP_KEYVAL_INVALID;
    Keyval k;
    k.copy_fn = c;
    k.delete_fn = d;
    k.extra_state = extra;
    keyvals_.push_back(k);
    return kKeyvalBase + static_cast<int>(keyvals_.size() - 1);
  }
  // The keyval's callbacks, if it is one the user may name (created, not freed).
  bool lookup(int kv, Keyval* out) {
    std::lock_guard<std::mutex> lock(mu_);
    Keyval* k = find(kv);
    if (k == nullptr || k->freed) return false;
    *out = *k;
    return true;
  }
  // The callbacks of a keyval an attribute holds (freed or not).
  Keyval held(int kv) {
    std::lock_guard<std::mutex> lock(mu_);
    return *find(kv);
  }
  void ref(int kv) {
    std::lock_guard<std::mutex> lock(mu_);
    ++find(kv)->refs;
  }
  void unref(int kv) {
    std::lock_guard<std::mutex> lock(mu_);
    --find(kv)->refs;
  }
  // EP_Comm_free_keyval: false if kv is not a live keyval.
  bool release(int kv) {
    std::lock_guard<std::mutex> lock(mu_);
    Keyval* k = find(kv);
    if (k == nullptr || k->freed) return false;
    k->freed = true;
    --k->refs;
    return true;
  }

 private:
  Keyval* find(int kv) {  // mu_ held
    const int64_t i = static_cast<int64_t>(kv) - kKeyvalBase;
    if (i < 0 || i >= static_cast<int64_t>(keyvals_.size())) return nullptr;
    return &keyvals_[static_cast<size_t>(i)];
  }
  std::mutex mu_;
  std::deque<Keyval> keyvals_;  // guarded by mu_
};

Registry& registry() {
  static Registry r;
  return r;
}

// One handle's attribute values, in the order they were first set.
struct AttrList {
  std::vector<std::pair<int, void*>> items;  // (keyval, value)
  void* find(int kv, bool* found) const {
    for (const auto& it : items) {
      if (it.first == kv) {
        *found = true;
        return it.second;
      }
    }
    *found = false;
    return nullptr;
  }
  void erase(int kv) {
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].first == kv) {
        items.erase(items.begin() + static_cast<std::ptrdiff_t>(i));
        return;
      }
    }
  }
};

// Endpoint::attrs_free: the values go without callbacks (EP_Finalize).
void free_list(void* p) {
  auto* l = static_cast<AttrList*>(p);
  for (const auto& it : l->items) registry().unref(it.first);
  delete l;
}

AttrList* list_of(Endpoint* ep) { return static_cast<AttrList*>(ep->attrs); }

AttrList* ensure_list(Endpoint* ep) {
  if (ep->attrs == nullptr) {
    ep->attrs = new AttrList;
    ep->attrs_free = &free_list;
  }
  return list_of(ep);
}

// Runs kv's delete callback on `value` of ep (marked for re-entry).
int run_delete(Endpoint* ep, int kv, void* value, const char* call) {
  const Keyval k = registry().held(kv);
  if (k.delete_fn == nullptr) return EP_SUCCESS;
  Reentry mark(ep);
  const int rc = k.delete_fn(reinterpret_cast<EP_Comm>(ep), kv, value, k.extra_state);
  if (rc != EP_SUCCESS) {
    return fail(rc, call, "the delete callback of keyval %d returned %d", kv, rc);
  }
  return EP_SUCCESS;
}

int bad_keyval(int kv, const char* call) {
  if (kv == EP_KEYVAL_INVALID) return fail(EP_ERR_ARG, call, "keyval is EP_KEYVAL_INVALID");
  return fail(EP_ERR_ARG, call,
              "keyval %d is not a valid communicator keyval (never created, or freed)", kv);
}

}  // namespace

namespace ep::api {

int attrs_copy(Endpoint* from, void** out, const char* call) {
  *out = nullptr;
  AttrList* src = list_of(from);
  if (src == nullptr || src->items.empty()) return EP_SUCCESS;
  const std::vector<std::pair<int, void*>> items = src->items;  // callbacks may change src
  auto* dst = new AttrList;
  int err = EP_SUCCESS;
  for (const auto& [kv, value] : items) {
    const Keyval k = registry().held(kv);
    if (k.copy_fn == nullptr) continue;  // EP_COMM_NULL_COPY_FN
    void* copied = nullptr;
    int flag = 0;
    {
      Reentry mark(from);
      err = k.copy_fn(reinterpret_cast<EP_Comm>(from), kv, k.extra_state, value, &copied, &flag);
    }
    if (err != EP_SUCCESS) {
      fail(err, call, "the copy callback of keyval %d returned %d", kv, err);
      break;
    }
    if (flag != 0) {
      registry().ref(kv);
      dst->items.emplace_back(kv, copied);
    }
  }
  if (err == EP_SUCCESS) {
    *out = dst;
    return EP_SUCCESS;
  }
  // Undo the copies made (their delete callbacks see the communicator copied from).
  for (auto it = dst->items.rbegin(); it != dst->items.rend(); ++it) {
    const Keyval k = registry().held(it->first);
    if (k.delete_fn != nullptr) {
      Reentry mark(from);
      k.delete_fn(reinterpret_cast<EP_Comm>(from), it->first, it->second, k.extra_state);
    }
    registry().unref(it->first);
  }
  delete dst;
  return err;
}

void attrs_install(Endpoint* to, void* list) {
  if (list == nullptr) return;
  to->attrs = list;
  to->attrs_free = &free_list;
}

int attrs_delete_all(Endpoint* ep, const char* call) {
  for (;;) {
    AttrList* l = list_of(ep);
    if (l == nullptr) return EP_SUCCESS;
    if (l->items.empty()) {
      delete l;
      ep->attrs = nullptr;
      ep->attrs_free = nullptr;
      return EP_SUCCESS;
    }
    const auto [kv, value] = l->items.back();
    const int err = run_delete(ep, kv, value, call);
    if (err != EP_SUCCESS) return err;
    list_of(ep)->erase(kv);  // (the callback may have changed the list)
    registry().unref(kv);
  }
}

}  // namespace ep::api

extern "C" {

int ep_comm_dup_fn(EP_Comm, int, void*, void* attribute_val_in, void* attribute_val_out,
                   int* flag) {
  *static_cast<void**>(attribute_val_out) = attribute_val_in;
  *flag = 1;
  return EP_SUCCESS;
}

int EP_Comm_create_keyval(EP_Comm_copy_attr_function* copy_fn,
                          EP_Comm_delete_attr_function* delete_fn, int* comm_keyval,
                          void* extra_state) {
  const char* call = "EP_Comm_create_keyval";
  EP_CHECK_INIT(call);
  if (comm_keyval == nullptr) return fail(EP_ERR_ARG, call, "comm_keyval is NULL");
  const int kv = registry().create(copy_fn, delete_fn, extra_state);
  if (kv == EP_KEYVAL_INVALID) return fail(EP_ERR_OTHER, call, "too many keyvals were created");
  *comm_keyval = kv;
  return EP_SUCCESS;
}

int EP_Comm_free_keyval(int* comm_keyval) {
  const char* call = "EP_Comm_free_keyval";
  EP_CHECK_INIT(call);
  if (comm_keyval == nullptr) return fail(EP_ERR_ARG, call, "comm_keyval is NULL");
  if (*comm_keyval == EP_TAG_UB) {
    return fail(EP_ERR_ARG, call, "keyval EP_TAG_UB is predefined: it cannot be freed");
  }
  if (!registry().release(*comm_keyval)) return bad_keyval(*comm_keyval, call);
  *comm_keyval = EP_KEYVAL_INVALID;
  return EP_SUCCESS;
}

int EP_Comm_set_attr(EP_Comm comm, int comm_keyval, void* attribute_val) {
  const char* call = "EP_Comm_set_attr";
  EP_GET_COMM(ep, comm, call);
  if (comm_keyval == EP_TAG_UB) {
    return handle(ep, fail(EP_ERR_ARG, call, "keyval EP_TAG_UB is predefined: it cannot be set"));
  }
  Keyval k;
  if (!registry().lookup(comm_keyval, &k)) return handle(ep, bad_keyval(comm_keyval, call));
  bool found = false;
  void* old = ensure_list(ep)->find(comm_keyval, &found);
  if (!found) {
    registry().ref(comm_keyval);
    list_of(ep)->items.emplace_back(comm_keyval, attribute_val);
    return EP_SUCCESS;
  }
  const int err = run_delete(ep, comm_keyval, old, call);  // the value replaced
  if (err != EP_SUCCESS) return handle(ep, err);
  for (auto& it : list_of(ep)->items) {
    if (it.first == comm_keyval) it.second = attribute_val;
  }
  return EP_SUCCESS;
}

int EP_Comm_get_attr(EP_Comm comm, int comm_keyval, void* attribute_val, int* flag) {
  const char* call = "EP_Comm_get_attr";
  EP_GET_COMM(ep, comm, call);
  if (attribute_val == nullptr || flag == nullptr) {
    return handle(ep, fail(EP_ERR_ARG, call, "%s is NULL",
                           attribute_val == nullptr ? "attribute_val" : "flag"));
  }
  if (comm_keyval == EP_TAG_UB) {  // MPI's C convention: a pointer to the value
    *static_cast<void**>(attribute_val) = &ep->comm->tag_ub;
    *flag = 1;
    return EP_SUCCESS;
  }
  Keyval k;
  if (!registry().lookup(comm_keyval, &k)) return handle(ep, bad_keyval(comm_keyval, call));
  bool found = false;
  void* v = list_of(ep) != nullptr ? list_of(ep)->find(comm_keyval, &found) : nullptr;
  if (found) *static_cast<void**>(attribute_val) = v;
  *flag = found ? 1 : 0;
  return EP_SUCCESS;
}

int EP_Comm_delete_attr(EP_Comm comm, int comm_keyval) {
  const char* call = "EP_Comm_delete_attr";
  EP_GET_COMM(ep, comm, call);
  if (comm_keyval == EP_TAG_UB) {
    return handle(ep,
                  fail(EP_ERR_ARG, call, "keyval EP_TAG_UB is predefined: it cannot be deleted"));
  }
  Keyval k;
  if (!registry().lookup(comm_keyval, &k)) return handle(ep, bad_keyval(comm_keyval, call));
  bool found = false;
  void* v = list_of(ep) != nullptr ? list_of(ep)->find(comm_keyval, &found) : nullptr;
  if (!found) return EP_SUCCESS;  // nothing to delete (as MPICH)
  const int err = run_delete(ep, comm_keyval, v, call);
  if (err != EP_SUCCESS) return handle(ep, err);
  list_of(ep)->erase(comm_keyval);
  registry().unref(comm_keyval);
  return EP_SUCCESS;
}

}  // extern "C"
