#include "runtime/runtime.h"

#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "base/mpi_calls.h"
#include "base/types.h"
#include "progress/affinity.h"
#include "runtime/datatype.h"
#include "runtime/error.h"
#include "runtime/p2p.h"
#include "runtime/wait.h"

namespace ep::runtime {

std::atomic<Runtime*> g_runtime{nullptr};

namespace {
// The destination endpoint of a point-to-point packet, or nullptr (then it is dropped):
// an eager packet needs kEagerHeaderBytes, any other a whole WireHeader.
[[gnu::always_inline]] inline Endpoint* destination(ContextTable& contexts, const WireHeader* h,
                                                    size_t len) {
  const bool whole =
      len >= sizeof(WireHeader) || (len >= kEagerHeaderBytes && h->kind == WireHeader::kEager);
  CommShared* c = whole ? contexts.lookup(h->ctx) : nullptr;
  if (c == nullptr || h->dst_local >= c->local.size()) return nullptr;
  return c->local[h->dst_local].get();
}

// Hands an arrival to its endpoint's matcher: matched in place when no matcher is
// active (no queue, and an unowned envelope is copied only if it has to wait), else
// queued with the baton holder's producer token (arrivals keep their order: both ways
// go through the same matcher, which drains its queue before an in-place match).
[[gnu::noinline]] void arrive_queued(Endpoint* ep, Envelope* e) {
  if (!ep->progress_token) {
    ep->progress_token = std::make_unique<moodycamel::ProducerToken>(ep->matcher.inbox());
  }
  ep->matcher.push(*ep->progress_token, materialize(e));
}
[[gnu::always_inline]] inline void arrive(Endpoint* ep, Envelope* e) {
  if (ep->matcher.try_deliver_direct_with(e, DeliverInline{})) return;
  arrive_queued(ep, e);
}
}  // namespace

void Runtime::on_record(int src_proc, const char* packet, size_t len) {
  const auto* h = reinterpret_cast<const WireHeader*>(packet);
  if (len < kEagerHeaderBytes || h->kind != WireHeader::kEager) {
    on_other_record(src_proc, packet, len);
    return;
  }
  Envelope e(Envelope::EagerOnly{});  // refers to the packet, which lives until we return
  e.src_rank = h->src_rank;
  e.tag = h->tag;
  e.bytes = static_cast<int64_t>(len - kEagerHeaderBytes);
  e.data = packet + kEagerHeaderBytes;
  if (in_bundle_) {  // (outside a bundle no matcher is held)
    on_bundle_record(h, len, &e);
    return;
  }
  Endpoint* ep = destination(contexts, h, len);
  if (ep == nullptr) {
    count(counters.dropped_packets);
    return;
  }
  arrive(ep, &e);
}

void Runtime::on_other_record(int src_proc, const char* packet, size_t len) {
  release_held();  // it takes the usual way, after the records before it
  const auto* h = reinterpret_cast<const WireHeader*>(packet);
  if (len >= sizeof(WireHeader) && h->kind == WireHeader::kCts) {
    WireHeader cts;
    std::memcpy(&cts, packet, sizeof cts);
    start_rendezvous_payload(src_proc, cts.data_tag, cts.cookie);  // p2p.h
    return;
  }
  PacketSink::on_record(src_proc, packet, len);  // a block of its own
}

void Runtime::on_bundle_record(const WireHeader* h, size_t len, Envelope* e) {
  if (held_ != nullptr && h->ctx == held_ctx_ && h->dst_local == held_local_) {
    held_->matcher.deliver_held_with(e, DeliverInline{});  // the run to one endpoint goes on
    return;
  }
  release_held();
  Endpoint* ep = destination(contexts, h, len);
  if (ep == nullptr) {
    count(counters.dropped_packets);
    return;
  }
  if (ep->matcher.hold()) {  // more records may follow: keep the matcher
    held_ = ep;
    held_ctx_ = h->ctx;
    held_local_ = h->dst_local;
    ep->matcher.deliver_held_with(e, DeliverInline{});
    return;
  }
  arrive(ep, e);
}

void Runtime::release_held() {
  if (held_ != nullptr) held_->matcher.release();
  held_ = nullptr;
}

void Runtime::bundle_end() {
  release_held();
  in_bundle_ = false;
}

void Runtime::on_packet(int src_proc, char* block, size_t len) {
  static_assert(sizeof(Envelope) <= progress::Engine::kHeadroom, "envelope must fit the headroom");
  const auto* h = reinterpret_cast<const WireHeader*>(block + progress::Engine::kHeadroom);
  if (len >= sizeof(WireHeader) && h->kind == WireHeader::kRma) {
    // acquire: pairs with the release store that installed the handler.
    if (RmaSink sink = rma_sink.load(std::memory_order_acquire)) {
      sink(src_proc, block, len);
      return;
    }
  }
  Endpoint* ep = destination(contexts, h, len);
  if (ep == nullptr) {
    count(counters.dropped_packets);
    std::free(block);
    return;
  }
  auto* e = new (block) Envelope;
  e->owned = true;
  e->block = block;
  e->src_rank = h->src_rank;
  e->tag = h->tag;
  if (h->kind == WireHeader::kEager) {
    e->kind = Envelope::kEager;
    e->bytes = static_cast<int64_t>(len - kEagerHeaderBytes);
    e->data = block + progress::Engine::kHeadroom + kEagerHeaderBytes;
  } else {
    e->bytes = h->bytes;
    e->kind = Envelope::kRemoteRndv;
    e->src_proc = src_proc;
    e->data_tag = h->data_tag;
    e->cookie = h->cookie;
  }
  arrive(ep, e);
}

const progress::Stats& engine_stats() { return engine().stats(); }
uint64_t mpi_calls_outside_engine() { return ep::mpi_calls_outside_engine(); }
void inject_mpi_failure(progress::MpiCall call, int n) { engine().inject_failure(call, n); }

namespace {
// A process whose calling thread may run on one CPU only, with no CPU named for its
// progress thread: the progress thread inherits that one CPU and shares it with the
// application.  Collective over MPI_COMM_WORLD; world rank 0 warns once for all.
void warn_shared_cpu(int world_rank, bool unpinned) {
  const int alone = unpinned && progress::thread_cpus(pthread_self()).size() == 1 ? 1 : 0;
  int count = 0, size = 1;
  EP_MPI(MPI_Allreduce(&alone, &count, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  EP_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
  if (world_rank == 0 && count > 0) {
    std::fprintf(stderr,
                 "libep: warning: %d of %d process(es) are bound to a single CPU and "
                 "EP_PROGRESS_CPUS is not set: their progress threads share the application's "
                 "CPU; give them CPUs of their own with EP_PROGRESS_CPUS and the launcher's "
                 "binding (hydra: mpiexec -bind-to user:0,2 with EP_PROGRESS_CPUS=1,3)\n",
                 count, size);
  }
}
}  // namespace

int runtime_init() {
  int init = 0, fin = 0;
  EP_MPI(MPI_Initialized(&init));
  EP_MPI(MPI_Finalized(&fin));
  if (!init || fin) {
    return fail(EP_ERR_NOT_INITIALIZED, "EP_Init",
                "MPI is not initialized (call MPI_Init_thread with MPI_THREAD_MULTIPLE first)");
  }
  int provided = 0;
  EP_MPI(MPI_Query_thread(&provided));
  if (provided != MPI_THREAD_MULTIPLE) {
    return fail(EP_ERR_THREAD_LEVEL, "EP_Init",
                "MPI provides thread level %d, libep needs MPI_THREAD_MULTIPLE (%d)", provided,
                MPI_THREAD_MULTIPLE);
  }
  auto rt = std::make_unique<Runtime>();
  std::string error;
  std::vector<std::string> warnings;
  if (!parse_config(&rt->config, &error, &warnings)) {
    return fail(EP_ERR_ARG, "EP_Init", "%s", error.c_str());
  }
  EP_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rt->world_rank));
  MPI_Comm node;
  EP_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rt->world_rank, MPI_INFO_NULL,
                             &node));
  EP_MPI(MPI_Comm_rank(node, &rt->local_proc_index));
  EP_MPI(MPI_Allreduce(&rt->world_rank, &rt->node_id, 1, MPI_INT, MPI_MIN, node));
  int world_size = 1;
  EP_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
  std::string node_note;
  const char* staging = std::getenv("LIBEP_TEST_NODE_STAGING");  // a test switch
  rt->node.init(node, rt->config.node_transport, rt->config.eager_limit,
                staging != nullptr && std::strcmp(staging, "1") == 0, rt->world_rank, world_size,
                &node_note);
  EP_MPI(MPI_Comm_free(&node));
  if (rt->world_rank == 0) {
    for (const std::string& w : warnings) std::fprintf(stderr, "%s\n", w.c_str());
  }
  progress::Options opts;
  opts.policy = rt->config.progress_policy;
  if (!rt->config.progress_cpus.empty()) {
    opts.cpu = rt->config.progress_cpus[rt->local_proc_index % rt->config.progress_cpus.size()];
  }
  warn_shared_cpu(rt->world_rank, opts.cpu < 0);
  // Publish before starting the engine: the progress thread calls runtime().
  Runtime* raw = rt.get();
  g_runtime.store(raw, std::memory_order_release);  // pairs with runtime()
  if (raw->node.on()) {  // its progress thread sleeps where the node's senders wake it
    node::Doorbell& d = raw->node.segment().doorbell();
    engine().set_idle_words(&d.bell, &d.asleep, [] { return runtime()->node.work_waiting(); });
    engine().set_node_hook([](bool* pending) { return runtime()->node.pass(pending); });
  }
  engine().start(opts, raw);
  if (!engine().pin_refusal().empty()) {
    // The thread keeps the affinity it inherited from this one.
    std::fprintf(stderr,
                 "libep: warning: process %d: EP_PROGRESS_CPUS: the kernel refuses CPU %d for "
                 "the progress thread (%s); it runs unpinned, on CPUs %s\n",
                 raw->world_rank, opts.cpu, engine().pin_refusal().c_str(),
                 progress::cpu_list_text(progress::thread_cpus(pthread_self())).c_str());
  }
  rt.release();
  datatype_init();
  if (raw->config.verbose) {
    std::fprintf(stderr, "libep: process %d settings:\n%s", raw->world_rank,
                 describe_config(raw->config).c_str());
    std::fprintf(stderr, "libep: process %d node transport: %s\n", raw->world_rank,
                 node_note.c_str());
  }
  return EP_SUCCESS;
}

