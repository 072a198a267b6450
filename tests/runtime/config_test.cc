// The configuration table (runtime/config.h): the CPU-list parser, parse_config with the
// environment (each variable, defaults, malformed values named), describe_config.
#include "runtime/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace {

using ep::progress::Policy;
using ep::runtime::Config;
using ep::runtime::describe_config;
using ep::runtime::kConfigTable;
using ep::runtime::kConfigTableSize;
using ep::runtime::parse_config;
using ep::runtime::parse_cpu_list;

// Clears every EP_* variable of the process environment before and after each test.
class ConfigEnv : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    std::vector<std::string> names;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      std::string s(*e);
      if (s.rfind("EP_", 0) == 0) names.push_back(s.substr(0, s.find('=')));
    }
    for (const std::string& n : names) unsetenv(n.c_str());
  }
  // Parses with one variable set; returns success.
  static bool parse_with(const char* var, const char* value, Config* c, std::string* error,
                         std::vector<std::string>* warnings = nullptr) {
    std::vector<std::string> w;
    setenv(var, value, 1);
    bool ok = parse_config(c, error, warnings ? warnings : &w);
    unsetenv(var);
    return ok;
  }
};

std::vector<int> cpus_of(const char* text, bool* ok, std::string* why = nullptr) {
  std::vector<int> cpus = {-99};
  std::string w;
  *ok = parse_cpu_list(text, &cpus, why ? why : &w);
  return cpus;
}

TEST(ParseCpuList, SingleCpu) {
  bool ok = false;
  EXPECT_EQ(cpus_of("3", &ok), std::vector<int>({3}));
  EXPECT_TRUE(ok);
  EXPECT_EQ(cpus_of("0", &ok), std::vector<int>({0}));
  EXPECT_TRUE(ok);
}

TEST(ParseCpuList, CommaSeparatedKeepsOrder) {
  bool ok = false;
  EXPECT_EQ(cpus_of("7,15", &ok), std::vector<int>({7, 15}));
  EXPECT_TRUE(ok);
  EXPECT_EQ(cpus_of("15,7,0", &ok), std::vector<int>({15, 7, 0}));
  EXPECT_TRUE(ok);
}

TEST(ParseCpuList, RangeIsInclusive) {
  bool ok = false;
  EXPECT_EQ(cpus_of("0-3", &ok), std::vector<int>({0, 1, 2, 3}));
  EXPECT_TRUE(ok);
  EXPECT_EQ(cpus_of("5-5", &ok), std::vector<int>({5}));
  EXPECT_TRUE(ok);
}

TEST(ParseCpuList, RangesAndSinglesMix) {
  bool ok = false;
  EXPECT_EQ(cpus_of("0-3,8", &ok), std::vector<int>({0, 1, 2, 3, 8}));
  EXPECT_TRUE(ok);
  EXPECT_EQ(cpus_of("8,0-1,4-5", &ok), std::vector<int>({8, 0, 1, 4, 5}));
  EXPECT_TRUE(ok);
}

TEST(ParseCpuList, MalformedListsAreRejectedWithAReason) {
  for (const char* bad : {"abc", "3x", "1,", ",1", "1,,2", "3-1", "1-", "-1", "0-", "4096", "9999",
                          "0-4096", "1;2", "1.5", "0x3"}) {
    bool ok = true;
    std::string why;
    cpus_of(bad, &ok, &why);
    EXPECT_FALSE(ok) << "'" << bad << "' accepted";
    EXPECT_FALSE(why.empty()) << "'" << bad << "' rejected without a reason";
    EXPECT_NE(why.find(bad), std::string::npos) << why;
  }
}

TEST(ParseCpuList, HighestCpuIsAccepted) {
  bool ok = false;
  EXPECT_EQ(cpus_of("4095", &ok), std::vector<int>({4095}));
  EXPECT_TRUE(ok);
}

TEST_F(ConfigEnv, DefaultsWhenNothingIsSet) {
  Config c;
  c.stats = true;  // parse_config starts from the defaults, not from *config
  c.progress_cpus = {1};
  std::string error;
  std::vector<std::string> warnings;
  ASSERT_TRUE(parse_config(&c, &error, &warnings)) << error;
  EXPECT_TRUE(c.progress_cpus.empty());
  EXPECT_EQ(c.progress_policy, Policy::kAdaptive);
  EXPECT_EQ(c.eager_limit, 16 * 1024);
  EXPECT_LE(c.eager_limit, 64 * 1024) << "API.md: the default is at most 64 KiB";
  EXPECT_FALSE(c.stats);
  EXPECT_FALSE(c.verbose);
  EXPECT_TRUE(c.node_transport) << "API.md: EP_NODE_TRANSPORT defaults to on";
  EXPECT_TRUE(warnings.empty());
}

