// Helper teams (MPI 12.4.4 draft + API.md clarifications) and thread queries.
//
// Rules checked: maxsize caps teamsize; a join beyond teamsize fails at once with
// EP_ERR_TEAM and that thread's leave/break fail too; leave blocks until every member
// left or broke; sync is a barrier of the members; the team is joinable again after all
// left; break is EP_ERR_TEAM on a balanced team; free while members are joined is
// EP_ERR_TEAM; null handles, bad maxsize/teamsize, a thread in two teams.  Whitebox:
// members waiting in leave/sync run chunks of jobs posted with team_parallel_for.
#include "runtime/team.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "ep/ep.h"
#include "tests/common/harness.h"

namespace {

using ep_test::run_endpoints;
using ep_test::scaled;

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

ep::runtime::Team* whitebox(EP_Team t) { return reinterpret_cast<ep::runtime::Team*>(t); }

EP_Team make_team(int maxsize, bool balanced = false) {
  MPI_Info info = MPI_INFO_NULL;
  if (balanced) {
    MPI_Info_create(&info);
    MPI_Info_set(info, "balanced", "true");
  }
  EP_Team team = EP_TEAM_NULL;
  EXPECT_EQ(EP_Team_create(maxsize, info, &team), EP_SUCCESS);
  EXPECT_NE(team, EP_TEAM_NULL);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  return team;
}

// ---- thread queries ------------------------------------------------------------------------

TEST(Threads, QueryThreadIsMultiple) {
  int provided = -1;
  EXPECT_EQ(EP_Query_thread(&provided), EP_SUCCESS);
  EXPECT_EQ(provided, MPI_THREAD_MULTIPLE);
  EXPECT_EQ(EP_Query_thread(nullptr), EP_ERR_ARG);
  std::thread t([] {
    int p = -1;
    EXPECT_EQ(EP_Query_thread(&p), EP_SUCCESS);
    EXPECT_EQ(p, MPI_THREAD_MULTIPLE);
  });
  t.join();
}

TEST(Threads, IsThreadMainOnlyOnTheThreadThatInitializedMpi) {
  // googletest runs tests on main(), the thread that called MPI_Init_thread (mpi_main.cc).
  int flag = -1;
  EXPECT_EQ(EP_Is_thread_main(&flag), EP_SUCCESS);
  EXPECT_EQ(flag, 1);
  EXPECT_EQ(EP_Is_thread_main(nullptr), EP_ERR_ARG);
  std::thread t([] {
    int f = -1;
    EXPECT_EQ(EP_Is_thread_main(&f), EP_SUCCESS);
    EXPECT_EQ(f, 0);
  });
  t.join();
  run_endpoints(2, [](EP_Comm, int) {  // endpoint threads are not the main thread either
    int f = -1;
    EXPECT_EQ(EP_Is_thread_main(&f), EP_SUCCESS);
    EXPECT_EQ(f, 0);
  });
}

// ---- misuse --------------------------------------------------------------------------------

TEST(TeamErrors, BadArgumentsAndNullHandles) {
  EP_Team team = EP_TEAM_NULL;
  EXPECT_EQ(EP_Team_create(0, MPI_INFO_NULL, &team), EP_ERR_ARG);
  EXPECT_EQ(EP_Team_create(-3, MPI_INFO_NULL, &team), EP_ERR_ARG);
  EXPECT_EQ(EP_Team_create(2, MPI_INFO_NULL, nullptr), EP_ERR_ARG);
  EXPECT_EQ(team, EP_TEAM_NULL);
  EXPECT_EQ(EP_Team_join(1, EP_TEAM_NULL), EP_ERR_TEAM);
  EXPECT_EQ(EP_Team_leave(EP_TEAM_NULL), EP_ERR_TEAM);
  EXPECT_EQ(EP_Team_sync(EP_TEAM_NULL), EP_ERR_TEAM);
  EXPECT_EQ(EP_Team_break(EP_TEAM_NULL), EP_ERR_TEAM);
  EXPECT_EQ(EP_Team_free(&team), EP_ERR_TEAM);
  EXPECT_EQ(EP_Team_free(nullptr), EP_ERR_ARG);
  EXPECT_NE(ep_test::last_error(EP_ERR_TEAM).find("EP_Team_free"), std::string::npos);
  team = make_team(2);
  EXPECT_EQ(EP_Team_join(0, team), EP_ERR_ARG);
  EXPECT_EQ(EP_Team_join(-1, team), EP_ERR_ARG);
  EXPECT_EQ(EP_Team_free(&team), EP_SUCCESS);
  EXPECT_EQ(team, EP_TEAM_NULL);
}

TEST(TeamErrors, LeaveSyncBreakWithoutJoiningAreErrors) {
  EP_Team team = make_team(2);
  EXPECT_EQ(EP_Team_leave(team), EP_ERR_TEAM);
  EXPECT_EQ(EP_Team_sync(team), EP_ERR_TEAM);
  EXPECT_EQ(EP_Team_break(team), EP_ERR_TEAM);
  EXPECT_NE(ep_test::last_error(EP_ERR_TEAM).find("not a member"), std::string::npos);
  EXPECT_EQ(EP_Team_free(&team), EP_SUCCESS);
}

TEST(TeamErrors, AThreadBelongsToOneTeamAtATime) {
  EP_Team a = make_team(1), b = make_team(1);
  ASSERT_EQ(EP_Team_join(1, a), EP_SUCCESS);
  EXPECT_EQ(EP_Team_join(1, b), EP_ERR_TEAM);
  EXPECT_EQ(EP_Team_join(1, a), EP_ERR_TEAM);
  EXPECT_EQ(EP_Team_leave(b), EP_ERR_TEAM);
  EXPECT_EQ(EP_Team_leave(a), EP_SUCCESS);    // the only member: returns at once
  ASSERT_EQ(EP_Team_join(1, b), EP_SUCCESS);  // free again
  EXPECT_EQ(EP_Team_leave(b), EP_SUCCESS);
  EXPECT_EQ(EP_Team_free(&a), EP_SUCCESS);
  EXPECT_EQ(EP_Team_free(&b), EP_SUCCESS);
}

TEST(TeamErrors, FreeWhileMembersAreJoinedIsAnError) {
  EP_Team team = make_team(2);
  ASSERT_EQ(EP_Team_join(1, team), EP_SUCCESS);
  EXPECT_EQ(EP_Team_free(&team), EP_ERR_TEAM);
  EXPECT_NE(team, EP_TEAM_NULL);
  EXPECT_EQ(EP_Team_leave(team), EP_SUCCESS);
  // A member waiting in leave for a member that has not joined yet still counts.
  std::atomic<int> in_leave{0};
  std::thread t([&] {
    ASSERT_EQ(EP_Team_join(2, team), EP_SUCCESS);
    in_leave.store(1);
    EXPECT_EQ(EP_Team_leave(team), EP_SUCCESS);
  });
  while (in_leave.load() == 0) std::this_thread::yield();
  sleep_ms(10);
  EXPECT_EQ(EP_Team_free(&team), EP_ERR_TEAM);
  ASSERT_EQ(EP_Team_join(2, team), EP_SUCCESS);
  EXPECT_EQ(EP_Team_leave(team), EP_SUCCESS);
  t.join();
  EXPECT_EQ(EP_Team_free(&team), EP_SUCCESS);
  EXPECT_EQ(team, EP_TEAM_NULL);
}

TEST(TeamErrors, JoinBeyondTeamsizeFailsAtOnceAndItsLeaveAndBreakFail) {
  EP_Team team = make_team(4);
  std::atomic<int> stage{0};
  std::thread member([&] {
    ASSERT_EQ(EP_Team_join(2, team), EP_SUCCESS);
    stage.store(1);
    while (stage.load() < 2) std::this_thread::yield();
    EXPECT_EQ(EP_Team_leave(team), EP_SUCCESS);
  });
  ASSERT_EQ(EP_Team_join(2, team), EP_SUCCESS);
  while (stage.load() < 1) std::this_thread::yield();
  std::thread extra([&] {
    // The team has its 2 members: fail at once, do not block.
    EXPECT_EQ(EP_Team_join(2, team), EP_ERR_TEAM);
    EXPECT_NE(ep_test::last_error(EP_ERR_TEAM).find("EP_Team_join"), std::string::npos);
    EXPECT_EQ(EP_Team_leave(team), EP_ERR_TEAM);
    EXPECT_EQ(EP_Team_break(team), EP_ERR_TEAM);
    EXPECT_EQ(EP_Team_sync(team), EP_ERR_TEAM);
  });
  extra.join();
  stage.store(2);
  EXPECT_EQ(EP_Team_leave(team), EP_SUCCESS);
  member.join();
  EXPECT_EQ(EP_Team_free(&team), EP_SUCCESS);
}

TEST(TeamErrors, TeamsizeAboveMaxsizeIsCapped) {
  EP_Team team = make_team(2);
  std::atomic<int> joined{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 2; ++i) {
    ts.emplace_back([&] {
      ASSERT_EQ(EP_Team_join(10, team), EP_SUCCESS);  // capped at 2
      joined.fetch_add(1);
      while (joined.load() < 3) std::this_thread::yield();
      EXPECT_EQ(EP_Team_leave(team), EP_SUCCESS);  // returns: both members left
    });
  }
  while (joined.load() < 2) std::this_thread::yield();
  EXPECT_EQ(EP_Team_join(10, team), EP_ERR_TEAM);  // a third: beyond the capped size
  joined.fetch_add(1);
  for (auto& t : ts) t.join();
  EXPECT_EQ(EP_Team_free(&team), EP_SUCCESS);
}

TEST(TeamErrors, MismatchedTeamsizeIsAnError) {
  EP_Team team = make_team(4);
  ASSERT_EQ(EP_Team_join(2, team), EP_SUCCESS);
  std::thread t([&] { EXPECT_EQ(EP_Team_join(3, team), EP_ERR_ARG); });
  t.join();
  ASSERT_EQ(EP_Team_break(team), EP_SUCCESS);
  // The team is now waiting for its second member; let it come and leave.
  std::thread u([&] {
    ASSERT_EQ(EP_Team_join(2, team), EP_SUCCESS);
    EXPECT_EQ(EP_Team_leave(team), EP_SUCCESS);  // the other member broke: no wait
  });
  u.join();
  EXPECT_EQ(EP_Team_free(&team), EP_SUCCESS);
}

// ---- balanced ------------------------------------------------------------------------------

TEST(TeamBalanced, BreakIsAnErrorOnABalancedTeamAndTheMemberStays) {
  EP_Team team = make_team(1, /*balanced=*/true);
  ASSERT_EQ(EP_Team_join(1, team), EP_SUCCESS);
  EXPECT_EQ(EP_Team_break(team), EP_ERR_TEAM);
  EXPECT_NE(ep_test::last_error(EP_ERR_TEAM).find("balanced"), std::string::npos);
  EXPECT_EQ(EP_Team_free(&team), EP_ERR_TEAM);  // still a member
  EXPECT_EQ(EP_Team_leave(team), EP_SUCCESS);
  EXPECT_EQ(EP_Team_free(&team), EP_SUCCESS);
}

TEST(TeamBalanced, BreakIsAllowedWithoutTheKeyOrWithFalse) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "balanced", "false");
  EP_Team a = EP_TEAM_NULL;
  ASSERT_EQ(EP_Team_create(1, info, &a), EP_SUCCESS);
  MPI_Info_free(&info);
  EP_Team b = make_team(1);
  for (EP_Team t : {a, b}) {
    ASSERT_EQ(EP_Team_join(1, t), EP_SUCCESS);
    EXPECT_EQ(EP_Team_break(t), EP_SUCCESS);
    EXPECT_EQ(EP_Team_leave(t), EP_ERR_TEAM);  // no longer a member
  }
  EXPECT_EQ(EP_Team_free(&a), EP_SUCCESS);
  EXPECT_EQ(EP_Team_free(&b), EP_SUCCESS);
}

