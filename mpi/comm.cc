// comm.cc - the communicator calls that need more than a one-to-one mapping to ep.h:
// MPI_Comm_create_endpoints, duplication (attributes are copied here), freeing, names,
// info, size and compare (which a threadcomm answers outside its regions),
// intercommunicator creation, split_type's MPI 4.0 types, attributes and keyvals, and
// the calls that take a communicator only for MPICH's sake (pack, abort).
#include <mpi.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "ep/ep.h"
#include "ep/mpi_endpoints.h"
#include "mpi/layer.h"
#include "mpi/wrappers.h"

using ep::mpi::Comm;
using ep::mpi::is_kind;
using ep::mpi::Kind;

namespace ep::mpi {
namespace {

bool is_comm(MPI_Comm c) { return is_kind<Kind::kComm>(c); }

// After EP_Comm_dup (or its variants): the new handle, with c's attributes copied.
int finish_dup(Comm* c, EP_Comm n, MPI_Comm* newcomm, const char* call) {
  const int rc = make_comm(n, c, nullptr, newcomm, call);
  if (rc != MPI_SUCCESS) return rc;
  Comm* nc = static_cast<Comm*>(table(Kind::kComm).get(*newcomm));
  const int arc = copy_attrs(c, nc);
  if (arc != MPI_SUCCESS) {
    free_comm(nc, call);
    *newcomm = MPI_COMM_NULL;
    return raise_class(c, arc, call, "an attribute copy callback failed with %d", arc);
  }
  return MPI_SUCCESS;
}

int dup(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm, const char* call) {
  int err;
  Comm* c = endpoint(comm, call, &err);
  if (c == nullptr) return err;
  if (newcomm == nullptr) return raise_class(c, MPI_ERR_ARG, call, "newcomm is NULL");
  EP_Comm n = EP_COMM_NULL;
#ifdef EP_MPI_HAVE_EP_Comm_dup_with_info
  const int rc =
      info == MPI_INFO_NULL ? EP_Comm_dup(c->ep, &n) : EP_Comm_dup_with_info(c->ep, info, &n);
#else
  (void)info;  // libep keeps no communicator hints: the info-less duplicate
  const int rc = EP_Comm_dup(c->ep, &n);
#endif
  if (rc != EP_SUCCESS) return raise(c, rc, call);
  return finish_dup(c, n, newcomm, call);
}

int idup(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm, MPI_Request* request, const char* call) {
  int err;
  Comm* c = endpoint(comm, call, &err);
  if (c == nullptr) return err;
  if (newcomm == nullptr || request == nullptr) {
    return raise_class(c, MPI_ERR_ARG, call, "newcomm or request is NULL");
  }
  // The handle exists at once; libep writes its endpoint when the request completes.
  Comm* nc = new_comm_record(c, nullptr);
  if (nc == nullptr) return raise_class(c, MPI_ERR_INTERN, call, "too many communicator handles");
  EP_Request r = EP_REQUEST_NULL;
#ifdef EP_MPI_HAVE_EP_Comm_idup_with_info
  const int rc = info == MPI_INFO_NULL ? EP_Comm_idup(c->ep, &nc->ep, &r)
                                       : EP_Comm_idup_with_info(c->ep, info, &nc->ep, &r);
#else
  (void)info;
  const int rc = EP_Comm_idup(c->ep, &nc->ep, &r);
#endif
  if (rc != EP_SUCCESS) {
    free_comm(nc, call);
    return raise(c, rc, call);
  }
  const int arc = copy_attrs(c, nc);  // MPI: the copy callbacks run in the call
  if (arc != MPI_SUCCESS) {
    // The duplicate is under way in the other endpoints: let it finish, then drop it.
    EP_Wait(&r, EP_STATUS_IGNORE);
    free_comm(nc, call);
    return raise_class(c, arc, call, "an attribute copy callback failed with %d", arc);
  }
  *newcomm = nc->handle;
  return make_request(r, comm, request, call);
}

bool predefined_comm_keyval(int keyval) {
  return keyval == MPI_TAG_UB || keyval == MPI_HOST || keyval == MPI_IO ||
         keyval == MPI_WTIME_IS_GLOBAL || keyval == MPI_UNIVERSE_SIZE ||
         keyval == MPI_LASTUSEDCODE || keyval == MPI_APPNUM;
}

int set_attr(MPI_Comm comm, int keyval, void* value, const char* call) {
  int err;
  Comm* c = comm_record(comm, call, &err);
  if (c == nullptr) return err;
  const Keyval* k = find_keyval(keyval, false);
  if (predefined_comm_keyval(keyval) || k == nullptr) {
    return raise_class(c, MPI_ERR_KEYVAL, call, "keyval %#x is not a communicator keyval %s",
                       static_cast<unsigned>(keyval),
                       predefined_comm_keyval(keyval) ? "the application may set" : "");
  }
  for (Attr& a : c->attrs) {
    if (a.keyval != keyval) continue;
    if (k->delete_fn != nullptr) {
      auto* del = reinterpret_cast<MPI_Comm_delete_attr_function*>(k->delete_fn);
      const int rc = del(c->handle, keyval, a.value, k->extra_state);
      if (rc != MPI_SUCCESS) {
        return raise_class(c, rc, call, "the delete callback of the old value failed");
      }
    }
    a.value = value;
    return MPI_SUCCESS;
  }
  c->attrs.push_back({keyval, value});
  return MPI_SUCCESS;
}

int get_attr(MPI_Comm comm, int keyval, void* value, int* flag, const char* call) {
  int err;
  Comm* c = comm_record(comm, call, &err);
  if (c == nullptr) return err;
  if (value == nullptr || flag == nullptr) {
    return raise_class(c, MPI_ERR_ARG, call, "attribute_val or flag is NULL");
  }
  if (keyval == MPI_TAG_UB) {
    EP_Comm ep = c->ep;
    if (ep == EP_COMM_NULL && c->tc != nullptr && c->tc->n > 0) ep = c->tc->ep[0]->ep;
    int ub = 32767;
    if (ep != EP_COMM_NULL) EP_Comm_tag_ub(ep, &ub);
    c->tag_ub = ub;
    *static_cast<void**>(value) = &c->tag_ub;
    *flag = 1;
    return MPI_SUCCESS;
  }
  if (predefined_comm_keyval(keyval)) {  // the process's own values: MPI_COMM_WORLD's
    return PMPI_Comm_get_attr(MPI_COMM_WORLD, keyval, value, flag);
  }
  if (find_keyval(keyval, false) == nullptr) {
    return raise_class(c, MPI_ERR_KEYVAL, call, "keyval %#x is not a communicator keyval",
                       static_cast<unsigned>(keyval));
  }
  *flag = 0;
  for (const Attr& a : c->attrs) {
    if (a.keyval == keyval) {
      *static_cast<void**>(value) = a.value;
      *flag = 1;
      break;
    }
  }
  return MPI_SUCCESS;
}

int delete_attr(MPI_Comm comm, int keyval, const char* call) {
  int err;
  Comm* c = comm_record(comm, call, &err);
  if (c == nullptr) return err;
  const Keyval* k = find_keyval(keyval, false);
  if (k == nullptr) {
    return raise_class(c, MPI_ERR_KEYVAL, call, "keyval %#x is not a communicator keyval",
                       static_cast<unsigned>(keyval));
  }
  for (size_t i = 0; i < c->attrs.size(); ++i) {
    if (c->attrs[i].keyval != keyval) continue;
    if (k->delete_fn != nullptr) {
      auto* del = reinterpret_cast<MPI_Comm_delete_attr_function*>(k->delete_fn);
      const int rc = del(c->handle, keyval, c->attrs[i].value, k->extra_state);
      if (rc != MPI_SUCCESS) return raise_class(c, rc, call, "the delete callback failed");
    }
    c->attrs.erase(c->attrs.begin() + static_cast<long>(i));
    break;
  }
  return MPI_SUCCESS;
}

int free_handle(MPI_Comm* comm, const char* call) {
  Comm* c = static_cast<Comm*>(table(Kind::kComm).get(*comm));
  if (c == nullptr) {
    return raise_plain(MPI_COMM_WORLD, MPI_ERR_COMM, call,
                       "communicator %#x names no libep communicator (freed?)",
                       static_cast<unsigned>(*comm));
  }
  if (c->tc != nullptr) {
    return raise_class(c, MPI_ERR_COMM, call,
                       "a threadcomm is freed with MPIX_Threadcomm_free, outside its regions");
  }
  const int rc = free_comm(c, call);
  if (rc != MPI_SUCCESS) return raise_class(c, rc, call, "freeing the communicator failed");
  *comm = MPI_COMM_NULL;
  return MPI_SUCCESS;
}

// A communicator argument that only tells MPICH the representation (pack, unpack):
// checked, then MPI_COMM_SELF stands for it.
MPI_Comm pack_comm(MPI_Comm comm, const char* call, int* err) {
  if (!is_comm(comm)) return comm;
  if (comm_record(comm, call, err) == nullptr) return MPI_COMM_NULL;
  return MPI_COMM_SELF;
}

}  // namespace
}  // namespace ep::mpi

