// Generalized requests (MPI chapter 12.2/12.3 applied to endpoints).
//
// Every callback records itself in a Log (which callback, in which order, on which
// thread); tests check order and exact counts: query_fn in the completing Wait/Test
// call (and in every EP_Request_get_status on a completed request), free_fn once and
// after query_fn, or at the later of EP_Request_free / EP_Grequest_complete; cancel_fn
// with complete = 0 / 1.  Errors of callbacks reach the caller; the all/some forms give
// EP_ERR_IN_STATUS with per-status codes.  Completion from another thread wakes an
// endpoint blocked in every blocking form.  Generalized requests mix with
// point-to-point and nonblocking collective requests in every Wait/Test form.
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ep/ep.h"
#include "tests/common/harness.h"

namespace {

using ep_test::run_endpoints;
using ep_test::scaled;

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// What the callbacks of one generalized request did.
struct Log {
  std::mutex mu;
  std::string events;  // 'q' query, 'f' free, 'c'/'C' cancel with complete = 0/1
  std::thread::id query_thread;
  int query_rc = EP_SUCCESS, free_rc = EP_SUCCESS, cancel_rc = EP_SUCCESS;
  int elements = 3;  // query_fn sets this many MPI_INT elements
  int source = 11, tag = 22;
  bool cancelled = false;  // query_fn reports cancellation

