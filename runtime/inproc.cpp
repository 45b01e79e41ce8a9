#include "runtime/inproc.hpp"

#include <fmt/format.h>

#include <cstring>
#include <exception>
#include <thread>

#include "common/errors.hpp"
#include "runtime/test_data.hpp"

namespace topocoll::runtime {

using algo::Collective;

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

// ---- the runner -------------------------------------------------------------------------------

namespace {

constexpr std::byte kOutputPoison{0xA5};
constexpr std::byte kScratchPoison{0x5A};

// The first element (global index) of rank r's input as test_data numbers it.
std::uint64_t input_offset(const algo::CollectiveArgs& a, int r) {
  return a.collective == Collective::AllGather ? static_cast<std::uint64_t>(r) * a.count : 0;
}

// One rank's memory. In place, one allocation holds both input and output, aliased as NCCL's
// in-place calls do (executor.hpp); `buffers` points into it.
struct RankMemory {
  std::vector<std::byte> input, output, scratch;
  Buffers buffers;
  std::size_t output_bytes = 0;
};

RankMemory prepare_rank(const algo::Schedule& s, int r, bool in_place) {
  const algo::CollectiveArgs& a = s.args();
  const std::size_t elem = algo::size_of(a.dtype);
  const std::size_t in_n = static_cast<std::size_t>(a.input_count()),
                    out_n = static_cast<std::size_t>(a.output_count());
  const std::size_t block = static_cast<std::size_t>(a.count) * static_cast<std::size_t>(r) * elem;
  RankMemory m;
  m.output_bytes = out_n * elem;
  m.scratch.assign(static_cast<std::size_t>(s.scratch_count()) * elem, kScratchPoison);
  m.buffers.scratch = m.scratch.data();
  if (!in_place) {
    m.input.resize(in_n * elem);
    fill_input(a.dtype, a.op, r, a.ranks, input_offset(a, r), m.input.data(), in_n);
    m.output.assign(out_n * elem, kOutputPoison);
    m.buffers.input = m.input.data();
    m.buffers.output = m.output.data();
    return m;
  }
  switch (a.collective) {
    case Collective::ReduceScatter:  // the output is block r of the input
      m.input.resize(in_n * elem);
      fill_input(a.dtype, a.op, r, a.ranks, 0, m.input.data(), in_n);
      m.buffers.input = m.input.data();
      m.buffers.output = m.input.data() + block;
      break;
    case Collective::AllGather:  // the input is block r of the output
      m.output.assign(out_n * elem, kOutputPoison);
      fill_input(a.dtype, a.op, r, a.ranks, input_offset(a, r), m.output.data() + block, in_n);
      m.buffers.output = m.output.data();
      m.buffers.input = m.output.data() + block;
      break;
    default:  // allreduce, broadcast, reduce: one buffer
      m.output.resize(out_n * elem);
      fill_input(a.dtype, a.op, r, a.ranks, 0, m.output.data(), in_n);
      m.buffers.input = m.buffers.output = m.output.data();
      break;
  }
  return m;
}

}  // namespace

RunResult run_inproc(const algo::Schedule& s, bool in_place, const ExecOptions& o) {
  const int p = s.num_ranks();
  std::vector<RankMemory> memory;
  memory.reserve(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) memory.push_back(prepare_rank(s, r, in_place));

  InprocFabric fabric(p);
  std::mutex error_mu;
  std::exception_ptr first_error;
  auto record = [&](std::exception_ptr e, const std::string& who) {
    {
      std::lock_guard<std::mutex> lock(error_mu);
      if (!first_error) first_error = std::move(e);
    }
    fabric.abort(who + " failed");
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(p));
  try {
    // One thread per rank; a rank's exception is recorded (the first wins) and aborts the others.
    for (int r = 0; r < p; ++r)
      threads.emplace_back([&, r] {
        try {
          InprocTransport transport(fabric, r);
          execute(s, r, memory[static_cast<std::size_t>(r)].buffers, transport, o);
        } catch (...) {
          record(std::current_exception(), fmt::format("rank {}", r));
        }
      });
  } catch (...) {  // a thread could not start: stop the ones that did
    record(std::current_exception(), "starting the rank threads");
  }
  for (std::thread& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);

  RunResult result;
  result.outputs.reserve(static_cast<std::size_t>(p));
  for (const RankMemory& m : memory) {
    const std::byte* out = static_cast<const std::byte*>(m.buffers.output);
    result.outputs.emplace_back(out, out + m.output_bytes);
  }
  return result;
}

std::size_t count_wrong_outputs(const algo::Schedule& s, const RunResult& r) {
  const algo::CollectiveArgs& a = s.args();
  const std::size_t elem = algo::size_of(a.dtype);
  const std::size_t n = static_cast<std::size_t>(a.count), out_n = static_cast<std::size_t>(a.output_count());
  if (r.outputs.size() != static_cast<std::size_t>(a.ranks))
    throw InputError(fmt::format("count_wrong_outputs: {} outputs for {} ranks", r.outputs.size(), a.ranks));
  std::vector<std::byte> expected(out_n * elem);
  std::size_t wrong = 0;
  // Each rank's output against its closed-form expectation.
  for (int rank = 0; rank < a.ranks; ++rank) {
    const std::vector<std::byte>& got = r.outputs[static_cast<std::size_t>(rank)];
    if (got.size() != out_n * elem)
      throw InputError(
          fmt::format("count_wrong_outputs: rank {} has {} output bytes, expected {}", rank, got.size(), out_n * elem));
    switch (a.collective) {
      case Collective::AllReduce:
        fill_expected(a.dtype, a.op, a.ranks, 0, expected.data(), n);
        break;
      case Collective::ReduceScatter:
        fill_expected(a.dtype, a.op, a.ranks, static_cast<std::uint64_t>(rank) * a.count, expected.data(), n);
        break;
      case Collective::AllGather:
        // Block j is rank j's input, numbered from j * count.
        for (int j = 0; j < a.ranks; ++j)
          fill_input(a.dtype, a.op, j, a.ranks, input_offset(a, j),
                     expected.data() + static_cast<std::size_t>(j) * n * elem, n);
        break;
      case Collective::Broadcast:
        fill_input(a.dtype, a.op, a.root, a.ranks, 0, expected.data(), n);
        break;
      case Collective::Reduce:
        if (rank != a.root) continue;
        fill_expected(a.dtype, a.op, a.ranks, 0, expected.data(), n);
        break;
    }
    wrong += count_wrong(a.dtype, got.data(), expected.data(), out_n);
  }
  return wrong;
}

}  // namespace topocoll::runtime
