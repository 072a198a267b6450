// EP_Init when MPI was initialized with a thread level below MPI_THREAD_MULTIPLE.
//
// Its own main(): MPI_Init_thread with the level named by LIBEP_TEST_THREAD_LEVEL
// (single, funneled, serialized; set by the BUILD target), then the tests.  What MPI
// provides is checked, not assumed: below MULTIPLE, EP_Init must fail with
// EP_ERR_THREAD_LEVEL; if MPI provides MULTIPLE anyway, EP_Init must succeed (the test
// prints a note saying so).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "ep/ep.h"
#include "tests/api/proc_util.h"
#include "tests/common/harness.h"

namespace {

int g_required = -1, g_provided = -1;

const char* level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "?";
  }
}

TEST(ThreadLevel, EpInitFailsWithErrThreadLevelUnlessMpiProvidesMultiple) {
  std::printf("required %s, MPI provided %s\n", level_name(g_required), level_name(g_provided));
  int queried = -1;
  MPI_Query_thread(&queried);
  EXPECT_EQ(queried, g_provided);
  int rc = -1;
  const std::string err = ep_test::capture_stderr([&] { rc = EP_Init(); });
  if (g_provided == MPI_THREAD_MULTIPLE) {
    std::printf("NOTE: MPI provided MPI_THREAD_MULTIPLE although %s was requested; "
                "EP_Init must then succeed\n",
                level_name(g_required));
    EXPECT_EQ(rc, EP_SUCCESS) << ep_test::last_error(rc);
    EXPECT_EQ(ep_test::progress_thread_count(), 1);
    if (rc == EP_SUCCESS) {
      EXPECT_EQ(EP_Finalize(), EP_SUCCESS);
    }
    return;
  }
  EXPECT_LT(g_provided, MPI_THREAD_MULTIPLE);
  ASSERT_EQ(rc, EP_ERR_THREAD_LEVEL);
  // The reason, in one line on stderr.
  EXPECT_EQ(ep_test::lines_with(err, {"EP_ERR_THREAD_LEVEL", "EP_Init", "MPI_THREAD_MULTIPLE"})
                .size(),
            1u)
      << err;
  std::string s = ep_test::last_error(EP_ERR_THREAD_LEVEL);
  EXPECT_NE(s.find("EP_Init:"), std::string::npos) << s;
  EXPECT_NE(s.find("MPI_THREAD_MULTIPLE"), std::string::npos) << s;
  int flag = -1;
  EXPECT_EQ(EP_Initialized(&flag), EP_SUCCESS);
  EXPECT_EQ(flag, 0);
  EXPECT_EQ(ep_test::progress_thread_count(), 0);
  int rank = 0;
  EXPECT_EQ(EP_Comm_rank(EP_COMM_NULL, &rank), EP_ERR_NOT_INITIALIZED);
  EP_Comm c;
  EXPECT_EQ(EP_Comm_create_endpoints(MPI_COMM_WORLD, 1, MPI_INFO_NULL, &c),
            EP_ERR_NOT_INITIALIZED);
  // And it stays that way: a second attempt fails the same way.
  EXPECT_EQ(EP_Init(), EP_ERR_THREAD_LEVEL);
  EXPECT_EQ(ep_test::progress_thread_count(), 0);
}

}  // namespace

int main(int argc, char** argv) {
  const char* l = std::getenv("LIBEP_TEST_THREAD_LEVEL");
  std::string level = l ? l : "funneled";
  g_required = level == "single"       ? MPI_THREAD_SINGLE
               : level == "serialized" ? MPI_THREAD_SERIALIZED
               : level == "multiple"   ? MPI_THREAD_MULTIPLE
                                       : MPI_THREAD_FUNNELED;
  MPI_Init_thread(&argc, &argv, g_required, &g_provided);
  ::testing::InitGoogleTest(&argc, argv);
  int result = RUN_ALL_TESTS();
  int worst = 0;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
