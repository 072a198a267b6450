// Attribute caching, on 1-3 processes with uneven endpoints (3, 1, 2):
//  * counting copy/delete callbacks: exact counts and values after set, get, dup, idup,
//    replace, delete and free; callbacks run in the endpoint's own thread (thread-local
//    counters) and may call libep on the communicator they are given;
//  * EP_COMM_NULL_COPY_FN, EP_COMM_DUP_FN, EP_COMM_NULL_DELETE_FN;
//  * per-endpoint values: each endpoint sets its own, dup copies each endpoint's own;
//  * EP_TAG_UB: a pointer to the tag bound; it cannot be set, deleted or freed;
//  * EP_Comm_free_keyval while attributes use the keyval: the handle becomes
//    EP_KEYVAL_INVALID, the attributes keep their callbacks (copied at dup, deleted at
//    free);
//  * a callback's failure code is returned by dup (no new communicator), delete_attr,
//    set_attr's replacement and free (the attribute and the communicator stay);
//  * invalid keyvals give EP_ERR_ARG with a message naming the call and the keyval.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "tests/comm/comm_util.h"
#include "tests/common/harness.h"

namespace {

using ep_test::last_error;
using ep_test::run_endpoints;
using ep_test::uneven;
using ep_test::world_rank;

[[maybe_unused]] const bool kWatchdog = ep_test::install_watchdog(120, 480);

// Per thread (= per endpoint: each runs on its own thread): what the callbacks did.
struct Counts {
  int copies = 0, deletes = 0;
  intptr_t last_deleted = -1;
  int rank_in_copy = -1;  // EP_Comm_rank(oldcomm) asked from inside the copy callback
  int fail_copy_at = -1;  // the copy after this many successful ones fails
  bool fail_delete = false;
};
thread_local Counts t_counts;
std::atomic<int> g_deletes{0};  // every delete of the process (checked after the threads)

void* as_val(intptr_t v) { return reinterpret_cast<void*>(v); }
intptr_t of_val(void* p) { return reinterpret_cast<intptr_t>(p); }

// Copies value v as v + 1000.
int counting_copy(EP_Comm oldcomm, int, void* extra, void* in, void* out, int* flag) {
  EXPECT_EQ(of_val(extra), 77) << "extra_state";
  if (t_counts.copies == t_counts.fail_copy_at) return EP_ERR_OTHER;
  ++t_counts.copies;
  if (EP_Comm_rank(oldcomm, &t_counts.rank_in_copy) != EP_SUCCESS) t_counts.rank_in_copy = -2;
  *static_cast<void**>(out) = as_val(of_val(in) + 1000);
  *flag = 1;
  return EP_SUCCESS;
}

int counting_delete(EP_Comm comm, int, void* value, void* extra) {
  EXPECT_EQ(of_val(extra), 77) << "extra_state";
  int r = -1;
  EXPECT_EQ(EP_Comm_rank(comm, &r), EP_SUCCESS) << "the delete callback may use the comm";
  if (t_counts.fail_delete) return EP_ERR_ARG;
  ++t_counts.deletes;
  g_deletes.fetch_add(1);
  t_counts.last_deleted = of_val(value);
  return EP_SUCCESS;
}

using ep_comm_test::rank_of;

// The value of kv on c (-1: not set); fails the test on an error.
intptr_t value_of(EP_Comm c, int kv) {
  void* v = nullptr;
  int flag = -1;
  EXPECT_EQ(EP_Comm_get_attr(c, kv, &v, &flag), EP_SUCCESS) << last_error(EP_ERR_ARG);
  return flag ? of_val(v) : -1;
}

TEST(Attr, CallbacksRunExactlyAtDupReplaceDeleteAndFree) {
  int kv = EP_KEYVAL_INVALID;
  ASSERT_EQ(EP_Comm_create_keyval(counting_copy, counting_delete, &kv, as_val(77)), EP_SUCCESS);
  ASSERT_NE(kv, EP_KEYVAL_INVALID);
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    t_counts = Counts{};
    const int me = rank_of(world);
    EXPECT_EQ(value_of(world, kv), -1) << "nothing set yet";
    ASSERT_EQ(EP_Comm_set_attr(world, kv, as_val(me + 1)), EP_SUCCESS);
    EXPECT_EQ(value_of(world, kv), me + 1) << "each endpoint has its own value";
    EXPECT_EQ(t_counts.copies + t_counts.deletes, 0);
    EP_Comm d = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_dup(world, &d), EP_SUCCESS);
    EXPECT_EQ(t_counts.copies, 1);
    EXPECT_EQ(t_counts.rank_in_copy, me) << "the copy callback ran with oldcomm, re-entrant";
    EXPECT_EQ(value_of(d, kv), me + 1001) << "dup copies this endpoint's own value";
    EXPECT_EQ(value_of(world, kv), me + 1);
    // Replace: the old value's delete callback.
    ASSERT_EQ(EP_Comm_set_attr(d, kv, as_val(me + 5)), EP_SUCCESS);
    EXPECT_EQ(t_counts.deletes, 1);
    EXPECT_EQ(t_counts.last_deleted, me + 1001);
    EXPECT_EQ(value_of(d, kv), me + 5);
    // Delete.
    ASSERT_EQ(EP_Comm_delete_attr(d, kv), EP_SUCCESS);
    EXPECT_EQ(t_counts.deletes, 2);
    EXPECT_EQ(t_counts.last_deleted, me + 5);
    EXPECT_EQ(value_of(d, kv), -1);
    EXPECT_EQ(EP_Comm_delete_attr(d, kv), EP_SUCCESS) << "deleting nothing deletes nothing";
    EXPECT_EQ(t_counts.deletes, 2);
    EXPECT_EQ(EP_Comm_free(&d), EP_SUCCESS);
    EXPECT_EQ(t_counts.deletes, 2) << "d had no attribute left";
    // Dup of a dup copies the copy; free deletes it.
    EP_Comm d1 = EP_COMM_NULL, d2 = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_dup(world, &d1), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_dup(d1, &d2), EP_SUCCESS);
    EXPECT_EQ(t_counts.copies, 3);
    EXPECT_EQ(value_of(d2, kv), me + 2001);
    EXPECT_EQ(EP_Comm_free(&d2), EP_SUCCESS);
    EXPECT_EQ(t_counts.deletes, 3);
    EXPECT_EQ(t_counts.last_deleted, me + 2001);
    EXPECT_EQ(EP_Comm_free(&d1), EP_SUCCESS);
    EXPECT_EQ(t_counts.deletes, 4);
    EXPECT_EQ(t_counts.last_deleted, me + 1001);
    ASSERT_EQ(EP_Comm_delete_attr(world, kv), EP_SUCCESS);
    EXPECT_EQ(t_counts.deletes, 5);
    EXPECT_EQ(t_counts.last_deleted, me + 1);
    EXPECT_EQ(t_counts.copies, 3);
  });
  EXPECT_EQ(EP_Comm_free_keyval(&kv), EP_SUCCESS);
  EXPECT_EQ(kv, EP_KEYVAL_INVALID);
}