// ---- leave / break / sync ----------------------------------------------------------------

TEST(TeamLeave, LeaveWaitsUntilEveryMemberLeftOrBroke) {
  for (int use_break = 0; use_break < 2; ++use_break) {
    EP_Team team = make_team(3);
    std::atomic<int> late_done{0};
    std::thread early([&] {
      ASSERT_EQ(EP_Team_join(3, team), EP_SUCCESS);
      EXPECT_EQ(EP_Team_leave(team), EP_SUCCESS);
      EXPECT_EQ(late_done.load(), 2) << "leave returned before every member departed";
    });
    std::thread middle([&] {
      sleep_ms(20);
      ASSERT_EQ(EP_Team_join(3, team), EP_SUCCESS);
      late_done.fetch_add(1);
      if (use_break) {
        EXPECT_EQ(EP_Team_break(team), EP_SUCCESS);  // does not wait
      } else {
        EXPECT_EQ(EP_Team_leave(team), EP_SUCCESS);
      }
    });
    sleep_ms(60);  // the third member joins late (it is this thread)
    ASSERT_EQ(EP_Team_join(3, team), EP_SUCCESS);
    late_done.fetch_add(1);
    EXPECT_EQ(EP_Team_leave(team), EP_SUCCESS);
    early.join();
    middle.join();
    EXPECT_EQ(EP_Team_free(&team), EP_SUCCESS);
  }
}