int runtime_finalize() {
  Runtime* rt = runtime();
  comm_join_workers();  // an idup's worker may still be leaving (its requests completed)
  // Every process has finished its own communication when it gets here; the
  // barrier makes sure no peer still sends to us before the engine stops.
  MPI_Request barrier = MPI_REQUEST_NULL;
  EP_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &barrier));
  wait_mpi(&barrier, 1);  // the engine tests it while we sleep (runtime/wait.h)
  rt->node.close();       // nobody receives any more: what is left in backlogs goes
  engine().stop();
  if (rt->config.stats) {
    const auto& s = engine().stats();
    const auto& c = rt->counters;
    std::fprintf(
        stderr,
        "libep stats (process %d): local_eager=%llu local_rndv=%llu remote_eager=%llu "
        "remote_rndv=%llu direct_matches=%llu packets_sent=%llu bundles_sent=%llu "
        "packets_received=%llu "
        "data_sent=%llu data_received=%llu progress_loops=%llu progress_sleeps=%llu "
        "dropped_packets=%llu mpi_errors=%llu lost_wakeups=%llu mpi_calls_outside_engine=%llu "
        "node_eager=%llu node_rndv=%llu node_acks=%llu node_backlogged=%llu node_rejected=%llu\n",
        rt->world_rank, (unsigned long long)c.local_eager.load(),
        (unsigned long long)c.local_rndv.load(), (unsigned long long)c.remote_eager.load(),
        (unsigned long long)c.remote_rndv.load(), (unsigned long long)c.direct_matches.load(),
        (unsigned long long)s.packets_sent.load(), (unsigned long long)s.bundles_sent.load(),
        (unsigned long long)s.packets_received.load(), (unsigned long long)s.data_sent.load(),
        (unsigned long long)s.data_received.load(), (unsigned long long)s.loops.load(),
        (unsigned long long)s.sleeps.load(),
        (unsigned long long)(c.dropped_packets.load() + s.packets_dropped.load()),
        (unsigned long long)s.mpi_errors.load(), (unsigned long long)lost_wakeups(),
        (unsigned long long)mpi_calls_outside_engine(), (unsigned long long)c.node_eager.load(),
        (unsigned long long)c.node_rndv.load(), (unsigned long long)c.node_acks.load(),
        (unsigned long long)c.node_backlogged.load(), (unsigned long long)c.node_rejected.load());
  }
  comm_free_all();
  rt->node.shutdown();  // every ring was given back with its fragment
  datatype_finalize();
  g_runtime.store(nullptr, std::memory_order_release);  // pairs with runtime()
  delete rt;
  return EP_SUCCESS;
}

}  // namespace ep::runtime