TEST(Attr, IdupCopiesInTheCallAndInstallsAtCompletion) {
  int kv = EP_KEYVAL_INVALID;
  ASSERT_EQ(EP_Comm_create_keyval(counting_copy, counting_delete, &kv, as_val(77)), EP_SUCCESS);
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    t_counts = Counts{};
    const int me = rank_of(world);
    ASSERT_EQ(EP_Comm_set_attr(world, kv, as_val(me + 1)), EP_SUCCESS);
    EP_Comm a = EP_COMM_NULL, b = EP_COMM_NULL;
    EP_Request q[2];
    ASSERT_EQ(EP_Comm_idup(world, &a, &q[0]), EP_SUCCESS);
    EXPECT_EQ(t_counts.copies, 1) << "copied in the EP_Comm_idup call";
    // A changed value after the call does not reach the first idup's copy.
    ASSERT_EQ(EP_Comm_set_attr(world, kv, as_val(me + 2)), EP_SUCCESS);
    EXPECT_EQ(t_counts.deletes, 1);
    ASSERT_EQ(EP_Comm_idup(world, &b, &q[1]), EP_SUCCESS);
    EXPECT_EQ(t_counts.copies, 2);
    ASSERT_EQ(EP_Waitall(2, q, EP_STATUSES_IGNORE), EP_SUCCESS);
    EXPECT_EQ(t_counts.copies, 2) << "nothing more at completion";
    EXPECT_EQ(value_of(a, kv), me + 1001);
    EXPECT_EQ(value_of(b, kv), me + 1002);
    EXPECT_EQ(EP_Comm_free(&a), EP_SUCCESS);
    EXPECT_EQ(t_counts.deletes, 2);
    EXPECT_EQ(t_counts.last_deleted, me + 1001);
    EXPECT_EQ(EP_Comm_free(&b), EP_SUCCESS);
    EXPECT_EQ(t_counts.deletes, 3);
    EXPECT_EQ(EP_Comm_delete_attr(world, kv), EP_SUCCESS);
    EXPECT_EQ(t_counts.deletes, 4);
    EXPECT_EQ(t_counts.last_deleted, me + 2);
  });
  EXPECT_EQ(EP_Comm_free_keyval(&kv), EP_SUCCESS);
}

