// proc_util.h - what the API tests need to know about this process's threads.
//
// threads_named(name) lists the thread ids whose /proc/self/task/<tid>/comm is `name`
// (the progress thread is "ep-progress"); affinity_of(tid) is its CPU set;
// capture_stderr(fn) is what the process writes to stderr (fd 2) while fn runs, and
// lines_with(text, words) the lines of text that contain every one of words.
#ifndef EP_TESTS_API_PROC_UTIL_H_
#define EP_TESTS_API_PROC_UTIL_H_

#include <dirent.h>
#include <sched.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

namespace ep_test {

inline std::vector<pid_t> threads_named(const std::string& name) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string comm;
    if (!std::getline(f, comm)) continue;  // the thread exited meanwhile
    if (comm == name) out.push_back(static_cast<pid_t>(std::atoi(e->d_name)));
  }
  closedir(d);
  return out;
}

inline int progress_thread_count() {
  return static_cast<int>(threads_named("ep-progress").size());
}

// The CPUs thread `tid` may run on (empty if the query fails).
inline std::vector<int> affinity_of(pid_t tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(tid, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

// Captures what the process writes to stderr (fd 2) while `fn` runs.
template <class F>
std::string capture_stderr(F&& fn) {
  std::fflush(stderr);
  const char* dir = std::getenv("TEST_TMPDIR");
  std::string tmpl = std::string(dir ? dir : "/tmp") + "/ep_stderr_XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  int fd = mkstemp(buf.data());
  if (fd < 0) return "(mkstemp failed)";
  int saved = dup(2);
  dup2(fd, 2);
  fn();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  std::ifstream f(buf.data());
  std::stringstream ss;
  ss << f.rdbuf();
  unlink(buf.data());
  return ss.str();
}

// The lines of `text` that contain every one of `words`.
inline std::vector<std::string> lines_with(const std::string& text,
                                           std::initializer_list<std::string> words) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) {
    bool all = true;
    for (const std::string& w : words) all = all && line.find(w) != std::string::npos;
    if (all) out.push_back(line);
  }
  return out;
}

}  // namespace ep_test

#endif  // EP_TESTS_API_PROC_UTIL_H_
