// rma_requests.cc - the C entry points of request-based one-sided operations: EP_Rput,
// EP_Rget, EP_Raccumulate, EP_Rget_accumulate.  Each ends in run_op (api/rma_entry.h)
// with a request to return.
#include "api/rma_entry.h"

namespace {

using namespace ep::api;  // NOLINT(build/namespaces): the shared entry-point helpers

}  // namespace

extern "C" {

int EP_Rput(const void* origin_addr, int origin_count, MPI_Datatype origin_datatype,
            int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
            EP_Win win, EP_Request* request) {
  if (request == nullptr) return fail(EP_ERR_ARG, "EP_Rput", "request is NULL");
  return run_op(win,
                op_args(OpKind::kPut, origin_addr, origin_count, origin_datatype, nullptr, 0,
                        MPI_DATATYPE_NULL, target_rank, target_disp, target_count, target_datatype,
                        MPI_REPLACE),
                "EP_Rput", request);
}

int EP_Rget(void* origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
            MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, EP_Win win,
            EP_Request* request) {
  if (request == nullptr) return fail(EP_ERR_ARG, "EP_Rget", "request is NULL");
  return run_op(win,
                op_args(OpKind::kGet, nullptr, 0, MPI_DATATYPE_NULL, origin_addr, origin_count,
                        origin_datatype, target_rank, target_disp, target_count, target_datatype,
                        MPI_REPLACE),
                "EP_Rget", request);
}

int EP_Raccumulate(const void* origin_addr, int origin_count, MPI_Datatype origin_datatype,
                   int target_rank, MPI_Aint target_disp, int target_count,
                   MPI_Datatype target_datatype, MPI_Op op, EP_Win win, EP_Request* request) {
  if (request == nullptr) return fail(EP_ERR_ARG, "EP_Raccumulate", "request is NULL");
  return run_op(
      win,
      op_args(OpKind::kAcc, origin_addr, origin_count, origin_datatype, nullptr, 0,
              MPI_DATATYPE_NULL, target_rank, target_disp, target_count, target_datatype, op),
      "EP_Raccumulate", request);
}

int EP_Rget_accumulate(const void* origin_addr, int origin_count, MPI_Datatype origin_datatype,
                       void* result_addr, int result_count, MPI_Datatype result_datatype,
                       int target_rank, MPI_Aint target_disp, int target_count,
                       MPI_Datatype target_datatype, MPI_Op op, EP_Win win, EP_Request* request) {
  if (request == nullptr) return fail(EP_ERR_ARG, "EP_Rget_accumulate", "request is NULL");
  return run_op(win,
                op_args(OpKind::kGetAcc, origin_addr, origin_count, origin_datatype, result_addr,
                        result_count, result_datatype, target_rank, target_disp, target_count,
                        target_datatype, op),
                "EP_Rget_accumulate", request);
}

}  // extern "C"