TEST(Attr, PredefinedCallbacks) {
  int kv_null = EP_KEYVAL_INVALID, kv_dup = EP_KEYVAL_INVALID;
  ASSERT_EQ(EP_Comm_create_keyval(EP_COMM_NULL_COPY_FN, EP_COMM_NULL_DELETE_FN, &kv_null, nullptr),
            EP_SUCCESS);
  ASSERT_EQ(EP_Comm_create_keyval(EP_COMM_DUP_FN, EP_COMM_NULL_DELETE_FN, &kv_dup, nullptr),
            EP_SUCCESS);
  EXPECT_NE(kv_null, kv_dup);
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    const int me = rank_of(world);
    ASSERT_EQ(EP_Comm_set_attr(world, kv_null, as_val(me + 10)), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_set_attr(world, kv_dup, as_val(me + 20)), EP_SUCCESS);
    EP_Comm d = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_dup(world, &d), EP_SUCCESS);
    EXPECT_EQ(value_of(d, kv_null), -1) << "EP_COMM_NULL_COPY_FN copies nothing";
    EXPECT_EQ(value_of(d, kv_dup), me + 20) << "EP_COMM_DUP_FN copies the value";
    EXPECT_EQ(value_of(world, kv_null), me + 10);
    // ep_comm_dup_fn itself.
    void* out = nullptr;
    int flag = 0;
    EXPECT_EQ(EP_COMM_DUP_FN(world, kv_dup, nullptr, as_val(42), &out, &flag), EP_SUCCESS);
    EXPECT_EQ(of_val(out), 42);
    EXPECT_EQ(flag, 1);
    EXPECT_EQ(EP_Comm_free(&d), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_delete_attr(world, kv_null), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_delete_attr(world, kv_dup), EP_SUCCESS);
  });
  EXPECT_EQ(EP_Comm_free_keyval(&kv_null), EP_SUCCESS);
  EXPECT_EQ(EP_Comm_free_keyval(&kv_dup), EP_SUCCESS);
}

TEST(Attr, TagUbIsPredefinedAndReadOnly) {
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    int ub = 0;
    ASSERT_EQ(EP_Comm_tag_ub(world, &ub), EP_SUCCESS);
    int* p = nullptr;
    int flag = 0;
    ASSERT_EQ(EP_Comm_get_attr(world, EP_TAG_UB, &p, &flag), EP_SUCCESS);
    EXPECT_EQ(flag, 1);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(*p, ub);
    EXPECT_GE(*p, 32767);
    EXPECT_EQ(EP_Comm_set_attr(world, EP_TAG_UB, as_val(5)), EP_ERR_ARG);
    EXPECT_NE(last_error(EP_ERR_ARG).find("EP_Comm_set_attr"), std::string::npos);
    EXPECT_EQ(EP_Comm_delete_attr(world, EP_TAG_UB), EP_ERR_ARG);
    int kv = EP_TAG_UB;
    EXPECT_EQ(EP_Comm_free_keyval(&kv), EP_ERR_ARG);
    EXPECT_EQ(kv, EP_TAG_UB);
    EP_Comm d = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_dup(world, &d), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_get_attr(d, EP_TAG_UB, &p, &flag), EP_SUCCESS);
    EXPECT_EQ(flag, 1);
    EXPECT_EQ(*p, ub);
    EXPECT_EQ(EP_Comm_free(&d), EP_SUCCESS);
  });
}