  std::string get() {
    std::lock_guard<std::mutex> lock(mu);
    return events;
  }
  int count(char c) {
    std::lock_guard<std::mutex> lock(mu);
    int n = 0;
    for (char e : events) n += e == c;
    return n;
  }
};

int query_fn(void* extra, EP_Status* st) {
  auto* log = static_cast<Log*>(extra);
  std::lock_guard<std::mutex> lock(log->mu);
  log->events += 'q';
  log->query_thread = std::this_thread::get_id();
  EP_Status_set_elements(st, MPI_INT, log->elements);
  EP_Status_set_cancelled(st, log->cancelled ? 1 : 0);
  st->EP_SOURCE = log->source;
  st->EP_TAG = log->tag;
  return log->query_rc;
}

int free_fn(void* extra) {
  auto* log = static_cast<Log*>(extra);
  std::lock_guard<std::mutex> lock(log->mu);
  log->events += 'f';
  return log->free_rc;
}

int cancel_fn(void* extra, int complete) {
  auto* log = static_cast<Log*>(extra);
  std::lock_guard<std::mutex> lock(log->mu);
  log->events += complete ? 'C' : 'c';
  return log->cancel_rc;
}

EP_Request start(Log* log) {
  EP_Request r = EP_REQUEST_NULL;
  EXPECT_EQ(EP_Grequest_start(query_fn, free_fn, cancel_fn, log, &r), EP_SUCCESS);
  EXPECT_NE(r, EP_REQUEST_NULL);
  return r;
}

void expect_query_status(const EP_Status& st, const Log& log) {
  EXPECT_EQ(st.EP_SOURCE, log.source);
  EXPECT_EQ(st.EP_TAG, log.tag);
  int n = -1;
  EXPECT_EQ(EP_Get_count(&st, MPI_INT, &n), EP_SUCCESS);
  EXPECT_EQ(n, log.elements);
  EXPECT_EQ(EP_Get_elements(&st, MPI_INT, &n), EP_SUCCESS);
  EXPECT_EQ(n, log.elements);
  int c = -1;
  EXPECT_EQ(EP_Test_cancelled(&st, &c), EP_SUCCESS);
  EXPECT_EQ(c, log.cancelled ? 1 : 0);
}

// ---- status helpers --------------------------------------------------------------------

TEST(StatusHelpers, SetElementsIsReadByGetCountAndGetElements) {
  EP_Status st{};
  ASSERT_EQ(EP_Status_set_elements(&st, MPI_DOUBLE, 5), EP_SUCCESS);
  int n = -1;
  EXPECT_EQ(EP_Get_count(&st, MPI_DOUBLE, &n), EP_SUCCESS);
  EXPECT_EQ(n, 5);
  EXPECT_EQ(EP_Get_elements(&st, MPI_DOUBLE, &n), EP_SUCCESS);
  EXPECT_EQ(n, 5);
  ASSERT_EQ(EP_Status_set_elements(&st, MPI_INT, 0), EP_SUCCESS);
  EXPECT_EQ(EP_Get_count(&st, MPI_INT, &n), EP_SUCCESS);
  EXPECT_EQ(n, 0);
  // A derived type: MPI's rule (elements of the type's signature), read back alike.
  MPI_Datatype pair;
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  ASSERT_EQ(EP_Status_set_elements(&st, pair, 4), EP_SUCCESS);
  MPI_Status ref;
  MPI_Status_set_elements(&ref, pair, 4);
  int want = -1;
  MPI_Get_elements(&ref, pair, &want);
  EXPECT_EQ(EP_Get_elements(&st, pair, &n), EP_SUCCESS);
  EXPECT_EQ(n, want);
  MPI_Type_free(&pair);
}

TEST(StatusHelpers, SetCancelledIsReadByTestCancelled) {
  EP_Status st{};
  int flag = -1;
  ASSERT_EQ(EP_Status_set_cancelled(&st, 1), EP_SUCCESS);
  EXPECT_EQ(EP_Test_cancelled(&st, &flag), EP_SUCCESS);
  EXPECT_EQ(flag, 1);
  ASSERT_EQ(EP_Status_set_cancelled(&st, 0), EP_SUCCESS);
  EXPECT_EQ(EP_Test_cancelled(&st, &flag), EP_SUCCESS);
  EXPECT_EQ(flag, 0);
}

TEST(StatusHelpers, BadArgumentsAreErrors) {
  EP_Status st{};
  EXPECT_EQ(EP_Status_set_elements(nullptr, MPI_INT, 1), EP_ERR_ARG);
  EXPECT_EQ(EP_Status_set_elements(&st, MPI_INT, -1), EP_ERR_COUNT);
  EXPECT_EQ(EP_Status_set_elements(&st, MPI_DATATYPE_NULL, 1), EP_ERR_TYPE);
  EXPECT_EQ(EP_Status_set_cancelled(nullptr, 1), EP_ERR_ARG);
}

// ---- single requests ---------------------------------------------------------------------

TEST(Grequest, StartAndCompleteArgumentErrors) {
  EXPECT_EQ(EP_Grequest_start(query_fn, free_fn, cancel_fn, nullptr, nullptr), EP_ERR_ARG);
  // Every callback is required (API.md): a NULL one is EP_ERR_ARG naming it, and no
  // request is made.
  EP_Request r0 = EP_REQUEST_NULL;
  EXPECT_EQ(EP_Grequest_start(nullptr, free_fn, cancel_fn, nullptr, &r0), EP_ERR_ARG);
  EXPECT_NE(ep_test::last_error(EP_ERR_ARG).find("EP_Grequest_start: query_fn"), std::string::npos);
  EXPECT_EQ(EP_Grequest_start(query_fn, nullptr, cancel_fn, nullptr, &r0), EP_ERR_ARG);
  EXPECT_NE(ep_test::last_error(EP_ERR_ARG).find("EP_Grequest_start: free_fn"), std::string::npos);
  EXPECT_EQ(EP_Grequest_start(query_fn, free_fn, nullptr, nullptr, &r0), EP_ERR_ARG);
  EXPECT_NE(ep_test::last_error(EP_ERR_ARG).find("EP_Grequest_start: cancel_fn"),
            std::string::npos);
  EXPECT_EQ(r0, EP_REQUEST_NULL);
  EXPECT_EQ(EP_Grequest_complete(EP_REQUEST_NULL), EP_ERR_REQUEST);
  EXPECT_NE(ep_test::last_error(EP_ERR_REQUEST).find("EP_Grequest_complete"), std::string::npos);
  // A point-to-point request is not a generalized request.
  run_endpoints(1, [](EP_Comm comm, int) {
    int rank = 0, x = 0;
    EP_Comm_rank(comm, &rank);
    EP_Request r = EP_REQUEST_NULL;
    ASSERT_EQ(EP_Irecv(&x, 1, MPI_INT, rank, 5, comm, &r), EP_SUCCESS);
    EXPECT_EQ(EP_Grequest_complete(r), EP_ERR_REQUEST);
    ASSERT_EQ(EP_Send(&x, 1, MPI_INT, rank, 5, comm), EP_SUCCESS);
    EXPECT_EQ(EP_Wait(&r, EP_STATUS_IGNORE), EP_SUCCESS);
  });
}

TEST(Grequest, WaitRunsQueryThenFreeOnceAndReturnsTheQueryStatus) {
  Log log;
  EP_Request r = start(&log);
  EXPECT_EQ(log.get(), "");
  ASSERT_EQ(EP_Grequest_complete(r), EP_SUCCESS);
  EXPECT_EQ(log.get(), "");  // completing runs no callback
  EP_Status st{};
  ASSERT_EQ(EP_Wait(&r, &st), EP_SUCCESS);
  EXPECT_EQ(r, EP_REQUEST_NULL);
  EXPECT_EQ(log.get(), "qf");
  EXPECT_EQ(log.query_thread, std::this_thread::get_id());
  expect_query_status(st, log);
}

TEST(Grequest, StatusIgnoreStillGivesQueryAValidStatus) {
  Log log;
  EP_Request r = start(&log);
  ASSERT_EQ(EP_Grequest_complete(r), EP_SUCCESS);
  ASSERT_EQ(EP_Wait(&r, EP_STATUS_IGNORE), EP_SUCCESS);
  EXPECT_EQ(log.get(), "qf");
}

TEST(Grequest, TestRunsNoCallbackUntilCompleteThenQueryAndFree) {
  Log log;
  EP_Request r = start(&log);
  int flag = -1;
  EP_Status st{};
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(EP_Test(&r, &flag, &st), EP_SUCCESS);
    EXPECT_EQ(flag, 0);
  }
  EXPECT_EQ(log.get(), "");
  ASSERT_EQ(EP_Grequest_complete(r), EP_SUCCESS);
  ASSERT_EQ(EP_Test(&r, &flag, &st), EP_SUCCESS);
  EXPECT_EQ(flag, 1);
  EXPECT_EQ(r, EP_REQUEST_NULL);
  EXPECT_EQ(log.get(), "qf");
  expect_query_status(st, log);
}

