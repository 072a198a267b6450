#include "progress/affinity.h"

#include <sched.h>

#include <cerrno>
#include <cstring>

namespace ep::progress {

bool pin_thread(pthread_t thread, int cpu, std::string* why) {
  // A set large enough for `cpu` (CPU_SETSIZE is only 1024).
  cpu_set_t* set = CPU_ALLOC(cpu + 1);
  if (set == nullptr) {
    *why = std::strerror(ENOMEM);
    return false;
  }
  const size_t size = CPU_ALLOC_SIZE(cpu + 1);
  CPU_ZERO_S(size, set);
  CPU_SET_S(cpu, size, set);
  const int rc = pthread_setaffinity_np(thread, size, set);
  CPU_FREE(set);
  if (rc != 0) {
    *why = std::strerror(rc);
    return false;
  }
  return true;
}

std::vector<int> thread_cpus(pthread_t thread) {
  std::vector<int> cpus;
  // Grow the set until it holds the kernel's mask (EINVAL: too small).
  for (int n = CPU_SETSIZE; n <= (1 << 16); n *= 2) {
    cpu_set_t* set = CPU_ALLOC(n);
    if (set == nullptr) return cpus;
    const size_t size = CPU_ALLOC_SIZE(n);
    CPU_ZERO_S(size, set);
    const int rc = pthread_getaffinity_np(thread, size, set);
    if (rc == 0) {
      for (int c = 0; c < n; ++c) {
        if (CPU_ISSET_S(c, size, set)) cpus.push_back(c);
      }
    }
    CPU_FREE(set);
    if (rc != EINVAL) break;
  }
  return cpus;
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  if (cpus.empty()) return "none";
  std::string s;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!s.empty()) s += ",";
    s += std::to_string(cpus[i]);
    if (j > i) s += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return s;
}

}  // namespace ep::progress