using namespace ep::mpi;  // NOLINT(build/namespaces): the helpers of this layer

extern "C" {

int PMPI_Comm_create_endpoints(MPI_Comm parent_comm, int my_num_ep, MPI_Info info,
                               MPI_Comm out_comm_handles[]) {
  const char* call = "MPI_Comm_create_endpoints";
  if (!libep_running()) {
    return raise_plain(parent_comm, MPI_ERR_OTHER, call,
                       "libep is not running (MPI was not initialized through libep_mpi with "
                       "MPI_THREAD_MULTIPLE)");
  }
  if (is_ep(parent_comm)) {
    int err;
    Comm* c = comm_record(parent_comm, call, &err);
    if (c == nullptr) return err;
    return raise_class(c, MPI_ERR_COMM, call,
                       "the parent must be an MPI communicator, not an endpoints communicator");
  }
  std::vector<EP_Comm> eps(my_num_ep > 0 ? static_cast<size_t>(my_num_ep) : 0, EP_COMM_NULL);
  const int rc = EP_Comm_create_endpoints(parent_comm, my_num_ep, info,
                                          out_comm_handles == nullptr ? nullptr : eps.data());
  if (rc != EP_SUCCESS) return raise_plain_ep(parent_comm, rc, call);
  const Errh* errh = errh_of_mpi_comm(parent_comm);
  for (int i = 0; i < my_num_ep; ++i) {
    const int mrc =
        make_comm(eps[static_cast<size_t>(i)], nullptr, errh, &out_comm_handles[i], call);
    if (mrc != MPI_SUCCESS) return mrc;
  }
  return MPI_SUCCESS;
}
int MPI_Comm_create_endpoints(MPI_Comm, int, MPI_Info, MPI_Comm[])
    __attribute__((weak, alias("PMPI_Comm_create_endpoints")));

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  if (!is_comm(comm)) return PMPI_Comm_dup(comm, newcomm);
  return dup(comm, MPI_INFO_NULL, newcomm, "MPI_Comm_dup");
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm) {
  if (!is_comm(comm)) return PMPI_Comm_dup_with_info(comm, info, newcomm);
  return dup(comm, info, newcomm, "MPI_Comm_dup_with_info");
}

