// engine.h - the progress engine: one thread per MPI process that owns MPI traffic.
//
// What it is: `Engine` runs the thread named "ep-progress".  It is the only thread
// that calls MPI for point-to-point traffic: MPI_Improbe/MPI_Mrecv of incoming
// packets, MPI_Isend/MPI_Issend/MPI_Irecv of submitted commands, and MPI_Testsome of
// everything outstanding (asserted in debug builds).  Endpoint threads never call
// MPI on the point-to-point path; they submit `Command`s through a lock-free MPSC
// queue (moodycamel::ConcurrentQueue) and learn of completion through `Completion`
// callbacks, which run on the progress thread.
//
// Two MPI communicators, both duplicates of MPI_COMM_WORLD made by start():
//   packet comm: every packet (header + eager payload, or a rendezvous header), tag 0,
//                received with MPI_Improbe(MPI_ANY_SOURCE) in arrival order;
//   data comm:   rendezvous payloads, tag = a data tag the sender chose (< 2^27), so
//                large payloads go straight from the sender's buffer into the
//                receiver's buffer once the receiver has matched (no copy here).
// Progress cost is independent of the number of endpoints communicators: the engine
// knows none of them (the sink resolves the header).
//
// Ordering: commands from one `Producer` are executed in submission order, and
// packets to one peer go out on one communicator with one tag, so MPI's
// non-overtaking rule keeps them in order; incoming packets reach the sink in MPI
// arrival order.  Commands submitted without a producer have no mutual order.
//
// Lifetime: start() once (collective over MPI_COMM_WORLD, from any one thread of
// each process), stop() once (waits until every submitted command completed).
//
// Threading: submit() and make_producer() are thread-safe; a Producer is used by one
// thread at a time.  Completion::on_complete and PacketSink::on_packet run on the
// progress thread and must not block.
//
// Memory ordering: submit() enqueues (release inside the queue) and then a seq_cst
// fence orders it before reading `sleeping_`; the progress thread stores `sleeping_`,
// fences seq_cst and re-checks the queue before sleeping - so either the thread sees
// the command or the submitter sees `sleeping_` and wakes it (Dekker pairing).
#ifndef EP_PROGRESS_ENGINE_H_
#define EP_PROGRESS_ENGINE_H_

#include <mpi.h>

#include <atomic>
#include <concurrentqueue/concurrentqueue.h>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "progress/backoff.h"

namespace ep::progress {

// Called once on the progress thread when an MPI operation of a command finished.
class Completion {
 public:
  virtual void on_complete(const MPI_Status& status, int mpi_error) = 0;

 protected:
  ~Completion() = default;
};

// Receives every incoming packet, on the progress thread.  `block` was allocated
// with malloc and holds kHeadroom free bytes followed by the `len` packet bytes;
// ownership passes to the sink.
class PacketSink {
 public:
  virtual void on_packet(int src_proc, char* block, size_t len) = 0;

 protected:
  ~PacketSink() = default;
};

struct Command {
  enum Kind : uint8_t {
    kSendPacket,  // MPI_Isend(buf, len bytes) on the packet comm; then done or free(buf)
    kSendData,    // MPI_Isend (or Issend if sync) of (buf, count, type) with data_tag
    kRecvData,    // MPI_Irecv of (buf, count, type) from peer with data_tag
    kRun,         // run fn(arg) on the progress thread
  };
  Kind kind = kRun;
  bool sync = false;
  int peer = 0;      // rank in MPI_COMM_WORLD
  int data_tag = 0;  // kSendData/kRecvData
  int count = 0;
  void* buf = nullptr;
  size_t len = 0;  // kSendPacket
  MPI_Datatype type = MPI_BYTE;
  Completion* done = nullptr;  // nullptr for kSendPacket: the engine frees buf
  void (*fn)(void*) = nullptr;
  void* arg = nullptr;
};

struct Options {
  Policy policy = Policy::kAdaptive;
  int cpu = -1;  // pin the thread to this CPU; -1: not pinned
};

struct Stats {
  std::atomic<uint64_t> packets_sent{0}, packets_received{0}, data_sent{0}, data_received{0},
      bytes_received{0}, loops{0}, sleeps{0}, commands{0};
};

class Engine {
 public:
  using Producer = moodycamel::ProducerToken;
  static constexpr size_t kHeadroom = 128;
  static constexpr int kDataTagMask = (1 << 27) - 1;

  Engine();
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Duplicates the communicators and starts the named, pinned thread.  On failure
  // returns false with *error set and leaves no thread behind.
  bool start(const Options& options, PacketSink* sink, std::string* error);
  // Completes every submitted command, then joins the thread and frees the comms.
  void stop();

  std::unique_ptr<Producer> make_producer() { return std::make_unique<Producer>(queue_); }
  // Thread-safe; never blocks.  `producer` may be nullptr (no order promised).
  void submit(Producer* producer, const Command& command);
  // A fresh tag for a rendezvous payload to any peer.  Thread-safe.
  int next_data_tag() {
    // relaxed: only uniqueness matters, the tag travels in the packet itself.
    return static_cast<int>(data_tag_.fetch_add(1, std::memory_order_relaxed) & kDataTagMask);
  }

  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }
  bool on_progress_thread() const { return std::this_thread::get_id() == thread_.get_id(); }
  const Stats& stats() const { return stats_; }
  pthread_t native_handle() { return thread_.native_handle(); }

 private:
  struct Active {
    Completion* done;
    void* free_buf;  // freed on completion when done == nullptr
  };
  void run();
  bool drain_commands();
  bool poll_packets();
  bool test_active();
  void execute(const Command& c);
  void track(MPI_Request req, Completion* done, void* free_buf);
  void idle(Backoff& backoff);

  moodycamel::ConcurrentQueue<Command> queue_;
  PacketSink* sink_ = nullptr;
  MPI_Comm packet_comm_ = MPI_COMM_NULL;
  MPI_Comm data_comm_ = MPI_COMM_NULL;
  int world_rank_ = 0, world_size_ = 1;
  Policy policy_ = Policy::kAdaptive;
  std::thread thread_;
  std::atomic<bool> stopping_{false};  // release in stop(), acquire in run()
  std::atomic<uint32_t> sleeping_{0};  // seq_cst, see "Memory ordering" above
  std::atomic<uint32_t> wake_word_{0};  // futex word the thread sleeps on
  std::atomic<uint32_t> data_tag_{0};
  // Owned by the progress thread:
  std::vector<MPI_Request> requests_;
  std::vector<Active> active_;
  std::vector<int> indices_;
  std::vector<MPI_Status> statuses_;
  Stats stats_;
};

}  // namespace ep::progress

#endif  // EP_PROGRESS_ENGINE_H_