TEST(Grequest, GetStatusQueriesEveryTimeAfterCompleteAndNeverFrees) {
  Log log;
  log.elements = 9;
  EP_Request r = start(&log);
  int flag = -1;
  EP_Status st{};
  ASSERT_EQ(EP_Request_get_status(r, &flag, &st), EP_SUCCESS);
  EXPECT_EQ(flag, 0);
  EXPECT_EQ(log.get(), "");  // not complete: no query
  ASSERT_EQ(EP_Grequest_complete(r), EP_SUCCESS);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(EP_Request_get_status(r, &flag, &st), EP_SUCCESS);
    EXPECT_EQ(flag, 1);
    expect_query_status(st, log);
  }
  ASSERT_EQ(EP_Request_get_status(r, &flag, EP_STATUS_IGNORE), EP_SUCCESS);
  EXPECT_EQ(log.get(), "qqqq");
  EXPECT_NE(r, EP_REQUEST_NULL);  // get_status does not free
  ASSERT_EQ(EP_Wait(&r, &st), EP_SUCCESS);
  EXPECT_EQ(log.get(), "qqqqqf");
}

TEST(Grequest, FreedBeforeCompleteRunsFreeInCompleteAndNeverQueries) {
  Log log;
  EP_Request r = start(&log);
  EP_Request copy = r;
  ASSERT_EQ(EP_Request_free(&r), EP_SUCCESS);
  EXPECT_EQ(r, EP_REQUEST_NULL);
  EXPECT_EQ(log.get(), "");  // not complete yet: free_fn waits for complete
  ASSERT_EQ(EP_Grequest_complete(copy), EP_SUCCESS);  // the user's copy stays valid
  EXPECT_EQ(log.get(), "f");
}

