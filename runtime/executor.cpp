#include "runtime/executor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "common/errors.hpp"
#include "runtime/reducer.hpp"

namespace topocoll::runtime {

using algo::BufferId;
using algo::Chunk;
using algo::Collective;
using algo::Op;
using algo::OpKind;

void Transport::wait(std::chrono::steady_clock::time_point /*deadline*/) { std::this_thread::yield(); }

namespace {

// One operation with its chunks resolved to memory (setup), ready to run (hot path).
struct BoundOp {
  const Op* op = nullptr;
  std::size_t index = 0;          // in the rank's program
  std::byte* src = nullptr;       // Send, Copy, Reduce
  std::byte* dst = nullptr;       // Recv, RecvReduce, Copy, Reduce
  std::size_t count = 0;          // elements
  std::size_t bytes = 0;
  bool staged = false;            // Reduce whose src partially overlaps dst: reduce from a copy
};

struct ChannelState {
  std::vector<std::size_t> ops;  // indices into bound_, in program order
  std::size_t next = 0;
  bool done() const { return next == ops.size(); }
};

bool overlap(const std::byte* a, const std::byte* b, std::size_t bytes) { return a < b + bytes && b < a + bytes; }

class RankExecutor {
 public:
  RankExecutor(const algo::Schedule& s, int rank, const Buffers& b, Transport& t, const ExecOptions& o)
      : s_(s), rank_(rank), transport_(t), options_(o), elem_(algo::size_of(s.args().dtype)) {
    if (rank < 0 || rank >= s.num_ranks())
      throw InputError(fmt::format("execute: rank {} is not a rank of schedule '{}' (0..{})", rank, s.name(), s.num_ranks() - 1));
    base_[0] = static_cast<std::byte*>(b.input);
    base_[1] = static_cast<std::byte*>(b.output);
    base_[2] = static_cast<std::byte*>(b.scratch);
    bind();
    // The one receive callback, bound once: it finishes the receive in current_.
    deliver_ = [this](const void* data) { finish_recv(*current_, data); };
  }
  RankExecutor(const RankExecutor&) = delete;  // deliver_ captures this
  RankExecutor& operator=(const RankExecutor&) = delete;

  void run() {
    std::size_t unfinished = 0;
    for (const ChannelState& ch : channels_) unfinished += ch.done() ? 0 : 1;
    auto last_progress = std::chrono::steady_clock::now();
    // Round-robin over the channels: each sweep runs every unfinished channel until it finishes
    // or blocks on a receive; a sweep that completes no operation waits for a message (or the
    // deadline of the progress timeout).
    while (unfinished > 0) {
      bool progressed = false;
      for (ChannelState& ch : channels_) {
        if (ch.done()) continue;
        while (!ch.done() && step(bound_[ch.ops[ch.next]])) {
          ++ch.next;
          progressed = true;
        }
        if (ch.done()) --unfinished;
      }
      const auto now = std::chrono::steady_clock::now();
      if (progressed) {
        last_progress = now;
        continue;
      }
      const auto deadline = last_progress + options_.progress_timeout;
      if (now >= deadline) throw_timeout();
      transport_.wait(deadline);
    }
    finish();
  }

 private:
  const algo::Schedule& s_;
  const int rank_;
  Transport& transport_;
  const ExecOptions& options_;
  const std::size_t elem_;
  std::byte* base_[3] = {};
  algo::Program program_;
  std::vector<BoundOp> bound_;
  std::vector<ChannelState> channels_;
  std::vector<std::byte> staging_;  // for staged reduces, sized for the largest in setup
  const BoundOp* current_ = nullptr;
  std::function<void(const void*)> deliver_;

  std::string where(const BoundOp& b) const {
    return fmt::format("rank {} op {} ({})", rank_, b.index, algo::describe(*b.op));
  }

  std::byte* resolve(const BoundOp& b, const Chunk& c) const {
    const std::uint64_t size = s_.buffer_count(c.buffer);
    if (c.end() > size || c.end() < c.offset)
      throw InputError(fmt::format("execute: {}: {}[{}:{}] is outside the {} buffer of {} elements", where(b),
                                   algo::to_string(c.buffer), c.offset, c.end(), algo::to_string(c.buffer), size));
    if (c.count == 0) return nullptr;
    std::byte* base = base_[static_cast<int>(c.buffer)];
    if (base == nullptr)
      throw InputError(fmt::format("execute: {}: the {} buffer is null but the chunk needs {} elements", where(b),
                                   algo::to_string(c.buffer), c.count));
    return base + c.offset * elem_;
  }

