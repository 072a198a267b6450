// transport.h - the narrow way the layers above runtime reach the progress engine.
//
// What it is: collectives and one-sided communication never see the engine
// (progress/engine.h); what they need of it is here.  A one-sided packet travels on the
// engine's packet communicator like a point-to-point packet (runtime.h, WireHeader kind
// kRma) and reaches the installed RMA sink on the progress-baton holder; a collective's
// schedule advances in a hook that every engine pass runs.
//
// Threading: send_packet, run_in_pass, start_queued are thread-safe and never block;
// send_packet_from_pass only on the baton holder (inside a sink or a hook).
//
// Memory ordering: a packet's bytes are published to the engine by the command
// queue's push (release) and the pass's pop (acquire); the sink and the hook are
// installed with release stores that the passes load with acquire.
#ifndef EP_RUNTIME_TRANSPORT_H_
#define EP_RUNTIME_TRANSPORT_H_

#include <cstddef>

namespace ep::runtime {

// Bytes free in front of a received packet's block (RmaSink), and the largest packet.
// (transport.cc checks them against the engine's.)
constexpr size_t kPacketHeadroom = 128;
constexpr size_t kMaxPacketBytes = 136 * 1024;

// Sends `len` bytes at `packet` (malloc'ed; the engine frees it once sent) to process
// `proc` (MPI_COMM_WORLD rank), in order with this thread's earlier packets to it.
// Starts it at once if no other thread holds the baton.
void send_packet(int proc, char* packet, size_t len);
// The same from inside a pass: starts it at once.
void send_packet_from_pass(int proc, char* packet, size_t len);
// Runs fn(arg) in a later pass (after every pass now running has ended).
void run_in_pass(void (*fn)(void*), void* arg);
// Starts the commands queued so far if the baton is free.
void start_queued();

// Receives every one-sided packet (block: kPacketHeadroom free bytes, then the packet;
// ownership passes).  Installed once by EP_Init, before any window exists.
using RmaSink = void (*)(int src_proc, char* block, size_t len);
void set_rma_sink(RmaSink sink);
// Work every pass runs (the collectives' schedules): true if it made progress.
// Installed once by EP_Init, before any pass can run it.
using PassHook = bool (*)(bool* pending);
void set_pass_hook(PassHook hook);

}  // namespace ep::runtime

#endif  // EP_RUNTIME_TRANSPORT_H_
