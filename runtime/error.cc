#include "runtime/error.h"

#include <mpi.h>

#include <cstdarg>
#include <cstdio>

#include "base/mpi_calls.h"
#include "base/types.h"

namespace ep::runtime {
namespace {

constexpr const char* kNames[EP_ERR_LASTCODE] = {
    "EP_SUCCESS",         "EP_ERR_ARG",       "EP_ERR_COMM",        "EP_ERR_RANK",
    "EP_ERR_TAG",         "EP_ERR_COUNT",     "EP_ERR_TYPE",        "EP_ERR_OP",
    "EP_ERR_BUFFER",      "EP_ERR_TRUNCATE",  "EP_ERR_REQUEST",     "EP_ERR_ROOT",
    "EP_ERR_GROUP",       "EP_ERR_WIN",       "EP_ERR_RMA_RANGE",   "EP_ERR_RMA_SYNC",
    "EP_ERR_IN_STATUS",   "EP_ERR_PENDING",   "EP_ERR_NOT_INITIALIZED",
    "EP_ERR_THREAD_LEVEL", "EP_ERR_CONCURRENT", "EP_ERR_ENDPOINTS", "EP_ERR_TEAM",
    "EP_ERR_INTERN",      "EP_ERR_OTHER"};

constexpr const char* kTexts[EP_ERR_LASTCODE] = {
    "no error",
    "invalid argument",
    "invalid communicator",
    "invalid rank",
    "invalid tag",
    "invalid count",
    "invalid datatype",
    "invalid reduction operation",
    "invalid buffer",
    "message truncated",
    "invalid request",
    "invalid root",
    "invalid group",
    "invalid window",
    "target access outside the window",
    "RMA call outside its synchronization epoch",
    "error code is in status",
    "pending request",
    "libep is not initialized (call EP_Init after MPI_Init_thread)",
    "MPI was not initialized with MPI_THREAD_MULTIPLE",
    "two threads entered one endpoint at the same time",
    "invalid endpoints request",
    "invalid team operation",
    "internal error",
    "other error"};

thread_local std::string t_detail[EP_ERR_LASTCODE];

}  // namespace

int fail(int code, const char* call, const char* fmt, ...) {
  if (code <= 0 || code >= EP_ERR_LASTCODE) return code;
  char buf[400];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  t_detail[code] = std::string(call) + ": " + buf;
  return code;
}

const char* code_name(int code) {
  if (code < 0 || code >= EP_ERR_LASTCODE) return "EP_ERR_UNKNOWN";
  return kNames[code];
}

std::string error_string(int code) {
  if (code < 0 || code >= EP_ERR_LASTCODE) return "EP_ERR_UNKNOWN: unknown error code";
  std::string s = std::string(kNames[code]) + ": ";
  if (code != EP_SUCCESS && !t_detail[code].empty()) return s + t_detail[code];
  return s + kTexts[code];
}

int from_mpi(int mpi_error) {
  if (mpi_error == MPI_SUCCESS) return EP_SUCCESS;
  int cls = MPI_ERR_OTHER;
  EP_MPI(MPI_Error_class(mpi_error, &cls));
  switch (cls) {
    case MPI_ERR_TRUNCATE: return EP_ERR_TRUNCATE;
    case MPI_ERR_TYPE: return EP_ERR_TYPE;
    case MPI_ERR_COUNT: return EP_ERR_COUNT;
    case MPI_ERR_BUFFER: return EP_ERR_BUFFER;
    case MPI_ERR_OP: return EP_ERR_OP;
    case MPI_ERR_ARG: return EP_ERR_ARG;
    case MPI_ERR_INTERN: return EP_ERR_INTERN;
    default: return EP_ERR_OTHER;
  }
}

}  // namespace ep::runtime