  // Setup: fetch the program, check every operation against the schedule's shape, resolve its
  // chunks to pointers and split the operations per channel.
  void bind() {
    program_ = s_.program(rank_);
    bound_.resize(program_.size());
    channels_.resize(static_cast<std::size_t>(std::max(s_.num_channels(), 0)));
    std::size_t staging_bytes = 0;
    // One pass over the program: validate and resolve each operation.
    for (std::size_t i = 0; i < program_.size(); ++i) {
      const Op& op = program_[i];
      BoundOp& b = bound_[i];
      b.op = &op;
      b.index = i;
      if (op.channel >= channels_.size())
        throw InputError(fmt::format("execute: {}: channel {} but the schedule has {} channels", where(b), op.channel,
                                     s_.num_channels()));
      const bool comm = op.kind == OpKind::Send || op.kind == OpKind::Recv || op.kind == OpKind::RecvReduce;
      if (comm && (op.peer < 0 || op.peer >= s_.num_ranks() || op.peer == rank_))
        throw InputError(fmt::format("execute: {}: peer {} is not another rank of 0..{}", where(b), op.peer,
                                     s_.num_ranks() - 1));
      if ((op.kind == OpKind::Copy || op.kind == OpKind::Reduce) && op.src.count != op.dst.count)
        throw InputError(fmt::format("execute: {}: {} elements into {}", where(b), op.src.count, op.dst.count));
      if (op.kind == OpKind::Send || op.kind == OpKind::Copy || op.kind == OpKind::Reduce) b.src = resolve(b, op.src);
      if (op.kind != OpKind::Send) b.dst = resolve(b, op.dst);
      b.count = static_cast<std::size_t>(op.count());
      b.bytes = b.count * elem_;
      // The reducer takes identical or disjoint operands; a partial overlap reduces from a copy.
      b.staged = op.kind == OpKind::Reduce && b.bytes > 0 && b.src != b.dst && overlap(b.src, b.dst, b.bytes);
      if (b.staged) staging_bytes = std::max(staging_bytes, b.bytes);
      channels_[op.channel].ops.push_back(i);
    }
    staging_.resize(staging_bytes);
  }

  // Runs one operation; false when it is a receive whose message has not arrived.
  bool step(const BoundOp& b) {
    const algo::CollectiveArgs& a = s_.args();
    const Op& op = *b.op;
    switch (op.kind) {
      case OpKind::Send:
        transport_.post_send(op.peer, op.channel, b.src, b.bytes);
        return true;
      case OpKind::Recv:
      case OpKind::RecvReduce: {
        current_ = &b;
        try {
          return transport_.try_recv(op.peer, op.channel, b.bytes, deliver_);
        } catch (const InputError& e) {
          throw InputError(fmt::format("execute: {}: {}", where(b), e.what()));
        }
      }
      case OpKind::Copy:
        if (b.bytes > 0 && b.src != b.dst) std::memmove(b.dst, b.src, b.bytes);
        return true;
      case OpKind::Reduce:
        if (b.staged) {
          std::memcpy(staging_.data(), b.src, b.bytes);
          reduce(a.dtype, a.op, b.dst, staging_.data(), b.count);
        } else if (b.count > 0) {
          reduce(a.dtype, a.op, b.dst, b.src, b.count);
        }
        return true;
    }
    return true;
  }

  void finish_recv(const BoundOp& b, const void* data) {
    if (b.bytes == 0) return;
    if (b.op->kind == OpKind::Recv) std::memcpy(b.dst, data, b.bytes);
    else reduce(s_.args().dtype, s_.args().op, b.dst, data, b.count);
  }

  [[noreturn]] void throw_timeout() const {
    // Report the first channel that waits; count the others.
    const BoundOp* first = nullptr;
    std::size_t waiting = 0;
    for (const ChannelState& ch : channels_) {
      if (ch.done()) continue;
      ++waiting;
      if (first == nullptr) first = &bound_[ch.ops[ch.next]];
    }
    TOPOCOLL_ASSERT(first != nullptr, "timeout with every channel finished");
    const Op& op = *first->op;
    std::string others = waiting > 1 ? fmt::format(" ({} other channels wait too)", waiting - 1) : "";
    throw PeerTimeout(fmt::format("rank {}: no progress for {} ms: channel {} op {} ({}) waits for peer {}{}", rank_,
                                  options_.progress_timeout.count(), op.channel, first->index, algo::describe(op), op.peer,
                                  others),
                      rank_, op.peer, op.channel, first->index);
  }

  // Avg: divide what was accumulated as a sum by the rank count (see executor.hpp).
  void finish() {
    const algo::CollectiveArgs& a = s_.args();
    if (a.op != algo::ReduceOp::Avg || a.count == 0) return;
    const bool reduces = a.collective == Collective::AllReduce || a.collective == Collective::ReduceScatter ||
                         (a.collective == Collective::Reduce && rank_ == a.root);
    if (!reduces) return;
    if (base_[1] == nullptr) throw InputError(fmt::format("execute: rank {}: the output buffer is null", rank_));
    finish_avg(a.dtype, base_[1], static_cast<std::size_t>(a.output_count()), a.ranks);
  }
};

}  // namespace

void execute(const algo::Schedule& s, int rank, const Buffers& b, Transport& t, const ExecOptions& o) {
  RankExecutor(s, rank, b, t, o).run();
}

}  // namespace topocoll::runtime
