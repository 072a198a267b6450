// runtime.h - the process-wide state of libep between EP_Init and EP_Finalize.
//
// What it is: `Runtime` owns the configuration, the progress engine, the context
// table and the buffered-send buffer, and is the engine's PacketSink: it turns each
// incoming packet into an Envelope and hands it to the destination endpoint's
// matcher.  runtime() returns it (nullptr outside EP_Init..EP_Finalize).
//
// Threading: init/finalize run on one thread (the caller of EP_Init/EP_Finalize)
// while no other libep call runs; everything else is thread-safe.
//
// Memory ordering: g_runtime is stored with release after the runtime is fully
// built and loaded with acquire by every call, so a call that sees it sees its state.
#ifndef EP_RUNTIME_RUNTIME_H_
#define EP_RUNTIME_RUNTIME_H_

#include <atomic>
#include <cstddef>
#include <string>

#include "progress/engine.h"
#include "runtime/bsend.h"
#include "runtime/comm.h"
#include "runtime/config.h"
#include "runtime/node.h"

namespace ep::runtime {

// The packet header, in front of every packet on the packet comm.  An eager packet
// carries only its first kEagerHeaderBytes (ctx .. tag): its payload size is the packet
// length minus those, so an 8-byte message is a 24-byte packet (MPICH over UCX sends
// messages of up to 28 bytes faster than larger ones).
// Rendezvous (kRts, kCts): a message above EP_EAGER_LIMIT leaves its sender only once
// its receive has matched.  The sender's RTS names the message (its envelope, size and
// the data tag its payload will carry) and the send request (`cookie`); the receiver's
// matcher, when a receive takes it, has the engine post MPI_Irecv of the payload and
// then send a CTS back with the cookie; the sender's engine, on the CTS, posts the
// payload's MPI_Isend.  So MPI never holds a libep payload as an unexpected message.
struct WireHeader {
  // kRma: a one-sided packet (rma/window.h); ctx is then the destination window id.
  // kCts: only data_tag and cookie are meaningful.
  enum Kind : uint8_t { kEager = 1, kRts = 2, kRma = 3, kCts = 4 };
  uint32_t ctx;        // receiver's context id
  uint16_t dst_local;  // receiver's local endpoint index
  uint8_t kind;
  uint8_t sync;
  int32_t src_rank;  // sender's rank in the communicator
  int32_t tag;
  int32_t data_tag;  // kRts, kCts: tag of the payload on the data comm
  int64_t bytes;     // packed payload size (not in an eager packet)
  uint64_t cookie;   // kRts, kCts: the sender's Request
};
constexpr size_t kEagerHeaderBytes = 16;
static_assert(offsetof(WireHeader, data_tag) == kEagerHeaderBytes,
              "an eager packet's header is the WireHeader up to data_tag");

struct Counters {
  std::atomic<uint64_t> local_eager{0}, local_rndv{0}, remote_eager{0}, remote_rndv{0},
      direct_matches{0}, dropped_packets{0};
  // The node transport (runtime/node.h): records sent, acknowledgements taken, records
  // that waited in a backlog, records refused by their receiver.
  std::atomic<uint64_t> node_eager{0}, node_rndv{0}, node_acks{0}, node_backlogged{0},
      node_rejected{0};
};

class Runtime final : public progress::PacketSink {
 public:
  Config config;
  ContextTable contexts;
  BsendBuffer bsend;
  Counters counters;
  NodeTransport node;  // (its endpoints' rings go before it: comm_free_all, EP_Finalize)
  int world_rank = 0;
  int local_proc_index = 0;  // index among the processes of this node
  int node_id = 0;           // the lowest MPI_COMM_WORLD rank of this node's processes
  std::atomic<uint32_t> next_origin{0};
  // The one-sided layer's packet handler (rma/window.h), installed by EP_Init before
  // any window exists.  Stored with release, loaded with acquire by on_packet.
  using RmaSink = void (*)(int src_proc, char* block, size_t len);
  std::atomic<RmaSink> rma_sink{nullptr};

  void on_packet(int src_proc, char* block, size_t len) override;
  void on_record(int src_proc, const char* packet, size_t len) override;
  void bundle_begin() override { in_bundle_ = true; }
  void bundle_end() override;
  // Counts one event for EP_STATS.  Only when statistics are on: every endpoint
  // thread bumping one shared counter per message would bounce its cache line
  // between the cores on every message.
  void count(std::atomic<uint64_t>& counter) {
    if (config.stats) counter.fetch_add(1, std::memory_order_relaxed);  // relaxed: statistics
  }

 private:
  // Within one bundle (between bundle_begin and bundle_end; touched only by the thread
  // delivering it, the progress baton's holder): the endpoint whose matcher this
  // thread holds for consecutive records (see "Held" in matching.h), and the context
  // and local index it was found by.  The endpoint cannot be retired meanwhile: that
  // runs as an engine command, never inside a pass's delivery.
  void release_held();
  // on_record's less common ways, out of line so that its own (a lone small packet
  // matched in place: every blocking receive's message) stays short: a record of a
  // bundle, and a packet that is not a small eager message.
  void on_bundle_record(const WireHeader* h, size_t len, Envelope* e);
  void on_other_record(int src_proc, const char* packet, size_t len);
  // The progress engine: runtime's own (engine() below).  The layers above reach it
  // through runtime/transport.h and runtime/wait.h only (tools/check_layers.sh).
  progress::Engine engine_;
  friend progress::Engine& engine();
  bool in_bundle_ = false;
  Endpoint* held_ = nullptr;
  uint32_t held_ctx_ = 0;
  uint32_t held_local_ = 0;
};

// The process's runtime, nullptr outside EP_Init..EP_Finalize.  Inline: every call
// asks for it, several times.
extern std::atomic<Runtime*> g_runtime;
inline Runtime* runtime() {
  return g_runtime.load(std::memory_order_acquire);  // pairs with the release in runtime_init
}
// The engine's counters (EP_STATS, tests) and its failure hook (tests only: the next
// `n` calls of `call` fail with MPI_ERR_OTHER).
const progress::Stats& engine_stats();
// The MPI calls libep made outside the progress engine so far, all threads of the
// process (base/mpi_calls.h; EP_STATS prints it, tests read it).
uint64_t mpi_calls_outside_engine();
void inject_mpi_failure(progress::MpiCall call, int n);

// The engine, for the files of runtime/ only (tools/check_layers.sh enforces it).
inline progress::Engine& engine() { return runtime()->engine_; }

// EP_Init/EP_Finalize bodies (argument checks are in api/).  Return EP_ERR_* codes.
int runtime_init();
int runtime_finalize();

}  // namespace ep::runtime

#endif  // EP_RUNTIME_RUNTIME_H_
