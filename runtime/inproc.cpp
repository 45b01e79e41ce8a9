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

InprocFabric::InprocFabric(int ranks, bool push) : push_(push) {
  if (ranks < 1) throw InputError(fmt::format("InprocFabric: {} ranks; at least 1 is required", ranks));
  mailboxes_.reserve(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) mailboxes_.push_back(std::make_unique<Mailbox>());
  if (push)
    for (int r = 0; r < ranks; ++r) {
      auto b = std::make_unique<Board>();
      b->progress = std::make_unique<std::atomic<std::uint64_t>[]>(algo::kMaxChannels);
      boards_.push_back(std::move(b));
    }
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

void InprocTransport::enqueue(int peer, int channel, InprocFabric::Message&& message) {
  InprocFabric::Mailbox& m = mailbox(peer);
  {
    std::lock_guard<std::mutex> lock(m.mu);
    m.queues[queue_key(rank_, channel)].push_back(std::move(message));
    ++m.arrivals;
  }
  m.cv.notify_all();
}

Transport::Request InprocTransport::post_send(int peer, int channel, const void* data, std::size_t bytes) {
  InprocFabric::Mailbox& m = mailbox(peer);
  InprocFabric::Message message;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    if (!m.spare.empty()) {
      message.data = std::move(m.spare.back());
      m.spare.pop_back();
    }
  }
  // Copy outside the lock: a recycled buffer with enough capacity does not allocate.
  message.data.resize(bytes);
  message.bytes = bytes;
  if (bytes > 0) std::memcpy(message.data.data(), data, bytes);
  enqueue(peer, channel, std::move(message));
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

bool InprocTransport::take(int peer, int channel, std::size_t bytes, InprocFabric::Message& out, const std::byte*& at) {
  InprocFabric::Mailbox& m = mailbox(rank_);
  {
    std::lock_guard<std::mutex> lock(m.mu);
    auto it = m.queues.find(queue_key(peer, channel));
    if (it == m.queues.end() || it->second.empty()) return false;
    if (it->second.front().bytes != bytes)
      throw InputError(
          fmt::format("inproc: rank {} receives {} bytes from rank {} on channel {}, but the next message has {} bytes",
                      rank_, bytes, peer, channel, it->second.front().bytes));
    out = std::move(it->second.front());
    it->second.pop_front();
  }
  at = out.pushed ? out.pushed : out.data.data();
  return true;
}

void InprocTransport::give_back(InprocFabric::Message&& message) {
  if (message.pushed) return;
  InprocFabric::Mailbox& m = mailbox(rank_);
  std::lock_guard<std::mutex> lock(m.mu);
  m.spare.push_back(std::move(message.data));
}

bool InprocTransport::try_recv(int peer, int channel, void* dst, std::size_t bytes) {
  InprocFabric::Message message;
  const std::byte* at = nullptr;
  if (!take(peer, channel, bytes, message, at)) return false;
  if (bytes > 0 && at != dst) std::memcpy(dst, at, bytes);
  give_back(std::move(message));
  return true;
}

bool InprocTransport::test_recv_staged(Request r, const void* wanted, bool& landed) {
  landed = false;
  const PostedRecv& p = posted_.at(r, "inproc: test_recv_staged");
  InprocFabric::Message message;
  const std::byte* at = nullptr;
  if (!take(p.peer, p.channel, p.bytes, message, at)) return false;
  if (message.pushed != nullptr && at == wanted)
    landed = true;
  else if (p.bytes > 0 && at != p.dst)
    std::memcpy(p.dst, at, p.bytes);
  give_back(std::move(message));
  posted_.release(r);
  return true;
}

bool InprocTransport::test_recv_consume(Request r, Consume consume, void* context) {
  const PostedRecv& p = posted_.at(r, "inproc: test_recv_consume");
  InprocFabric::Message message;
  const std::byte* at = nullptr;
  if (!take(p.peer, p.channel, p.bytes, message, at)) return false;
  consume(context, at);
  give_back(std::move(message));
  posted_.release(r);
  return true;
}

// ---- push --------------------------------------------------------------------------------------

void InprocTransport::begin_run(std::uint64_t fingerprint, std::byte* const* buffers) {
  if (!fabric_.push_) return;
  InprocFabric::Board& b = *fabric_.boards_[static_cast<std::size_t>(rank_)];
  ++run_;
  fingerprint_ = fingerprint;
  b.fingerprint.store(fingerprint, std::memory_order_relaxed);
  for (int i = 0; i < 3; ++i) b.buffers[i].store(buffers[i], std::memory_order_relaxed);
  b.run.store(run_, std::memory_order_release);
}

void InprocTransport::note_progress(int channel, std::uint32_t done) {
  if (!fabric_.push_ || channel < 0 || channel >= algo::kMaxChannels) return;
  fabric_.boards_[static_cast<std::size_t>(rank_)]->progress[static_cast<std::size_t>(channel)].store(
      progress_word(run_, done), std::memory_order_release);
}

std::byte* InprocTransport::push_target(int peer, int channel, std::uint8_t buffer, std::size_t offset,
                                        std::size_t /*bytes*/, std::uint32_t gate) {
  if (!fabric_.push_ || peer < 0 || peer >= fabric_.ranks() || peer == rank_ || channel < 0 ||
      channel >= algo::kMaxChannels || buffer > 2)
    return nullptr;
  InprocFabric::Board& b = *fabric_.boards_[static_cast<std::size_t>(peer)];
  if (b.run.load(std::memory_order_acquire) != run_ || b.fingerprint.load(std::memory_order_relaxed) != fingerprint_)
    return nullptr;
  if (gate > 0 &&
      !passed_gate(b.progress[static_cast<std::size_t>(channel)].load(std::memory_order_acquire), run_, gate))
    return nullptr;
  std::byte* base = b.buffers[buffer].load(std::memory_order_relaxed);
  return base ? base + offset : nullptr;
}

void InprocTransport::post_pushed(int peer, int channel, const std::byte* target, std::size_t bytes) {
  InprocFabric::Message message;
  message.pushed = target;
  message.bytes = bytes;
  enqueue(peer, channel, std::move(message));
  fabric_.pushed_.fetch_add(1);
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
