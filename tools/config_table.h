// config_table.h - prints libep's configuration table for ep_config and ep_info.
//
// What it prints: every EP_* variable with its default and doc line, any warning about
// unknown EP_* variables, then the effective values the current environment gives
// (runtime::describe_config). Both tools print exactly this text.
//
// Threading: call from one thread; reads the environment.
#ifndef EP_TOOLS_CONFIG_TABLE_H_
#define EP_TOOLS_CONFIG_TABLE_H_

#include <cstdio>

#include "runtime/config.h"

namespace ep::tools {

// Prints the table to `out` and parses the environment into *config. Returns false,
// after printing why, when the environment is rejected (a malformed EP_* value).
bool print_config_table(std::FILE* out, runtime::Config* config);

}  // namespace ep::tools

#endif  // EP_TOOLS_CONFIG_TABLE_H_
