// error.h - the one error path of libep.
//
// What it is: every failure is reported as an EP_ERR_* code (ep.h) through fail(),
// which records, for the calling thread, a detail message naming the call and the
// argument ("EP_Send: tag 40000 is above EP_Comm_tag_ub (32767)").  error_string()
// gives "<code name>: <most recent detail of that code on this thread>".  The
// progress thread never throws; MPI errors it sees become EP_ERR_* via from_mpi().
//
// Threading: details are thread_local; everything here is thread-safe.
//
// Memory ordering: nothing shared (the detail strings are per thread).
#ifndef EP_RUNTIME_ERROR_H_
#define EP_RUNTIME_ERROR_H_

#include <string>

namespace ep::runtime {

// Records the detail of a failure of `call` and returns `code`.
int fail(int code, const char* call, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
const char* code_name(int code);
std::string error_string(int code);
// Maps an MPI error code to the closest EP_ERR_* code.
int from_mpi(int mpi_error);

}  // namespace ep::runtime

#endif  // EP_RUNTIME_ERROR_H_
