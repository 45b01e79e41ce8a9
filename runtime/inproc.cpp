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

// ---- switch ops ----------------------------------------------------------------------------------

InprocFabric::SwitchQueue& InprocFabric::switch_queue(const SwitchMember& m, int channel) {
  auto [it, added] = switches_.try_emplace(queue_key(m.group, channel));
  if (added) {
    it->second.given.assign(static_cast<std::size_t>(m.contributors), 0);
    it->second.taken.assign(static_cast<std::size_t>(m.receivers), 0);
  }
  return it->second;
}

void InprocTransport::wake_all() const {
  for (auto& m : fabric_.mailboxes_) {
    {
      std::lock_guard<std::mutex> lock(m->mu);
      ++m->arrivals;
    }
    m->cv.notify_all();
  }
}

void InprocTransport::switch_send(const SwitchMember& m, int channel, const void* data, std::size_t bytes) {
  bool complete = false;
  {
    std::lock_guard<std::mutex> lock(fabric_.switch_mu_);
    InprocFabric::SwitchQueue& q = fabric_.switch_queue(m, channel);
    const std::uint64_t n = q.given[static_cast<std::size_t>(m.position)]++;
    while (q.base + q.live.size() <= n) q.live.emplace_back();
    InprocFabric::SwitchInstance& inst = q.live[static_cast<std::size_t>(n - q.base)];
    if (inst.parts.empty()) inst.parts.resize(static_cast<std::size_t>(m.contributors));
    for (const auto& part : inst.parts)
      if (inst.given > 0 && !part.empty() && part.size() != bytes)
        throw InputError(
            fmt::format("inproc: rank {} gives {} bytes to instance {} of switch group {} on channel {}, "
                        "but another contributor gave {}",
                        rank_, bytes, n, m.group, channel, part.size()));
    auto& mine = inst.parts[static_cast<std::size_t>(m.position)];
    mine.resize(bytes);
    if (bytes > 0) std::memcpy(mine.data(), data, bytes);
    complete = ++inst.given == static_cast<std::size_t>(m.contributors);
  }
  if (complete) wake_all();
}

bool InprocTransport::switch_recv(const SwitchMember& m, int channel, std::size_t bytes,
                                  const std::function<void(std::span<const std::byte* const>)>& consume) {
  std::vector<const std::byte*> parts;
  std::uint64_t n = 0;
  {
    std::lock_guard<std::mutex> lock(fabric_.switch_mu_);
    InprocFabric::SwitchQueue& q = fabric_.switch_queue(m, channel);
    n = q.taken[static_cast<std::size_t>(m.position)];
    if (n >= q.base + q.live.size()) return false;
    const InprocFabric::SwitchInstance& inst = q.live[static_cast<std::size_t>(n - q.base)];
    if (inst.given < static_cast<std::size_t>(m.contributors)) return false;
    for (const auto& part : inst.parts) {
      if (part.size() != bytes)
        throw InputError(
            fmt::format("inproc: rank {} receives {} bytes from instance {} of switch group {} on "
                        "channel {}, but its parts have {} bytes",
                        rank_, bytes, n, m.group, channel, part.size()));
      parts.push_back(part.data());
    }
  }
  // The instance stays until every receiver has taken it: its parts are not touched meanwhile.
  consume(parts);
  std::lock_guard<std::mutex> lock(fabric_.switch_mu_);
  InprocFabric::SwitchQueue& q = fabric_.switch_queue(m, channel);
  ++q.taken[static_cast<std::size_t>(m.position)];
  ++q.live[static_cast<std::size_t>(n - q.base)].taken;
  while (!q.live.empty() && q.live.front().taken == static_cast<std::size_t>(m.receivers)) {
    q.live.pop_front();
    ++q.base;
  }
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