TEST(Grequest, FreedAfterCompleteRunsFreeInRequestFree) {
  Log log;
  EP_Request r = start(&log);
  ASSERT_EQ(EP_Grequest_complete(r), EP_SUCCESS);
  EXPECT_EQ(log.get(), "");
  ASSERT_EQ(EP_Request_free(&r), EP_SUCCESS);
  EXPECT_EQ(r, EP_REQUEST_NULL);
  EXPECT_EQ(log.get(), "f");
}

TEST(Grequest, FreeRacingCompleteRunsFreeExactlyOnce) {
  // Request_free on this thread and Grequest_complete on another, at the same time;
  // a flag array counts every free_fn call per request.
  const int n = scaled(2000);
  std::vector<std::atomic<int>> freed(static_cast<size_t>(n));
  for (auto& f : freed) f.store(0);
  auto count_free = [](void* extra) -> int {
    static_cast<std::atomic<int>*>(extra)->fetch_add(1);
    return EP_SUCCESS;
  };
  auto no_query = [](void*, EP_Status*) -> int { return EP_SUCCESS; };
  auto no_cancel = [](void*, int) -> int { return EP_SUCCESS; };
  std::vector<EP_Request> reqs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(EP_Grequest_start(no_query, count_free, no_cancel, &freed[i], &reqs[i]), EP_SUCCESS);
  }
  std::vector<EP_Request> copies = reqs;
  std::atomic<int> go{0};
  std::thread completer([&] {
    while (go.load() == 0) {
    }
    for (int i = 0; i < n; ++i) EXPECT_EQ(EP_Grequest_complete(copies[i]), EP_SUCCESS);
  });
  go.store(1);
  for (int i = 0; i < n; ++i) EXPECT_EQ(EP_Request_free(&reqs[i]), EP_SUCCESS);
  completer.join();
  for (int i = 0; i < n; ++i) EXPECT_EQ(freed[i].load(), 1) << "request " << i;
}

TEST(Grequest, CancelTellsWhetherCompleteWasCalled) {
  Log log;
  log.cancelled = true;  // the operation reports that cancellation succeeded
  EP_Request r = start(&log);
  ASSERT_EQ(EP_Cancel(&r), EP_SUCCESS);
  EXPECT_EQ(log.get(), "c");
  EXPECT_NE(r, EP_REQUEST_NULL);  // cancel does not complete or free
  ASSERT_EQ(EP_Grequest_complete(r), EP_SUCCESS);
  ASSERT_EQ(EP_Cancel(&r), EP_SUCCESS);
  EXPECT_EQ(log.get(), "cC");
  EP_Status st{};
  ASSERT_EQ(EP_Wait(&r, &st), EP_SUCCESS);
  EXPECT_EQ(log.get(), "cCqf");
  int flag = 0;
  EXPECT_EQ(EP_Test_cancelled(&st, &flag), EP_SUCCESS);
  EXPECT_EQ(flag, 1);
}

// ---- errors from callbacks ---------------------------------------------------------------