int MPI_Comm_idup(MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* request) {
  if (!is_comm(comm)) return PMPI_Comm_idup(comm, newcomm, request);
  return idup(comm, MPI_INFO_NULL, newcomm, request, "MPI_Comm_idup");
}

int MPI_Comm_idup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm, MPI_Request* request) {
  if (!is_comm(comm)) return PMPI_Comm_idup_with_info(comm, info, newcomm, request);
  return idup(comm, info, newcomm, request, "MPI_Comm_idup_with_info");
}

int MPI_Comm_free(MPI_Comm* comm) {
  if (comm == nullptr || !is_comm(*comm)) return PMPI_Comm_free(comm);
  return free_handle(comm, "MPI_Comm_free");
}

// libep frees a communicator once its pending operations completed: what disconnect
// waits for.
int MPI_Comm_disconnect(MPI_Comm* comm) {
  if (comm == nullptr || !is_comm(*comm)) return PMPI_Comm_disconnect(comm);
  return free_handle(comm, "MPI_Comm_disconnect");
}

int MPI_Comm_size(MPI_Comm comm, int* size) {
  if (!is_comm(comm)) return PMPI_Comm_size(comm, size);
  int err;
  Comm* c = comm_record(comm, "MPI_Comm_size", &err);
  if (c == nullptr) return err;
  if (size == nullptr) return raise_class(c, MPI_ERR_ARG, "MPI_Comm_size", "size is NULL");
  if (c->tc != nullptr) {  // outside a region: the threadcomm's size
    *size = c->tc->size;
    return MPI_SUCCESS;
  }
  const int rc = EP_Comm_size(c->ep, size);
  return rc == EP_SUCCESS ? MPI_SUCCESS : raise(c, rc, "MPI_Comm_size");
}

