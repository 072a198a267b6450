#include "rma/wire.h"

#include <cstdlib>
#include <new>

namespace ep::rma {

char* new_packet(uint32_t dest_id, uint8_t op, uint32_t nblocks, int64_t payload, RmaHeader** h,
                 size_t* len) {
  *len = sizeof(RmaHeader) + nblocks * sizeof(WireBlock) + static_cast<size_t>(payload);
  char* p = static_cast<char*>(std::malloc(*len));
  *h = new (p) RmaHeader;
  (*h)->wire.ctx = dest_id;
  (*h)->wire.dst_local = 0;
  (*h)->wire.kind = runtime::WireHeader::kRma;
  (*h)->op = op;
  (*h)->nblocks = nblocks;
  (*h)->bytes = payload;
  return p;
}

void reply(int proc, uint32_t reply_id, uint8_t op, int32_t origin_target, bool in_pass,
           bool range_error) {
  RmaHeader* h;
  size_t len;
  char* p = new_packet(reply_id, op, 0, 0, &h, &len);
  h->origin_target = origin_target;
  h->range_error = range_error;
  if (in_pass) {
    runtime::send_packet_from_pass(proc, p, len);
  } else {
    runtime::send_packet(proc, p, len);
  }
}

}  // namespace ep::rma
