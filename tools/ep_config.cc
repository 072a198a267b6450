// ep_config - prints libep's configuration table: every EP_* variable, its default,
// its documentation, and the value the current environment gives it.
//   bazel run //tools:ep_config
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/config.h"

int main() {
  using ep::runtime::Config;
  using ep::runtime::kConfigTable;
  using ep::runtime::kConfigTableSize;
  std::printf("%-20s %-10s %s\n", "variable", "default", "meaning");
  for (size_t i = 0; i < kConfigTableSize; ++i) {
    const auto& row = kConfigTable[i];
    std::printf("%-20s %-10s %s\n", row.name, *row.default_value ? row.default_value : "-",
                row.doc);
  }
  Config config;
  std::string error;
  std::vector<std::string> warnings;
  if (!ep::runtime::parse_config(&config, &error, &warnings)) {
    std::printf("\nthe current environment is rejected: %s\n", error.c_str());
    return 1;
  }
  for (const std::string& w : warnings) std::printf("%s\n", w.c_str());
  std::printf("\neffective values in this environment:\n%s",
              ep::runtime::describe_config(config).c_str());
  return 0;
}