TEST_F(ConfigEnv, TableDefaultsAgreeWithTheConfigDefaults) {
  // Parsing each row's documented default gives the same effective value as not
  // setting the variable at all.
  const Config defaults;
  for (size_t i = 0; i < kConfigTableSize; ++i) {
    const auto& row = kConfigTable[i];
    SCOPED_TRACE(row.name);
    Config c;
    std::string why;
    ASSERT_TRUE(row.parse(row.default_value, &c, &why)) << why;
    EXPECT_EQ(row.show(c), row.show(defaults));
  }
}

TEST_F(ConfigEnv, ProgressCpus) {
  Config c;
  std::string error;
  ASSERT_TRUE(parse_with("EP_PROGRESS_CPUS", "0-1,5", &c, &error)) << error;
  EXPECT_EQ(c.progress_cpus, std::vector<int>({0, 1, 5}));
}

TEST_F(ConfigEnv, ProgressPolicyEachValue) {
  const std::pair<const char*, Policy> values[] = {
      {"spin", Policy::kSpin}, {"adaptive", Policy::kAdaptive}, {"yield", Policy::kYield}};
  for (auto [text, want] : values) {
    Config c;
    std::string error;
    ASSERT_TRUE(parse_with("EP_PROGRESS_POLICY", text, &c, &error)) << error;
    EXPECT_EQ(c.progress_policy, want) << text;
  }
}

TEST_F(ConfigEnv, EagerLimitBytesAndSuffixes) {
  const std::pair<const char*, int64_t> values[] = {{"0", 0},
                                                    {"1", 1},
                                                    {"65536", 65536},
                                                    {"4k", 4096},
                                                    {"4K", 4096},
                                                    {"2m", 2 << 20},
                                                    {"1M", 1 << 20},
                                                    {"1024M", 1LL << 30},
                                                    {"1073741824", 1LL << 30}};
  for (auto [text, want] : values) {
    Config c;
    std::string error;
    ASSERT_TRUE(parse_with("EP_EAGER_LIMIT", text, &c, &error)) << text << ": " << error;
    EXPECT_EQ(c.eager_limit, want) << text;
  }
}

TEST_F(ConfigEnv, StatsAndVerboseBooleans) {
  for (const char* var : {"EP_STATS", "EP_VERBOSE"}) {
    for (const char* on : {"1", "yes", "on"}) {
      Config c;
      std::string error;
      ASSERT_TRUE(parse_with(var, on, &c, &error)) << error;
      EXPECT_TRUE(std::string(var) == "EP_STATS" ? c.stats : c.verbose) << var << "=" << on;
    }
    for (const char* off : {"0", "no", "off"}) {
      Config c;
      std::string error;
      ASSERT_TRUE(parse_with(var, off, &c, &error)) << error;
      EXPECT_FALSE(std::string(var) == "EP_STATS" ? c.stats : c.verbose) << var << "=" << off;
    }
  }
}

TEST_F(ConfigEnv, NodeTransportOnOrOff) {
  for (const char* on : {"1", "yes", "on"}) {
    Config c;
    std::string error;
    ASSERT_TRUE(parse_with("EP_NODE_TRANSPORT", on, &c, &error)) << error;
    EXPECT_TRUE(c.node_transport) << on;
  }
  for (const char* off : {"0", "no", "off"}) {
    Config c;
    std::string error;
    ASSERT_TRUE(parse_with("EP_NODE_TRANSPORT", off, &c, &error)) << error;
    EXPECT_FALSE(c.node_transport) << off;
  }
}

TEST_F(ConfigEnv, MalformedValuesFailNamingTheVariableAndValue) {
  const std::pair<const char*, const char*> bad[] = {{"EP_PROGRESS_CPUS", "abc"},
                                                     {"EP_PROGRESS_CPUS", "9999"},
                                                     {"EP_PROGRESS_CPUS", "2-1"},
                                                     {"EP_PROGRESS_POLICY", "fast"},
                                                     {"EP_PROGRESS_POLICY", ""},
                                                     {"EP_EAGER_LIMIT", "-5"},
                                                     {"EP_EAGER_LIMIT", "12x"},
                                                     {"EP_EAGER_LIMIT", "1G"},
                                                     {"EP_EAGER_LIMIT", "1073741825"},
                                                     {"EP_EAGER_LIMIT", "2048M"},
                                                     {"EP_EAGER_LIMIT", "99999999999999999999"},
                                                     {"EP_EAGER_LIMIT", "4KB"},
                                                     {"EP_STATS", "maybe"},
                                                     {"EP_STATS", "2"},
                                                     {"EP_VERBOSE", "2"},
                                                     {"EP_VERBOSE", "true1"},
                                                     {"EP_NODE_TRANSPORT", "shm"}};
  for (auto [var, value] : bad) {
    Config c;
    std::string error;
    EXPECT_FALSE(parse_with(var, value, &c, &error)) << var << "=" << value << " accepted";
    EXPECT_EQ(error.rfind(var, 0), 0u) << "error does not start with the variable: " << error;
    EXPECT_NE(error.find(value), std::string::npos) << error;
  }
}