TEST(Attr, FreedKeyvalStaysWithTheAttributesThatUseIt) {
  int kv = EP_KEYVAL_INVALID;
  ASSERT_EQ(EP_Comm_create_keyval(counting_copy, counting_delete, &kv, as_val(77)), EP_SUCCESS);
  const int kept = kv;
  g_deletes.store(0);
  const int n = uneven(world_rank());
  run_endpoints(n, [&](EP_Comm world, int) {
    t_counts = Counts{};
    const int me = rank_of(world);
    ASSERT_EQ(EP_Comm_set_attr(world, kept, as_val(me)), EP_SUCCESS);
    EXPECT_EQ(EP_Barrier(world), EP_SUCCESS);  // every value is set before the free
    if (me == 0) {
      int k = kept;
      EXPECT_EQ(EP_Comm_free_keyval(&k), EP_SUCCESS);
      EXPECT_EQ(k, EP_KEYVAL_INVALID);
    }
    EXPECT_EQ(EP_Barrier(world), EP_SUCCESS);  // (freed in the process of rank 0 only)
    EP_Comm d = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_dup(world, &d), EP_SUCCESS);
    EXPECT_EQ(t_counts.copies, 1) << "a freed keyval's attribute is still copied";
    EXPECT_EQ(EP_Comm_free(&d), EP_SUCCESS);
    EXPECT_EQ(t_counts.deletes, 1) << "and deleted";
    EXPECT_EQ(t_counts.last_deleted, me + 1000);
    // world's attribute goes when run_endpoints frees world.
  });
  // 2 deletes per endpoint: the dup's value and world's (at its free).
  EXPECT_EQ(g_deletes.load(), 2 * n);
  int k = kept;
  if (world_rank() == 0) {
    EXPECT_EQ(EP_Comm_free_keyval(&k), EP_ERR_ARG) << "already freed";
  } else {
    EXPECT_EQ(EP_Comm_free_keyval(&k), EP_SUCCESS);
  }
  void* v = nullptr;
  int flag = 0;
  run_endpoints(1, [&](EP_Comm world, int) {
    EXPECT_EQ(EP_Comm_get_attr(world, kept, &v, &flag), EP_ERR_ARG) << "a freed keyval";
    EXPECT_EQ(EP_Comm_set_attr(world, kept, nullptr), EP_ERR_ARG);
  });
}

TEST(Attr, CallbackFailuresAreReturnedByTheCallThatRanThem) {
  int kv_ok = EP_KEYVAL_INVALID, kv = EP_KEYVAL_INVALID;
  ASSERT_EQ(EP_Comm_create_keyval(counting_copy, counting_delete, &kv_ok, as_val(77)), EP_SUCCESS);
  ASSERT_EQ(EP_Comm_create_keyval(counting_copy, counting_delete, &kv, as_val(77)), EP_SUCCESS);
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    t_counts = Counts{};
    const int me = rank_of(world);
    ASSERT_EQ(EP_Comm_set_attr(world, kv_ok, as_val(me)), EP_SUCCESS);
    ASSERT_EQ(EP_Comm_set_attr(world, kv, as_val(me + 100)), EP_SUCCESS);
    EP_Comm d = EP_COMM_NULL;
    ASSERT_EQ(EP_Comm_dup(world, &d), EP_SUCCESS);
    EXPECT_EQ(t_counts.copies, 2);
    EXPECT_EQ(EP_Comm_free(&d), EP_SUCCESS);
    EXPECT_EQ(t_counts.deletes, 2);
    // Rank 0's second copy (kv: the copies run in set order) fails: its dup fails and the
    // copy made first (kv_ok) is deleted again.  The others' dups succeed.
    t_counts = Counts{};
    if (me == 0) t_counts.fail_copy_at = 1;
    const int rc = EP_Comm_dup(world, &d);
    if (me == 0) {
      EXPECT_EQ(rc, EP_ERR_OTHER);
      EXPECT_NE(last_error(EP_ERR_OTHER).find("EP_Comm_dup"), std::string::npos);
      EXPECT_EQ(d, EP_COMM_NULL) << "no new communicator";
      EXPECT_EQ(t_counts.copies, 1);
      EXPECT_EQ(t_counts.deletes, 1) << "the first copy is undone";
      EXPECT_EQ(t_counts.last_deleted, me + 1000);
    } else {
      EXPECT_EQ(rc, EP_SUCCESS);
      EXPECT_EQ(t_counts.copies, 2);
      EXPECT_EQ(EP_Comm_free(&d), EP_SUCCESS);
      EXPECT_EQ(t_counts.deletes, 2);
    }
    t_counts = Counts{};
    // delete_attr with a failing delete callback: the error, the attribute stays.
    t_counts.fail_delete = true;
    EXPECT_EQ(EP_Comm_delete_attr(world, kv), EP_ERR_ARG);
    EXPECT_NE(last_error(EP_ERR_ARG).find("EP_Comm_delete_attr"), std::string::npos);
    EXPECT_EQ(value_of(world, kv), me + 100);
    // set_attr's replacement likewise: the old value stays.
    EXPECT_EQ(EP_Comm_set_attr(world, kv, as_val(1)), EP_ERR_ARG);
    EXPECT_EQ(value_of(world, kv), me + 100);
    // free: the error, and the communicator stays usable.
    EP_Comm d2 = EP_COMM_NULL;
    t_counts.fail_delete = false;
    ASSERT_EQ(EP_Comm_dup(world, &d2), EP_SUCCESS);
    t_counts.fail_delete = true;
    EXPECT_EQ(EP_Comm_free(&d2), EP_ERR_ARG);
    EXPECT_NE(d2, EP_COMM_NULL);
    EXPECT_EQ(rank_of(d2), me);
    EXPECT_EQ(EP_Barrier(d2), EP_SUCCESS);
    t_counts.fail_delete = false;
    EXPECT_EQ(EP_Comm_free(&d2), EP_SUCCESS);
    EXPECT_EQ(d2, EP_COMM_NULL);
    EXPECT_EQ(t_counts.deletes, 2);
    EXPECT_EQ(EP_Comm_delete_attr(world, kv), EP_SUCCESS);
    EXPECT_EQ(EP_Comm_delete_attr(world, kv_ok), EP_SUCCESS);
    EXPECT_EQ(t_counts.deletes, 4);
  });
  EXPECT_EQ(EP_Comm_free_keyval(&kv_ok), EP_SUCCESS);
  EXPECT_EQ(EP_Comm_free_keyval(&kv), EP_SUCCESS);
}