int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int* result) {
  const char* call = "MPI_Comm_compare";
  if (!is_comm(comm1) && !is_comm(comm2)) return PMPI_Comm_compare(comm1, comm2, result);
  int err;
  Comm* a = is_comm(comm1) ? endpoint(comm1, call, &err) : nullptr;
  if (is_comm(comm1) && a == nullptr) return err;
  Comm* b = is_comm(comm2) ? endpoint(comm2, call, &err) : nullptr;
  if (is_comm(comm2) && b == nullptr) return err;
  Comm* any = a != nullptr ? a : b;
  if (result == nullptr) return raise_class(any, MPI_ERR_ARG, call, "result is NULL");
  if (a == nullptr || b == nullptr) {  // an MPI communicator against an endpoints one
    int size = 0;
    const int rc = PMPI_Comm_size(a == nullptr ? comm1 : comm2, &size);
    if (rc != MPI_SUCCESS) return rc;
    *result = MPI_UNEQUAL;
    return MPI_SUCCESS;
  }
  const int rc = EP_Comm_compare(a->ep, b->ep, result);
  return rc == EP_SUCCESS ? MPI_SUCCESS : raise(a, rc, call);
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm* newcomm) {
  const char* call = "MPI_Comm_split_type";
  if (!is_comm(comm)) return PMPI_Comm_split_type(comm, split_type, key, info, newcomm);
  int err;
  Comm* c = endpoint(comm, call, &err);
  if (c == nullptr) return err;
  if (newcomm == nullptr) return raise_class(c, MPI_ERR_ARG, call, "newcomm is NULL");
  int type = split_type;
  if (split_type == MPI_COMM_TYPE_HW_GUIDED) {
    // MPI 4.0: the resource "mpi_shared_memory" is MPI_COMM_TYPE_SHARED; libep knows no
    // other hardware resource (MPI_COMM_NULL, as for a resource that does not exist).
    char value[64] = {};
    int len = sizeof value - 1, flag = 0;
    if (info != MPI_INFO_NULL) {
      PMPI_Info_get_string(info, "mpi_hw_resource_type", &len, value, &flag);
    }
    type =
        flag && std::strcmp(value, "mpi_shared_memory") == 0 ? MPI_COMM_TYPE_SHARED : MPI_UNDEFINED;
  } else if (split_type == MPI_COMM_TYPE_HW_UNGUIDED) {
    type = MPI_UNDEFINED;  // MPI 4.0 allows MPI_COMM_NULL: no finer level is known
  }
  EP_Comm n = EP_COMM_NULL;
  const int rc = EP_Comm_split_type(c->ep, type, key, info, &n);
  if (rc != EP_SUCCESS) return raise(c, rc, call);
  return make_comm(n, c, nullptr, newcomm, call);
}

int MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
                         int remote_leader, int tag, MPI_Comm* newintercomm) {
  const char* call = "MPI_Intercomm_create";
  if (!is_comm(local_comm)) {
    return PMPI_Intercomm_create(local_comm, local_leader, peer_comm, remote_leader, tag,
                                 newintercomm);
  }
  int err;
  Comm* c = endpoint(local_comm, call, &err);
  if (c == nullptr) return err;
  if (newintercomm == nullptr) return raise_class(c, MPI_ERR_ARG, call, "newintercomm is NULL");
  int rank = -1;
  EP_Comm_rank(c->ep, &rank);
  EP_Comm peer = EP_COMM_NULL;
  if (is_comm(peer_comm)) {
    Comm* p = endpoint(peer_comm, call, &err);
    if (p == nullptr) return err;
    peer = p->ep;
  } else if (rank == local_leader) {
    return raise_class(c, MPI_ERR_COMM, call,
                       "peer_comm of the local leader must be an endpoints communicator that "
                       "holds both leaders");
  }
  EP_Comm n = EP_COMM_NULL;
  const int rc = EP_Intercomm_create(c->ep, local_leader, peer, remote_leader, tag, &n);
  if (rc != EP_SUCCESS) return raise(c, rc, call);
  return make_comm(n, c, nullptr, newintercomm, call);
}

int MPI_Comm_set_name(MPI_Comm comm, const char* comm_name) {
  if (!is_comm(comm)) return PMPI_Comm_set_name(comm, comm_name);
  int err;
  Comm* c = comm_record(comm, "MPI_Comm_set_name", &err);
  if (c == nullptr) return err;
  if (comm_name == nullptr) {
    return raise_class(c, MPI_ERR_ARG, "MPI_Comm_set_name", "comm_name is NULL");
  }
  if (ThreadComm* t = c->shared->tc) {  // a threadcomm's name is the handle's, for all threads
    std::lock_guard<std::mutex> lock(t->name_mu);
    t->name.assign(comm_name, strnlen(comm_name, MPI_MAX_OBJECT_NAME - 1));
    return MPI_SUCCESS;
  }
  const int rc = EP_Comm_set_name(c->ep, comm_name);
  return rc == EP_SUCCESS ? MPI_SUCCESS : raise(c, rc, "MPI_Comm_set_name");
}

int MPI_Comm_get_name(MPI_Comm comm, char* comm_name, int* resultlen) {
  if (!is_comm(comm)) return PMPI_Comm_get_name(comm, comm_name, resultlen);
  int err;
  Comm* c = comm_record(comm, "MPI_Comm_get_name", &err);
  if (c == nullptr) return err;
  if (comm_name == nullptr || resultlen == nullptr) {
    return raise_class(c, MPI_ERR_ARG, "MPI_Comm_get_name", "comm_name or resultlen is NULL");
  }
  if (ThreadComm* t = c->shared->tc) {
    std::lock_guard<std::mutex> lock(t->name_mu);
    std::memcpy(comm_name, t->name.c_str(), t->name.size() + 1);
    *resultlen = static_cast<int>(t->name.size());
    return MPI_SUCCESS;
  }
  const int rc = EP_Comm_get_name(c->ep, comm_name, resultlen);
  return rc == EP_SUCCESS ? MPI_SUCCESS : raise(c, rc, "MPI_Comm_get_name");
}