TEST(TeamLeave, BreakDoesNotWait) {
  EP_Team team = make_team(2);
  ASSERT_EQ(EP_Team_join(2, team), EP_SUCCESS);
  EXPECT_EQ(EP_Team_break(team), EP_SUCCESS);  // the other member has not even joined
  std::thread t([&] {
    ASSERT_EQ(EP_Team_join(2, team), EP_SUCCESS);
    EXPECT_EQ(EP_Team_leave(team), EP_SUCCESS);
  });
  t.join();
  EXPECT_EQ(EP_Team_free(&team), EP_SUCCESS);
}

TEST(TeamLeave, TeamCanBeJoinedAgainAfterAllLeft) {
  EP_Team team = make_team(3);
  const int rounds = scaled(50);
  for (int round = 0; round < rounds; ++round) {
    const int n = 1 + round % 3;  // teamsize changes between epochs
    std::vector<std::thread> ts;
    for (int i = 0; i < n; ++i) {
      ts.emplace_back([&] {
        ASSERT_EQ(EP_Team_join(n, team), EP_SUCCESS);
        EXPECT_EQ(EP_Team_leave(team), EP_SUCCESS);
      });
    }
    for (auto& t : ts) t.join();
  }
  EXPECT_EQ(EP_Team_free(&team), EP_SUCCESS);
}

