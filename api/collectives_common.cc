// collectives_common.cc - see collectives_common.h.
#include "api/collectives_common.h"

#include <utility>

namespace ep::api {

int run_collective(Endpoint* ep, collectives::Kind kind, collectives::Part part,
                   const collectives::OpArgs& a, EP_Request* request) {
  int err = EP_SUCCESS;
  if (request == nullptr && ep::collectives::run_fast(ep, kind, part, a, &err)) return err;
  Request* r = ep::collectives::start(ep, kind, std::move(part), a);
  set_request_errhandler(r, ep);
  if (request != nullptr) {
    *request = reinterpret_cast<EP_Request>(r);
    return EP_SUCCESS;
  }
  ep::runtime::request_wait(r);
  err = r->status.EP_ERROR;
  if (r->mpi_error != MPI_SUCCESS) ep::runtime::report_mpi_failure(r, "the collective");
  ep::runtime::request_unref(r);
  return err;
}

int run_or_join(Endpoint* ep, collectives::Kind kind, collectives::Part part,
                const collectives::OpArgs& a, Knows knows, EP_Request* request, int err) {
  if (err == EP_SUCCESS) return handle(ep, run_collective(ep, kind, std::move(part), a, request));
  collectives::Part hole;
  hole.hole = true;
  hole.knows = knows;
  if (request == nullptr) {
    run_collective(ep, kind, std::move(hole), a, nullptr);
  } else {
    ep::runtime::request_unref(ep::collectives::start(ep, kind, std::move(hole), a));
  }
  return handle(ep, err);
}

EP_Request* missing_request() {
  static EP_Request none = EP_REQUEST_NULL;  // never written: every call using it fails first
  return &none;
}

int check_request(EP_Request* request, const char* call) {
  return request == missing_request() ? fail(EP_ERR_ARG, call, "request is NULL") : EP_SUCCESS;
}

Knows reduction_knows(bool root_ok, MPI_Op op, int count, MPI_Datatype type) {
  if (!root_ok) return Knows::kNothing;
  TypeInfo ti;
  if (op == MPI_OP_NULL || count < 0 || !ep::runtime::describe(type, &ti)) return Knows::kRoot;
  return Knows::kAll;
}

int check_op(MPI_Op op, const char* call) {
  return op == MPI_OP_NULL ? fail(EP_ERR_OP, call, "op is MPI_OP_NULL") : EP_SUCCESS;
}

int check_triple(const void* buf, int count, MPI_Datatype type, TypeInfo* ti, const char* what,
                 const char* call) {
  if (count < 0) return fail(EP_ERR_COUNT, call, "%scount %d is negative", what, count);
  if (buf == EP_IN_PLACE) {
    return fail(EP_ERR_BUFFER, call, "%sbuffer is EP_IN_PLACE, which MPI does not allow here",
                what);
  }
  if (!ep::runtime::describe(type, ti)) {
    return fail(EP_ERR_TYPE, call, "%sdatatype is not a valid committed datatype", what);
  }
  if (buf == nullptr && count > 0 && ti->size > 0 && ti->named) {
    return fail(EP_ERR_BUFFER, call, "%sbuffer is NULL but its count is %d", what, count);
  }
  return EP_SUCCESS;
}

int check_counts(const int* counts, const int* displs, int n, const char* what, const char* call) {
  if (counts == nullptr || displs == nullptr) {
    return fail(EP_ERR_ARG, call, "%scounts or displacements are NULL", what);
  }
  for (int i = 0; i < n; ++i) {
    if (counts[i] < 0) {
      return fail(EP_ERR_COUNT, call, "%scount %d (for rank %d) is negative", what, counts[i], i);
    }
  }
  return EP_SUCCESS;
}

std::vector<int> uniform(int n, int count) {
  return std::vector<int>(static_cast<size_t>(n), count);
}
std::vector<int64_t> strided(int n, int count) {
  std::vector<int64_t> d(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) d[i] = int64_t{i} * count;
  return d;
}


}  // namespace ep::api