// A suffix that makes the byte count overflow must not wrap around to a small value:
// 17592186044417M = 2^64 + 1 MiB, 18014398509481985K = 2^64 + 1 KiB.
TEST_F(ConfigEnv, EagerLimitOverflowingSuffixIsRejected) {
  for (const char* value : {"17592186044417M", "18014398509481985K", "9007199254740992K"}) {
    Config c;
    std::string error;
    EXPECT_FALSE(parse_with("EP_EAGER_LIMIT", value, &c, &error))
        << value << " accepted as " << c.eager_limit;
  }
}

TEST_F(ConfigEnv, OneMalformedVariableAmongValidOnesFails) {
  setenv("EP_VERBOSE", "1", 1);
  setenv("EP_STATS", "1", 1);
  setenv("EP_PROGRESS_POLICY", "fast", 1);
  Config c;
  std::string error;
  std::vector<std::string> warnings;
  EXPECT_FALSE(parse_config(&c, &error, &warnings));
  EXPECT_EQ(error.rfind("EP_PROGRESS_POLICY", 0), 0u) << error;
}

TEST_F(ConfigEnv, UnknownVariablesAreWarnedAboutOnceEach) {
  setenv("EP_FOO", "1", 1);
  setenv("EP_PROGRESS_CPU", "1", 1);  // a typo of EP_PROGRESS_CPUS
  setenv("EPX_NOT_OURS", "1", 1);
  setenv("MY_EP_VAR", "1", 1);
  Config c;
  std::string error;
  std::vector<std::string> warnings;
  ASSERT_TRUE(parse_config(&c, &error, &warnings)) << error;
  unsetenv("EPX_NOT_OURS");
  unsetenv("MY_EP_VAR");
  ASSERT_EQ(warnings.size(), 2u);
  std::string all = warnings[0] + "\n" + warnings[1];
  EXPECT_NE(all.find("EP_FOO"), std::string::npos) << all;
  EXPECT_NE(all.find("EP_PROGRESS_CPU "), std::string::npos) << all;
  EXPECT_TRUE(c.progress_cpus.empty()) << "a misspelt variable must not take effect";
}

TEST_F(ConfigEnv, AllVariablesTogether) {
  setenv("EP_PROGRESS_CPUS", "3", 1);
  setenv("EP_PROGRESS_POLICY", "yield", 1);
  setenv("EP_EAGER_LIMIT", "32K", 1);
  setenv("EP_STATS", "1", 1);
  setenv("EP_VERBOSE", "on", 1);
  Config c;
  std::string error;
  std::vector<std::string> warnings;
  ASSERT_TRUE(parse_config(&c, &error, &warnings)) << error;
  EXPECT_EQ(c.progress_cpus, std::vector<int>({3}));
  EXPECT_EQ(c.progress_policy, Policy::kYield);
  EXPECT_EQ(c.eager_limit, 32 * 1024);
  EXPECT_TRUE(c.stats);
  EXPECT_TRUE(c.verbose);
  EXPECT_TRUE(warnings.empty());
}

TEST(DescribeConfig, ListsEveryRowOnceWithItsValueAndDoc) {
  Config c;
  c.progress_cpus = {7, 15};
  c.progress_policy = Policy::kSpin;
  c.eager_limit = 12345;
  c.stats = true;
  std::string d = describe_config(c);
  size_t lines = 0;
  for (char ch : d) lines += ch == '\n';
  EXPECT_EQ(lines, kConfigTableSize);
  for (size_t i = 0; i < kConfigTableSize; ++i) {
    const auto& row = kConfigTable[i];
    std::string key = std::string(row.name) + "=";
    size_t at = d.find(key);
    ASSERT_NE(at, std::string::npos) << row.name << " missing:\n" << d;
    EXPECT_EQ(d.find(key, at + 1), std::string::npos) << row.name << " listed twice";
    EXPECT_NE(d.find(row.doc), std::string::npos) << row.name << " doc missing";
    EXPECT_NE(d.find(key + row.show(c)), std::string::npos);
  }
  EXPECT_NE(d.find("EP_PROGRESS_CPUS=7,15"), std::string::npos) << d;
  EXPECT_NE(d.find("EP_PROGRESS_POLICY=spin"), std::string::npos) << d;
  EXPECT_NE(d.find("EP_EAGER_LIMIT=12345"), std::string::npos) << d;
  EXPECT_NE(d.find("EP_STATS=1"), std::string::npos) << d;
  EXPECT_NE(d.find("EP_VERBOSE=0"), std::string::npos) << d;
}

TEST(DescribeConfig, TableHasEveryDocumentedVariable) {
  for (const char* name :
       {"EP_PROGRESS_CPUS", "EP_PROGRESS_POLICY", "EP_EAGER_LIMIT", "EP_STATS", "EP_VERBOSE"}) {
    bool found = false;
    for (size_t i = 0; i < kConfigTableSize; ++i)
      found |= std::string(kConfigTable[i].name) == name;
    EXPECT_TRUE(found) << name;
  }
}

}  // namespace
