#include "runtime/inproc.hpp"

#include <fmt/format.h>

#include <cstring>

#include "common/errors.hpp"

namespace topocoll::runtime {

namespace {
std::uint64_t queue_key(int src, int channel) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(src)) << 32) | static_cast<std::uint32_t>(channel);
}
}  // namespace

// ---- the fabric and its transport ------------------------------------------------------------

InprocFabric::InprocFabric(int ranks) {
  if (ranks < 1) throw InputError(fmt::format("InprocFabric: {} ranks; at least 1 is required", ranks));
  mailboxes_.reserve(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) mailboxes_.push_back(std::make_unique<Mailbox>());
}

void InprocFabric::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(abort_mu_);
    if (aborted_.load()) return;
    abort_reason_ = reason;
    aborted_.store(true);
  }
  // Lock each mailbox before notifying, so that a rank between its check and its sleep cannot
  // miss the wake-up.
  for (auto& m : mailboxes_) {
    { std::lock_guard<std::mutex> lock(m->mu); }
    m->cv.notify_all();
  }
}

InprocTransport::InprocTransport(InprocFabric& fabric, int rank) : fabric_(fabric), rank_(rank) {
  if (rank < 0 || rank >= fabric.ranks())
    throw InputError(
        fmt::format("InprocTransport: rank {} is not a rank of the fabric (0..{})", rank, fabric.ranks() - 1));
}

InprocFabric::Mailbox& InprocTransport::mailbox(int rank) const {
  if (rank < 0 || rank >= fabric_.ranks())
    throw InputError(
        fmt::format("inproc: rank {}: peer {} is not a rank of the fabric (0..{})", rank_, rank, fabric_.ranks() - 1));
  return *fabric_.mailboxes_[static_cast<std::size_t>(rank)];
}

Transport::Request InprocTransport::post_send(int peer, int channel, const void* data, std::size_t bytes) {
  InprocFabric::Mailbox& m = mailbox(peer);
  std::vector<std::byte> message;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    if (!m.spare.empty()) {
      message = std::move(m.spare.back());
      m.spare.pop_back();
    }
  }
  // Copy outside the lock: a recycled buffer with enough capacity does not allocate.
  message.resize(bytes);
  if (bytes > 0) std::memcpy(message.data(), data, bytes);
  {
    std::lock_guard<std::mutex> lock(m.mu);
    m.queues[queue_key(rank_, channel)].push_back(std::move(message));
    ++m.arrivals;
  }
  m.cv.notify_all();
  return kDone;
}

bool InprocTransport::test_send(Request /*r*/) {
  return true;
}  // sends complete when posted

Transport::Request InprocTransport::post_recv(int peer, int channel, void* dst, std::size_t bytes) {
  mailbox(peer);  // checks the peer
  return posted_.acquire(PostedRecv{peer, channel, dst, bytes});
}

bool InprocTransport::test_recv(Request r) {
  const PostedRecv& p = posted_.at(r, "inproc: test_recv");
  if (!try_recv(p.peer, p.channel, p.dst, p.bytes)) return false;
  posted_.release(r);
  return true;
}

bool InprocTransport::try_recv(int peer, int channel, void* dst, std::size_t bytes) {
  InprocFabric::Mailbox& m = mailbox(rank_);
  std::vector<std::byte> message;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    auto it = m.queues.find(queue_key(peer, channel));
    if (it == m.queues.end() || it->second.empty()) return false;
    if (it->second.front().size() != bytes)
      throw InputError(
          fmt::format("inproc: rank {} receives {} bytes from rank {} on channel {}, but the next message has {} bytes",
                      rank_, bytes, peer, channel, it->second.front().size()));
    message = std::move(it->second.front());
    it->second.pop_front();
  }
  if (bytes > 0) std::memcpy(dst, message.data(), bytes);
  std::lock_guard<std::mutex> lock(m.mu);
  m.spare.push_back(std::move(message));
  return true;
}

void InprocTransport::wait(std::chrono::steady_clock::time_point deadline) {
  InprocFabric::Mailbox& m = mailbox(rank_);
  std::unique_lock<std::mutex> lock(m.mu);
  // Sleep until a message arrives after the last return (so none is missed between the caller's
  // failed receives and this call), an abort, or the deadline.
  m.cv.wait_until(lock, deadline, [&] { return m.arrivals != seen_arrivals_ || fabric_.aborted_.load(); });
  seen_arrivals_ = m.arrivals;
  if (fabric_.aborted_.load()) {
    lock.unlock();
    std::lock_guard<std::mutex> reason_lock(fabric_.abort_mu_);
    throw Aborted(fmt::format("rank {}: aborted: {}", rank_, fabric_.abort_reason_));
  }
}

}  // namespace topocoll::runtime
