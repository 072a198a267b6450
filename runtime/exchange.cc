#include "runtime/exchange.h"

#include <algorithm>
#include <mutex>

#include "runtime/datatype.h"
#include "runtime/p2p.h"
#include "runtime/runtime.h"

namespace ep::runtime {
namespace {

TypeInfo byte_info() {
  TypeInfo ti;
  ti.size = 1;
  ti.extent = 1;
  ti.contiguous = true;
  return ti;
}

constexpr const char* kCall = "libep internal exchange";

}  // namespace

namespace {
std::mutex g_blob_mu;
std::vector<std::string>* g_blobs = new std::vector<std::string>;  // guarded; never freed
}  // namespace

std::string take_blob(size_t bytes) {
  if (bytes >= kMinBlob) {
    std::lock_guard<std::mutex> lock(g_blob_mu);
    // The smallest kept string that is large enough.
    size_t best = g_blobs->size();
    for (size_t i = 0; i < g_blobs->size(); ++i) {
      const size_t n = (*g_blobs)[i].capacity();
      if (n >= bytes && (best == g_blobs->size() || n < (*g_blobs)[best].capacity())) best = i;
    }
    if (best != g_blobs->size()) {
      std::string s = std::move((*g_blobs)[best]);
      g_blobs->erase(g_blobs->begin() + static_cast<std::ptrdiff_t>(best));
      s.resize(bytes);  // no reallocation; fills only beyond its last size
      return s;
    }
  }
  return std::string(bytes, '\0');
}

void give_blob(std::string&& blob) {
  if (blob.capacity() < kMinBlob) return;
  std::lock_guard<std::mutex> lock(g_blob_mu);
  if (g_blobs->size() == kBlobsKept) {  // replace the smallest, if this one is larger
    auto it = std::min_element(
        g_blobs->begin(), g_blobs->end(),
        [](const std::string& a, const std::string& b) { return a.capacity() < b.capacity(); });
    if (it->capacity() >= blob.capacity()) return;
    *it = std::move(blob);
    return;
  }
  g_blobs->push_back(std::move(blob));
}

void release_blobs() {
  std::lock_guard<std::mutex> lock(g_blob_mu);
  g_blobs->clear();
  g_blobs->shrink_to_fit();
}

int hidden_tag(Endpoint* ep) {
  uint32_t n = ep->coll_seq++ & ((1u << 27) - 1);
  return -4 - 4 * static_cast<int>(n);
}

// A hidden message is a head - its length (8 bytes) and, when it is at most kInline
// bytes, the message itself - and then, for a longer message, its bytes as a second
// message under the same tag (non-overtaking keeps them together).  The receiver
// posts ordinary receives of known size and waits on them (no probe polling): a head
// receive of kHeadBytes, which a shorter head fills partly, and the payload receive
// once the length is known.  Small messages - most collectives' blobs - thus cost one
// message, not two.
namespace {

// Shadow endpoints may be shared by several threads of one fragment (leaders of
// different exchanges); ShadowLock serializes the calls that touch the endpoint's
// state (starting sends, posting receives) - never a wait, which could deadlock.
// `head` must stay valid until reqs[0] completes.
void start_send(Endpoint* ep, int dest, int tag, const std::string& data, HiddenHead* head,
                Request** reqs) {
  ShadowLock lock(ep->comm);
  const TypeInfo ti = byte_info();
  head->len = data.size();
  const bool inline_data = data.size() <= HiddenHead::kInline;
  if (inline_data && !data.empty()) std::memcpy(head->data, data.data(), data.size());
  reqs[1] = nullptr;
  const int head_bytes = 8 + (inline_data ? static_cast<int>(data.size()) : 0);
  send(head, head_bytes, MPI_BYTE, ti, dest, tag, ep, SendMode::kStandard, &reqs[0], kCall);
  if (!inline_data) {
    send(data.data(), static_cast<int>(data.size()), MPI_BYTE, ti, dest, tag, ep,
         SendMode::kStandard, &reqs[1], kCall);
  }
}

// A head arrived: true (and *out filled) if it carried the whole message.
bool take_inline(const HiddenHead& head, std::string* out) {
  if (head.len > HiddenHead::kInline) return false;
  out->assign(head.data, static_cast<size_t>(head.len));
  return true;
}

void finish_requests(Request** reqs, int n) {
  for (int i = 0; i < n; ++i) {
    if (reqs[i] == nullptr) continue;
    request_wait(reqs[i]);
    request_unref(reqs[i]);
  }
}

// The shadow endpoint that carries ep's hidden traffic (its lock must be held).
Endpoint* shadow_of(Endpoint* ep) { return ep->comm->coll->local[ep->local_index].get(); }

void send_on_shadow(Endpoint* sep, int dest, int tag, const std::string& data) {
  HiddenHead head;
  Request* reqs[2];
  start_send(sep, dest, tag, data, &head, reqs);
  finish_requests(reqs, 2);
}

std::string recv_on_shadow(Endpoint* ep, int source, int tag) {
  const TypeInfo ti = byte_info();
  HiddenHead head;
  Request* r = nullptr;
  {
    ShadowLock lock(ep->comm);
    r = post_recv(&head, sizeof(head), MPI_BYTE, ti, source, tag, ep);
  }
  finish_requests(&r, 1);
  std::string out;
  if (take_inline(head, &out)) return out;
  out.resize(static_cast<size_t>(head.len));
  {
    ShadowLock lock(ep->comm);
    r = post_recv(out.data(), static_cast<int>(head.len), MPI_BYTE, ti, source, tag, ep);
  }
  finish_requests(&r, 1);
  return out;
}

}  // namespace

void send_hidden(Endpoint* ep, int dest, int tag, const std::string& data) {
  send_on_shadow(shadow_of(ep), dest, tag, data);
}

std::string recv_hidden(Endpoint* ep, int source, int tag) {
  return recv_on_shadow(shadow_of(ep), source, tag);
}

std::string sendrecv_hidden(Endpoint* ep, int dest, int stag, const std::string& data, int source,
                            int rtag) {
  Endpoint* sep = shadow_of(ep);
  HiddenHead head;
  Request* reqs[2];
  start_send(sep, dest, stag, data, &head, reqs);
  std::string out = recv_on_shadow(sep, source, rtag);
  finish_requests(reqs, 2);
  return out;
}

void binomial_tree(int me, int root, int n, int* parent, std::vector<int>* children) {
  const int vr = (me - root + n) % n;
  int mask = 1;
  *parent = -1;
  while (mask < n) {
    if (vr & mask) {
      *parent = (vr - mask + root) % n;
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (vr + mask < n) children->push_back((vr + mask + root) % n);
  }
}

std::string frag_bcast(CommShared* c, int tag, int root_frag, std::string mine) {
  Endpoint* lead = c->coll->local[0].get();
  int parent = -1;
  std::vector<int> children;
  binomial_tree(c->my_frag, root_frag, static_cast<int>(c->frag_leaders.size()), &parent,
                &children);
  if (parent >= 0) mine = recv_on_shadow(lead, c->frag_leaders[parent], tag);
  for (int ch : children) send_on_shadow(lead, c->frag_leaders[ch], tag, mine);
  return mine;
}

std::vector<std::string> frag_allgather(CommShared* c, int tag, std::string mine) {
  const int nfrag = static_cast<int>(c->frag_leaders.size());
  Endpoint* lead = c->coll->local[0].get();
  std::string all;
  if (c->my_frag == 0) {
    BlobWriter w;
    w.put_bytes(mine);
    for (int f = 1; f < nfrag; ++f) w.put_bytes(recv_on_shadow(lead, c->frag_leaders[f], tag));
    all = w.take();
  } else {
    send_on_shadow(lead, c->frag_leaders[0], tag, mine);
  }
  all = frag_bcast(c, tag - 1, 0, std::move(all));
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(nfrag));
  BlobReader rd(all);
  for (int f = 0; f < nfrag; ++f) out.push_back(rd.get_bytes());
  return out;
}

std::shared_ptr<void> bcast(Endpoint* ep, int root, std::string data, const BcastPost& post) {
  CommShared* c = ep->comm;
  const int tag = hidden_tag(ep);
  const int root_frag = c->frag_of[root];
  const int root_local = c->addr[root].local;
  return c->local_round(
      ep->local_index, std::move(data),
      [c, tag, root_frag, root_local, &post](std::vector<std::string>& contrib) {
        std::string blob;
        if (root_frag == c->my_frag) blob = std::move(contrib[root_local]);
        auto out = std::make_shared<std::string>(frag_bcast(c, tag, root_frag, std::move(blob)));
        if (post) return post(*out);
        return std::static_pointer_cast<void>(out);
      });
}

std::string bcast(Endpoint* ep, int root, std::string data) {
  return *std::static_pointer_cast<std::string>(bcast(ep, root, std::move(data), BcastPost()));
}

std::vector<std::string> allgather(Endpoint* ep, std::string mine) {
  CommShared* c = ep->comm;
  const int tag = hidden_tag(ep);
  auto all = std::static_pointer_cast<std::vector<std::string>>(
      c->local_round(ep->local_index, std::move(mine), [c, tag](std::vector<std::string>& contrib) {
        BlobWriter w;
        for (const std::string& s : contrib) w.put_bytes(s);
        std::vector<std::string> frags = frag_allgather(c, tag, w.take());
        // Fragment f's blob lists its endpoints by local index; addr[r].local is r's.
        std::vector<std::vector<std::string>> by_frag(frags.size());
        for (size_t f = 0; f < frags.size(); ++f) {
          BlobReader rd(frags[f]);
          while (!rd.done()) by_frag[f].push_back(rd.get_bytes());
        }
        auto out = std::make_shared<std::vector<std::string>>(static_cast<size_t>(c->size));
        for (int r = 0; r < c->size; ++r) {
          (*out)[r] = by_frag[c->frag_of[r]][c->addr[r].local];
        }
        return std::static_pointer_cast<void>(out);
      }));
  return *all;
}

void barrier(Endpoint* ep) {
  CommShared* c = ep->comm;
  const int tag = hidden_tag(ep);
  c->local_round(ep->local_index, std::string(), [c, tag](std::vector<std::string>&) {
    frag_allgather(c, tag, std::string());
    return std::shared_ptr<void>();
  });
}

HiddenSend::HiddenSend(Endpoint* sep, int dest, int tag, std::string data)
    : data_(std::move(data)) {
  start_send(sep, dest, tag, data_, &head_, reqs_);
}

HiddenSend::HiddenSend(Endpoint* sep, int dest, int tag, const std::string* shared) {
  start_send(sep, dest, tag, *shared, &head_, reqs_);
}

HiddenSend::~HiddenSend() {
  for (Request* r : reqs_) {
    if (r != nullptr) request_unref(r);
  }
  give_blob(std::move(data_));
}

bool HiddenSend::test() {
  for (Request* r : reqs_) {
    if (r != nullptr && !request_done(r)) return false;
  }
  return true;
}

HiddenRecv::HiddenRecv(Endpoint* sep, int source, int tag) : ep_(sep), source_(source), tag_(tag) {
  ShadowLock lock(ep_->comm);
  req_ = post_recv(&head_, sizeof(head_), MPI_BYTE, byte_info(), source_, tag_, ep_);
}

HiddenRecv::~HiddenRecv() {
  if (req_ != nullptr) request_unref(req_);
}

bool HiddenRecv::test() {
  if (req_ == nullptr) return true;
  if (!request_done(req_)) return false;
  request_unref(req_);
  req_ = nullptr;
  if (have_len_ || take_inline(head_, &data_)) return true;
  have_len_ = true;
  data_ = take_blob(static_cast<size_t>(head_.len));
  ShadowLock lock(ep_->comm);
  req_ = post_recv(data_.data(), static_cast<int>(head_.len), MPI_BYTE, byte_info(), source_, tag_,
                   ep_);
  return false;
}

}  // namespace ep::runtime
