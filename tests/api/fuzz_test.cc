// The API fuzzer: every function of API.md (every one declared in ep/ep.h; the test
// reads the header and fails if one is missing from its table), called many times
// with exactly one argument replaced by a bad value - a null, freed (nulled) or
// wrong-kind handle, a predefined constant where a handle belongs, an out-of-range
// rank, root, tag, count or displacement, EP_IN_PLACE or NULL where MPI forbids
// them, MPI_DATATYPE_NULL or an uncommitted type, MPI_OP_NULL, a NULL output
// pointer - on every endpoint of 1-3 processes at once.  Each call must return the
// error code of the argument's kind, with an EP_Error_string that names the call, and
// must not crash or write anything.  Every few rounds, and at the end, a round of
// correct traffic (point-to-point ring, an allreduce, a passive-target RMA epoch) must
// still give exact results, and the buffers the failed calls were given must be as
// they were.
//
// Collectives are fuzzed on the whole communicator (then only arguments that every
// endpoint checks are mutated, so all endpoints fail together) and on a communicator
// of the endpoint alone (then every argument, those significant only at the root too).
//
// Seeded: the seed is printed; LIBEP_STRESS_SEED=<n> replays a run (every endpoint of
// every process draws the same sequence, which is what lets collectives be fuzzed).
// LIBEP_FUZZ_ROUNDS=<n> changes the number of rounds over the table.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ep/ep.h"
#include "tests/common/harness.h"

namespace {

using ep_test::last_error;
using ep_test::uneven;
using ep_test::world_rank;

[[maybe_unused]] const bool kWatchdog = ep_test::install_watchdog(150, 600);

// ---- Argument kinds and their bad values ------------------------------------------------

enum class K {
  kComm,         // an EP_Comm
  kIntercomm,    // an EP_Comm that must be an intercommunicator
  kDest,         // a send's destination rank
  kSource,       // a receive's or probe's source rank
  kSendTag,      // a send's tag
  kRecvTag,      // a receive's tag
  kCount,        // an element count
  kLen,          // an array length (n of EP_Waitall, ...)
  kType,         // an MPI_Datatype
  kOp,           // an MPI_Op
  kSendBuf,      // a buffer that is read (NULL and EP_IN_PLACE are errors)
  kSendBufIP,    // a send buffer where EP_IN_PLACE is allowed (NULL is an error)
  kRecvBuf,      // a buffer that is written (NULL and EP_IN_PLACE are errors)
  kRecvBufIP,    // a receive buffer where EP_IN_PLACE may be allowed (NULL is an error)
  kRoot,         // a collective's root
  kOut,          // an output pointer (NULL is an error)
  kArr,          // an input array (NULL is an error)
  kCounts,       // an array of counts (NULL, or a negative entry)
  kTypes,        // an array of datatypes, one per rank (NULL, or an MPI_DATATYPE_NULL entry)
  kRanks,        // an array of ranks (NULL, or an out-of-range entry)
  kRanges,       // an array of rank ranges (NULL, stride 0, a range out of the group)
  kStatusIn,     // an input status pointer
  kFn,           // a callback
  kReqIn,        // a request that must be a live request (free, cancel)
  kGreqIn,       // a request that must be a generalized request
  kPersistIn,    // a request that must be an inactive persistent request (EP_Start)
  kReqWait,      // a request of the Wait/Test family (EP_REQUEST_NULL allowed)
  kReqArr,       // an array of requests
  kMsgPtr,       // an EP_Message* (its value is the handle)
  kGroup,
  kWin,
  kTeam,
  kErrh,         // an EP_Errhandler
  kTarget,       // a one-sided target rank
  kDisp,         // a target displacement
  kLockType,
  kFenceAssert,
  kLockAssert,
  kWinSize,
  kDispUnit,
  kKeyval,       // a window attribute keyval
  kCommKeyval,   // a communicator keyval that may be read (EP_TAG_UB allowed)
  kUserKeyval,   // a communicator keyval that is set or deleted (EP_TAG_UB refused)
  kKeyvalPtr,    // an int* holding a keyval to free
  kErrhPtr,      // an EP_Errhandler* holding a handler to free
  kMpiComm,      // an MPI_Comm parent
  kNumEp,
  kCode,         // an error code
  kColor,
  kSplitType,    // an EP_Comm_split_type split_type
  kLeader,       // a local leader (checked by every endpoint)
  kRemoteLeader, // a remote leader (checked by the local leader)
  kPeerComm,     // a peer communicator (checked by the local leader)
  kIcTag,        // an intercommunicator creation tag (checked by the local leader)
  kMaxsize,
  kTeamsize,
  kBsendBuf,
  kBsendSize,
};

// One bad value of a kind: the value (in the member of its C type) and the code the
// call must return.
struct Bad {
  int64_t i = 0;
  const void* p = nullptr;
  MPI_Datatype t = MPI_DATATYPE_NULL;
  MPI_Op o = MPI_OP_NULL;
  MPI_Comm c = MPI_COMM_NULL;
  int code = EP_ERR_ARG;
  std::string what;
};

Bad ival(int64_t v, int code, std::string what) {
  Bad b;
  b.i = v;
  b.code = code;
  b.what = std::move(what);
  return b;
}
Bad pval(const void* v, int code, std::string what) {
  Bad b;
  b.p = v;
  b.code = code;
  b.what = std::move(what);
  return b;
}

// A slot: one argument position of a call.  `root_only`: significant only at the root
// (or the local leader), so mutated only where the endpoint is alone in its
// communicator.
struct Slot {
  K kind;
  bool root_only = false;
};
Slot ro(K k) { return Slot{k, true}; }

// ---- Per-endpoint context ---------------------------------------------------------------

// A communicator a call runs on: the whole one or the endpoint alone, with what the
// good arguments need.
struct Comm {
  EP_Comm h = EP_COMM_NULL;
  int rank = 0, size = 0;
  EP_Win win = EP_WIN_NULL;
  // A dynamic and a shared window over the same endpoints, and the group of
  // this endpoint alone (post/start to itself).
  EP_Win dyn = EP_WIN_NULL, shared = EP_WIN_NULL;
  EP_Group me = EP_GROUP_NULL;
  std::vector<int> ones, displs, neg_counts, bad_ranks;
  std::vector<int> bdispls;  // displs in bytes (Alltoallw)
  std::vector<MPI_Datatype> types, bad_types;  // MPI_INT per rank; the last one null
};

struct Ctx {
  int index = 0;  // the endpoint's index in this process
  Comm world, self;
  EP_Comm inter = EP_COMM_NULL;  // an intercommunicator over world (even / odd ranks)
  int inter_rank = 0;
  EP_Group group = EP_GROUP_NULL;
  EP_Team team = EP_TEAM_NULL;
  EP_Request send_req = EP_REQUEST_NULL;  // a complete send request (never waited)
  int tag_ub = 0;
  MPI_Datatype uncommitted = MPI_DATATYPE_NULL;
  MPI_Comm parent = MPI_COMM_NULL;  // for EP_Comm_create_endpoints (index 0 only)
  // The buffers every fuzzed call is given; a failed call must leave them alone.
  std::vector<int> sbuf, rbuf;
  int* winmem = nullptr;
  static constexpr int kWinInts = 64;
  // Values behind the pointer kinds' bad values.
  EP_Message null_msg = EP_MESSAGE_NULL, comm_msg = EP_MESSAGE_NULL;
  EP_Request bad_reqs[2] = {EP_REQUEST_NULL, EP_REQUEST_NULL};
  // Keyvals and error handlers: a live keyval, a freed one, and the values
  // behind the pointer kinds' bad values.
  int keyval = EP_KEYVAL_INVALID, freed_keyval = EP_KEYVAL_INVALID;
  int invalid_keyval = EP_KEYVAL_INVALID, tag_ub_keyval = EP_TAG_UB;
  EP_Errhandler null_eh = EP_ERRHANDLER_NULL, junk_eh = reinterpret_cast<EP_Errhandler>(99),
                comm_eh = EP_ERRHANDLER_NULL;