TEST(Attr, InvalidKeyvalsAreRefused) {
  EXPECT_EQ(EP_Comm_create_keyval(EP_COMM_DUP_FN, EP_COMM_NULL_DELETE_FN, nullptr, nullptr),
            EP_ERR_ARG);
  EXPECT_EQ(EP_Comm_free_keyval(nullptr), EP_ERR_ARG);
  int invalid = EP_KEYVAL_INVALID;
  EXPECT_EQ(EP_Comm_free_keyval(&invalid), EP_ERR_ARG);
  int freed = EP_KEYVAL_INVALID;
  ASSERT_EQ(EP_Comm_create_keyval(EP_COMM_DUP_FN, EP_COMM_NULL_DELETE_FN, &freed, nullptr),
            EP_SUCCESS);
  const int stale = freed;
  ASSERT_EQ(EP_Comm_free_keyval(&freed), EP_SUCCESS);
  run_endpoints(uneven(world_rank()), [&](EP_Comm world, int) {
    for (int kv : {EP_KEYVAL_INVALID, 12345, -1, stale}) {
      void* v = nullptr;
      int flag = 0;
      EXPECT_EQ(EP_Comm_get_attr(world, kv, &v, &flag), EP_ERR_ARG) << kv;
      std::string msg = last_error(EP_ERR_ARG);
      EXPECT_NE(msg.find("EP_Comm_get_attr"), std::string::npos) << msg;
      EXPECT_TRUE(msg.find(std::to_string(kv)) != std::string::npos ||
                  msg.find("EP_KEYVAL_INVALID") != std::string::npos)
          << msg;
      EXPECT_EQ(EP_Comm_set_attr(world, kv, nullptr), EP_ERR_ARG) << kv;
      EXPECT_NE(last_error(EP_ERR_ARG).find("EP_Comm_set_attr"), std::string::npos);
      EXPECT_EQ(EP_Comm_delete_attr(world, kv), EP_ERR_ARG) << kv;
      EXPECT_NE(last_error(EP_ERR_ARG).find("EP_Comm_delete_attr"), std::string::npos);
    }
    int kv = EP_KEYVAL_INVALID;
    ASSERT_EQ(EP_Comm_create_keyval(EP_COMM_DUP_FN, EP_COMM_NULL_DELETE_FN, &kv, nullptr),
              EP_SUCCESS);
    EXPECT_EQ(EP_Comm_get_attr(world, kv, nullptr, nullptr), EP_ERR_ARG);
    EXPECT_EQ(EP_Comm_get_attr(EP_COMM_NULL, kv, nullptr, nullptr), EP_ERR_COMM);
    EXPECT_EQ(EP_Comm_set_attr(EP_COMM_NULL, kv, nullptr), EP_ERR_COMM);
    EXPECT_EQ(EP_Comm_free_keyval(&kv), EP_SUCCESS);
  });
}

}  // namespace
