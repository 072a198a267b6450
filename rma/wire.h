// wire.h - the one-sided packet format between processes (internal to rma).
//
// What it is: an operation on another process's window that neither a mapping nor
// cross-memory attach can do (rma/segment.h) is a remote handler call: packets on the
// progress engine's packet communicator (runtime/transport.h), served by the target
// process's engine, so the target endpoint need not call libep (passive target
// progress, as in MPICH's one-sided design).  A packet is runtime::WireHeader (kind
// kRma, ctx = the destination window id), an RmaHeader, `nblocks` WireBlocks (target
// offsets from the window base) and `bytes` of payload:
//   origin -> target: kPut, kAcc (answered by kAck), kGet, kGetAcc, kCas (answered by
//                     kData), kLock (answered by kGrant when granted), kUnlock (kAck);
//   target -> origin: kAck, kData, kGrant.
// A dynamic window's blocks are target addresses (its base is 0); the handler checks
// them against the attached regions (rma/dynamic.cc) and answers a miss with
// range_error set, having written nothing.
// An operation's stream (rma/layout.h) is cut into chunks of at most EP_EAGER_LIMIT
// payload bytes (whole elements for the accumulate family) and kMaxBlocksPerChunk
// blocks, so a chunk's packet fits runtime::kMaxPacketBytes.  Each chunk carries its
// own target blocks and gets exactly one reply, so the target never buffers more than
// one chunk and never needs the origin's datatype.  MPI handles of predefined types and
// ops travel as they are: MPICH's are compile-time constants, equal in every process.
//
// Ownership: new_packet mallocs a packet; the engine frees it once sent.  A Pending is
// created by the origin thread and deleted by the baton holder that handles the last
// chunk's reply.
//
// Threading: new_packet, blocks_of and payload_of are thread-safe.  reply() with in_pass
// runs only on the progress-baton holder (inside the packet handler); without, on any
// thread.
//
// Memory ordering: packets between two processes are FIFO (one MPI communicator and
// tag) and a target handles them in arrival order, so one origin's requests to one
// target are applied, and answered, in the order it sent them.  Whatever a thread
// wrote before handing a packet to runtime::send_packet (the packet, a Pending)
// happens-before the pass that sends it and every later pass: the engine's command
// queue and baton publish it.
#ifndef EP_RMA_WIRE_H_
#define EP_RMA_WIRE_H_

#include <mpi.h>

#include <cstddef>
#include <cstdint>

#include "rma/layout.h"
#include "runtime/runtime.h"
#include "runtime/transport.h"

namespace ep::rma {

// Packet kinds (RmaHeader::op).
enum PacketOp : uint8_t {
  kPut = 1,
  kAcc,
  kGet,
  kGetAcc,
  kCas,
  kLock,
  kUnlock,
  kAck,
  kData,
  kGrant
};

static_assert(sizeof(MPI_Datatype) == sizeof(int32_t) && sizeof(MPI_Op) == sizeof(int32_t),
              "predefined MPI handles are sent as 32-bit integers");

// Follows the runtime's WireHeader.
struct alignas(16) RmaHeader {
  runtime::WireHeader wire;  // kind kRma; ctx: the destination window id
  uint8_t op = 0;
  uint8_t exclusive = 0;                   // kLock/kUnlock
  uint8_t range_error = 0;                 // kAck/kData: the blocks were not all attached
  int32_t origin_target = 0;               // the target's rank as the origin numbers it (echoed)
  uint32_t reply_id = 0;                   // the origin's window id (replies go there)
  MPI_Datatype basic = MPI_DATATYPE_NULL;  // accumulate family: element type
  MPI_Op mpi_op = MPI_OP_NULL;
  int32_t elem = 1;      // stream bytes per element
  uint32_t nblocks = 0;  // WireBlocks following the header
  int64_t pos = 0;       // stream position of this chunk (echoed)
  int64_t bytes = 0;     // payload bytes following the blocks
  uint64_t cookie = 0;   // the origin's Pending* (echoed)
};

struct WireBlock {
  int64_t off;  // from the window base
  int64_t len;
};
static_assert(sizeof(WireBlock) == 16, "blocks keep the payload 16-byte aligned");

// A chunk's limits: its block list, and the payload that fits beside it in a packet.
constexpr uint32_t kMaxBlocksPerChunk = 4096;
constexpr int64_t kMaxChunkPayload = static_cast<int64_t>(
    runtime::kMaxPacketBytes - sizeof(RmaHeader) - kMaxBlocksPerChunk * sizeof(WireBlock));
static_assert(kMaxChunkPayload >= 4096, "room for a payload beside the block list");

// An operation whose replies carry data (get, get_accumulate, compare_and_swap):
// where the data goes.  Created by the origin thread before the first chunk is sent;
// then touched only by baton holders, one at a time (kData replies).
struct Pending {
  char* rbuf = nullptr;
  Layout rl;
  int remaining = 0;  // chunks whose reply has not been handled
  // A request-based operation's request (EP_Rget, EP_Rget_accumulate): completed by the
  // handler of the last reply, after the data is in rbuf.
  runtime::Request* req = nullptr;
};

// A packet addressed to window `dest_id` with room for `nblocks` blocks and `payload`
// bytes; *h points at its header, *len is its length.
char* new_packet(uint32_t dest_id, uint8_t op, uint32_t nblocks, int64_t payload, RmaHeader** h,
                 size_t* len);
inline WireBlock* blocks_of(char* p) { return reinterpret_cast<WireBlock*>(p + sizeof(RmaHeader)); }
inline char* payload_of(char* p, uint32_t nblocks) {
  return p + sizeof(RmaHeader) + nblocks * sizeof(WireBlock);
}

// Sends a reply without payload (kAck, kGrant) to window `reply_id` of process `proc`.
// `in_pass`: sent by the packet handler, which runs on the progress-baton holder and so
// may start it at once (runtime::send_packet_from_pass); other threads queue it.
// `range_error`: a dynamic window's blocks were not all attached (nothing was written).
void reply(int proc, uint32_t reply_id, uint8_t op, int32_t origin_target, bool in_pass = true,
           bool range_error = false);

}  // namespace ep::rma

#endif  // EP_RMA_WIRE_H_
