// ep_config - prints libep's configuration table: every EP_* variable, its default,
// its documentation, and the value the current environment gives it (the same table
// ep_info prints).
//   bazel run //tools:ep_config
#include "tools/config_table.h"

int main() {
  ep::runtime::Config config;
  return ep::tools::print_config_table(stdout, &config) ? 0 : 1;
}
