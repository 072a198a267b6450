#include "runtime/config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace ep::runtime {
namespace {

bool parse_bool(const char* v, bool* out, std::string* why) {
  if (std::strcmp(v, "1") == 0 || std::strcmp(v, "yes") == 0 || std::strcmp(v, "on") == 0) {
    *out = true;
    return true;
  }
  if (std::strcmp(v, "0") == 0 || std::strcmp(v, "no") == 0 || std::strcmp(v, "off") == 0 ||
      *v == '\0') {
    *out = false;
    return true;
  }
  *why = std::string("expected 0 or 1, got '") + v + "'";
  return false;
}

bool parse_cpus(const char* v, Config* c, std::string* why) {
  return parse_cpu_list(v, &c->progress_cpus, why);
}

std::string show_cpus(const Config& c) {
  if (c.progress_cpus.empty()) return "(not pinned)";
  std::string s;
  for (size_t i = 0; i < c.progress_cpus.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(c.progress_cpus[i]);
  }
  return s;
}

bool parse_policy(const char* v, Config* c, std::string* why) {
  if (std::strcmp(v, "spin") == 0) {
    c->progress_policy = progress::Policy::kSpin;
  } else if (std::strcmp(v, "adaptive") == 0) {
    c->progress_policy = progress::Policy::kAdaptive;
  } else if (std::strcmp(v, "yield") == 0) {
    c->progress_policy = progress::Policy::kYield;
  } else {
    *why = std::string("expected spin, adaptive or yield, got '") + v + "'";
    return false;
  }
  return true;
}

std::string show_policy(const Config& c) {
  switch (c.progress_policy) {
    case progress::Policy::kSpin: return "spin";
    case progress::Policy::kYield: return "yield";
    default: return "adaptive";
  }
}

bool parse_eager(const char* v, Config* c, std::string* why) {
  errno = 0;
  char* end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  if (end == v || errno != 0) {
    *why = std::string("expected a byte count, got '") + v + "'";
    return false;
  }
  long long unit = 1;
  if (*end == 'k' || *end == 'K') {
    unit = 1024;
    ++end;
  } else if (*end == 'm' || *end == 'M') {
    unit = 1024 * 1024;
    ++end;
  }
  // Compare before multiplying: no overflow for any input.
  if (*end != '\0' || n < 0 || n > (1LL << 30) / unit) {
    *why = std::string("expected a byte count from 0 to 1G (suffix K or M allowed), got '") +
           v + "'";
    return false;
  }
  c->eager_limit = n * unit;
  return true;
}

std::string show_eager(const Config& c) { return std::to_string(c.eager_limit); }

bool parse_stats(const char* v, Config* c, std::string* why) {
  return parse_bool(v, &c->stats, why);
}
std::string show_stats(const Config& c) { return c.stats ? "1" : "0"; }
bool parse_verbose(const char* v, Config* c, std::string* why) {
  return parse_bool(v, &c->verbose, why);
}
std::string show_verbose(const Config& c) { return c.verbose ? "1" : "0"; }
bool parse_node(const char* v, Config* c, std::string* why) {
  return parse_bool(v, &c->node_transport, why);
}
std::string show_node(const Config& c) { return c.node_transport ? "on" : "off"; }

}  // namespace

const ConfigRow kConfigTable[] = {
    {"EP_PROGRESS_CPUS", "",
     "CPU list for progress threads (e.g. 3, 7,15 or 0-3); the i-th node-local process "
     "takes entry i mod n",
     parse_cpus, show_cpus},
    {"EP_PROGRESS_POLICY", "adaptive",
     "how every wait and the idle progress thread wait: adaptive (spin, then yield, then "
     "sleep until woken), spin (never sleep) or yield (with a short sleep after each 200 us "
     "of yielding)",
     parse_policy, show_policy},
    {"EP_EAGER_LIMIT", "16384",
     "bytes; a larger message leaves its sender only once its receive matched (rendezvous "
     "into the user's buffer): never buffered by libep or sent eagerly; 0: every message "
     "with a payload",
     parse_eager, show_eager},
    {"EP_STATS", "0", "1: each process prints its counters at EP_Finalize", parse_stats,
     show_stats},
    {"EP_VERBOSE", "0", "1: print the effective settings at EP_Init", parse_verbose, show_verbose},
    {"EP_NODE_TRANSPORT", "on",
     "on: endpoints of different processes on one node exchange messages through shared "
     "memory, without MPI; off: through MPI",
     parse_node, show_node},
};
const size_t kConfigTableSize = sizeof(kConfigTable) / sizeof(kConfigTable[0]);

bool parse_cpu_list(const char* text, std::vector<int>* cpus, std::string* why) {
  cpus->clear();
  const char* p = text;
  while (*p != '\0') {
    char* end = nullptr;
    errno = 0;
    long a = std::strtol(p, &end, 10);
    if (end == p || a < 0 || errno != 0) {
      *why = std::string("expected a CPU list such as 3, 7,15 or 0-3, got '") + text + "'";
      return false;
    }
    if (a > kMaxCpu) {
      *why = "CPU numbers go from 0 to " + std::to_string(kMaxCpu) + ", got '" + text + "'";
      return false;
    }
    long b = a;
    p = end;
    if (*p == '-') {
      ++p;
      b = std::strtol(p, &end, 10);
      if (end == p || b < a || b > kMaxCpu) {
        *why = std::string("bad CPU range in '") + text + "'";
        return false;
      }
      p = end;
    }
    for (long c = a; c <= b; ++c) cpus->push_back(static_cast<int>(c));
    if (*p == ',') {
      ++p;
      if (*p == '\0') {
        *why = std::string("trailing comma in '") + text + "'";
        return false;
      }
    } else if (*p != '\0') {
      *why = std::string("expected a CPU list such as 3, 7,15 or 0-3, got '") + text + "'";
      return false;
    }
  }
  return true;
}

bool parse_config(Config* config, std::string* error, std::vector<std::string>* warnings) {
  *config = Config{};
  for (size_t i = 0; i < kConfigTableSize; ++i) {
    const char* v = std::getenv(kConfigTable[i].name);
    if (v == nullptr) continue;
    std::string why;
    if (!kConfigTable[i].parse(v, config, &why)) {
      *error = std::string(kConfigTable[i].name) + ": " + why;
      return false;
    }
  }
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, "EP_", 3) != 0) continue;
    const char* eq = std::strchr(*e, '=');
    std::string name(*e, eq ? static_cast<size_t>(eq - *e) : std::strlen(*e));
    bool known = false;
    for (size_t i = 0; i < kConfigTableSize; ++i) known |= name == kConfigTable[i].name;
    if (!known) warnings->push_back("libep: warning: unknown variable " + name + " ignored");
  }
  return true;
}

std::string describe_config(const Config& config) {
  std::string out;
  for (size_t i = 0; i < kConfigTableSize; ++i) {
    out += std::string(kConfigTable[i].name) + "=" + kConfigTable[i].show(config) + "  # " +
           kConfigTable[i].doc + "\n";
  }
  return out;
}

}  // namespace ep::runtime
