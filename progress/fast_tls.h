// fast_tls.h - per-thread variables that libep's message paths read on every call.
//
// What it is: EP_FAST_TLS marks such a thread_local with the initial-exec TLS model.
// In a shared library (libep.so, what applications link) a thread_local otherwise
// uses the general-dynamic model: every access calls __tls_get_addr, 15-20 cycles,
// several times per message.  Initial-exec reads the variable at a fixed offset from
// the thread pointer.  Its price is static TLS space: a library loaded with dlopen
// takes it from glibc's reserve (glibc.rtld.optional_static_tls, 512 bytes by
// default), so only small variables get it - libep's take 25 bytes - and a large
// per-thread object is reached through an EP_FAST_TLS pointer instead
// (runtime/request.cc).  In a static link (the tests and benchmarks) both models
// compile to the same fixed offset.
//
// Threading, memory ordering: each variable belongs to its thread; nothing is shared.
#ifndef EP_PROGRESS_FAST_TLS_H_
#define EP_PROGRESS_FAST_TLS_H_

#define EP_FAST_TLS __attribute__((tls_model("initial-exec")))

#endif  // EP_PROGRESS_FAST_TLS_H_
