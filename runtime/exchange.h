// exchange.h - libep's internal collectives: hidden point-to-point among fragments.
//
// What it is: the building blocks that communicator creation (dup, split, intercomm
// create and merge) and the collectives layer use.  They move bytes (std::string),
// never user datatypes; callers pack and unpack.
//
// Hidden traffic.  Internal messages are ordinary libep point-to-point messages with
// a *negative* tag.  User receives can never match them (user tags are >= 0 and
// EP_ANY_TAG matches only tags >= 0, see envelope_matches), so they share the
// communicator's context and the endpoints' matchers with user traffic without
// interfering.  Tags:
//   collective n on an endpoint:  hidden_tag() = -4 - 4 * (n mod 2^27), and that
//                                 minus 1..3 for further phases of the same collective;
//   EP_Intercomm_create(tag):     kIntercommTagBase - tag.
//   EP_Comm_create_group(tag):    kCreateGroupTagBase - tag (runtime/comm_create.cc).
// Every endpoint counts the collectives it started on a communicator (coll_seq);
// since all endpoints of a communicator call collectives in the same order, they
// agree on the tag of each collective without communicating.
//
// Two levels.  Endpoints of one fragment (comm.h) meet in CommShared::local_round;
// the last to arrive acts for the fragment's leader (its lowest rank, local[0]) and
// exchanges with the other fragments' leaders over hidden point-to-point:
//   frag_allgather: linear gather to fragment 0, then a binomial-tree broadcast;
//   frag_bcast:     a binomial tree rooted at the root's fragment.
// Messages between fragments of one process are local deliveries (no MPI).
//
// Threading: the endpoint-level calls are collective over the endpoints of the
// communicator, each endpoint on its own thread (any thread per endpoint); they
// block.  The frag_* calls run inside local_round's fn only.
//
// Memory ordering: a hidden message's data is published by its request's completion
// (request.h); local_round hands contributions and results over under its mutex.
#ifndef EP_RUNTIME_EXCHANGE_H_
#define EP_RUNTIME_EXCHANGE_H_

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/comm.h"
#include "runtime/request.h"

namespace ep::runtime {

constexpr int kIntercommTagBase = -(1 << 29) - 16;
constexpr int kCreateGroupTagBase = -(1 << 30) - 16;

// The base tag of the next collective on `ep` (see above); advances ep->coll_seq.
int hidden_tag(Endpoint* ep);

// Blocking hidden point-to-point on ep's communicator (dest/source are peer ranks).
void send_hidden(Endpoint* ep, int dest, int tag, const std::string& data);
std::string recv_hidden(Endpoint* ep, int source, int tag);
// Send to `dest` and receive from `source` at once (no deadlock for large data).
std::string sendrecv_hidden(Endpoint* ep, int dest, int stag, const std::string& data, int source,
                            int rtag);

// The first part of a hidden message (see exchange.cc): its length and, when it is at
// most kInline bytes, the message itself.
struct HiddenHead {
  static constexpr size_t kInline = 248;
  uint64_t len = 0;
  char data[kInline];
};

// Nonblocking hidden messages on a *shadow* endpoint (CommShared::coll).  The
// constructors start the transfer (taking the shadow lock briefly); test() only
// looks (progress is the engine's), and is called by one thread at a time.
class HiddenSend {
 public:
  HiddenSend(Endpoint* shadow_ep, int dest, int tag, std::string data);
  // Sends *shared without copying it: it must outlive the send (until test() is true).
  HiddenSend(Endpoint* shadow_ep, int dest, int tag, const std::string* shared);
  ~HiddenSend();
  HiddenSend(const HiddenSend&) = delete;  // ~HiddenSend gives the data back (give_blob)
  HiddenSend& operator=(const HiddenSend&) = delete;
  bool test();

 private:
  HiddenHead head_;   // sent from here (must outlive reqs_[0])
  std::string data_;  // owned data (empty when shared)
  Request* reqs_[2] = {nullptr, nullptr};
};

class HiddenRecv {
 public:
  HiddenRecv(Endpoint* shadow_ep, int source, int tag);
  ~HiddenRecv();
  HiddenRecv(const HiddenRecv&) = delete;
  HiddenRecv& operator=(const HiddenRecv&) = delete;
  bool test();
  std::string& data() { return data_; }  // a take_blob string once test() is true

 private:
  Endpoint* ep_;
  int source_, tag_;
  HiddenHead head_;  // received here first
  bool have_len_ = false;
  std::string data_;
  Request* req_ = nullptr;
};

// Fragment leaders (run by local_round's fn; `c` is an intracommunicator).
// Returns every fragment's blob, by fragment index.
std::vector<std::string> frag_allgather(CommShared* c, int tag, std::string mine);
// The binomial tree over n fragments rooted at `root`: the parent of `me` (-1 at the
// root) and its children, in the order a broadcast sends to them.
void binomial_tree(int me, int root, int n, int* parent, std::vector<int>* children);
// Returns the blob of fragment `root_frag` (`mine` matters there only).
std::string frag_bcast(CommShared* c, int tag, int root_frag, std::string mine);

// Endpoint level: collective over the endpoints of ep's (intra)communicator.
// bcast: the root's `data`; `post` (optional) runs once per fragment on it.
using BcastPost = std::function<std::shared_ptr<void>(std::string& data)>;
std::shared_ptr<void> bcast(Endpoint* ep, int root, std::string data, const BcastPost& post);
std::string bcast(Endpoint* ep, int root, std::string data);
// Every endpoint's blob, by rank.
std::vector<std::string> allgather(Endpoint* ep, std::string mine);
// Returns when every endpoint of the communicator has entered.
void barrier(Endpoint* ep);

// Large blobs are recycled: a fresh multi-MiB string costs a page fault per 4 KiB and
// a zero fill on first touch, more than the copies that use it.  take_blob returns a
// string of `bytes` bytes with unspecified contents (a kept one with at least that
// capacity when there is one: resizing it does not reallocate, and fills only beyond
// its last size); give_blob offers one back (kept if its capacity is at least
// kMinBlob, within kBlobsKept strings).
// Thread-safe.
constexpr size_t kMinBlob = 64 * 1024;
constexpr size_t kBlobsKept = 8;
std::string take_blob(size_t bytes);
void give_blob(std::string&& blob);
// Frees the kept blobs (EP_Finalize).
void release_blobs();

// Small helpers for the byte blobs exchanged above.
class BlobWriter {
 public:
  template <class T>
  void put(const T& v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void put_bytes(const std::string& s) {
    put<uint64_t>(s.size());
    out_ += s;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class BlobReader {
 public:
  explicit BlobReader(const std::string& s) : s_(s) {}
  template <class T>
  T get() {
    T v{};
    if (pos_ + sizeof(T) <= s_.size()) std::memcpy(&v, s_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string get_bytes() {
    uint64_t n = get<uint64_t>();
    std::string v = pos_ <= s_.size() ? s_.substr(pos_, n) : std::string();
    pos_ += n;
    return v;
  }
  bool done() const { return pos_ >= s_.size(); }

 private:
  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace ep::runtime

#endif  // EP_RUNTIME_EXCHANGE_H_