TEST(GrequestErrors, WaitAndTestReturnFreeCodeElseQueryCode) {
  {  // query fails, free succeeds: the query's code
    Log log;
    log.query_rc = EP_ERR_OTHER;
    EP_Request r = start(&log);
    EP_Grequest_complete(r);
    EP_Status st{};
    EXPECT_EQ(EP_Wait(&r, &st), EP_ERR_OTHER);
    EXPECT_EQ(r, EP_REQUEST_NULL);
    EXPECT_EQ(log.get(), "qf");
    EXPECT_NE(ep_test::last_error(EP_ERR_OTHER).find("EP_Wait"), std::string::npos);
  }
  {  // both fail: free_fn's (the last callback's) code
    Log log;
    log.query_rc = EP_ERR_OTHER;
    log.free_rc = EP_ERR_INTERN;
    EP_Request r = start(&log);
    EP_Grequest_complete(r);
    int flag = 0;
    EXPECT_EQ(EP_Test(&r, &flag, EP_STATUS_IGNORE), EP_ERR_INTERN);
    EXPECT_EQ(flag, 1);
    EXPECT_EQ(log.get(), "qf");
  }
  {  // free fails alone; a user code outside EP_ERR_* passes through unchanged
    Log log;
    log.free_rc = 1234;
    EP_Request r = start(&log);
    EP_Grequest_complete(r);
    EXPECT_EQ(EP_Wait(&r, EP_STATUS_IGNORE), 1234);
  }
}

TEST(GrequestErrors, AllAndSomeFormsGiveErrInStatusWithPerStatusCodes) {
  // Requests 0 and 2 succeed; 1 fails in query_fn; 3 fails in free_fn and query_fn.
  auto make = [](std::vector<Log>& logs, std::vector<EP_Request>& reqs) {
    logs[1].query_rc = EP_ERR_ARG;
    logs[3].query_rc = EP_ERR_ARG;
    logs[3].free_rc = EP_ERR_BUFFER;
    for (int i = 0; i < 4; ++i) {
      reqs[i] = start(&logs[i]);
      EP_Grequest_complete(reqs[i]);
    }
  };
  auto check = [](std::vector<Log>& logs, const EP_Status* st) {
    EXPECT_EQ(st[0].EP_ERROR, EP_SUCCESS);
    EXPECT_EQ(st[1].EP_ERROR, EP_ERR_ARG);
    EXPECT_EQ(st[2].EP_ERROR, EP_SUCCESS);
    EXPECT_EQ(st[3].EP_ERROR, EP_ERR_BUFFER);
    for (auto& l : logs) EXPECT_EQ(l.get(), "qf");
  };
  {
    std::vector<Log> logs(4);
    std::vector<EP_Request> reqs(4);
    make(logs, reqs);
    EP_Status st[4];
    EXPECT_EQ(EP_Waitall(4, reqs.data(), st), EP_ERR_IN_STATUS);
    for (EP_Request r : reqs) EXPECT_EQ(r, EP_REQUEST_NULL);
    check(logs, st);
  }
  {
    std::vector<Log> logs(4);
    std::vector<EP_Request> reqs(4);
    make(logs, reqs);
    EP_Status st[4];
    int flag = 0;
    EXPECT_EQ(EP_Testall(4, reqs.data(), &flag, st), EP_ERR_IN_STATUS);
    EXPECT_EQ(flag, 1);
    check(logs, st);
  }
  for (int wait = 0; wait < 2; ++wait) {
    std::vector<Log> logs(4);
    std::vector<EP_Request> reqs(4);
    make(logs, reqs);
    EP_Status st[4];
    int idx[4], out = 0;
    int rc = wait ? EP_Waitsome(4, reqs.data(), &out, idx, st)
                  : EP_Testsome(4, reqs.data(), &out, idx, st);
    EXPECT_EQ(rc, EP_ERR_IN_STATUS);
    ASSERT_EQ(out, 4);
    EP_Status by_index[4];
    for (int k = 0; k < out; ++k) by_index[idx[k]] = st[k];
    check(logs, by_index);
  }
  {  // all succeed: EP_SUCCESS; with EP_STATUSES_IGNORE the codes are lost, the call fails
    std::vector<Log> logs(4);
    std::vector<EP_Request> reqs(4);
    make(logs, reqs);
    EXPECT_EQ(EP_Waitall(4, reqs.data(), EP_STATUSES_IGNORE), EP_ERR_IN_STATUS);
    std::vector<Log> ok(2);
    std::vector<EP_Request> r2 = {start(&ok[0]), start(&ok[1])};
    EP_Grequest_complete(r2[0]);
    EP_Grequest_complete(r2[1]);
    EXPECT_EQ(EP_Waitall(2, r2.data(), EP_STATUSES_IGNORE), EP_SUCCESS);
  }
}