  const int* s() const { return sbuf.data(); }
  int* r() { return rbuf.data(); }
};

// The wrong-kind handles a handle argument of kind `not_this` may receive.
std::vector<Bad> wrong_kinds(const Ctx& c, K not_this, int code) {
  std::vector<Bad> v;
  if (not_this != K::kComm) v.push_back(pval(c.world.h, code, "a communicator handle"));
  if (not_this != K::kGroup) v.push_back(pval(c.group, code, "a group handle"));
  if (not_this != K::kWin) v.push_back(pval(c.world.win, code, "a window handle"));
  if (not_this != K::kTeam) v.push_back(pval(c.team, code, "a team handle"));
  if (not_this != K::kReqIn) v.push_back(pval(c.send_req, code, "a request handle"));
  v.push_back(pval(EP_ERRORS_RETURN, code, "EP_ERRORS_RETURN"));
  v.push_back(pval(EP_MESSAGE_NO_PROC, code, "EP_MESSAGE_NO_PROC"));
  return v;
}

// The bad values of kind `k` for a call on `cm`.
std::vector<Bad> bads(K k, Ctx& c, const Comm& cm) {
  const int n = cm.size;
  std::vector<Bad> v;
  auto add = [&](std::vector<Bad> more) { v.insert(v.end(), more.begin(), more.end()); };
  switch (k) {
    case K::kComm:
      v.push_back(pval(EP_COMM_NULL, EP_ERR_COMM, "EP_COMM_NULL (or a freed communicator)"));
      add(wrong_kinds(c, K::kComm, EP_ERR_COMM));
      break;
    case K::kIntercomm:
      v.push_back(pval(EP_COMM_NULL, EP_ERR_COMM, "EP_COMM_NULL"));
      v.push_back(pval(c.world.h, EP_ERR_COMM, "an intracommunicator"));
      add(wrong_kinds(c, K::kComm, EP_ERR_COMM));
      break;
    case K::kDest:
      for (int64_t x : {int64_t{-7}, int64_t{n}, int64_t{n + 3}, int64_t{EP_ANY_SOURCE},
                        int64_t{EP_ROOT}, int64_t{INT_MAX}, int64_t{INT_MIN}}) {
        v.push_back(ival(x, EP_ERR_RANK, "rank " + std::to_string(x)));
      }
      break;
    case K::kSource:
    case K::kTarget:
      for (int64_t x : {int64_t{-7}, int64_t{n}, int64_t{n + 3}, int64_t{EP_ROOT},
                        int64_t{INT_MAX}, int64_t{INT_MIN}}) {
        v.push_back(ival(x, EP_ERR_RANK, "rank " + std::to_string(x)));
      }
      if (k == K::kTarget) v.push_back(ival(EP_ANY_SOURCE, EP_ERR_RANK, "EP_ANY_SOURCE"));
      break;
    case K::kSendTag:
      v.push_back(ival(EP_ANY_TAG, EP_ERR_TAG, "EP_ANY_TAG"));
      v.push_back(ival(-5, EP_ERR_TAG, "tag -5"));
      v.push_back(ival(INT_MIN, EP_ERR_TAG, "tag INT_MIN"));
      if (c.tag_ub < INT_MAX) v.push_back(ival(int64_t{c.tag_ub} + 1, EP_ERR_TAG, "tag_ub + 1"));
      break;
    case K::kRecvTag:
      v.push_back(ival(-5, EP_ERR_TAG, "tag -5"));
      v.push_back(ival(INT_MIN, EP_ERR_TAG, "tag INT_MIN"));
      if (c.tag_ub < INT_MAX) v.push_back(ival(int64_t{c.tag_ub} + 1, EP_ERR_TAG, "tag_ub + 1"));
      break;
    case K::kCount:
      v.push_back(ival(-1, EP_ERR_COUNT, "count -1"));
      v.push_back(ival(INT_MIN, EP_ERR_COUNT, "count INT_MIN"));
      break;
    case K::kLen:
      v.push_back(ival(-1, EP_ERR_COUNT, "length -1"));
      v.push_back(ival(INT_MIN, EP_ERR_COUNT, "length INT_MIN"));
      break;
    case K::kType: {
      Bad b;
      b.t = MPI_DATATYPE_NULL;
      b.code = EP_ERR_TYPE;
      b.what = "MPI_DATATYPE_NULL";
      v.push_back(b);
      b.t = c.uncommitted;
      b.what = "an uncommitted datatype";
      v.push_back(b);
      break;
    }
    case K::kOp: {
      Bad b;
      b.o = MPI_OP_NULL;
      b.code = EP_ERR_OP;
      b.what = "MPI_OP_NULL";
      v.push_back(b);
      break;
    }
    case K::kSendBuf:
    case K::kRecvBuf:
    case K::kBsendBuf:
      v.push_back(pval(nullptr, EP_ERR_BUFFER, "NULL"));
      v.push_back(pval(EP_IN_PLACE, EP_ERR_BUFFER, "EP_IN_PLACE"));
      break;
    case K::kSendBufIP:
    case K::kRecvBufIP:
      v.push_back(pval(nullptr, EP_ERR_BUFFER, "NULL"));
      break;
    case K::kRoot:
      for (int64_t x : {int64_t{EP_PROC_NULL}, int64_t{EP_ROOT}, int64_t{-7}, int64_t{n},
                        int64_t{INT_MAX}}) {
        v.push_back(ival(x, EP_ERR_ROOT, "root " + std::to_string(x)));
      }
      break;
    case K::kOut:
    case K::kArr:
    case K::kStatusIn:
    case K::kFn:
      v.push_back(pval(nullptr, EP_ERR_ARG, "NULL"));
      break;
    case K::kCounts:
      v.push_back(pval(nullptr, EP_ERR_ARG, "NULL"));
      v.push_back(pval(cm.neg_counts.data(), EP_ERR_COUNT, "an array with a negative count"));
      break;
    case K::kTypes:
      v.push_back(pval(nullptr, EP_ERR_ARG, "NULL"));
      v.push_back(pval(cm.bad_types.data(), EP_ERR_TYPE, "an array holding MPI_DATATYPE_NULL"));
      break;
    case K::kRanks:
      v.push_back(pval(nullptr, EP_ERR_ARG, "NULL"));
      v.push_back(pval(cm.bad_ranks.data(), EP_ERR_RANK, "an array with a rank out of range"));
      break;
    case K::kReqIn:
      v.push_back(pval(EP_REQUEST_NULL, EP_ERR_REQUEST, "EP_REQUEST_NULL"));
      add(wrong_kinds(c, K::kReqIn, EP_ERR_REQUEST));
      break;
    case K::kGreqIn:
    case K::kPersistIn:
      v.push_back(pval(EP_REQUEST_NULL, EP_ERR_REQUEST, "EP_REQUEST_NULL"));
      add(wrong_kinds(c, K::kReqIn, EP_ERR_REQUEST));
      v.push_back(pval(c.send_req, EP_ERR_REQUEST, "a send request"));
      break;
    case K::kReqWait:
      add(wrong_kinds(c, K::kReqIn, EP_ERR_REQUEST));
      break;
    case K::kReqArr:
      v.push_back(pval(nullptr, EP_ERR_ARG, "NULL"));
      v.push_back(pval(c.bad_reqs, EP_ERR_REQUEST, "an array holding a communicator handle"));
      break;
    case K::kMsgPtr:
      v.push_back(pval(nullptr, EP_ERR_ARG, "NULL"));
      v.push_back(pval(&c.null_msg, EP_ERR_REQUEST, "EP_MESSAGE_NULL"));
      v.push_back(pval(&c.comm_msg, EP_ERR_REQUEST, "a communicator handle"));
      break;
    case K::kGroup:
      v.push_back(pval(EP_GROUP_NULL, EP_ERR_GROUP, "EP_GROUP_NULL (or a freed group)"));
      add(wrong_kinds(c, K::kGroup, EP_ERR_GROUP));
      break;
    case K::kWin:
      v.push_back(pval(EP_WIN_NULL, EP_ERR_WIN, "EP_WIN_NULL (or a freed window)"));
      add(wrong_kinds(c, K::kWin, EP_ERR_WIN));
      break;
    case K::kTeam:
      v.push_back(pval(EP_TEAM_NULL, EP_ERR_TEAM, "EP_TEAM_NULL (or a freed team)"));
      add(wrong_kinds(c, K::kTeam, EP_ERR_TEAM));
      break;
    case K::kErrh:
      v.push_back(pval(nullptr, EP_ERR_ARG, "a null error handler"));
      v.push_back(pval(reinterpret_cast<const void*>(99), EP_ERR_ARG, "(EP_Errhandler)99"));
      v.push_back(pval(c.world.h, EP_ERR_ARG, "a communicator handle"));
      break;
    case K::kDisp:
      v.push_back(ival(-1, EP_ERR_RMA_RANGE, "displacement -1"));
      v.push_back(ival(int64_t{1} << 40, EP_ERR_RMA_RANGE, "displacement 2^40"));
      v.push_back(ival(Ctx::kWinInts, EP_ERR_RMA_RANGE, "displacement at the window's end"));
      break;
    case K::kLockType:
      v.push_back(ival(0, EP_ERR_ARG, "lock type 0"));
      v.push_back(ival(-1, EP_ERR_ARG, "lock type -1"));
      break;
    case K::kFenceAssert:
      v.push_back(ival(0x40000000, EP_ERR_ARG, "assert 0x40000000"));
      break;
    case K::kLockAssert:
      v.push_back(ival(EP_MODE_NOPUT, EP_ERR_ARG, "assert EP_MODE_NOPUT"));
      v.push_back(ival(0x40000000, EP_ERR_ARG, "assert 0x40000000"));
      break;
    case K::kWinSize:
      v.push_back(ival(-1, EP_ERR_ARG, "size -1"));
      break;
    case K::kDispUnit:
      v.push_back(ival(0, EP_ERR_ARG, "disp_unit 0"));
      v.push_back(ival(-4, EP_ERR_ARG, "disp_unit -4"));
      break;
    case K::kKeyval:
      v.push_back(ival(-12345, EP_ERR_ARG, "keyval -12345"));
      v.push_back(ival(MPI_TAG_UB, EP_ERR_ARG, "MPI_TAG_UB (a communicator keyval)"));
      break;
    case K::kCommKeyval:
    case K::kUserKeyval:
      v.push_back(ival(-12345, EP_ERR_ARG, "keyval -12345"));
      v.push_back(ival(EP_KEYVAL_INVALID, EP_ERR_ARG, "EP_KEYVAL_INVALID"));
      v.push_back(ival(c.freed_keyval, EP_ERR_ARG, "a freed keyval"));
      v.push_back(ival(EP_WIN_BASE, EP_ERR_ARG, "EP_WIN_BASE (a window keyval)"));
      if (k == K::kUserKeyval) v.push_back(ival(EP_TAG_UB, EP_ERR_ARG, "EP_TAG_UB (predefined)"));
      break;
    case K::kKeyvalPtr:
      v.push_back(pval(nullptr, EP_ERR_ARG, "NULL"));
      v.push_back(pval(&c.invalid_keyval, EP_ERR_ARG, "a pointer to EP_KEYVAL_INVALID"));
      v.push_back(pval(&c.tag_ub_keyval, EP_ERR_ARG, "a pointer to EP_TAG_UB"));
      v.push_back(pval(&c.freed_keyval, EP_ERR_ARG, "a pointer to a freed keyval"));
      break;
    case K::kErrhPtr:
      v.push_back(pval(nullptr, EP_ERR_ARG, "NULL"));
      v.push_back(pval(&c.null_eh, EP_ERR_ARG, "a pointer to EP_ERRHANDLER_NULL"));
      v.push_back(pval(&c.junk_eh, EP_ERR_ARG, "a pointer to (EP_Errhandler)99"));
      v.push_back(pval(&c.comm_eh, EP_ERR_ARG, "a pointer to a communicator handle"));
      break;
    case K::kMpiComm: {
      Bad b;
      b.c = MPI_COMM_NULL;
      b.code = EP_ERR_COMM;
      b.what = "MPI_COMM_NULL";
      v.push_back(b);
      break;
    }
    case K::kNumEp:
      v.push_back(ival(-1, EP_ERR_ARG, "num_ep -1"));
      break;
    case K::kCode:
      v.push_back(ival(-1, EP_ERR_ARG, "code -1"));
      v.push_back(ival(EP_ERR_LASTCODE, EP_ERR_ARG, "code EP_ERR_LASTCODE"));
      v.push_back(ival(1 << 20, EP_ERR_ARG, "code 2^20"));
      break;
    case K::kColor:
      v.push_back(ival(-5, EP_ERR_ARG, "color -5"));
      break;
    case K::kSplitType:
      v.push_back(ival(12345, EP_ERR_ARG, "split_type 12345"));
      v.push_back(ival(-5, EP_ERR_ARG, "split_type -5"));
      break;
    case K::kRanges: {
      static const int stride0[1][3] = {{0, 0, 0}}, past_end[1][3] = {{0, INT_MAX, 1}};
      v.push_back(pval(nullptr, EP_ERR_ARG, "NULL"));
      v.push_back(pval(stride0, EP_ERR_ARG, "a range of stride 0"));
      v.push_back(pval(past_end, EP_ERR_RANK, "a range running out of the group"));
      break;
    }
    case K::kLeader:
      v.push_back(ival(-1, EP_ERR_RANK, "leader -1"));
      v.push_back(ival(n, EP_ERR_RANK, "leader = size"));
      break;
    case K::kRemoteLeader:
      v.push_back(ival(-1, EP_ERR_RANK, "remote_leader -1"));
      v.push_back(ival(c.world.size, EP_ERR_RANK, "remote_leader = peer size"));
      break;
    case K::kPeerComm:
      v.push_back(pval(EP_COMM_NULL, EP_ERR_COMM, "EP_COMM_NULL"));
      v.push_back(pval(c.group, EP_ERR_COMM, "a group handle"));
      v.push_back(pval(c.inter, EP_ERR_COMM, "an intercommunicator"));
      break;
    case K::kIcTag:
      v.push_back(ival(-5, EP_ERR_TAG, "tag -5"));
      break;
    case K::kMaxsize:
      v.push_back(ival(0, EP_ERR_ARG, "maxsize 0"));
      v.push_back(ival(-3, EP_ERR_ARG, "maxsize -3"));
      break;
    case K::kTeamsize:
      v.push_back(ival(0, EP_ERR_ARG, "teamsize 0"));
      v.push_back(ival(-1, EP_ERR_ARG, "teamsize -1"));
      break;
    case K::kBsendSize:
      v.push_back(ival(-1, EP_ERR_BUFFER, "size -1"));
      break;
  }
  return v;
}

bool int_kind(K k) {
  switch (k) {
    case K::kDest: case K::kSource: case K::kSendTag: case K::kRecvTag: case K::kCount:
    case K::kLen: case K::kRoot: case K::kTarget: case K::kLockType: case K::kFenceAssert:
    case K::kLockAssert: case K::kDispUnit: case K::kKeyval: case K::kNumEp: case K::kCode:
    case K::kCommKeyval: case K::kUserKeyval:
    case K::kColor: case K::kSplitType: case K::kLeader: case K::kRemoteLeader: case K::kIcTag:
    case K::kMaxsize:
    case K::kTeamsize: case K::kBsendSize:
      return true;
    default:
      return false;
  }
}

// ---- Calls ------------------------------------------------------------------------------

struct Entry;

// The arguments of one fuzzed call: slot `target` gets `bad`, every other the good value
// the call passes.
class A {
 public:
  A(const Entry& e, int target, const Bad* bad) : e_(e), target_(target), bad_(bad) {}
  int i(int slot, int good) { return is(slot, true) ? static_cast<int>(bad_->i) : good; }
  MPI_Aint aint(int slot, MPI_Aint good) {
    return is(slot, false, K::kDisp, K::kWinSize) ? static_cast<MPI_Aint>(bad_->i) : good;
  }
  MPI_Datatype type(int slot, MPI_Datatype good) { return is(slot, false, K::kType) ? bad_->t : good; }
  MPI_Op op(int slot, MPI_Op good) { return is(slot, false, K::kOp) ? bad_->o : good; }
  MPI_Comm mpi_comm(int slot, MPI_Comm good) {
    return is(slot, false, K::kMpiComm) ? bad_->c : good;
  }
  template <class T>
  T* p(int slot, T* good) {
    return is(slot, false) ? reinterpret_cast<T*>(const_cast<void*>(bad_->p)) : good;
  }
  bool mutated(int slot) const { return slot == target_; }

