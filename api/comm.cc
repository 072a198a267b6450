// comm.cc - the C entry points of endpoints communicators: creation, queries, dup, free,
// compare, split, intercommunicator create and merge (the communicators themselves:
// runtime/comm.h).
//
// The creation calls are collective: where one endpoint's bad output argument must not
// leave the others waiting, the call still takes part and fails after the exchange
// (EP_Comm_create_endpoints, EP_Comm_split).
#include "runtime/comm.h"

#include <vector>

#include "api/attr.h"
#include "api/entry.h"
#include "base/mpi_calls.h"
#include "ep/ep.h"
#include "runtime/request.h"

namespace {

using namespace ep::api;  // NOLINT(build/namespaces): the shared entry-point helpers

// The communicator queries: validate, then write one int.
template <class Get>
int query_int(EP_Comm comm, int* out, const char* call, const char* arg, Get&& get) {
  EP_GET_COMM(ep, comm, call);
  if (out == nullptr) return handle(ep, fail(EP_ERR_ARG, call, "%s is NULL", arg));
  *out = get(ep);
  return EP_SUCCESS;
}

}  // namespace

extern "C" {

int EP_Comm_create_endpoints(MPI_Comm parent, int num_ep, MPI_Info info, EP_Comm comms[]) {
  (void)info;
  EP_CHECK_INIT("EP_Comm_create_endpoints");
  if (parent == MPI_COMM_NULL) {
    return fail(EP_ERR_COMM, "EP_Comm_create_endpoints", "parent is MPI_COMM_NULL");
  }
  int inter = 0;
  if (EP_MPI(MPI_Comm_test_inter(parent, &inter)) != MPI_SUCCESS) {
    return fail(EP_ERR_COMM, "EP_Comm_create_endpoints", "parent is not a valid MPI communicator");
  }
  if (inter) {
    return fail(EP_ERR_COMM, "EP_Comm_create_endpoints", "parent is an intercommunicator");
  }
  if (num_ep > 0 && comms == nullptr) {
    // Still take part in the collective so that no other process hangs.
    std::vector<EP_Comm> tmp(static_cast<size_t>(num_ep));
    int err = ep::runtime::comm_create_endpoints(parent, num_ep, tmp.data());
    if (err == EP_SUCCESS) {
      for (EP_Comm& c : tmp) EP_Comm_free(&c);
    }
    return fail(EP_ERR_ARG, "EP_Comm_create_endpoints", "comms is NULL but num_ep is %d", num_ep);
  }
  if (num_ep > 65535) {
    return fail(EP_ERR_ARG, "EP_Comm_create_endpoints", "num_ep %d is above 65535", num_ep);
  }
  return ep::runtime::comm_create_endpoints(parent, num_ep, comms);
}

int EP_Comm_rank(EP_Comm comm, int* rank) {
  return query_int(comm, rank, "EP_Comm_rank", "rank", [](Endpoint* ep) { return ep->rank; });
}

int EP_Comm_size(EP_Comm comm, int* size) {
  return query_int(comm, size, "EP_Comm_size", "size", [](Endpoint* ep) { return ep->comm->size; });
}

int EP_Comm_local_rank(EP_Comm comm, int* rank) {
  return query_int(comm, rank, "EP_Comm_local_rank", "rank",
                   [](Endpoint* ep) { return ep->proc_local_rank; });
}

int EP_Comm_local_size(EP_Comm comm, int* size) {
  return query_int(comm, size, "EP_Comm_local_size", "size",
                   [](Endpoint* ep) { return ep->comm->proc_local_size; });
}

int EP_Comm_dup(EP_Comm comm, EP_Comm* newcomm) {
  EP_GET_COMM(ep, comm, "EP_Comm_dup");
  if (newcomm == nullptr) return handle(ep, fail(EP_ERR_ARG, "EP_Comm_dup", "newcomm is NULL"));
  Endpoint* n = nullptr;
  int err = ep::runtime::comm_dup(ep, &n);
  void* attrs = nullptr;
  if (err == EP_SUCCESS) err = attrs_copy(ep, &attrs, "EP_Comm_dup");
  if (err != EP_SUCCESS) {  // a copy callback failed: the new handle goes (MPI 3.1 6.7.2)
    if (n != nullptr) ep::runtime::comm_free(n);
    return handle(ep, err);
  }
  attrs_install(n, attrs);
  *newcomm = reinterpret_cast<EP_Comm>(n);
  return EP_SUCCESS;
}

int EP_Comm_idup(EP_Comm comm, EP_Comm* newcomm, EP_Request* request) {
  const char* call = "EP_Comm_idup";
  EP_GET_COMM(ep, comm, call);
  // The attributes are copied now (in this thread), installed when the communicator
  // exists.  A NULL argument or a failed copy still takes part in the creation (nobody
  // hangs): the new handle is then freed by the worker and the call fails.
  int err = EP_SUCCESS;
  if (newcomm == nullptr || request == nullptr) {
    err = fail(EP_ERR_ARG, call, "%s is NULL", newcomm == nullptr ? "newcomm" : "request");
  }
  void* attrs = nullptr;
  if (err == EP_SUCCESS) err = attrs_copy(ep, &attrs, call);
  const bool keep = err == EP_SUCCESS;
  Request* r = ep::runtime::request_new(ep::runtime::RequestKind::kColl, /*user_handle=*/keep);
  if (keep) set_request_errhandler(r, ep);
  // The new handle inherits the parent's handler as it is now (a reference until done).
  const EP_Errhandler eh = ep->errhandler;
  ep::runtime::errhandler_ref(eh);
  ep::runtime::comm_idup(ep, r, [keep, attrs, eh, newcomm](Endpoint* made) {
    if (keep) {
      ep::runtime::errhandler_assign(&made->errhandler, eh);
      attrs_install(made, attrs);
      *newcomm = reinterpret_cast<EP_Comm>(made);
    } else {
      ep::runtime::comm_free(made);
    }
    ep::runtime::errhandler_unref(eh);
  });
  if (!keep) return handle(ep, err);
  *request = reinterpret_cast<EP_Request>(r);
  return EP_SUCCESS;
}

int EP_Comm_free(EP_Comm* comm) {
  EP_CHECK_INIT("EP_Comm_free");
  if (comm == nullptr) return fail(EP_ERR_ARG, "EP_Comm_free", "comm is NULL");
  Endpoint* ep = as_endpoint(*comm);
  if (ep == nullptr) {
    return fail(EP_ERR_COMM, "EP_Comm_free", "communicator is %s",
                *comm == EP_COMM_NULL ? "EP_COMM_NULL" : "not a valid endpoint handle");
  }
  {
    Entry guard(ep);
    if (!guard.ok()) {
      return handle(ep->errhandler, *comm,
                    fail(EP_ERR_CONCURRENT, "EP_Comm_free",
                         "another thread is inside a call on endpoint %d", ep->rank));
    }
    // The attributes' delete callbacks, before the handle goes; a failure keeps the
    // communicator (see attr.cc).
    const int err = attrs_delete_all(ep, "EP_Comm_free");
    if (err != EP_SUCCESS) return handle(ep, err);
  }
  ep::runtime::comm_free(ep);
  *comm = EP_COMM_NULL;
  return EP_SUCCESS;
}

int EP_Comm_compare(EP_Comm comm1, EP_Comm comm2, int* result) {
  EP_CHECK_INIT("EP_Comm_compare");
  Endpoint* a = as_endpoint(comm1);
  Endpoint* b = as_endpoint(comm2);
  if (a == nullptr || b == nullptr) {
    return fail(EP_ERR_COMM, "EP_Comm_compare", "%s is not a valid communicator",
                a == nullptr ? "comm1" : "comm2");
  }
  if (result == nullptr) return handle(a, fail(EP_ERR_ARG, "EP_Comm_compare", "result is NULL"));
  *result = ep::runtime::comm_compare(a, b);
  return EP_SUCCESS;
}

int EP_Comm_test_inter(EP_Comm comm, int* flag) {
  return query_int(comm, flag, "EP_Comm_test_inter", "flag",
                   [](Endpoint* ep) { return ep->comm->inter ? 1 : 0; });
}

int EP_Comm_remote_size(EP_Comm comm, int* size) {
  const char* call = "EP_Comm_remote_size";
  EP_GET_COMM(ep, comm, call);
  if (!ep->comm->inter) {
    return handle(ep, fail(EP_ERR_COMM, call, "comm is not an intercommunicator"));
  }
  if (size == nullptr) return handle(ep, fail(EP_ERR_ARG, call, "size is NULL"));
  *size = ep->comm->remote_size;
  return EP_SUCCESS;
}

int EP_Comm_split(EP_Comm comm, int color, int key, EP_Comm* newcomm) {
  const char* call = "EP_Comm_split";
  EP_GET_COMM(ep, comm, call);
  // A NULL newcomm or a bad colour still takes part in the exchange (nobody hangs);
  // a bad colour makes every endpoint fail with EP_ERR_ARG (of both groups, on an
  // intercommunicator).
  Endpoint* n = nullptr;
  int err = ep->comm->inter ? ep::runtime::intercomm_split(ep, color, key, &n)
                            : ep::runtime::comm_split(ep, color, key, &n);
  if (err == EP_SUCCESS && newcomm == nullptr) {
    if (n != nullptr) ep::runtime::comm_free(n);
    err = fail(EP_ERR_ARG, call, "newcomm is NULL");
  }
  if (err == EP_SUCCESS) *newcomm = n == nullptr ? EP_COMM_NULL : reinterpret_cast<EP_Comm>(n);
  return handle(ep, err);
}

int EP_Intercomm_create(EP_Comm local_comm, int local_leader, EP_Comm peer_comm, int remote_leader,
                        int tag, EP_Comm* newintercomm) {
  const char* call = "EP_Intercomm_create";
  EP_GET_COMM(ep, local_comm, call);
  if (ep->comm->inter) {
    return handle(ep, fail(EP_ERR_COMM, call, "local_comm is an intercommunicator"));
  }
  // Checks every endpoint of local_comm makes alike, so all fail together.
  if (local_leader < 0 || local_leader >= ep->comm->size) {
    return handle(ep,
                  fail(EP_ERR_RANK, call, "local_leader %d is not a rank of local_comm (size %d)",
                       local_leader, ep->comm->size));
  }
  if (newintercomm == nullptr) {
    return handle(ep, fail(EP_ERR_ARG, call, "newintercomm is NULL"));
  }
  // peer_comm, remote_leader and tag matter at the leader only; its verdict on them
  // reaches the whole group (see runtime/comm.cc).
  Endpoint* peer = ep->rank == local_leader ? as_endpoint(peer_comm) : nullptr;
  Endpoint* n = nullptr;
  int err = ep::runtime::intercomm_create(ep, local_leader, peer, remote_leader, tag, &n);
  if (err == EP_SUCCESS) *newintercomm = reinterpret_cast<EP_Comm>(n);
  return handle(ep, err);
}

int EP_Intercomm_merge(EP_Comm intercomm, int high, EP_Comm* newintracomm) {
  const char* call = "EP_Intercomm_merge";
  EP_GET_COMM(ep, intercomm, call);
  if (!ep->comm->inter) {
    return handle(ep, fail(EP_ERR_COMM, call, "intercomm is not an intercommunicator"));
  }
  if (newintracomm == nullptr) return handle(ep, fail(EP_ERR_ARG, call, "newintracomm is NULL"));
  Endpoint* n = nullptr;
  int err = ep::runtime::intercomm_merge(ep, high != 0, &n);
  if (err == EP_SUCCESS) *newintracomm = reinterpret_cast<EP_Comm>(n);
  return handle(ep, err);
}

int EP_Comm_tag_ub(EP_Comm comm, int* tag_ub) {
  return query_int(comm, tag_ub, "EP_Comm_tag_ub", "tag_ub",
                   [](Endpoint* ep) { return ep->comm->tag_ub; });
}

}  // extern "C"
