// env.cc - the C entry points of libep's environment: EP_Init and EP_Finalize (with the
// collective and one-sided handlers they install and remove), the init and thread
// queries, EP_Wtime, EP_Error_string (a communicator's error handler: errhandler.cc).
#include <cstdio>
#include <cstring>
#include <string>

#include "api/entry.h"
#include "base/mpi_calls.h"
#include "collectives/coll.h"
#include "collectives/engine.h"
#include "ep/ep.h"
#include "rma/window.h"
#include "runtime/error.h"
#include "runtime/exchange.h"
#include "runtime/runtime.h"

namespace {
using namespace ep::api;  // NOLINT(build/namespaces): the shared entry-point helpers
}  // namespace

extern "C" {

int EP_Init(void) {
  const int err = runtime() != nullptr
                      ? fail(EP_ERR_OTHER, "EP_Init", "libep is already initialized")
                      : ep::runtime::runtime_init();
  if (err != EP_SUCCESS) {
    // Every failure says why, in one line (API.md, "Clarifications").
    std::fprintf(stderr, "libep: %s\n", ep::runtime::error_string(err).c_str());
    return err;
  }
  ep::collectives::install();  // collective schedules run in passes
  ep::rma::rma_init();         // one-sided packets reach the window handler
  return EP_SUCCESS;
}

int EP_Finalize(void) {
  EP_CHECK_INIT("EP_Finalize");
  int err = ep::runtime::runtime_finalize();
  ep::collectives::release_scratch();  // no collective runs any more
  ep::collectives::uninstall();
  ep::runtime::release_blobs();
  return err;
}

int EP_Initialized(int* flag) {
  if (flag == nullptr) return fail(EP_ERR_ARG, "EP_Initialized", "flag is NULL");
  *flag = runtime() != nullptr;
  return EP_SUCCESS;
}

int EP_Query_thread(int* provided) {
  EP_CHECK_INIT("EP_Query_thread");
  if (provided == nullptr) return fail(EP_ERR_ARG, "EP_Query_thread", "provided is NULL");
  *provided = MPI_THREAD_MULTIPLE;
  return EP_SUCCESS;
}

int EP_Is_thread_main(int* flag) {
  EP_CHECK_INIT("EP_Is_thread_main");
  if (flag == nullptr) return fail(EP_ERR_ARG, "EP_Is_thread_main", "flag is NULL");
  EP_MPI(MPI_Is_thread_main(flag));
  return EP_SUCCESS;
}

double EP_Wtime(void) { return EP_MPI(MPI_Wtime()); }

int EP_Error_string(int code, char* string, int* resultlen) {
  if (string == nullptr || resultlen == nullptr) {
    return fail(EP_ERR_ARG, "EP_Error_string", "string or resultlen is NULL");
  }
  if (code < EP_SUCCESS || code >= EP_ERR_LASTCODE) {
    return fail(EP_ERR_ARG, "EP_Error_string", "code %d is not an EP_* error code", code);
  }
  std::string s = ep::runtime::error_string(code);
  size_t n = s.size() < EP_MAX_ERROR_STRING - 1 ? s.size() : EP_MAX_ERROR_STRING - 1;
  std::memcpy(string, s.data(), n);
  string[n] = '\0';
  *resultlen = static_cast<int>(n);
  return EP_SUCCESS;
}

}  // extern "C"
