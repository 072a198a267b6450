#include "runtime/transport.h"

#include "runtime/runtime.h"

namespace ep::runtime {

static_assert(kPacketHeadroom == progress::Engine::kHeadroom, "transport.h: headroom");
static_assert(kMaxPacketBytes == progress::Engine::kMaxPacketBytes, "transport.h: packet bound");

namespace {
progress::Command packet_command(int proc, char* packet, size_t len) {
  progress::Command c;
  c.kind = progress::Command::kSendPacket;
  c.peer = proc;
  c.buf = packet;
  c.len = len;
  return c;
}
}  // namespace

void send_packet(int proc, char* packet, size_t len) {
  engine().submit(packet_command(proc, packet, len), /*self_progress=*/true);
}

void send_packet_from_pass(int proc, char* packet, size_t len) {
  engine().submit_from_pass(packet_command(proc, packet, len));
}

void run_in_pass(void (*fn)(void*), void* arg) {
  progress::Command c;
  c.kind = progress::Command::kRun;
  c.fn = fn;
  c.arg = arg;
  engine().submit(c);
}

void start_queued() { engine().try_start_commands(); }

void set_rma_sink(RmaSink sink) {
  runtime()->rma_sink.store(sink, std::memory_order_release);  // pairs: Runtime::on_packet
}

void set_pass_hook(PassHook hook) { engine().set_pass_hook(hook); }

}  // namespace ep::runtime