TEST(GrequestErrors, AnyFormsReturnTheCodeOfTheCompletedRequest) {
  for (int wait = 0; wait < 2; ++wait) {
    std::vector<Log> logs(2);
    logs[1].free_rc = EP_ERR_OTHER;
    EP_Request reqs[2] = {start(&logs[0]), start(&logs[1])};
    EP_Grequest_complete(reqs[1]);
    int index = -1, flag = 0;
    EP_Status st{};
    int rc = wait ? EP_Waitany(2, reqs, &index, &st) : EP_Testany(2, reqs, &index, &flag, &st);
    EXPECT_EQ(rc, EP_ERR_OTHER);
    EXPECT_EQ(index, 1);
    EXPECT_EQ(logs[0].get(), "");
    EXPECT_EQ(logs[1].get(), "qf");
    EP_Grequest_complete(reqs[0]);
    EXPECT_EQ(EP_Wait(&reqs[0], EP_STATUS_IGNORE), EP_SUCCESS);
  }
}

TEST(GrequestErrors, FreeCancelAndGetStatusReturnTheirCallbacksCodes) {
  {  // free_fn run by EP_Request_free (complete came first)
    Log log;
    log.free_rc = EP_ERR_OTHER;
    EP_Request r = start(&log);
    EP_Grequest_complete(r);
    EXPECT_EQ(EP_Request_free(&r), EP_ERR_OTHER);
    EXPECT_EQ(r, EP_REQUEST_NULL);
  }
  {  // free_fn run by EP_Grequest_complete (free came first)
    Log log;
    log.free_rc = EP_ERR_OTHER;
    EP_Request r = start(&log);
    EP_Request copy = r;
    EXPECT_EQ(EP_Request_free(&r), EP_SUCCESS);
    EXPECT_EQ(EP_Grequest_complete(copy), EP_ERR_OTHER);
    EXPECT_EQ(log.get(), "f");
  }
  {
    Log log;
    log.cancel_rc = EP_ERR_PENDING;
    log.query_rc = EP_ERR_ARG;
    EP_Request r = start(&log);
    EXPECT_EQ(EP_Cancel(&r), EP_ERR_PENDING);
    EP_Grequest_complete(r);
    int flag = 0;
    EXPECT_EQ(EP_Request_get_status(r, &flag, EP_STATUS_IGNORE), EP_ERR_ARG);
    EXPECT_EQ(flag, 1);
    EXPECT_EQ(EP_Wait(&r, EP_STATUS_IGNORE), EP_ERR_ARG);
    EXPECT_EQ(log.get(), "cqqf");
  }
  {  // null requests
    EP_Request r = EP_REQUEST_NULL;
    EXPECT_EQ(EP_Request_free(&r), EP_ERR_REQUEST);
    EXPECT_EQ(EP_Cancel(&r), EP_ERR_REQUEST);
  }
}

// ---- completion from another thread --------------------------------------------------------