int MPI_Comm_set_info(MPI_Comm comm, MPI_Info info) {
  if (!is_comm(comm)) return PMPI_Comm_set_info(comm, info);
  int err;
  Comm* c = endpoint(comm, "MPI_Comm_set_info", &err);
  if (c == nullptr) return err;
#ifdef EP_MPI_HAVE_EP_Comm_set_info
  const int rc = EP_Comm_set_info(c->ep, info);
  return rc == EP_SUCCESS ? MPI_SUCCESS : raise(c, rc, "MPI_Comm_set_info");
#else
  (void)info;  // hints libep does not know are ignored, as MPI allows
  return MPI_SUCCESS;
#endif
}

int MPI_Comm_get_info(MPI_Comm comm, MPI_Info* info_used) {
  if (!is_comm(comm)) return PMPI_Comm_get_info(comm, info_used);
  int err;
  Comm* c = endpoint(comm, "MPI_Comm_get_info", &err);
  if (c == nullptr) return err;
  if (info_used == nullptr) {
    return raise_class(c, MPI_ERR_ARG, "MPI_Comm_get_info", "info_used is NULL");
  }
#ifdef EP_MPI_HAVE_EP_Comm_get_info
  const int rc = EP_Comm_get_info(c->ep, info_used);
  return rc == EP_SUCCESS ? MPI_SUCCESS : raise(c, rc, "MPI_Comm_get_info");
#else
  return PMPI_Info_create(info_used);  // no hint is in use
#endif
}

int MPI_Topo_test(MPI_Comm comm, int* status) {
  if (!is_comm(comm)) return PMPI_Topo_test(comm, status);
  int err;
  Comm* c = comm_record(comm, "MPI_Topo_test", &err);
  if (c == nullptr) return err;
  if (status == nullptr) return raise_class(c, MPI_ERR_ARG, "MPI_Topo_test", "status is NULL");
  *status = MPI_UNDEFINED;  // endpoints communicators carry no topology
  return MPI_SUCCESS;
}

int MPI_Abort(MPI_Comm comm, int errorcode) {
  // Aborting the processes of an endpoints communicator: libep aborts them all.
  return PMPI_Abort(is_ep(comm) ? MPI_COMM_WORLD : comm, errorcode);
}

int MPI_Pack(const void* inbuf, int incount, MPI_Datatype datatype, void* outbuf, int outsize,
             int* position, MPI_Comm comm) {
  int err = MPI_SUCCESS;
  MPI_Comm m = pack_comm(comm, "MPI_Pack", &err);
  if (err != MPI_SUCCESS) return err;
  return PMPI_Pack(inbuf, incount, datatype, outbuf, outsize, position, m);
}

int MPI_Pack_c(const void* inbuf, MPI_Count incount, MPI_Datatype datatype, void* outbuf,
               MPI_Count outsize, MPI_Count* position, MPI_Comm comm) {
  int err = MPI_SUCCESS;
  MPI_Comm m = pack_comm(comm, "MPI_Pack_c", &err);
  if (err != MPI_SUCCESS) return err;
  return PMPI_Pack_c(inbuf, incount, datatype, outbuf, outsize, position, m);
}

int MPI_Unpack(const void* inbuf, int insize, int* position, void* outbuf, int outcount,
               MPI_Datatype datatype, MPI_Comm comm) {
  int err = MPI_SUCCESS;
  MPI_Comm m = pack_comm(comm, "MPI_Unpack", &err);
  if (err != MPI_SUCCESS) return err;
  return PMPI_Unpack(inbuf, insize, position, outbuf, outcount, datatype, m);
}

int MPI_Unpack_c(const void* inbuf, MPI_Count insize, MPI_Count* position, void* outbuf,
                 MPI_Count outcount, MPI_Datatype datatype, MPI_Comm comm) {
  int err = MPI_SUCCESS;
  MPI_Comm m = pack_comm(comm, "MPI_Unpack_c", &err);
  if (err != MPI_SUCCESS) return err;
  return PMPI_Unpack_c(inbuf, insize, position, outbuf, outcount, datatype, m);
}