 private:
  bool is(int slot, bool integer, K k1 = K::kComm, K k2 = K::kComm);
  const Entry& e_;
  int target_;
  const Bad* bad_;
};

enum class Mode {
  kLocal,  // on the whole communicator, no collective
  kColl,   // collective: on the whole communicator or the endpoint alone
  kSelf,   // collective, only on the endpoint alone
  kWhole,  // collective, only on the whole communicator
  kProc,   // once per process (endpoint index 0), collective over the processes
};

struct Entry {
  const char* name;
  Mode mode;
  std::vector<Slot> slots;
  std::function<int(A&, Ctx&, Comm&)> call;
};

bool A::is(int slot, bool integer, K k1, K k2) {
  if (slot < 0 || slot >= static_cast<int>(e_.slots.size())) {
    std::fprintf(stderr, "fuzz_test: %s: slot %d is not declared\n", e_.name, slot);
    std::abort();
  }
  const K k = e_.slots[static_cast<size_t>(slot)].kind;
  const bool ok = integer ? int_kind(k) : (k1 == K::kComm && k2 == K::kComm) ? !int_kind(k)
                                                                              : k == k1 || k == k2;
  if (!ok) {
    std::fprintf(stderr, "fuzz_test: %s: slot %d is read as another kind\n", e_.name, slot);
    std::abort();
  }
  return slot == target_;
}

// Good values the calls share.
int noop_query(void*, EP_Status*) { return EP_SUCCESS; }
int noop_free(void*) { return EP_SUCCESS; }
int noop_cancel(void*, int) { return EP_SUCCESS; }
void noop_errhandler(EP_Comm*, int*, ...) {}

// A complete generalized request (a good request for the Wait/Test family).
EP_Request done_request() {
  EP_Request r = EP_REQUEST_NULL;
  EP_Grequest_start(noop_query, noop_free, noop_cancel, nullptr, &r);
  EP_Grequest_complete(r);
  return r;
}
// Completes what a call left of `r` (nothing, if the fuzzed call failed as it must not).
void drop(EP_Request* r) {
  if (*r != EP_REQUEST_NULL) EP_Wait(r, EP_STATUS_IGNORE);
}

// Within a passive-target epoch on `cm`'s window (the RMA operations need one: they
// must fail for their argument, not for the missing epoch).
int in_epoch(Comm& cm, const std::function<int()>& f) {
  if (EP_Win_lock_all(0, cm.win) != EP_SUCCESS) return -1000;
  const int rc = f();
  EP_Win_unlock_all(cm.win);
  return rc;
}

#define FN(...) []([[maybe_unused]] A & a, [[maybe_unused]] Ctx & c, [[maybe_unused]] Comm & m) -> int { __VA_ARGS__ }
#define SEND(f) \
  {#f, Mode::kLocal, {{K::kSendBuf}, {K::kCount}, {K::kType}, {K::kDest}, {K::kSendTag}, {K::kComm}}, \
   FN(return f(a.p(0, c.s()), a.i(1, 1), a.type(2, MPI_INT), a.i(3, m.rank), a.i(4, 7),        \
               a.p(5, m.h));)}
#define ISEND(f)                                                                                 \
  {#f, Mode::kLocal,                                                                             \
   {{K::kSendBuf}, {K::kCount}, {K::kType}, {K::kDest}, {K::kSendTag}, {K::kComm}, {K::kOut}},   \
   FN(EP_Request r = EP_REQUEST_NULL;                                                            \
      return f(a.p(0, c.s()), a.i(1, 1), a.type(2, MPI_INT), a.i(3, m.rank), a.i(4, 7),          \
               a.p(5, m.h), a.p(6, &r));)}
#define COMM_QUERY(f) \
  {#f, Mode::kLocal, {{K::kComm}, {K::kOut}}, FN(int v = 0; return f(a.p(0, m.h), a.p(1, &v));)}
#define SCAN(f)                                                                                  \
  {#f, Mode::kColl, {{K::kSendBufIP}, {K::kRecvBuf}, {K::kCount}, {K::kType}, {K::kOp}, {K::kComm}}, \
   FN(return f(a.p(0, c.s()), a.p(1, c.r()), a.i(2, 1), a.type(3, MPI_INT), a.op(4, MPI_SUM),    \
               a.p(5, m.h));)}

#define ISCAN(f)                                                                                 \
  {#f, Mode::kColl,                                                                              \
   {{K::kSendBufIP}, {K::kRecvBuf}, {K::kCount}, {K::kType}, {K::kOp}, {K::kComm}, {K::kOut}},   \
   FN(EP_Request r = EP_REQUEST_NULL;                                                            \
      return f(a.p(0, c.s()), a.p(1, c.r()), a.i(2, 1), a.type(3, MPI_INT), a.op(4, MPI_SUM),    \
               a.p(5, m.h), a.p(6, &r));)}

// Groups built from the world group (c.group); a result is freed.
#define GROUP_RANKS(f)                                                                        \
  {#f, Mode::kLocal, {{K::kGroup}, {K::kLen}, {K::kRanks}, {K::kOut}},                        \
   FN(const int in[2] = {0, c.world.size - 1}; EP_Group g = EP_GROUP_NULL;                    \
      const int rc = f(a.p(0, c.group), a.i(1, 2), a.p(2, in), a.p(3, &g));                   \
      if (rc == EP_SUCCESS) EP_Group_free(&g);                                                \
      return rc;)}
#define GROUP_RANGES(f)                                                                       \
  {#f, Mode::kLocal, {{K::kGroup}, {K::kLen}, {K::kRanges}, {K::kOut}},                       \
   FN(int in[1][3] = {{c.world.size - 1, 0, -2}}; EP_Group g = EP_GROUP_NULL;                 \
      const int rc = f(a.p(0, c.group), a.i(1, 1), a.p(2, in), a.p(3, &g));                   \
      if (rc == EP_SUCCESS) EP_Group_free(&g);                                                \
      return rc;)}
#define GROUP_PAIR(f)                                                                         \
  {#f, Mode::kLocal, {{K::kGroup}, {K::kGroup}, {K::kOut}},                                   \
   FN(EP_Group g = EP_GROUP_NULL;                                                             \
      const int rc = f(a.p(0, c.group), a.p(1, c.group), a.p(2, &g));                         \
      if (rc == EP_SUCCESS) EP_Group_free(&g);                                                \
      return rc;)}

const std::vector<Entry>& table() {
  static const std::vector<Entry> t = {
      // ---- Environment
      {"EP_Initialized", Mode::kLocal, {{K::kOut}}, FN(int f; return EP_Initialized(a.p(0, &f));)},
      {"EP_Query_thread", Mode::kLocal, {{K::kOut}},
       FN(int f; return EP_Query_thread(a.p(0, &f));)},
      {"EP_Is_thread_main", Mode::kLocal, {{K::kOut}},
       FN(int f; return EP_Is_thread_main(a.p(0, &f));)},
      {"EP_Comm_set_errhandler", Mode::kLocal, {{K::kComm}, {K::kErrh}},
       FN(return EP_Comm_set_errhandler(a.p(0, m.h), a.p(1, EP_ERRORS_RETURN));)},
      {"EP_Win_set_errhandler", Mode::kLocal, {{K::kWin}, {K::kErrh}},
       FN(return EP_Win_set_errhandler(a.p(0, m.win), a.p(1, EP_ERRORS_RETURN));)},
      {"EP_Comm_get_errhandler", Mode::kLocal, {{K::kComm}, {K::kOut}},
       FN(EP_Errhandler e; return EP_Comm_get_errhandler(a.p(0, m.h), a.p(1, &e));)},
      {"EP_Error_string", Mode::kLocal, {{K::kCode}, {K::kOut}, {K::kOut}},
       FN(char s[EP_MAX_ERROR_STRING]; int len;
          return EP_Error_string(a.i(0, EP_ERR_TAG), a.p(1, s), a.p(2, &len));)},
      // ---- Communicators
      {"EP_Comm_create_endpoints", Mode::kProc, {{K::kMpiComm}, {K::kNumEp}, {K::kOut}},
       FN(EP_Comm out[1];
          const int rc = EP_Comm_create_endpoints(a.mpi_comm(0, c.parent), a.i(1, 1),
                                                  MPI_INFO_NULL, a.p(2, out));
          if (rc == EP_SUCCESS) EP_Comm_free(&out[0]);
          return rc;)},
      COMM_QUERY(EP_Comm_rank),
      COMM_QUERY(EP_Comm_size),
      COMM_QUERY(EP_Comm_local_rank),
      COMM_QUERY(EP_Comm_local_size),
      COMM_QUERY(EP_Comm_test_inter),
      COMM_QUERY(EP_Comm_tag_ub),
      {"EP_Comm_remote_size", Mode::kLocal, {{K::kIntercomm}, {K::kOut}},
       FN(int v; return EP_Comm_remote_size(a.p(0, c.inter), a.p(1, &v));)},
      {"EP_Comm_dup", Mode::kColl, {{K::kComm}, {K::kOut}},
       FN(EP_Comm d = EP_COMM_NULL; const int rc = EP_Comm_dup(a.p(0, m.h), a.p(1, &d));
          if (rc == EP_SUCCESS) EP_Comm_free(&d);
          return rc;)},
      {"EP_Comm_free", Mode::kLocal, {{K::kOut}, {K::kComm}},
       FN(EP_Comm h = a.p(1, m.h); return EP_Comm_free(a.p(0, &h));)},
      {"EP_Comm_compare", Mode::kLocal, {{K::kComm}, {K::kComm}, {K::kOut}},
       FN(int v; return EP_Comm_compare(a.p(0, m.h), a.p(1, c.world.h), a.p(2, &v));)},
      {"EP_Comm_split", Mode::kColl, {{K::kComm}, {K::kColor}, {K::kOut}},
       FN(EP_Comm d = EP_COMM_NULL;
          const int rc = EP_Comm_split(a.p(0, m.h), a.i(1, 0), m.rank, a.p(2, &d));
          if (rc == EP_SUCCESS && d != EP_COMM_NULL) EP_Comm_free(&d);
          return rc;)},
      {"EP_Intercomm_create", Mode::kSelf,
       {{K::kComm}, {K::kLeader}, {K::kPeerComm}, {K::kRemoteLeader}, {K::kIcTag}, {K::kOut}},
       FN(EP_Comm d = EP_COMM_NULL;
          return EP_Intercomm_create(a.p(0, m.h), a.i(1, 0), a.p(2, c.world.h),
                                     a.i(3, (c.world.rank + 1) % c.world.size), a.i(4, 5),
                                     a.p(5, &d));)},
      {"EP_Intercomm_merge", Mode::kWhole, {{K::kIntercomm}, {K::kOut}},
       FN(EP_Comm d = EP_COMM_NULL; const int rc = EP_Intercomm_merge(a.p(0, c.inter), 0, a.p(1, &d));
          if (rc == EP_SUCCESS) EP_Comm_free(&d);
          return rc;)},
      {"EP_Comm_group", Mode::kLocal, {{K::kComm}, {K::kOut}},
       FN(EP_Group g = EP_GROUP_NULL; const int rc = EP_Comm_group(a.p(0, m.h), a.p(1, &g));
          if (rc == EP_SUCCESS) EP_Group_free(&g);
          return rc;)},
      {"EP_Group_size", Mode::kLocal, {{K::kGroup}, {K::kOut}},
       FN(int v; return EP_Group_size(a.p(0, c.group), a.p(1, &v));)},
      {"EP_Group_rank", Mode::kLocal, {{K::kGroup}, {K::kOut}},
       FN(int v; return EP_Group_rank(a.p(0, c.group), a.p(1, &v));)},
      {"EP_Group_free", Mode::kLocal, {{K::kOut}, {K::kGroup}},
       FN(EP_Group g = a.p(1, c.group); return EP_Group_free(a.p(0, &g));)},
      {"EP_Group_translate_ranks", Mode::kLocal,
       {{K::kGroup}, {K::kLen}, {K::kRanks}, {K::kGroup}, {K::kArr}},
       FN(int out[2]; const int in[2] = {0, c.world.size - 1};
          return EP_Group_translate_ranks(a.p(0, c.group), a.i(1, 2), a.p(2, in), a.p(3, c.group),
                                          a.p(4, out));)},
      // ---- Point-to-point
      SEND(EP_Send),
      SEND(EP_Bsend),
      SEND(EP_Ssend),
      SEND(EP_Rsend),
      ISEND(EP_Isend),
      ISEND(EP_Ibsend),
      ISEND(EP_Issend),
      ISEND(EP_Irsend),
      {"EP_Recv", Mode::kLocal,
       {{K::kRecvBuf}, {K::kCount}, {K::kType}, {K::kSource}, {K::kRecvTag}, {K::kComm}},
       FN(return EP_Recv(a.p(0, c.r()), a.i(1, 1), a.type(2, MPI_INT), a.i(3, m.rank), a.i(4, 7),
                         a.p(5, m.h), EP_STATUS_IGNORE);)},
      {"EP_Irecv", Mode::kLocal,
       {{K::kRecvBuf}, {K::kCount}, {K::kType}, {K::kSource}, {K::kRecvTag}, {K::kComm}, {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL;
          return EP_Irecv(a.p(0, c.r()), a.i(1, 1), a.type(2, MPI_INT), a.i(3, m.rank), a.i(4, 7),
                          a.p(5, m.h), a.p(6, &r));)},
      {"EP_Sendrecv", Mode::kLocal,
       {{K::kSendBuf}, {K::kCount}, {K::kType}, {K::kDest}, {K::kSendTag}, {K::kRecvBuf},
        {K::kCount}, {K::kType}, {K::kSource}, {K::kRecvTag}, {K::kComm}},
       FN(return EP_Sendrecv(a.p(0, c.s()), a.i(1, 1), a.type(2, MPI_INT), a.i(3, m.rank),
                             a.i(4, 8), a.p(5, c.r()), a.i(6, 1), a.type(7, MPI_INT),
                             a.i(8, m.rank), a.i(9, 8), a.p(10, m.h), EP_STATUS_IGNORE);)},
      {"EP_Sendrecv_replace", Mode::kLocal,
       {{K::kRecvBuf}, {K::kCount}, {K::kType}, {K::kDest}, {K::kSendTag}, {K::kSource},
        {K::kRecvTag}, {K::kComm}},
       FN(return EP_Sendrecv_replace(a.p(0, c.r()), a.i(1, 1), a.type(2, MPI_INT), a.i(3, m.rank),
                                     a.i(4, 8), a.i(5, m.rank), a.i(6, 8), a.p(7, m.h),
                                     EP_STATUS_IGNORE);)},
      {"EP_Probe", Mode::kLocal, {{K::kSource}, {K::kRecvTag}, {K::kComm}},
       FN(return EP_Probe(a.i(0, m.rank), a.i(1, 7), a.p(2, m.h), EP_STATUS_IGNORE);)},
      {"EP_Iprobe", Mode::kLocal, {{K::kSource}, {K::kRecvTag}, {K::kComm}, {K::kOut}},
       FN(int f; return EP_Iprobe(a.i(0, m.rank), a.i(1, 7), a.p(2, m.h), a.p(3, &f),
                                  EP_STATUS_IGNORE);)},
      {"EP_Mprobe", Mode::kLocal, {{K::kSource}, {K::kRecvTag}, {K::kComm}, {K::kOut}},
       FN(EP_Message msg; return EP_Mprobe(a.i(0, m.rank), a.i(1, 7), a.p(2, m.h), a.p(3, &msg),
                                           EP_STATUS_IGNORE);)},
      {"EP_Improbe", Mode::kLocal, {{K::kSource}, {K::kRecvTag}, {K::kComm}, {K::kOut}, {K::kOut}},
       FN(int f; EP_Message msg; return EP_Improbe(a.i(0, m.rank), a.i(1, 7), a.p(2, m.h),
                                                   a.p(3, &f), a.p(4, &msg), EP_STATUS_IGNORE);)},
      // Mrecv/Imrecv get a real message (sent to this endpoint, taken by a matched probe);
      // whatever the fuzzed call leaves of it is received afterwards.
      {"EP_Mrecv", Mode::kLocal, {{K::kRecvBuf}, {K::kCount}, {K::kType}, {K::kMsgPtr}},
       FN(int v = 5, got = 0; EP_Message msg = EP_MESSAGE_NULL;
          EP_Send(&v, 1, MPI_INT, m.rank, 9, m.h);
          EP_Mprobe(m.rank, 9, m.h, &msg, EP_STATUS_IGNORE);
          EP_Message* mp = a.p(3, &msg);
          const int rc = EP_Mrecv(a.p(0, c.r()), a.i(1, 1), a.type(2, MPI_INT), mp, EP_STATUS_IGNORE);
          if (msg != EP_MESSAGE_NULL) EP_Mrecv(&got, 1, MPI_INT, &msg, EP_STATUS_IGNORE);
          return rc;)},
      {"EP_Imrecv", Mode::kLocal, {{K::kRecvBuf}, {K::kCount}, {K::kType}, {K::kMsgPtr}, {K::kOut}},
       FN(int v = 5, got = 0; EP_Message msg = EP_MESSAGE_NULL; EP_Request r = EP_REQUEST_NULL;
          EP_Send(&v, 1, MPI_INT, m.rank, 9, m.h);
          EP_Mprobe(m.rank, 9, m.h, &msg, EP_STATUS_IGNORE);
          const int rc = EP_Imrecv(a.p(0, c.r()), a.i(1, 1), a.type(2, MPI_INT), a.p(3, &msg),
                                   a.p(4, &r));
          if (msg != EP_MESSAGE_NULL) EP_Mrecv(&got, 1, MPI_INT, &msg, EP_STATUS_IGNORE);
          drop(&r);
          return rc;)},
      {"EP_Buffer_attach", Mode::kLocal, {{K::kBsendBuf}, {K::kBsendSize}},
       FN(static thread_local char buf[1024]; const int rc = EP_Buffer_attach(a.p(0, buf), a.i(1, 1024));
          if (rc == EP_SUCCESS) { void* b; int s; EP_Buffer_detach(&b, &s); }
          return rc;)},
      {"EP_Buffer_detach", Mode::kLocal, {{K::kOut}, {K::kOut}},
       FN(void* b; int s; return EP_Buffer_detach(a.p(0, &b), a.p(1, &s));)},
      {"EP_Get_count", Mode::kLocal, {{K::kStatusIn}, {K::kType}, {K::kOut}},
       FN(EP_Status st{}; int v; return EP_Get_count(a.p(0, &st), a.type(1, MPI_INT), a.p(2, &v));)},
      {"EP_Get_elements", Mode::kLocal, {{K::kStatusIn}, {K::kType}, {K::kOut}},
       FN(EP_Status st{}; int v;
          return EP_Get_elements(a.p(0, &st), a.type(1, MPI_INT), a.p(2, &v));)},
      // ---- Requests (good requests: complete generalized requests)
      {"EP_Wait", Mode::kLocal, {{K::kOut}, {K::kReqWait}},
       FN(EP_Request r = done_request(); EP_Request h = a.p(1, r);
          const int rc = EP_Wait(a.p(0, &h), EP_STATUS_IGNORE);
          if (h != r) drop(&r);
          return rc;)},
      {"EP_Test", Mode::kLocal, {{K::kOut}, {K::kReqWait}, {K::kOut}},
       FN(EP_Request r = done_request(); EP_Request h = a.p(1, r); int f;
          const int rc = EP_Test(a.p(0, &h), a.p(2, &f), EP_STATUS_IGNORE);
          if (h != r) drop(&r);
          return rc;)},
      {"EP_Waitall", Mode::kLocal, {{K::kLen}, {K::kReqArr}},
       FN(EP_Request rs[2] = {done_request(), done_request()};
          const int rc = EP_Waitall(a.i(0, 2), a.p(1, rs), EP_STATUSES_IGNORE);
          drop(&rs[0]); drop(&rs[1]);
          return rc;)},
      {"EP_Testall", Mode::kLocal, {{K::kLen}, {K::kReqArr}, {K::kOut}},
       FN(EP_Request rs[2] = {done_request(), done_request()}; int f;
          const int rc = EP_Testall(a.i(0, 2), a.p(1, rs), a.p(2, &f), EP_STATUSES_IGNORE);
          drop(&rs[0]); drop(&rs[1]);
          return rc;)},
      {"EP_Waitany", Mode::kLocal, {{K::kLen}, {K::kReqArr}, {K::kOut}},
       FN(EP_Request rs[2] = {done_request(), done_request()}; int i;
          const int rc = EP_Waitany(a.i(0, 2), a.p(1, rs), a.p(2, &i), EP_STATUS_IGNORE);
          drop(&rs[0]); drop(&rs[1]);
          return rc;)},
      {"EP_Testany", Mode::kLocal, {{K::kLen}, {K::kReqArr}, {K::kOut}, {K::kOut}},
       FN(EP_Request rs[2] = {done_request(), done_request()}; int i, f;
          const int rc = EP_Testany(a.i(0, 2), a.p(1, rs), a.p(2, &i), a.p(3, &f), EP_STATUS_IGNORE);
          drop(&rs[0]); drop(&rs[1]);
          return rc;)},
      {"EP_Waitsome", Mode::kLocal, {{K::kLen}, {K::kReqArr}, {K::kOut}, {K::kArr}},
       FN(EP_Request rs[2] = {done_request(), done_request()}; int n, idx[2];
          const int rc = EP_Waitsome(a.i(0, 2), a.p(1, rs), a.p(2, &n), a.p(3, idx),
                                     EP_STATUSES_IGNORE);
          drop(&rs[0]); drop(&rs[1]);
          return rc;)},
      {"EP_Testsome", Mode::kLocal, {{K::kLen}, {K::kReqArr}, {K::kOut}, {K::kArr}},
       FN(EP_Request rs[2] = {done_request(), done_request()}; int n, idx[2];
          const int rc = EP_Testsome(a.i(0, 2), a.p(1, rs), a.p(2, &n), a.p(3, idx),
                                     EP_STATUSES_IGNORE);
          drop(&rs[0]); drop(&rs[1]);
          return rc;)},
      {"EP_Request_free", Mode::kLocal, {{K::kOut}, {K::kReqIn}},
       FN(EP_Request r = done_request(); EP_Request h = a.p(1, r);
          const int rc = EP_Request_free(a.p(0, &h));
          if (rc != EP_SUCCESS || h != EP_REQUEST_NULL) drop(&r);
          return rc;)},
      {"EP_Cancel", Mode::kLocal, {{K::kOut}, {K::kReqIn}},
       FN(EP_Request r = done_request(); EP_Request h = a.p(1, r);
          const int rc = EP_Cancel(a.p(0, &h));
          drop(&r);
          return rc;)},
      {"EP_Test_cancelled", Mode::kLocal, {{K::kStatusIn}, {K::kOut}},
       FN(EP_Status st{}; int f; return EP_Test_cancelled(a.p(0, &st), a.p(1, &f));)},
      {"EP_Request_get_status", Mode::kLocal, {{K::kReqWait}, {K::kOut}},
       FN(EP_Request r = done_request(); int f;
          const int rc = EP_Request_get_status(a.p(0, r), a.p(1, &f), EP_STATUS_IGNORE);
          drop(&r);
          return rc;)},
      {"EP_Grequest_start", Mode::kLocal, {{K::kFn}, {K::kFn}, {K::kFn}, {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL;
          const int rc = EP_Grequest_start(a.p(0, &noop_query), a.p(1, &noop_free),
                                           a.p(2, &noop_cancel), nullptr, a.p(3, &r));
          if (rc == EP_SUCCESS) { EP_Grequest_complete(r); drop(&r); }
          return rc;)},
      {"EP_Grequest_complete", Mode::kLocal, {{K::kGreqIn}},
       FN(EP_Request r = EP_REQUEST_NULL;
          EP_Grequest_start(noop_query, noop_free, noop_cancel, nullptr, &r);
          const int rc = EP_Grequest_complete(a.p(0, r));
          if (rc != EP_SUCCESS) EP_Grequest_complete(r);
          drop(&r);
          return rc;)},
      {"EP_Status_set_elements", Mode::kLocal, {{K::kStatusIn}, {K::kType}, {K::kCount}},
       FN(EP_Status st{}; return EP_Status_set_elements(a.p(0, &st), a.type(1, MPI_INT), a.i(2, 3));)},
      {"EP_Status_set_cancelled", Mode::kLocal, {{K::kStatusIn}},
       FN(EP_Status st{}; return EP_Status_set_cancelled(a.p(0, &st), 1);)},
      // ---- Collectives (on m: the whole communicator or the endpoint alone)
      {"EP_Barrier", Mode::kColl, {{K::kComm}}, FN(return EP_Barrier(a.p(0, m.h));)},
      {"EP_Bcast", Mode::kColl, {{K::kRecvBuf}, {K::kCount}, {K::kType}, {K::kRoot}, {K::kComm}},
       FN(return EP_Bcast(a.p(0, c.r()), a.i(1, 1), a.type(2, MPI_INT), a.i(3, 0), a.p(4, m.h));)},
      {"EP_Allreduce", Mode::kColl,
       {{K::kSendBufIP}, {K::kRecvBuf}, {K::kCount}, {K::kType}, {K::kOp}, {K::kComm}},
       FN(return EP_Allreduce(a.p(0, c.s()), a.p(1, c.r()), a.i(2, 1), a.type(3, MPI_INT),
                              a.op(4, MPI_SUM), a.p(5, m.h));)},
      {"EP_Reduce", Mode::kColl,
       {{K::kSendBufIP}, ro(K::kRecvBuf), {K::kCount}, {K::kType}, {K::kOp}, {K::kRoot}, {K::kComm}},
       FN(return EP_Reduce(a.p(0, c.s()), a.p(1, c.r()), a.i(2, 1), a.type(3, MPI_INT),
                           a.op(4, MPI_SUM), a.i(5, 0), a.p(6, m.h));)},
      {"EP_Gather", Mode::kColl,
       {{K::kSendBufIP}, {K::kCount}, {K::kType}, ro(K::kRecvBuf), ro(K::kCount), ro(K::kType),
        {K::kRoot}, {K::kComm}},
       FN(return EP_Gather(a.p(0, c.s()), a.i(1, 1), a.type(2, MPI_INT), a.p(3, c.r()), a.i(4, 1),
                           a.type(5, MPI_INT), a.i(6, 0), a.p(7, m.h));)},
      {"EP_Gatherv", Mode::kColl,
       {{K::kSendBufIP}, {K::kCount}, {K::kType}, ro(K::kRecvBuf), ro(K::kCounts), ro(K::kArr),
        ro(K::kType), {K::kRoot}, {K::kComm}},
       FN(return EP_Gatherv(a.p(0, c.s()), a.i(1, 1), a.type(2, MPI_INT), a.p(3, c.r()),
                            a.p(4, m.ones.data()), a.p(5, m.displs.data()), a.type(6, MPI_INT),
                            a.i(7, 0), a.p(8, m.h));)},
      {"EP_Scatter", Mode::kColl,
       {ro(K::kSendBuf), ro(K::kCount), ro(K::kType), {K::kRecvBufIP}, {K::kCount}, {K::kType},
        {K::kRoot}, {K::kComm}},
       FN(return EP_Scatter(a.p(0, c.s()), a.i(1, 1), a.type(2, MPI_INT), a.p(3, c.r()), a.i(4, 1),
                            a.type(5, MPI_INT), a.i(6, 0), a.p(7, m.h));)},
      {"EP_Scatterv", Mode::kColl,
       {ro(K::kSendBuf), ro(K::kCounts), ro(K::kArr), ro(K::kType), {K::kRecvBufIP}, {K::kCount},
        {K::kType}, {K::kRoot}, {K::kComm}},
       FN(return EP_Scatterv(a.p(0, c.s()), a.p(1, m.ones.data()), a.p(2, m.displs.data()),
                             a.type(3, MPI_INT), a.p(4, c.r()), a.i(5, 1), a.type(6, MPI_INT),
                             a.i(7, 0), a.p(8, m.h));)},
      {"EP_Allgather", Mode::kColl,
       {{K::kSendBufIP}, {K::kCount}, {K::kType}, {K::kRecvBuf}, {K::kCount}, {K::kType}, {K::kComm}},
       FN(return EP_Allgather(a.p(0, c.s()), a.i(1, 1), a.type(2, MPI_INT), a.p(3, c.r()),
                              a.i(4, 1), a.type(5, MPI_INT), a.p(6, m.h));)},
      {"EP_Allgatherv", Mode::kColl,
       {{K::kSendBufIP}, {K::kCount}, {K::kType}, {K::kRecvBuf}, {K::kCounts}, {K::kArr},
        {K::kType}, {K::kComm}},
       FN(return EP_Allgatherv(a.p(0, c.s()), a.i(1, 1), a.type(2, MPI_INT), a.p(3, c.r()),
                               a.p(4, m.ones.data()), a.p(5, m.displs.data()), a.type(6, MPI_INT),
                               a.p(7, m.h));)},
      {"EP_Alltoall", Mode::kColl,
       {{K::kSendBufIP}, {K::kCount}, {K::kType}, {K::kRecvBuf}, {K::kCount}, {K::kType}, {K::kComm}},
       FN(return EP_Alltoall(a.p(0, c.s()), a.i(1, 1), a.type(2, MPI_INT), a.p(3, c.r()),
                             a.i(4, 1), a.type(5, MPI_INT), a.p(6, m.h));)},
      {"EP_Alltoallv", Mode::kColl,
       {{K::kSendBufIP}, {K::kCounts}, {K::kArr}, {K::kType}, {K::kRecvBuf}, {K::kCounts},
        {K::kArr}, {K::kType}, {K::kComm}},
       FN(return EP_Alltoallv(a.p(0, c.s()), a.p(1, m.ones.data()), a.p(2, m.displs.data()),
                              a.type(3, MPI_INT), a.p(4, c.r()), a.p(5, m.ones.data()),
                              a.p(6, m.displs.data()), a.type(7, MPI_INT), a.p(8, m.h));)},
      {"EP_Reduce_scatter", Mode::kColl,
       {{K::kSendBufIP}, {K::kRecvBuf}, {K::kCounts}, {K::kType}, {K::kOp}, {K::kComm}},
       FN(return EP_Reduce_scatter(a.p(0, c.s()), a.p(1, c.r()), a.p(2, m.ones.data()),
                                   a.type(3, MPI_INT), a.op(4, MPI_SUM), a.p(5, m.h));)},
      {"EP_Reduce_scatter_block", Mode::kColl,
       {{K::kSendBufIP}, {K::kRecvBuf}, {K::kCount}, {K::kType}, {K::kOp}, {K::kComm}},
       FN(return EP_Reduce_scatter_block(a.p(0, c.s()), a.p(1, c.r()), a.i(2, 1),
                                         a.type(3, MPI_INT), a.op(4, MPI_SUM), a.p(5, m.h));)},
      {"EP_Alltoallw", Mode::kColl,
       {{K::kSendBufIP}, {K::kCounts}, {K::kArr}, {K::kTypes}, {K::kRecvBuf}, {K::kCounts},
        {K::kArr}, {K::kTypes}, {K::kComm}},
       FN(return EP_Alltoallw(a.p(0, c.s()), a.p(1, m.ones.data()), a.p(2, m.bdispls.data()),
                              a.p(3, m.types.data()), a.p(4, c.r()), a.p(5, m.ones.data()),
                              a.p(6, m.bdispls.data()), a.p(7, m.types.data()), a.p(8, m.h));)},
      SCAN(EP_Scan),
      SCAN(EP_Exscan),
      {"EP_Ibarrier", Mode::kColl, {{K::kComm}, {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL; return EP_Ibarrier(a.p(0, m.h), a.p(1, &r));)},
      {"EP_Ibcast", Mode::kColl,
       {{K::kRecvBuf}, {K::kCount}, {K::kType}, {K::kRoot}, {K::kComm}, {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL;
          return EP_Ibcast(a.p(0, c.r()), a.i(1, 1), a.type(2, MPI_INT), a.i(3, 0), a.p(4, m.h),
                           a.p(5, &r));)},
      {"EP_Ireduce", Mode::kColl,
       {{K::kSendBufIP}, ro(K::kRecvBuf), {K::kCount}, {K::kType}, {K::kOp}, {K::kRoot},
        {K::kComm}, {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL;
          return EP_Ireduce(a.p(0, c.s()), a.p(1, c.r()), a.i(2, 1), a.type(3, MPI_INT),
                            a.op(4, MPI_SUM), a.i(5, 0), a.p(6, m.h), a.p(7, &r));)},
      {"EP_Iallreduce", Mode::kColl,
       {{K::kSendBufIP}, {K::kRecvBuf}, {K::kCount}, {K::kType}, {K::kOp}, {K::kComm}, {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL;
          return EP_Iallreduce(a.p(0, c.s()), a.p(1, c.r()), a.i(2, 1), a.type(3, MPI_INT),
                               a.op(4, MPI_SUM), a.p(5, m.h), a.p(6, &r));)},
      {"EP_Igather", Mode::kColl,
       {{K::kSendBufIP}, {K::kCount}, {K::kType}, ro(K::kRecvBuf), ro(K::kCount), ro(K::kType),
        {K::kRoot}, {K::kComm}, {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL;
          return EP_Igather(a.p(0, c.s()), a.i(1, 1), a.type(2, MPI_INT), a.p(3, c.r()), a.i(4, 1),
                            a.type(5, MPI_INT), a.i(6, 0), a.p(7, m.h), a.p(8, &r));)},
      {"EP_Igatherv", Mode::kColl,
       {{K::kSendBufIP}, {K::kCount}, {K::kType}, ro(K::kRecvBuf), ro(K::kCounts), ro(K::kArr),
        ro(K::kType), {K::kRoot}, {K::kComm}, {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL;
          return EP_Igatherv(a.p(0, c.s()), a.i(1, 1), a.type(2, MPI_INT), a.p(3, c.r()),
                             a.p(4, m.ones.data()), a.p(5, m.displs.data()), a.type(6, MPI_INT),
                             a.i(7, 0), a.p(8, m.h), a.p(9, &r));)},
      {"EP_Iscatter", Mode::kColl,
       {ro(K::kSendBuf), ro(K::kCount), ro(K::kType), {K::kRecvBufIP}, {K::kCount}, {K::kType},
        {K::kRoot}, {K::kComm}, {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL;
          return EP_Iscatter(a.p(0, c.s()), a.i(1, 1), a.type(2, MPI_INT), a.p(3, c.r()), a.i(4, 1),
                             a.type(5, MPI_INT), a.i(6, 0), a.p(7, m.h), a.p(8, &r));)},
      {"EP_Iscatterv", Mode::kColl,
       {ro(K::kSendBuf), ro(K::kCounts), ro(K::kArr), ro(K::kType), {K::kRecvBufIP}, {K::kCount},
        {K::kType}, {K::kRoot}, {K::kComm}, {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL;
          return EP_Iscatterv(a.p(0, c.s()), a.p(1, m.ones.data()), a.p(2, m.displs.data()),
                              a.type(3, MPI_INT), a.p(4, c.r()), a.i(5, 1), a.type(6, MPI_INT),
                              a.i(7, 0), a.p(8, m.h), a.p(9, &r));)},
      {"EP_Iallgather", Mode::kColl,
       {{K::kSendBufIP}, {K::kCount}, {K::kType}, {K::kRecvBuf}, {K::kCount}, {K::kType}, {K::kComm},
        {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL;
          return EP_Iallgather(a.p(0, c.s()), a.i(1, 1), a.type(2, MPI_INT), a.p(3, c.r()),
                               a.i(4, 1), a.type(5, MPI_INT), a.p(6, m.h), a.p(7, &r));)},
      {"EP_Iallgatherv", Mode::kColl,
       {{K::kSendBufIP}, {K::kCount}, {K::kType}, {K::kRecvBuf}, {K::kCounts}, {K::kArr},
        {K::kType}, {K::kComm}, {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL;
          return EP_Iallgatherv(a.p(0, c.s()), a.i(1, 1), a.type(2, MPI_INT), a.p(3, c.r()),
                                a.p(4, m.ones.data()), a.p(5, m.displs.data()), a.type(6, MPI_INT),
                                a.p(7, m.h), a.p(8, &r));)},
      {"EP_Ialltoall", Mode::kColl,
       {{K::kSendBufIP}, {K::kCount}, {K::kType}, {K::kRecvBuf}, {K::kCount}, {K::kType}, {K::kComm},
        {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL;
          return EP_Ialltoall(a.p(0, c.s()), a.i(1, 1), a.type(2, MPI_INT), a.p(3, c.r()),
                              a.i(4, 1), a.type(5, MPI_INT), a.p(6, m.h), a.p(7, &r));)},
      {"EP_Ialltoallv", Mode::kColl,
       {{K::kSendBufIP}, {K::kCounts}, {K::kArr}, {K::kType}, {K::kRecvBuf}, {K::kCounts},
        {K::kArr}, {K::kType}, {K::kComm}, {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL;
          return EP_Ialltoallv(a.p(0, c.s()), a.p(1, m.ones.data()), a.p(2, m.displs.data()),
                               a.type(3, MPI_INT), a.p(4, c.r()), a.p(5, m.ones.data()),
                               a.p(6, m.displs.data()), a.type(7, MPI_INT), a.p(8, m.h),
                               a.p(9, &r));)},
      {"EP_Ialltoallw", Mode::kColl,
       {{K::kSendBufIP}, {K::kCounts}, {K::kArr}, {K::kTypes}, {K::kRecvBuf}, {K::kCounts},
        {K::kArr}, {K::kTypes}, {K::kComm}, {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL;
          return EP_Ialltoallw(a.p(0, c.s()), a.p(1, m.ones.data()), a.p(2, m.bdispls.data()),
                               a.p(3, m.types.data()), a.p(4, c.r()), a.p(5, m.ones.data()),
                               a.p(6, m.bdispls.data()), a.p(7, m.types.data()), a.p(8, m.h),
                               a.p(9, &r));)},
      {"EP_Ireduce_scatter", Mode::kColl,
       {{K::kSendBufIP}, {K::kRecvBuf}, {K::kCounts}, {K::kType}, {K::kOp}, {K::kComm}, {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL;
          return EP_Ireduce_scatter(a.p(0, c.s()), a.p(1, c.r()), a.p(2, m.ones.data()),
                                    a.type(3, MPI_INT), a.op(4, MPI_SUM), a.p(5, m.h), a.p(6, &r));)},
      {"EP_Ireduce_scatter_block", Mode::kColl,
       {{K::kSendBufIP}, {K::kRecvBuf}, {K::kCount}, {K::kType}, {K::kOp}, {K::kComm}, {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL;
          return EP_Ireduce_scatter_block(a.p(0, c.s()), a.p(1, c.r()), a.i(2, 1),
                                          a.type(3, MPI_INT), a.op(4, MPI_SUM), a.p(5, m.h),
                                          a.p(6, &r));)},
      ISCAN(EP_Iscan),
      ISCAN(EP_Iexscan),
      // ---- Helper teams
      {"EP_Team_create", Mode::kLocal, {{K::kMaxsize}, {K::kOut}},
       FN(EP_Team t = EP_TEAM_NULL; const int rc = EP_Team_create(a.i(0, 2), MPI_INFO_NULL, a.p(1, &t));
          if (rc == EP_SUCCESS) EP_Team_free(&t);
          return rc;)},
      {"EP_Team_free", Mode::kLocal, {{K::kOut}, {K::kTeam}},
       FN(EP_Team t = a.p(1, c.team); return EP_Team_free(a.p(0, &t));)},
      {"EP_Team_join", Mode::kLocal, {{K::kTeamsize}, {K::kTeam}},
       FN(const int rc = EP_Team_join(a.i(0, 1), a.p(1, c.team));
          if (rc == EP_SUCCESS) EP_Team_leave(c.team);
          return rc;)},
      {"EP_Team_leave", Mode::kLocal, {{K::kTeam}}, FN(return EP_Team_leave(a.p(0, c.team));)},
      {"EP_Team_sync", Mode::kLocal, {{K::kTeam}}, FN(return EP_Team_sync(a.p(0, c.team));)},
      {"EP_Team_break", Mode::kLocal, {{K::kTeam}}, FN(return EP_Team_break(a.p(0, c.team));)},
      // ---- One-sided (m.win: a window over m)
      {"EP_Win_create", Mode::kColl,
       {{K::kSendBuf}, {K::kWinSize}, {K::kDispUnit}, {K::kComm}, {K::kOut}},
       FN(EP_Win w = EP_WIN_NULL;
          const int rc = EP_Win_create(a.p(0, c.r()), a.aint(1, 16), a.i(2, 4), MPI_INFO_NULL,
                                       a.p(3, m.h), a.p(4, &w));
          if (rc == EP_SUCCESS) EP_Win_free(&w);
          return rc;)},
      {"EP_Win_allocate", Mode::kColl,
       {{K::kWinSize}, {K::kDispUnit}, {K::kComm}, {K::kOut}, {K::kOut}},
       FN(EP_Win w = EP_WIN_NULL; void* base = nullptr;
          const int rc = EP_Win_allocate(a.aint(0, 16), a.i(1, 4), MPI_INFO_NULL, a.p(2, m.h),
                                         a.p(3, &base), a.p(4, &w));
          if (rc == EP_SUCCESS) EP_Win_free(&w);
          return rc;)},
      {"EP_Win_free", Mode::kLocal, {{K::kOut}, {K::kWin}},
       FN(EP_Win w = a.p(1, m.win); return EP_Win_free(a.p(0, &w));)},
      {"EP_Win_get_attr", Mode::kLocal, {{K::kWin}, {K::kKeyval}, {K::kOut}, {K::kOut}},
       FN(void* v; int f; return EP_Win_get_attr(a.p(0, m.win), a.i(1, EP_WIN_BASE), a.p(2, &v),
                                                 a.p(3, &f));)},
      {"EP_Win_get_group", Mode::kLocal, {{K::kWin}, {K::kOut}},
       FN(EP_Group g = EP_GROUP_NULL; const int rc = EP_Win_get_group(a.p(0, m.win), a.p(1, &g));
          if (rc == EP_SUCCESS) EP_Group_free(&g);
          return rc;)},
      {"EP_Win_fence", Mode::kColl, {{K::kFenceAssert}, {K::kWin}},
       FN(return EP_Win_fence(a.i(0, 0), a.p(1, m.win));)},
      {"EP_Win_lock", Mode::kLocal, {{K::kLockType}, {K::kTarget}, {K::kLockAssert}, {K::kWin}},
       FN(const int rc = EP_Win_lock(a.i(0, EP_LOCK_SHARED), a.i(1, m.rank), a.i(2, 0), a.p(3, m.win));
          if (rc == EP_SUCCESS) EP_Win_unlock(m.rank, m.win);
          return rc;)},
      {"EP_Win_unlock", Mode::kLocal, {{K::kTarget}, {K::kWin}},
       FN(EP_Win_lock(EP_LOCK_SHARED, m.rank, 0, m.win);
          const int rc = EP_Win_unlock(a.i(0, m.rank), a.p(1, m.win));
          if (rc != EP_SUCCESS) EP_Win_unlock(m.rank, m.win);
          return rc;)},
      {"EP_Win_lock_all", Mode::kLocal, {{K::kLockAssert}, {K::kWin}},
       FN(const int rc = EP_Win_lock_all(a.i(0, 0), a.p(1, m.win));
          if (rc == EP_SUCCESS) EP_Win_unlock_all(m.win);
          return rc;)},
      {"EP_Win_unlock_all", Mode::kLocal, {{K::kWin}},
       FN(EP_Win_lock_all(0, m.win); const int rc = EP_Win_unlock_all(a.p(0, m.win));
          if (rc != EP_SUCCESS) EP_Win_unlock_all(m.win);
          return rc;)},
      {"EP_Win_flush", Mode::kLocal, {{K::kTarget}, {K::kWin}},
       FN(return in_epoch(m, [&] { return EP_Win_flush(a.i(0, m.rank), a.p(1, m.win)); });)},
      {"EP_Win_flush_all", Mode::kLocal, {{K::kWin}},
       FN(return in_epoch(m, [&] { return EP_Win_flush_all(a.p(0, m.win)); });)},
      {"EP_Put", Mode::kLocal,
       {{K::kSendBuf}, {K::kCount}, {K::kType}, {K::kTarget}, {K::kDisp}, {K::kCount}, {K::kType},
        {K::kWin}},
       FN(return in_epoch(m, [&] {
         return EP_Put(a.p(0, c.s()), a.i(1, 1), a.type(2, MPI_INT), a.i(3, m.rank), a.aint(4, 2),
                       a.i(5, 1), a.type(6, MPI_INT), a.p(7, m.win));
       });)},
      {"EP_Get", Mode::kLocal,
       {{K::kRecvBuf}, {K::kCount}, {K::kType}, {K::kTarget}, {K::kDisp}, {K::kCount}, {K::kType},
        {K::kWin}},
       FN(return in_epoch(m, [&] {
         return EP_Get(a.p(0, c.r()), a.i(1, 1), a.type(2, MPI_INT), a.i(3, m.rank), a.aint(4, 2),
                       a.i(5, 1), a.type(6, MPI_INT), a.p(7, m.win));
       });)},
      {"EP_Accumulate", Mode::kLocal,
       {{K::kSendBuf}, {K::kCount}, {K::kType}, {K::kTarget}, {K::kDisp}, {K::kCount}, {K::kType},
        {K::kOp}, {K::kWin}},
       FN(return in_epoch(m, [&] {
         return EP_Accumulate(a.p(0, c.s()), a.i(1, 1), a.type(2, MPI_INT), a.i(3, m.rank),
                              a.aint(4, 2), a.i(5, 1), a.type(6, MPI_INT), a.op(7, MPI_SUM),
                              a.p(8, m.win));
       });)},
      {"EP_Get_accumulate", Mode::kLocal,
       {{K::kSendBuf}, {K::kCount}, {K::kType}, {K::kRecvBuf}, {K::kCount}, {K::kType},
        {K::kTarget}, {K::kDisp}, {K::kCount}, {K::kType}, {K::kOp}, {K::kWin}},
       FN(return in_epoch(m, [&] {
         return EP_Get_accumulate(a.p(0, c.s()), a.i(1, 1), a.type(2, MPI_INT), a.p(3, c.r()),
                                  a.i(4, 1), a.type(5, MPI_INT), a.i(6, m.rank), a.aint(7, 2),
                                  a.i(8, 1), a.type(9, MPI_INT), a.op(10, MPI_SUM),
                                  a.p(11, m.win));
       });)},
      {"EP_Fetch_and_op", Mode::kLocal,
       {{K::kSendBuf}, {K::kRecvBuf}, {K::kType}, {K::kTarget}, {K::kDisp}, {K::kOp}, {K::kWin}},
       FN(return in_epoch(m, [&] {
         return EP_Fetch_and_op(a.p(0, c.s()), a.p(1, c.r()), a.type(2, MPI_INT), a.i(3, m.rank),
                                a.aint(4, 2), a.op(5, MPI_SUM), a.p(6, m.win));
       });)},
      {"EP_Compare_and_swap", Mode::kLocal,
       {{K::kSendBuf}, {K::kSendBuf}, {K::kRecvBuf}, {K::kType}, {K::kTarget}, {K::kDisp},
        {K::kWin}},
       FN(return in_epoch(m, [&] {
         return EP_Compare_and_swap(a.p(0, c.s()), a.p(1, c.s()), a.p(2, c.r()), a.type(3, MPI_INT),
                                    a.i(4, m.rank), a.aint(5, 2), a.p(6, m.win));
       });)},
      // ---- one-sided (m.dyn: a dynamic window, m.shared: a shared window,
      // m.me: the group of this endpoint alone; request-based operations in lock_all)
      {"EP_Win_create_dynamic", Mode::kColl, {{K::kComm}, {K::kOut}},
       FN(EP_Win w = EP_WIN_NULL;
          const int rc = EP_Win_create_dynamic(MPI_INFO_NULL, a.p(0, m.h), a.p(1, &w));
          if (rc == EP_SUCCESS) EP_Win_free(&w);
          return rc;)},
      {"EP_Win_attach", Mode::kLocal, {{K::kWin}, {K::kOut}, {K::kWinSize}},
       FN(const int rc = EP_Win_attach(a.p(0, m.dyn), a.p(1, c.r()), a.aint(2, 4));
          if (rc == EP_SUCCESS) EP_Win_detach(m.dyn, c.r());
          return rc;)},
      {"EP_Win_detach", Mode::kLocal, {{K::kWin}, {K::kOut}},
       FN(EP_Win_attach(m.dyn, c.r(), 4);
          const int rc = EP_Win_detach(a.p(0, m.dyn), a.p(1, c.r()));
          if (rc != EP_SUCCESS) EP_Win_detach(m.dyn, c.r());
          return rc;)},
      {"EP_Win_allocate_shared", Mode::kColl,
       {{K::kWinSize}, {K::kDispUnit}, {K::kComm}, {K::kOut}, {K::kOut}},
       FN(EP_Win w = EP_WIN_NULL; void* base = nullptr;
          const int rc = EP_Win_allocate_shared(a.aint(0, 16), a.i(1, 4), MPI_INFO_NULL,
                                                a.p(2, m.h), a.p(3, &base), a.p(4, &w));
          if (rc == EP_SUCCESS) EP_Win_free(&w);
          return rc;)},
      {"EP_Win_shared_query", Mode::kLocal, {{K::kWin}, {K::kTarget}, {K::kOut}, {K::kOut}, {K::kOut}},
       FN(MPI_Aint size = 0; int du = 0; void* base = nullptr;
          return EP_Win_shared_query(a.p(0, m.shared), a.i(1, m.rank), a.p(2, &size),
                                     a.p(3, &du), a.p(4, &base));)},
      {"EP_Rput", Mode::kLocal,
       {{K::kSendBuf}, {K::kCount}, {K::kType}, {K::kTarget}, {K::kDisp}, {K::kCount}, {K::kType},
        {K::kWin}, {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL; return in_epoch(m, [&] {
         const int rc = EP_Rput(a.p(0, c.s()), a.i(1, 1), a.type(2, MPI_INT), a.i(3, m.rank),
                                a.aint(4, 2), a.i(5, 1), a.type(6, MPI_INT), a.p(7, m.win),
                                a.p(8, &r));
         drop(&r);
         return rc;
       });)},
      {"EP_Rget", Mode::kLocal,
       {{K::kRecvBuf}, {K::kCount}, {K::kType}, {K::kTarget}, {K::kDisp}, {K::kCount}, {K::kType},
        {K::kWin}, {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL; return in_epoch(m, [&] {
         const int rc = EP_Rget(a.p(0, c.r()), a.i(1, 1), a.type(2, MPI_INT), a.i(3, m.rank),
                                a.aint(4, 2), a.i(5, 1), a.type(6, MPI_INT), a.p(7, m.win),
                                a.p(8, &r));
         drop(&r);
         return rc;
       });)},
      {"EP_Raccumulate", Mode::kLocal,
       {{K::kSendBuf}, {K::kCount}, {K::kType}, {K::kTarget}, {K::kDisp}, {K::kCount}, {K::kType},
        {K::kOp}, {K::kWin}, {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL; return in_epoch(m, [&] {
         const int rc = EP_Raccumulate(a.p(0, c.s()), a.i(1, 1), a.type(2, MPI_INT),
                                       a.i(3, m.rank), a.aint(4, 2), a.i(5, 1),
                                       a.type(6, MPI_INT), a.op(7, MPI_SUM), a.p(8, m.win),
                                       a.p(9, &r));
         drop(&r);
         return rc;
       });)},
      {"EP_Rget_accumulate", Mode::kLocal,
       {{K::kSendBuf}, {K::kCount}, {K::kType}, {K::kRecvBuf}, {K::kCount}, {K::kType},
        {K::kTarget}, {K::kDisp}, {K::kCount}, {K::kType}, {K::kOp}, {K::kWin}, {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL; return in_epoch(m, [&] {
         const int rc = EP_Rget_accumulate(a.p(0, c.s()), a.i(1, 1), a.type(2, MPI_INT),
                                           a.p(3, c.r()), a.i(4, 1), a.type(5, MPI_INT),
                                           a.i(6, m.rank), a.aint(7, 2), a.i(8, 1),
                                           a.type(9, MPI_INT), a.op(10, MPI_SUM),
                                           a.p(11, m.win), a.p(12, &r));
         drop(&r);
         return rc;
       });)},
      {"EP_Win_flush_local", Mode::kLocal, {{K::kTarget}, {K::kWin}},
       FN(return in_epoch(m, [&] { return EP_Win_flush_local(a.i(0, m.rank), a.p(1, m.win)); });)},
      {"EP_Win_flush_local_all", Mode::kLocal, {{K::kWin}},
       FN(return in_epoch(m, [&] { return EP_Win_flush_local_all(a.p(0, m.win)); });)},
      {"EP_Win_sync", Mode::kLocal, {{K::kWin}}, FN(return EP_Win_sync(a.p(0, m.win));)},
      // PSCW with this endpoint alone on both sides: a failed call leaves no epoch open.
      {"EP_Win_post", Mode::kLocal, {{K::kGroup}, {K::kFenceAssert}, {K::kWin}},
       FN(const int rc = EP_Win_post(a.p(0, m.me), a.i(1, 0), a.p(2, m.win));
          if (rc == EP_SUCCESS) {
            EP_Win_start(m.me, 0, m.win);
            EP_Win_complete(m.win);
            EP_Win_wait(m.win);
          }
          return rc;)},
      {"EP_Win_start", Mode::kLocal, {{K::kGroup}, {K::kLockAssert}, {K::kWin}},
       FN(EP_Win_post(m.me, 0, m.win);
          const int rc = EP_Win_start(a.p(0, m.me), a.i(1, 0), a.p(2, m.win));
          if (rc != EP_SUCCESS) EP_Win_start(m.me, 0, m.win);
          EP_Win_complete(m.win);
          EP_Win_wait(m.win);
          return rc;)},
      {"EP_Win_complete", Mode::kLocal, {{K::kWin}},
       FN(EP_Win_post(m.me, 0, m.win); EP_Win_start(m.me, 0, m.win);
          const int rc = EP_Win_complete(a.p(0, m.win));
          if (rc != EP_SUCCESS) EP_Win_complete(m.win);
          EP_Win_wait(m.win);
          return rc;)},
      {"EP_Win_wait", Mode::kLocal, {{K::kWin}},
       FN(EP_Win_post(m.me, 0, m.win); EP_Win_start(m.me, 0, m.win); EP_Win_complete(m.win);
          const int rc = EP_Win_wait(a.p(0, m.win));
          if (rc != EP_SUCCESS) EP_Win_wait(m.win);
          return rc;)},
      {"EP_Win_test", Mode::kLocal, {{K::kWin}, {K::kOut}},
       FN(EP_Win_post(m.me, 0, m.win); EP_Win_start(m.me, 0, m.win); EP_Win_complete(m.win);
          int flag = 0;
          const int rc = EP_Win_test(a.p(0, m.win), a.p(1, &flag));
          if (rc != EP_SUCCESS || flag == 0) EP_Win_wait(m.win);
          return rc;)},
      // ---- groups and communicator creation
      GROUP_RANKS(EP_Group_incl),
      GROUP_RANKS(EP_Group_excl),
      GROUP_RANGES(EP_Group_range_incl),
      GROUP_RANGES(EP_Group_range_excl),
      GROUP_PAIR(EP_Group_union),
      GROUP_PAIR(EP_Group_intersection),
      GROUP_PAIR(EP_Group_difference),
      {"EP_Group_compare", Mode::kLocal, {{K::kGroup}, {K::kGroup}, {K::kOut}},
       FN(int v; return EP_Group_compare(a.p(0, c.group), a.p(1, c.group), a.p(2, &v));)},
      {"EP_Comm_create", Mode::kWhole, {{K::kComm}, {K::kGroup}, {K::kOut}},
       FN(EP_Comm d = EP_COMM_NULL;
          const int rc = EP_Comm_create(a.p(0, m.h), a.p(1, c.group), a.p(2, &d));
          if (rc == EP_SUCCESS && d != EP_COMM_NULL) EP_Comm_free(&d);
          return rc;)},
      {"EP_Comm_create_group", Mode::kWhole, {{K::kComm}, {K::kGroup}, {K::kSendTag}, {K::kOut}},
       FN(EP_Comm d = EP_COMM_NULL;
          const int rc = EP_Comm_create_group(a.p(0, m.h), a.p(1, c.group), a.i(2, 7), a.p(3, &d));
          if (rc == EP_SUCCESS) EP_Comm_free(&d);
          return rc;)},
      {"EP_Comm_split_type", Mode::kColl, {{K::kComm}, {K::kSplitType}, {K::kOut}},
       FN(EP_Comm d = EP_COMM_NULL;
          const int rc = EP_Comm_split_type(a.p(0, m.h), a.i(1, EP_COMM_TYPE_PROCESS), m.rank,
                                            MPI_INFO_NULL, a.p(2, &d));
          if (rc == EP_SUCCESS && d != EP_COMM_NULL) EP_Comm_free(&d);
          return rc;)},
      {"EP_Comm_set_name", Mode::kLocal, {{K::kComm}, {K::kArr}},
       FN(return EP_Comm_set_name(a.p(0, m.h), a.p(1, "fuzzed"));)},
      {"EP_Comm_get_name", Mode::kLocal, {{K::kComm}, {K::kOut}, {K::kOut}},
       FN(char s[EP_MAX_OBJECT_NAME]; int len;
          return EP_Comm_get_name(a.p(0, m.h), a.p(1, s), a.p(2, &len));)},
      // ---- attributes, error handlers, idup
      {"EP_Comm_create_keyval", Mode::kLocal, {{K::kOut}},
       FN(int kv = EP_KEYVAL_INVALID;
          const int rc = EP_Comm_create_keyval(EP_COMM_DUP_FN, EP_COMM_NULL_DELETE_FN,
                                               a.p(0, &kv), nullptr);
          if (rc == EP_SUCCESS) EP_Comm_free_keyval(&kv);
          return rc;)},
      {"EP_Comm_free_keyval", Mode::kLocal, {{K::kKeyvalPtr}},
       FN(int kv = EP_KEYVAL_INVALID;
          EP_Comm_create_keyval(EP_COMM_DUP_FN, EP_COMM_NULL_DELETE_FN, &kv, nullptr);
          const int rc = EP_Comm_free_keyval(a.p(0, &kv));
          if (rc != EP_SUCCESS) EP_Comm_free_keyval(&kv);
          return rc;)},
      {"EP_Comm_set_attr", Mode::kLocal, {{K::kComm}, {K::kUserKeyval}},
       FN(return EP_Comm_set_attr(a.p(0, m.h), a.i(1, c.keyval), nullptr);)},
      {"EP_Comm_get_attr", Mode::kLocal, {{K::kComm}, {K::kCommKeyval}, {K::kOut}, {K::kOut}},
       FN(void* v; int f;
          return EP_Comm_get_attr(a.p(0, m.h), a.i(1, c.keyval), a.p(2, &v), a.p(3, &f));)},
      {"EP_Comm_delete_attr", Mode::kLocal, {{K::kComm}, {K::kUserKeyval}},
       FN(return EP_Comm_delete_attr(a.p(0, m.h), a.i(1, c.keyval));)},
      {"EP_Comm_create_errhandler", Mode::kLocal, {{K::kFn}, {K::kOut}},
       FN(EP_Errhandler e = EP_ERRHANDLER_NULL;
          const int rc = EP_Comm_create_errhandler(a.p(0, &noop_errhandler), a.p(1, &e));
          if (rc == EP_SUCCESS) EP_Errhandler_free(&e);
          return rc;)},
      {"EP_Comm_call_errhandler", Mode::kLocal, {{K::kComm}},
       FN(return EP_Comm_call_errhandler(a.p(0, m.h), EP_ERR_OTHER);)},
      {"EP_Errhandler_free", Mode::kLocal, {{K::kErrhPtr}},
       FN(EP_Errhandler e = EP_ERRHANDLER_NULL;
          EP_Comm_create_errhandler(noop_errhandler, &e);
          const int rc = EP_Errhandler_free(a.p(0, &e));
          if (rc != EP_SUCCESS) EP_Errhandler_free(&e);
          return rc;)},
      {"EP_Comm_idup", Mode::kColl, {{K::kComm}, {K::kOut}, {K::kOut}},
       FN(EP_Comm d = EP_COMM_NULL; EP_Request r = EP_REQUEST_NULL;
          const int rc = EP_Comm_idup(a.p(0, m.h), a.p(1, &d), a.p(2, &r));
          if (rc == EP_SUCCESS) {
            EP_Wait(&r, EP_STATUS_IGNORE);
            EP_Comm_free(&d);
          }
          return rc;)},
      // ---- persistent requests (good requests: receives from EP_PROC_NULL,
      // complete at once when started; whatever a call left of them is freed)
      ISEND(EP_Send_init),
      ISEND(EP_Bsend_init),
      ISEND(EP_Ssend_init),
      ISEND(EP_Rsend_init),
      {"EP_Recv_init", Mode::kLocal,
       {{K::kRecvBuf}, {K::kCount}, {K::kType}, {K::kSource}, {K::kRecvTag}, {K::kComm}, {K::kOut}},
       FN(EP_Request r = EP_REQUEST_NULL;
          const int rc = EP_Recv_init(a.p(0, c.r()), a.i(1, 1), a.type(2, MPI_INT), a.i(3, m.rank),
                                      a.i(4, 7), a.p(5, m.h), a.p(6, &r));
          if (rc == EP_SUCCESS) EP_Request_free(&r);
          return rc;)},
      {"EP_Start", Mode::kLocal, {{K::kOut}, {K::kPersistIn}},
       FN(EP_Request r = EP_REQUEST_NULL;
          EP_Recv_init(c.r(), 1, MPI_INT, EP_PROC_NULL, 7, m.h, &r);
          EP_Request h = a.p(1, r);
          const int rc = EP_Start(a.p(0, &h));
          EP_Wait(&r, EP_STATUS_IGNORE);
          EP_Request_free(&r);
          return rc;)},
      {"EP_Startall", Mode::kLocal, {{K::kLen}, {K::kReqArr}},
       FN(EP_Request rs[2] = {EP_REQUEST_NULL, EP_REQUEST_NULL};
          EP_Recv_init(c.r(), 1, MPI_INT, EP_PROC_NULL, 7, m.h, &rs[0]);
          EP_Recv_init(c.r(), 1, MPI_INT, EP_PROC_NULL, 7, m.h, &rs[1]);
          const int rc = EP_Startall(a.i(0, 2), a.p(1, rs));
          EP_Waitall(2, rs, EP_STATUSES_IGNORE);
          EP_Request_free(&rs[0]); EP_Request_free(&rs[1]);
          return rc;)},
  };
  return t;
}

// Functions of the header with no argument to mutate.
const std::set<std::string>& no_arguments() {
  static const std::set<std::string> s = {"EP_Init", "EP_Finalize", "EP_Wtime"};
  return s;
}

// The function names ep/ep.h declares.
std::set<std::string> header_functions() {
  std::vector<std::string> paths = {"api/include/ep/ep.h"};
  if (const char* d = std::getenv("TEST_SRCDIR")) {
    paths.insert(paths.begin(), std::string(d) + "/libep/api/include/ep/ep.h");
  }
  std::string text;
  for (const std::string& p : paths) {
    std::ifstream in(p);
    if (!in) continue;
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
    break;
  }
  std::set<std::string> names;
  std::regex decl(R"((?:^|\n)(?:int|double) (EP_[A-Za-z_]+)\()");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), decl); it != std::sregex_iterator();
       ++it) {
    names.insert((*it)[1].str());
  }
  return names;
}

TEST(Fuzz, TheTableCoversEveryFunctionOfTheHeader) {
  const std::set<std::string> declared = header_functions();
  ASSERT_GT(declared.size(), 100u) << "could not read api/include/ep/ep.h";
  std::set<std::string> fuzzed;
  for (const Entry& e : table()) {
    EXPECT_TRUE(fuzzed.insert(e.name).second) << e.name << " is in the table twice";
    EXPECT_FALSE(e.slots.empty()) << e.name;
    EXPECT_TRUE(declared.count(e.name)) << e.name << " is not declared in ep/ep.h";
  }
  for (const std::string& f : declared) {
    EXPECT_TRUE(fuzzed.count(f) || no_arguments().count(f))
        << f << " is declared in ep/ep.h but not fuzzed";
  }
}

// ---- The run ---------------------------------------------------------------------------

uint64_t shared_seed() {
  uint64_t seed = ep_test::stress_seed("fuzz_test");  // printed by every process
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return seed;
}

Comm make_comm(EP_Comm h) {
  Comm m;
  m.h = h;
  EP_Comm_rank(h, &m.rank);
  EP_Comm_size(h, &m.size);
  m.ones.assign(static_cast<size_t>(m.size), 1);
  for (int q = 0; q < m.size; ++q) m.displs.push_back(q);
  m.neg_counts = m.ones;
  m.neg_counts.back() = -1;
  m.bad_ranks = {0, m.size};
  for (int q = 0; q < m.size; ++q) m.bdispls.push_back(q * static_cast<int>(sizeof(int)));
  m.types.assign(static_cast<size_t>(m.size), MPI_INT);
  m.bad_types = m.types;
  m.bad_types.back() = MPI_DATATYPE_NULL;
  return m;
}

// A round of correct traffic on the whole communicator, checked exactly.
void check_traffic(Ctx& c, int round, const std::string& where) {
  Comm& w = c.world;
  const int right = (w.rank + 1) % w.size, left = (w.rank + w.size - 1) % w.size;
  int out[3] = {w.rank, round, 77}, in[3] = {-1, -1, -1};
  EXPECT_EQ(EP_Sendrecv(out, 3, MPI_INT, right, 900, in, 3, MPI_INT, left, 900, w.h,
                        EP_STATUS_IGNORE),
            EP_SUCCESS)
      << where;
  EXPECT_EQ(in[0], left) << where;
  EXPECT_EQ(in[1], round) << where;
  EXPECT_EQ(in[2], 77) << where;
  int v = w.rank + round, sum = -1;
  EXPECT_EQ(EP_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, w.h), EP_SUCCESS) << where;
  EXPECT_EQ(sum, w.size * (w.size - 1) / 2 + w.size * round) << where;
  const int mark = w.rank * 1000 + round;
  EXPECT_EQ(EP_Win_lock_all(0, w.win), EP_SUCCESS) << where;
  EXPECT_EQ(EP_Put(&mark, 1, MPI_INT, right, 1, 1, MPI_INT, w.win), EP_SUCCESS) << where;
  EXPECT_EQ(EP_Win_unlock_all(w.win), EP_SUCCESS) << where;
  EXPECT_EQ(EP_Barrier(w.h), EP_SUCCESS) << where;
  EXPECT_EQ(c.winmem[1], left * 1000 + round) << where << ": the RMA epoch's put";
  for (int i = 2; i < Ctx::kWinInts; ++i) {
    ASSERT_EQ(c.winmem[i], -i) << where << ": window int " << i << " was written";
  }
  EXPECT_EQ(EP_Barrier(w.h), EP_SUCCESS) << where;
  for (size_t i = 0; i < c.rbuf.size(); ++i) {
    ASSERT_EQ(c.rbuf[i], -7) << where << ": receive buffer int " << i << " was written";
  }
  for (size_t i = 0; i < c.sbuf.size(); ++i) {
    ASSERT_EQ(c.sbuf[i], static_cast<int>(i) + 1) << where << ": send buffer int " << i;
  }
}

void fuzz_endpoint(EP_Comm world, int index, uint64_t seed, int rounds, MPI_Comm parent,
                   std::atomic<long>* calls) {
  Ctx c;
  c.index = index;
  c.parent = parent;
  c.world = make_comm(world);
  EP_Comm self = EP_COMM_NULL;
  ASSERT_EQ(EP_Comm_split(world, c.world.rank, 0, &self), EP_SUCCESS);
  c.self = make_comm(self);
  EP_Comm half = EP_COMM_NULL;
  ASSERT_EQ(EP_Comm_split(world, c.world.rank % 2, c.world.rank, &half), EP_SUCCESS);
  ASSERT_EQ(EP_Intercomm_create(half, 0, world, c.world.rank % 2 == 0 ? 1 : 0, 44, &c.inter),
            EP_SUCCESS);
  EP_Comm_free(&half);
  EP_Comm_tag_ub(world, &c.tag_ub);
  ASSERT_EQ(EP_Comm_group(world, &c.group), EP_SUCCESS);
  ASSERT_EQ(EP_Team_create(2, MPI_INFO_NULL, &c.team), EP_SUCCESS);
  int dummy = 0;
  ASSERT_EQ(EP_Isend(&dummy, 0, MPI_INT, EP_PROC_NULL, 0, world, &c.send_req), EP_SUCCESS);
  MPI_Type_contiguous(2, MPI_INT, &c.uncommitted);
  c.comm_msg = reinterpret_cast<EP_Message>(world);
  c.bad_reqs[0] = c.send_req;
  c.bad_reqs[1] = reinterpret_cast<EP_Request>(world);
  ASSERT_EQ(EP_Comm_create_keyval(EP_COMM_DUP_FN, EP_COMM_NULL_DELETE_FN, &c.keyval, nullptr),
            EP_SUCCESS);
  ASSERT_EQ(EP_Comm_create_keyval(EP_COMM_DUP_FN, EP_COMM_NULL_DELETE_FN, &c.freed_keyval,
                                  nullptr),
            EP_SUCCESS);
  {
    int k = c.freed_keyval;
    ASSERT_EQ(EP_Comm_free_keyval(&k), EP_SUCCESS);
  }
  c.comm_eh = reinterpret_cast<EP_Errhandler>(world);
  const size_t len = static_cast<size_t>(4 * c.world.size + 16);
  c.sbuf.resize(len);
  for (size_t i = 0; i < len; ++i) c.sbuf[i] = static_cast<int>(i) + 1;
  c.rbuf.assign(len, -7);
  std::vector<int> winmem(Ctx::kWinInts);
  for (int i = 0; i < Ctx::kWinInts; ++i) winmem[static_cast<size_t>(i)] = -i;
  c.winmem = winmem.data();
  ASSERT_EQ(EP_Win_create(c.winmem, Ctx::kWinInts * sizeof(int), sizeof(int), MPI_INFO_NULL, world,
                          &c.world.win),
            EP_SUCCESS);
  ASSERT_EQ(EP_Win_set_errhandler(c.world.win, EP_ERRORS_RETURN), EP_SUCCESS);
  std::vector<int> selfmem(Ctx::kWinInts, 0);
  ASSERT_EQ(EP_Win_create(selfmem.data(), Ctx::kWinInts * sizeof(int), sizeof(int), MPI_INFO_NULL,
                          self, &c.self.win),
            EP_SUCCESS);
  ASSERT_EQ(EP_Win_set_errhandler(c.self.win, EP_ERRORS_RETURN), EP_SUCCESS);
  for (Comm* m : {&c.world, &c.self}) {  // the windows and the self group
    ASSERT_EQ(EP_Win_create_dynamic(MPI_INFO_NULL, m->h, &m->dyn), EP_SUCCESS);
    ASSERT_EQ(EP_Win_set_errhandler(m->dyn, EP_ERRORS_RETURN), EP_SUCCESS);
    void* base = nullptr;
    ASSERT_EQ(EP_Win_allocate_shared(16, 4, MPI_INFO_NULL, m->h, &base, &m->shared), EP_SUCCESS);
    ASSERT_EQ(EP_Win_set_errhandler(m->shared, EP_ERRORS_RETURN), EP_SUCCESS);
    EP_Group all = EP_GROUP_NULL;
    ASSERT_EQ(EP_Comm_group(m->h, &all), EP_SUCCESS);
    ASSERT_EQ(EP_Group_incl(all, 1, &m->rank, &m->me), EP_SUCCESS);
    EP_Group_free(&all);
  }

  const std::vector<Entry>& t = table();
  std::mt19937_64 rng(seed);  // the same sequence on every endpoint of every process
  std::vector<size_t> order(t.size());
  long n = 0;
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t k : order) {
      const Entry& e = t[k];
      bool alone = false;
      switch (e.mode) {
        case Mode::kColl: alone = rng() % 2 == 0; break;
        case Mode::kSelf: alone = true; break;
        default: break;
      }
      Comm& m = alone ? c.self : c.world;
      std::vector<int> eligible;
      for (size_t s = 0; s < e.slots.size(); ++s) {
        if (!e.slots[s].root_only || alone) eligible.push_back(static_cast<int>(s));
      }
      const int slot = eligible[rng() % eligible.size()];
      const std::vector<Bad> values = bads(e.slots[static_cast<size_t>(slot)].kind, c, m);
      const Bad& bad = values[rng() % values.size()];
      if (e.mode == Mode::kProc && index != 0) continue;  // (drawn alike everywhere)
      A a(e, slot, &bad);
      const int rc = e.call(a, c, m);
      ++n;
      std::ostringstream what;
      what << e.name << " with argument " << slot << " = " << bad.what << " ("
           << (alone ? "endpoint alone" : "whole communicator") << ", round " << round
           << ", seed " << seed << ")";
      if (rc == EP_SUCCESS) {
        // Whatever the call did is not what the others expect: stop the job at once.
        std::fprintf(stderr, "fuzz_test: FAILED: %s succeeded\n", what.str().c_str());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 5);
      }
      EXPECT_EQ(rc, bad.code) << what.str() << ": " << last_error(rc);
      const std::string msg = last_error(rc);
      EXPECT_NE(msg.find(std::string(e.name) + ":"), std::string::npos)
          << what.str() << ": the message does not name the call: " << msg;
    }
    if (round % 4 == 3) check_traffic(c, round, "after round " + std::to_string(round));
  }
  check_traffic(c, rounds, "at the end");
  calls->fetch_add(n);
  MPI_Type_free(&c.uncommitted);
  for (Comm* m : {&c.world, &c.self}) {
    EXPECT_EQ(EP_Win_free(&m->dyn), EP_SUCCESS);
    EXPECT_EQ(EP_Win_free(&m->shared), EP_SUCCESS);
    EXPECT_EQ(EP_Group_free(&m->me), EP_SUCCESS);
  }
  EXPECT_EQ(EP_Win_free(&c.self.win), EP_SUCCESS);
  EXPECT_EQ(EP_Win_free(&c.world.win), EP_SUCCESS);
  EXPECT_EQ(EP_Team_free(&c.team), EP_SUCCESS);
  EXPECT_EQ(EP_Group_free(&c.group), EP_SUCCESS);
  EXPECT_EQ(EP_Comm_free(&c.inter), EP_SUCCESS);
  EXPECT_EQ(EP_Comm_free(&self), EP_SUCCESS);
  EXPECT_EQ(EP_Comm_free_keyval(&c.keyval), EP_SUCCESS);
}

TEST(Fuzz, EveryFunctionRefusesEveryBadArgumentAndTrafficStaysExact) {
  const uint64_t seed = shared_seed();
  int rounds = ep_test::scaled(24) < 4 ? 4 : ep_test::scaled(24);
  if (const char* r = std::getenv("LIBEP_FUZZ_ROUNDS")) rounds = std::atoi(r);
  MPI_Comm parent;
  MPI_Comm_dup(MPI_COMM_WORLD, &parent);
  std::atomic<long> calls{0};
  const double t0 = MPI_Wtime();
  ep_test::run_endpoints(uneven(world_rank()), [&](EP_Comm comm, int index) {
    fuzz_endpoint(comm, index, seed, rounds, parent, &calls);
  });
  MPI_Comm_free(&parent);
  std::printf("fuzz_test: %ld fuzzed calls on %d endpoints in %.2f s (%d rounds, seed %llu)\n",
              calls.load(), uneven(world_rank()), MPI_Wtime() - t0, rounds,
              static_cast<unsigned long long>(seed));
}

}  // namespace