// Every blocking form, blocked on generalized requests that another thread completes
// after a delay (long enough for the waiter to go to sleep on the futex/back-off).
TEST(GrequestThreads, CompleteFromAnotherThreadWakesEveryBlockingForm) {
  enum Form { kWait, kWaitall, kWaitany, kWaitsome, kTestLoop };
  for (int form = kWait; form <= kTestLoop; ++form) {
    std::vector<Log> logs(2);
    EP_Request reqs[2] = {start(&logs[0]), start(&logs[1])};
    EP_Request copies[2] = {reqs[0], reqs[1]};
    std::thread completer([&] {
      sleep_ms(30);
      EXPECT_EQ(EP_Grequest_complete(copies[0]), EP_SUCCESS);
      sleep_ms(10);
      EXPECT_EQ(EP_Grequest_complete(copies[1]), EP_SUCCESS);
    });
    if (form == kWait) {
      EXPECT_EQ(EP_Wait(&reqs[0], EP_STATUS_IGNORE), EP_SUCCESS);
      EXPECT_EQ(EP_Wait(&reqs[1], EP_STATUS_IGNORE), EP_SUCCESS);
    } else if (form == kWaitall) {
      EXPECT_EQ(EP_Waitall(2, reqs, EP_STATUSES_IGNORE), EP_SUCCESS);
    } else if (form == kWaitany) {
      int index = -1;
      EXPECT_EQ(EP_Waitany(2, reqs, &index, EP_STATUS_IGNORE), EP_SUCCESS);
      EXPECT_EQ(index, 0);
      EXPECT_EQ(EP_Waitany(2, reqs, &index, EP_STATUS_IGNORE), EP_SUCCESS);
      EXPECT_EQ(index, 1);
    } else if (form == kWaitsome) {
      int done = 0;
      while (done < 2) {
        int out = 0, idx[2];
        EXPECT_EQ(EP_Waitsome(2, reqs, &out, idx, EP_STATUSES_IGNORE), EP_SUCCESS);
        ASSERT_GT(out, 0);
        done += out;
      }
    } else {
      int flag = 0;
      while (!flag) EXPECT_EQ(EP_Testall(2, reqs, &flag, EP_STATUSES_IGNORE), EP_SUCCESS);
    }
    completer.join();
    EXPECT_EQ(reqs[0], EP_REQUEST_NULL);
    EXPECT_EQ(reqs[1], EP_REQUEST_NULL);
    for (auto& l : logs) {
      EXPECT_EQ(l.get(), "qf") << "form " << form;
      EXPECT_EQ(l.query_thread, std::this_thread::get_id()) << "form " << form;
    }
  }
}

// Endpoint threads block in EP_Wait on generalized requests while one helper thread per
// process completes them in a random order; repeated to catch lost wake-ups.
TEST(GrequestThreads, EndpointsBlockedInWaitAreAllWoken) {
  const int rounds = scaled(100);
  const int num_ep = 2;
  std::vector<Log> logs(static_cast<size_t>(num_ep));
  std::vector<std::atomic<EP_Request>> published(static_cast<size_t>(num_ep));
  std::atomic<int> ready{0}, finished{0};
  std::thread completer([&] {
    for (int round = 0; round < rounds; ++round) {
      while (ready.load() < (round + 1) * num_ep) std::this_thread::yield();
      if (round % 3 == 0) sleep_ms(1);  // sometimes the waiters already sleep
      for (int i = num_ep - 1; i >= 0; --i) {
        EXPECT_EQ(EP_Grequest_complete(published[i].load()), EP_SUCCESS);
      }
    }
  });
  run_endpoints(num_ep, [&](EP_Comm, int i) {
    for (int round = 0; round < rounds; ++round) {
      EP_Request r = start(&logs[i]);
      published[i].store(r);
      ready.fetch_add(1);
      ASSERT_EQ(EP_Wait(&r, EP_STATUS_IGNORE), EP_SUCCESS);
    }
    finished.fetch_add(1);
  });
  completer.join();
  EXPECT_EQ(finished.load(), num_ep);
  for (auto& l : logs) {
    EXPECT_EQ(l.count('q'), rounds);
    EXPECT_EQ(l.count('f'), rounds);
  }
}

// ---- mixed with point-to-point and nonblocking collectives --------------------------------