int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int* size) {
  int err = MPI_SUCCESS;
  MPI_Comm m = pack_comm(comm, "MPI_Pack_size", &err);
  if (err != MPI_SUCCESS) return err;
  return PMPI_Pack_size(incount, datatype, m, size);
}

int MPI_Pack_size_c(MPI_Count incount, MPI_Datatype datatype, MPI_Comm comm, MPI_Count* size) {
  int err = MPI_SUCCESS;
  MPI_Comm m = pack_comm(comm, "MPI_Pack_size_c", &err);
  if (err != MPI_SUCCESS) return err;
  return PMPI_Pack_size_c(incount, datatype, m, size);
}

// Keyvals are MPICH's (so that they serve MPI communicators too); libep_mpi records their
// callbacks for the endpoints communicators' attributes, which it keeps itself.
int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function* copy_fn,
                           MPI_Comm_delete_attr_function* delete_fn, int* keyval,
                           void* extra_state) {
  const int rc = PMPI_Comm_create_keyval(copy_fn, delete_fn, keyval, extra_state);
  if (rc == MPI_SUCCESS) {
    register_keyval(*keyval, false, reinterpret_cast<void*>(copy_fn),
                    reinterpret_cast<void*>(delete_fn), extra_state);
  }
  return rc;
}

int MPI_Keyval_create(MPI_Copy_function* copy_fn, MPI_Delete_function* delete_fn, int* keyval,
                      void* extra_state) {
  const int rc = PMPI_Keyval_create(copy_fn, delete_fn, keyval, extra_state);
  if (rc == MPI_SUCCESS) {
    register_keyval(*keyval, false, reinterpret_cast<void*>(copy_fn),
                    reinterpret_cast<void*>(delete_fn), extra_state);
  }
  return rc;
}

// The keyval's callbacks stay recorded: attributes set with it still need them.
int MPI_Comm_free_keyval(int* keyval) { return PMPI_Comm_free_keyval(keyval); }
int MPI_Keyval_free(int* keyval) { return PMPI_Keyval_free(keyval); }

int MPI_Comm_set_attr(MPI_Comm comm, int keyval, void* attribute_val) {
  if (!is_comm(comm)) return PMPI_Comm_set_attr(comm, keyval, attribute_val);
  return set_attr(comm, keyval, attribute_val, "MPI_Comm_set_attr");
}

int MPI_Attr_put(MPI_Comm comm, int keyval, void* attribute_val) {
  if (!is_comm(comm)) return PMPI_Attr_put(comm, keyval, attribute_val);
  return set_attr(comm, keyval, attribute_val, "MPI_Attr_put");
}

int MPI_Comm_get_attr(MPI_Comm comm, int keyval, void* attribute_val, int* flag) {
  if (!is_comm(comm)) return PMPI_Comm_get_attr(comm, keyval, attribute_val, flag);
  return get_attr(comm, keyval, attribute_val, flag, "MPI_Comm_get_attr");
}

int MPI_Attr_get(MPI_Comm comm, int keyval, void* attribute_val, int* flag) {
  if (!is_comm(comm)) return PMPI_Attr_get(comm, keyval, attribute_val, flag);
  return get_attr(comm, keyval, attribute_val, flag, "MPI_Attr_get");
}

int MPI_Comm_delete_attr(MPI_Comm comm, int keyval) {
  if (!is_comm(comm)) return PMPI_Comm_delete_attr(comm, keyval);
  return delete_attr(comm, keyval, "MPI_Comm_delete_attr");
}

int MPI_Attr_delete(MPI_Comm comm, int keyval) {
  if (!is_comm(comm)) return PMPI_Attr_delete(comm, keyval);
  return delete_attr(comm, keyval, "MPI_Attr_delete");
}

}  // extern "C"
