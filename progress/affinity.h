// affinity.h - which CPUs a thread runs on: pinning one thread to one CPU (the progress
// thread, EP_PROGRESS_CPUS), and reading a thread's CPUs back.
//
// What it is: pin_thread() asks the kernel for exactly one CPU for a thread, whatever the
// affinity of the thread that asks.  A process bound by `taskset`, `mpiexec -bind-to` or
// OMP_PROC_BIND may still give its progress thread a CPU outside that binding: there is
// no check against the caller's mask, only the kernel's answer counts (it refuses a CPU
// that does not exist, is offline, or lies outside the process's cpuset cgroup).
//
// Threading: thread-safe; each call reads or changes only the thread it is given.
//
// Memory ordering: nothing shared (system calls on one thread's affinity).
#ifndef EP_PROGRESS_AFFINITY_H_
#define EP_PROGRESS_AFFINITY_H_

#include <pthread.h>

#include <string>
#include <vector>

namespace ep::progress {

// Pins `thread` to `cpu` (>= 0) alone.  When the kernel refuses, returns false with *why
// its reason (strerror) and leaves the thread's affinity as it was.
bool pin_thread(pthread_t thread, int cpu, std::string* why);

// The CPUs `thread` may run on, ascending (empty if the kernel does not say).
std::vector<int> thread_cpus(pthread_t thread);

// A CPU list in the form EP_PROGRESS_CPUS and taskset take: "0-3,8" ("none" if empty).
std::string cpu_list_text(const std::vector<int>& cpus);

}  // namespace ep::progress

#endif  // EP_PROGRESS_AFFINITY_H_
