// config.h - the one configuration table of libep.
//
// What it is: every tunable is one row of kConfigTable (name, default, doc line,
// parser) read from its EP_* environment variable once, by EP_Init, into a Config.
// A malformed value is an error naming the variable; an unknown EP_* variable is
// warned about once.  `bazel run //tools:ep_config` prints the table with its docs.
//
// Threading: parse_config() runs once on the thread calling EP_Init; the resulting
// Config is read-only afterwards (published to other threads by starting them).
//
// Memory ordering: Config is written before the runtime is published (runtime.h's
// release store of g_runtime); readers acquire it through runtime().
#ifndef EP_RUNTIME_CONFIG_H_
#define EP_RUNTIME_CONFIG_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "progress/backoff.h"

namespace ep::runtime {

struct Config {
  std::vector<int> progress_cpus;  // empty: not pinned
  progress::Policy progress_policy = progress::Policy::kAdaptive;
  int64_t eager_limit = 16 * 1024;
  bool stats = false;
  bool verbose = false;
  bool node_transport = true;
};

struct ConfigRow {
  const char* name;
  const char* default_value;
  const char* doc;
  // Parses `value` into `config`; on failure returns false with *why set.
  bool (*parse)(const char* value, Config* config, std::string* why);
  // The effective value, for EP_VERBOSE and the table printer.
  std::string (*show)(const Config& config);
};

extern const ConfigRow kConfigTable[];
extern const size_t kConfigTableSize;

// Reads the environment.  On a malformed value returns false and sets *error to a
// message naming the variable.  Unknown EP_* variables go to *warnings.
bool parse_config(Config* config, std::string* error, std::vector<std::string>* warnings);

// The largest CPU number a CPU list may name (part of the list's form: a larger one is
// malformed).  A well-formed CPU the kernel refuses is no parse error (progress/affinity.h).
constexpr long kMaxCpu = 4095;

// Parses a CPU list such as "3", "7,15" or "0-3,8".
bool parse_cpu_list(const char* text, std::vector<int>* cpus, std::string* why);

std::string describe_config(const Config& config);  // one "NAME=value  # doc" line per row

}  // namespace ep::runtime

#endif  // EP_RUNTIME_CONFIG_H_