// Each endpoint has: a receive from its left neighbour, a send to its right neighbour,
// an Iallreduce and a generalized request completed by another thread - completed by
// every Wait/Test form in turn.
TEST(GrequestMix, WithPointToPointAndCollectivesInEveryForm) {
  enum Form { kWait, kWaitall, kWaitany, kWaitsome, kTestall, kTestany, kTestsome, kNumForms };
  const int num_ep = 2;
  run_endpoints(num_ep, [&](EP_Comm comm, int) {
    int rank = 0, size = 0;
    EP_Comm_rank(comm, &rank);
    EP_Comm_size(comm, &size);
    for (int form = 0; form < kNumForms; ++form) {
      Log log;
      log.elements = 0;
      int in = -1, out = rank * 10 + form, sum = -1, one = rank;
      EP_Request reqs[4];
      ASSERT_EQ(EP_Irecv(&in, 1, MPI_INT, (rank + size - 1) % size, form, comm, &reqs[0]),
                EP_SUCCESS);
      ASSERT_EQ(EP_Isend(&out, 1, MPI_INT, (rank + 1) % size, form, comm, &reqs[1]), EP_SUCCESS);
      ASSERT_EQ(EP_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm, &reqs[2]), EP_SUCCESS);
      reqs[3] = start(&log);
      EP_Request copy = reqs[3];
      std::thread completer([copy] {
        sleep_ms(5);
        EXPECT_EQ(EP_Grequest_complete(copy), EP_SUCCESS);
      });
      EP_Status st[4];
      int done = 0;
      bool seen[4] = {false, false, false, false};
      while (done < 4) {
        if (form == kWait) {
          for (int i = 0; i < 4; ++i) ASSERT_EQ(EP_Wait(&reqs[i], &st[i]), EP_SUCCESS);
          done = 4;
          for (bool& s : seen) s = true;
        } else if (form == kWaitall) {
          ASSERT_EQ(EP_Waitall(4, reqs, st), EP_SUCCESS);
          done = 4;
          for (bool& s : seen) s = true;
        } else if (form == kTestall) {
          int flag = 0;
          ASSERT_EQ(EP_Testall(4, reqs, &flag, st), EP_SUCCESS);
          if (flag) {
            done = 4;
            for (bool& s : seen) s = true;
          }
        } else if (form == kWaitany || form == kTestany) {
          int index = -1, flag = 1;
          EP_Status one_st;
          int rc = form == kWaitany ? EP_Waitany(4, reqs, &index, &one_st)
                                    : EP_Testany(4, reqs, &index, &flag, &one_st);
          ASSERT_EQ(rc, EP_SUCCESS);
          if (flag && index != EP_UNDEFINED) {
            ASSERT_FALSE(seen[index]);
            seen[index] = true;
            st[index] = one_st;
            ++done;
          }
        } else {
          int n = 0, idx[4];
          EP_Status some[4];
          int rc = form == kWaitsome ? EP_Waitsome(4, reqs, &n, idx, some)
                                     : EP_Testsome(4, reqs, &n, idx, some);
          ASSERT_EQ(rc, EP_SUCCESS);
          for (int k = 0; k < n && n != EP_UNDEFINED; ++k) {
            ASSERT_FALSE(seen[idx[k]]);
            seen[idx[k]] = true;
            st[idx[k]] = some[k];
            ++done;
          }
        }
      }
      completer.join();
      for (int i = 0; i < 4; ++i) {
        EXPECT_TRUE(seen[i]);
        EXPECT_EQ(reqs[i], EP_REQUEST_NULL);
      }
      EXPECT_EQ(in, ((rank + size - 1) % size) * 10 + form) << "form " << form;
      EXPECT_EQ(st[0].EP_SOURCE, (rank + size - 1) % size);
      EXPECT_EQ(sum, size * (size - 1) / 2) << "form " << form;
      EXPECT_EQ(st[3].EP_SOURCE, log.source);
      EXPECT_EQ(log.get(), "qf") << "form " << form;
    }
  });
}

}  // namespace
