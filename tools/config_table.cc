#include "tools/config_table.h"

#include <string>
#include <vector>

namespace ep::tools {

bool print_config_table(std::FILE* out, runtime::Config* config) {
  using runtime::kConfigTable;
  using runtime::kConfigTableSize;
  std::fprintf(out, "%-20s %-10s %s\n", "variable", "default", "meaning");
  for (size_t i = 0; i < kConfigTableSize; ++i) {
    const auto& row = kConfigTable[i];
    std::fprintf(out, "%-20s %-10s %s\n", row.name, *row.default_value ? row.default_value : "-",
                 row.doc);
  }
  std::string error;
  std::vector<std::string> warnings;
  if (!runtime::parse_config(config, &error, &warnings)) {
    std::fprintf(out, "\nthe current environment is rejected: %s\n", error.c_str());
    return false;
  }
  for (const std::string& w : warnings) std::fprintf(out, "%s\n", w.c_str());
  std::fprintf(out, "\neffective values in this environment:\n%s",
               runtime::describe_config(*config).c_str());
  return true;
}

}  // namespace ep::tools