TEST(TeamSync, SyncIsABarrierOfTheMembers) {
  const int n = 3, rounds = scaled(40);
  EP_Team team = make_team(n);
  std::vector<std::atomic<int>> arrived(static_cast<size_t>(rounds));
  for (auto& a : arrived) a.store(0);
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i) {
    ts.emplace_back([&, i] {
      ASSERT_EQ(EP_Team_join(n, team), EP_SUCCESS);
      for (int r = 0; r < rounds; ++r) {
        if ((r + i) % 4 == 0) sleep_ms(1);  // someone is late in every round
        arrived[r].fetch_add(1);
        ASSERT_EQ(EP_Team_sync(team), EP_SUCCESS);
        EXPECT_EQ(arrived[r].load(), n) << "round " << r << " thread " << i;
      }
      EXPECT_EQ(EP_Team_leave(team), EP_SUCCESS);  // still a member after sync
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(EP_Team_free(&team), EP_SUCCESS);
}

// ---- work sharing (whitebox) ---------------------------------------------------------------

// A job posted by one member while another waits in leave (or sync): the poster's first
// chunk blocks until some chunk ran on another thread, so the helper must take one.
TEST(TeamHelp, MembersWaitingInLeaveOrSyncRunChunksOfPostedJobs) {
  for (int use_sync = 0; use_sync < 2; ++use_sync) {
    EP_Team team = make_team(2);
    ep::runtime::Team* t = whitebox(team);
    std::thread helper([&] {
      ASSERT_EQ(EP_Team_join(2, team), EP_SUCCESS);
      if (use_sync) {
        EXPECT_EQ(EP_Team_sync(team), EP_SUCCESS);
      }
      EXPECT_EQ(EP_Team_leave(team), EP_SUCCESS);
    });
    ASSERT_EQ(EP_Team_join(2, team), EP_SUCCESS);
    while (t->helpers() == 0) std::this_thread::yield();
    const std::thread::id me = std::this_thread::get_id();
    const int64_t n = 1000, grain = 10;
    std::vector<std::atomic<int>> ran(static_cast<size_t>(n));
    for (auto& r : ran) r.store(0);
    std::atomic<int> by_other{0};
    std::function<void(int64_t, int64_t)> fn = [&](int64_t b, int64_t e) {
      if (std::this_thread::get_id() != me) by_other.fetch_add(1);
      if (b == 0) {  // hold the poster here until a helper ran a chunk (10 s at most)
        for (int i = 0; i < 10000 && by_other.load() == 0; ++i) sleep_ms(1);
      }
      for (int64_t i = b; i < e; ++i) ran[i].fetch_add(1);
    };
    const uint64_t before = t->helped_chunks();
    ASSERT_TRUE(ep::runtime::team_parallel_for(whitebox(team), n, grain, fn));
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(ran[i].load(), 1) << "element " << i;  // once
    EXPECT_GT(by_other.load(), 0);
    EXPECT_GT(t->helped_chunks(), before);
    if (use_sync) {
      EXPECT_EQ(EP_Team_sync(team), EP_SUCCESS);
    }
    EXPECT_EQ(EP_Team_leave(team), EP_SUCCESS);
    helper.join();
    EXPECT_EQ(EP_Team_free(&team), EP_SUCCESS);
  }
}

// kIfJoined: a job posted while the other member is joined but not yet in leave; it
// arrives in leave during the job (told to by the poster's first chunk) and takes chunks.
// kIfWaiting declines in the same situation.
TEST(TeamHelp, MembersThatReachLeaveDuringAJobTakeItsChunks) {
  EP_Team team = make_team(2);
  std::atomic<int> go_leave{0};
  std::thread member([&] {
    ASSERT_EQ(EP_Team_join(2, team), EP_SUCCESS);
    while (go_leave.load() == 0) std::this_thread::yield();
    EXPECT_EQ(EP_Team_leave(team), EP_SUCCESS);
  });
  ASSERT_EQ(EP_Team_join(2, team), EP_SUCCESS);
  while (whitebox(team)->other_members() == 0) std::this_thread::yield();
  std::function<void(int64_t, int64_t)> noop = [](int64_t, int64_t) {};
  EXPECT_FALSE(ep::runtime::team_parallel_for(whitebox(team), 100, 10, noop,
                                              ep::runtime::TeamShare::kIfWaiting));
  const std::thread::id me = std::this_thread::get_id();
  const int64_t n = 1000, grain = 10;
  std::vector<std::atomic<int>> ran(static_cast<size_t>(n));
  for (auto& r : ran) r.store(0);
  std::atomic<int> by_other{0};
  std::function<void(int64_t, int64_t)> fn = [&](int64_t b, int64_t e) {
    if (std::this_thread::get_id() != me) by_other.fetch_add(1);
    if (b == 0) {
      go_leave.store(1);
      for (int i = 0; i < 10000 && by_other.load() == 0; ++i) sleep_ms(1);
    }
    for (int64_t i = b; i < e; ++i) ran[i].fetch_add(1);
  };
  ASSERT_TRUE(ep::runtime::team_parallel_for(whitebox(team), n, grain, fn,
                                             ep::runtime::TeamShare::kIfJoined));
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(ran[i].load(), 1) << "element " << i;
  EXPECT_GT(by_other.load(), 0);
  EXPECT_EQ(EP_Team_leave(team), EP_SUCCESS);
  member.join();
  EXPECT_EQ(EP_Team_free(&team), EP_SUCCESS);
}

TEST(TeamHelp, NoTeamOrNoHelperMeansTheCallerDoesTheWorkItsOwnWay) {
  std::function<void(int64_t, int64_t)> fn = [](int64_t, int64_t) {};
  EXPECT_FALSE(ep::runtime::team_parallel_for(nullptr, 100, 10, fn));
  EP_Team team = make_team(2);
  ASSERT_EQ(EP_Team_join(2, team), EP_SUCCESS);
  EXPECT_FALSE(ep::runtime::team_parallel_for(whitebox(team), 100, 10, fn));  // none waits
  EXPECT_FALSE(ep::runtime::team_parallel_for(whitebox(team), 100, 10, fn,
                                              ep::runtime::TeamShare::kIfJoined));  // nor joined
  EXPECT_EQ(EP_Team_break(team), EP_SUCCESS);
  std::thread t([&] {
    ASSERT_EQ(EP_Team_join(2, team), EP_SUCCESS);
    EXPECT_EQ(EP_Team_leave(team), EP_SUCCESS);
  });
  t.join();
  EXPECT_EQ(EP_Team_free(&team), EP_SUCCESS);
}

}  // namespace
