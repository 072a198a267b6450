#include "runtime/datatype.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/mpi_calls.h"

namespace ep::runtime {

BuiltinSlot g_builtin[256];

namespace {

bool query(MPI_Datatype type, TypeInfo* info) {
  MPI_Count size = 0, lb = 0, extent = 0, tlb = 0, textent = 0;
  if (EP_MPI(MPI_Type_size_x(type, &size)) != MPI_SUCCESS) return false;
  if (EP_MPI(MPI_Type_get_extent_x(type, &lb, &extent)) != MPI_SUCCESS) return false;
  if (EP_MPI(MPI_Type_get_true_extent_x(type, &tlb, &textent)) != MPI_SUCCESS) return false;
  info->size = size;
  info->extent = extent;
  info->true_lb = tlb;
  info->contiguous = size == textent && extent == textent;
  return true;
}

}  // namespace

namespace {
// A private MPI_COMM_SELF duplicate that returns errors: MPI_Pack of 0 elements on it
// fails for a derived type that was never committed (MPI has no query for that).
MPI_Comm g_check_comm = MPI_COMM_NULL;
}  // namespace

void datatype_init() {
  EP_MPI(MPI_Comm_dup(MPI_COMM_SELF, &g_check_comm));
  EP_MPI(MPI_Comm_set_errhandler(g_check_comm, MPI_ERRORS_RETURN));
}

void datatype_finalize() {
  if (g_check_comm != MPI_COMM_NULL) EP_MPI(MPI_Comm_free(&g_check_comm));
}

bool describe_slow(MPI_Datatype type, TypeInfo* info) {
  if (type == MPI_DATATYPE_NULL) return false;
  if (!is_builtin_type(type)) {
    // A derived type must be committed to be used in communication.
    int combiner = 0, ni = 0, na = 0, nd = 0;
    if (EP_MPI(MPI_Type_get_envelope(type, &ni, &na, &nd, &combiner)) != MPI_SUCCESS) return false;
    if (g_check_comm != MPI_COMM_NULL) {
      char scratch = 0;
      int pos = 0;
      if (EP_MPI(MPI_Pack(&scratch, 0, type, &scratch, 0, &pos, g_check_comm)) != MPI_SUCCESS) {
        return false;
      }
    }
    return query(type, info);
  }
  BuiltinSlot& s = g_builtin[static_cast<unsigned>(type) & 255];
  if (!query(type, info)) return false;
  uint32_t expected = BuiltinSlot::kEmpty;
  // relaxed: the claim orders nothing; the release store publishes.
  if (s.state.compare_exchange_strong(expected, BuiltinSlot::kFilling, std::memory_order_relaxed)) {
    s.type = type;
    s.info = *info;
    s.state.store(BuiltinSlot::kReady, std::memory_order_release);
  }
  return true;
}

void pack(const void* buf, int count, MPI_Datatype type, const TypeInfo& ti, void* out) {
  int64_t bytes = ti.size * count;
  if (bytes == 0) return;
  if (ti.contiguous) {
    copy_bytes(out, static_cast<const char*>(buf) + ti.true_lb, static_cast<size_t>(bytes));
    return;
  }
  int pos = 0;
  EP_MPI(MPI_Pack(buf, count, type, out, static_cast<int>(bytes), &pos, MPI_COMM_SELF));
}

void unpack(const void* in, int64_t bytes, void* buf, int count, MPI_Datatype type,
            const TypeInfo& ti) {
  if (ti.size == 0 || bytes <= 0) return;
  int64_t whole = bytes / ti.size;
  if (whole > count) whole = count;
  int64_t nbytes = whole * ti.size;
  if (nbytes == 0) return;  // (buf may be NULL for count 0)
  if (ti.contiguous) {
    copy_bytes(static_cast<char*>(buf) + ti.true_lb, in, static_cast<size_t>(nbytes));
    return;
  }
  int pos = 0;
  EP_MPI(MPI_Unpack(in, static_cast<int>(nbytes), &pos, buf, static_cast<int>(whole), type,
                    MPI_COMM_SELF));
}

void copy(const void* sbuf, int scount, MPI_Datatype stype, const TypeInfo& sti, void* rbuf,
          int rcount, MPI_Datatype rtype, const TypeInfo& rti, int64_t bytes) {
  if (bytes <= 0) return;
  if (sti.contiguous) {
    unpack(static_cast<const char*>(sbuf) + sti.true_lb, bytes, rbuf, rcount, rtype, rti);
    return;
  }
  if (rti.contiguous && bytes == sti.size * scount) {
    pack(sbuf, scount, stype, sti, static_cast<char*>(rbuf) + rti.true_lb);
    return;
  }
  std::vector<char> tmp(static_cast<size_t>(sti.size * scount));
  pack(sbuf, scount, stype, sti, tmp.data());
  unpack(tmp.data(), bytes, rbuf, rcount, rtype, rti);
}

}  // namespace ep::runtime
