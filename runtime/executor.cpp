#include "runtime/executor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>
#include <tuple>

#include "algorithms/ir/program_index.hpp"
#include "common/errors.hpp"

namespace topocoll::runtime {

using algo::BufferId;
using algo::Chunk;
using algo::Collective;
using algo::Op;
using algo::OpKind;

namespace {

// Whether a program may have a push candidate (runtime/push_plan.hpp): a send of exactly what a
// reducing receive earlier on its channel wrote. The cheap test before the analysis.
bool may_push(const std::vector<BoundOp>& ops) {
  std::set<std::tuple<int, std::uint8_t, std::size_t, std::size_t>> results;  // (channel, buffer, offset, bytes)
  for (const BoundOp& b : ops) {
    if ((b.kind == OpKind::RecvReduce || b.kind == OpKind::RecvReduceCopy) && b.bytes > 0)
      results.insert({b.channel, b.dst_buffer, b.dst_offset, b.bytes});
    else if (b.kind == OpKind::Send && results.count({b.channel, b.src_buffer, b.src_offset, b.bytes}))
      return true;
  }
  return false;
}

// The last-level cache this process shares, as sysfs gives its size (cpu0's index3, else index2:
// one instance, where sysconf may give the sum over a package's); 32 MiB where neither says.
std::size_t last_level_cache() {
  static const std::size_t bytes = [] {
    for (const char* path :
         {"/sys/devices/system/cpu/cpu0/cache/index3/size", "/sys/devices/system/cpu/cpu0/cache/index2/size"}) {
      std::FILE* f = std::fopen(path, "r");
      if (f == nullptr) continue;
      unsigned long long v = 0;
      char unit = 0;
      const int n = std::fscanf(f, "%llu%c", &v, &unit);
      std::fclose(f);
      if (n >= 1 && v > 0) return static_cast<std::size_t>(v) << (unit == 'K' ? 10 : unit == 'M' ? 20 : 0);
    }
    return std::size_t{32} << 20;
  }();
  return bytes;
}

// 64-bit FNV-1a.
std::uint64_t fnv(std::uint64_t h, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

}  // namespace

// ---- setup ------------------------------------------------------------------------------------

std::string Plan::where(std::size_t index) const {
  return fmt::format("rank {} op {} ({})", rank_, index, algo::describe(program_[index]));
}

// Fetches the program and checks every operation against the schedule's shape (ProgramIndex),
// resolves its chunks to (buffer, byte offset), splits the operations per channel and sizes the
// staging.
Plan::Plan(const algo::Schedule& s, int rank, MemorySpace& memory, SwitchOps switch_ops)
    : args_(s.args()), name_(s.name()), rank_(rank), elem_(algo::size_of(s.args().dtype)), memory_(&memory) {
  if (switch_ops == SwitchOps::Refuse)
    refuse_switch_ops(s, "the point-to-point executor (the MPI, UCX and device runtimes)");
  if (rank < 0 || rank >= s.num_ranks())
    throw InputError(
        fmt::format("execute: rank {} is not a rank of schedule '{}' (0..{})", rank, s.name(), s.num_ranks() - 1));
  algo::ProgramIndex index(s, rank);
  if (s.uses_switch()) {
    switch_of_.resize(index.size());
    for (std::size_t i = 0; i < index.size(); ++i) {
      const Op& op = index.op(i);
      if (!op.is_switch()) continue;
      const algo::SwitchGroup& g = s.switch_groups()[static_cast<std::size_t>(op.peer)];
      const int position = op.kind == OpKind::SwitchSend ? s.contributor_index(op.peer, rank)
                                                         : s.receiver_index(op.peer, rank);  // checked: a member
      switch_of_[i] = SwitchMember{op.peer, position, static_cast<int>(g.contributors.size()),
                                   static_cast<int>(g.receivers.size())};
    }
  }
  channels_.resize(static_cast<std::size_t>(index.num_channels()));
  for (std::size_t c = 0; c < channels_.size(); ++c) {
    const auto ops = index.channel(static_cast<int>(c));
    channels_[c].ops.assign(ops.begin(), ops.end());
  }
  program_ = index.release_program();
  ops_ = bind_program(program_, elem_);
  needs_ = buffer_needs(ops_);
  std::vector<std::size_t> recv_bytes(channels_.size(), 0);
  for (const BoundOp& b : ops_)
    if (algo::is_receive(b.kind))
      recv_bytes[static_cast<std::size_t>(b.channel)] =
          std::max(recv_bytes[static_cast<std::size_t>(b.channel)], b.bytes);
  // One receive slice per channel (a channel has one receive posted at a time), each aligned to
  // 64 bytes so the reducer's loads stay aligned.
  std::size_t staging = 0;
  for (std::size_t c = 0; c < channels_.size(); ++c) {
    channels_[c].staging_offset = staging;
    staging += (recv_bytes[c] + 63) / 64 * 64;
  }
  recv_staging_ = SpaceBuffer(memory, staging);
  // Push: the tables of both placements, when some send may be fused (push_plan.hpp), each with
  // its reducing receives' fused sends (CSR, in channel order), and the fingerprint every rank
  // computes alike (the schedule's name, arguments and channels).
  if (may_push(ops_)) {
    std::size_t longest = 0;
    for (int placement = 0; placement < 2; ++placement) {
      push_[placement] = push_targets(s, rank, placement == 1);
      std::vector<std::uint32_t> per(ops_.size() + 1, 0);
      for (const PushTarget& p : push_[placement])
        if (p.ok) ++per[p.fuse + 1];
      for (std::size_t i = 0; i < ops_.size(); ++i) {
        longest = std::max<std::size_t>(longest, per[i + 1]);
        per[i + 1] += per[i];
      }
      std::vector<std::uint32_t> list(per.back()), fill(per.begin(), per.end() - 1);
      for (const Channel& ch : channels_)  // channel order, so each receive's sends are in order
        for (const std::uint32_t i : ch.ops)
          if (push_[placement][i].ok) list[fill[push_[placement][i].fuse]++] = i;
      fused_begin_[placement] = std::move(per);
      fused_[placement] = std::move(list);
    }
    pushes_.reserve(longest);
    pushed_to_.assign(ops_.size(), nullptr);
    push_tile_ = SpaceBuffer(memory, kPushTile);
  }
  std::uint64_t h = fnv(1469598103934665603ull, name_.data(), name_.size());
  const std::uint64_t shape[] = {static_cast<std::uint64_t>(args_.collective), static_cast<std::uint64_t>(args_.dtype),
                                 static_cast<std::uint64_t>(args_.op),         args_.count,
                                 static_cast<std::uint64_t>(args_.ranks),      static_cast<std::uint64_t>(args_.root),
                                 static_cast<std::uint64_t>(s.num_channels())};
  fingerprint_ = fnv(h, shape, sizeof(shape)) & ~std::uint64_t{3};  // the low bits: the placement
  window_.resize(static_cast<std::size_t>(
      std::count_if(ops_.begin(), ops_.end(), [](const BoundOp& b) { return b.kind == OpKind::Send; })));
}

// ---- run --------------------------------------------------------------------------------------

void Plan::run(const Buffers& buffers, Transport& t, const ExecOptions& o) {
  start(buffers, t, o);
  wait();
}

void Plan::start(const Buffers& buffers, Transport& t, const ExecOptions& o) {
  if (running_)
    throw InputError(fmt::format("execute: {} on rank {}: started while its previous run is unfinished", name_, rank_));
  base_[0] = static_cast<std::byte*>(buffers.input);
  base_[1] = static_cast<std::byte*>(buffers.output);
  base_[2] = static_cast<std::byte*>(buffers.scratch);
  base_[kNoBuffer] = nullptr;
  if (const int b = needs_.first_null(base_); b >= 0) {
    const std::uint32_t first = needs_.first_user[b];
    throw InputError(fmt::format("execute: {}: the {} buffer is null but the chunk needs {} elements", where(first),
                                 algo::to_string(static_cast<BufferId>(b)), program_[first].count()));
  }
  unfinished_ = 0;
  for (Channel& ch : channels_) {
    ch.next = 0;
    ch.posted = false;
    ch.request = Transport::kDone;
    ch.blocked_on = -1;
    unfinished_ += ch.done() ? 0 : 1;
  }
  in_flight_ = 0;
  // Push: announce the run (every rank does, whether it pushes or not: its peers may push to it)
  // with the placement in the fingerprint; this rank's table is the placement's.
  push_run_ = -1;
  if (t.pushes()) {
    const std::size_t elem = elem_;
    const std::byte* in = base_[0];
    const std::byte* out = base_[1];
    const std::size_t in_bytes = args_.input_count() * elem, out_bytes = args_.output_count() * elem;
    const std::size_t shift = static_cast<std::size_t>(rank_) * args_.count * elem;
    int placement = 2;  // neither: no push
    if (in == nullptr || out == nullptr || !overlaps(in, in_bytes, out, out_bytes))
      placement = 0;
    else if ((args_.collective == Collective::ReduceScatter && out == in + shift) ||
             (args_.collective == Collective::AllGather && in == out + shift) ||
             (args_.collective != Collective::ReduceScatter && args_.collective != Collective::AllGather && in == out))
      placement = 1;
    if (placement < 2 && !push_[placement].empty()) {
      push_run_ = placement;
      stream_ = (placement == 0 ? in_bytes + out_bytes : std::max(in_bytes, out_bytes)) > last_level_cache();
      std::fill(pushed_to_.begin(), pushed_to_.end(), nullptr);
    }
    t.begin_run(fingerprint_ | static_cast<std::uint64_t>(placement), base_);
  }
  transport_ = &t;
  options_ = o;
  last_progress_ = std::chrono::steady_clock::now();
  running_ = true;
}

// One pass: every unfinished channel runs until it finishes or its current op is not ready; once
// all have finished, the unfinished sends are tested. True when something completed.
bool Plan::advance() {
  try {
    return advance_once();
  } catch (...) {
    running_ = false;  // a failed run is over; the plan may be started again
    throw;
  }
}

bool Plan::advance_once() {
  bool progressed = false;
  if (unfinished_ > 0) {
    const bool announce = transport_->pushes();
    for (std::size_t c = 0; c < channels_.size(); ++c) {
      Channel& ch = channels_[c];
      if (ch.done()) continue;
      const std::size_t before = ch.next;
      while (!ch.done() && step(ch, ch.ops[ch.next], *transport_)) {
        ++ch.next;
        ch.blocked_on = -1;
        progressed = true;
      }
      if (announce && ch.next != before)
        transport_->note_progress(static_cast<int>(c), static_cast<std::uint32_t>(ch.next));
      if (ch.done()) --unfinished_;
    }
  }
  // Every send must have completed before the caller may write its buffers again.
  if (unfinished_ == 0 && in_flight_ > 0) {
    const std::size_t before = in_flight_;
    retire_sends(*transport_);
    progressed = progressed || in_flight_ < before;
  }
  return progressed;
}

bool Plan::finish_if_done() {
  if (unfinished_ > 0 || in_flight_ > 0) return false;
  running_ = false;
  finish_avg(args_, rank_, base_[1], *memory_);
  return true;
}

bool Plan::test() {
  if (!running_) return true;
  const auto now = std::chrono::steady_clock::now();
  if (advance())
    last_progress_ = now;
  else if (now >= last_progress_ + options_.progress_timeout)
    stalled();
  return finish_if_done();
}

void Plan::stalled() {
  running_ = false;  // the run is over: the plan may be started again (a caller that recovers)
  if (unfinished_ > 0) throw_timeout(options_);
  throw_send_timeout(options_);
}

void Plan::wait() {
  // Round-robin over the channels: a pass that completes no operation polls for options_.spin,
  // then waits for the transport (or the deadline of the progress timeout).
  while (running_) {
    const bool progressed = advance();
    if (finish_if_done()) return;
    const auto now = std::chrono::steady_clock::now();
    if (progressed) {
      last_progress_ = now;
      continue;
    }
    const auto deadline = last_progress_ + options_.progress_timeout;
    if (now >= deadline) stalled();
    // Poll (the tests in step() progress the transport) for a while before handing the core back.
    if (now - last_progress_ < options_.spin) continue;
    transport_->wait(deadline);
  }
}

// Tests the unfinished sends; completed ones leave the window (order kept: oldest first).
void Plan::retire_sends(Transport& t) {
  std::size_t w = 0;
  for (std::size_t r = 0; r < in_flight_; ++r)
    if (!t.test_send(window_[r].request)) window_[w++] = window_[r];
  in_flight_ = w;
}

// True when no unfinished send reads [dst, dst + bytes); else records the peer it waits for.
bool Plan::clear_to_write(Channel& ch, const std::byte* dst, std::size_t bytes, Transport& t) {
  if (in_flight_ == 0 || bytes == 0) return true;
  auto blocking = [&]() -> const InFlight* {
    for (std::size_t r = 0; r < in_flight_; ++r)
      if (overlaps(window_[r].begin, static_cast<std::size_t>(window_[r].end - window_[r].begin), dst, bytes))
        return &window_[r];
    return nullptr;
  };
  if (blocking() == nullptr) return true;
  retire_sends(t);
  if (const InFlight* f = blocking()) {
    ch.blocked_on = f->peer;
    return false;
  }
  return true;
}

// Runs (or continues) one operation; false when it is not ready.
bool Plan::step(Channel& ch, std::uint32_t index, Transport& t) {
  const BoundOp& b = ops_[index];
  switch (b.kind) {
    case OpKind::Send: {
      if (push_run_ >= 0 && pushed_to_[index] != nullptr) {  // written by the receive that computed it
        t.post_pushed(b.peer, b.channel, pushed_to_[index], b.bytes);
        return true;
      }
      // Beyond kSendWindow, retire what completed first (keeps the scans short); the send is
      // posted either way: holding it back could deadlock a schedule whose peer receives only
      // after sends of its own (see executor.hpp).
      if (in_flight_ >= kSendWindow) retire_sends(t);
      const std::byte* src = ptr(b.src_buffer, b.src_offset);
      const Transport::Request r = t.post_send(b.peer, b.channel, src, b.bytes);
      if (r != Transport::kDone) window_[in_flight_++] = InFlight{src, src + b.bytes, r, b.peer, b.channel, index};
      return true;
    }
    case OpKind::Recv:
    case OpKind::RecvReduce:
    case OpKind::RecvReduceCopy: {
      // A receive is posted at once, never held back: its peer may be waiting for it before it
      // can finish the very send that holds our destination (two ranks exchanging one region,
      // as recursive doubling does, deadlock otherwise under a rendezvous protocol). A receive-
      // reduce always lands in the channel's staging slice; a plain receive lands in place
      // unless an unfinished send still reads the destination, then in staging too. Only the
      // write into the destination waits for such a send. A receive-reduce-copy reduces the
      // message with `own` (its src) into dst: dst = own (op) message.
      std::byte* dst = ptr(b.dst_buffer, b.dst_offset);
      std::byte* staging = recv_staging_.data() + ch.staging_offset;
      const bool reduces = b.kind != OpKind::Recv;
      const std::byte* own = b.kind == OpKind::RecvReduceCopy ? ptr(b.src_buffer, b.src_offset) : dst;
      try {
        if (!ch.posted) {
          ch.staged = reduces || !clear_to_write(ch, dst, b.bytes, t);
          ch.blocked_on = -1;
          ch.request = t.post_recv(b.peer, b.channel, ch.staged ? staging : dst, b.bytes);
          ch.posted = true;
        }
        if (ch.request != Transport::kDone) {
          // Receive-reduce in one pass: the message reduced into the destination from where the
          // transport shows it, once no unfinished send reads the destination (else: staging).
          if (reduces && b.count > 0 && t.reads_in_place(b.peer) && clear_to_write(ch, dst, b.bytes, t))
            return reduce_in_place(ch, index, own, t);
          if (ch.staged && !reduces) {
            // A push may have written the destination itself (push_plan.hpp's rules make it
            // final by then): nothing to copy.
            bool landed = false;
            if (!t.test_recv_staged(ch.request, dst, landed)) return false;
            if (landed) ch.staged = false;
          } else if (!t.test_recv(ch.request)) {
            return false;
          }
          ch.request = Transport::kDone;  // received; the write below may still wait
        }
      } catch (const InputError& e) {
        throw InputError(fmt::format("execute: {}: {}", where(index), e.what()));
      }
      if (ch.staged && b.count > 0) {
        if (!clear_to_write(ch, dst, b.bytes, t)) return false;
        if (reduces)
          memory_->reduce_copy(args_.dtype, args_.op, dst, own_operand(*memory_, own, dst, b.bytes, reduce_staging_),
                               staging, b.count);
        else
          memory_->copy(dst, staging, b.bytes);
      }
      ch.posted = false;
      return true;
    }
    case OpKind::Copy: {
      std::byte* dst = ptr(b.dst_buffer, b.dst_offset);
      const std::byte* src = ptr(b.src_buffer, b.src_offset);
      if (b.bytes == 0 || src == dst) return true;
      if (!clear_to_write(ch, dst, b.bytes, t)) return false;
      memory_->copy(dst, src, b.bytes);
      return true;
    }
    case OpKind::Reduce: {
      if (b.count == 0) return true;
      std::byte* dst = ptr(b.dst_buffer, b.dst_offset);
      const std::byte* src = ptr(b.src_buffer, b.src_offset);
      if (!clear_to_write(ch, dst, b.bytes, t)) return false;
      reduce_local(*memory_, args_.dtype, args_.op, dst, src, b.count, b.bytes, reduce_staging_);
      return true;
    }
    case OpKind::SwitchSend:  // the part is copied when given (contract rule 11)
      try {
        t.switch_send(switch_of_[index], b.channel, ptr(b.src_buffer, b.src_offset), b.bytes);
      } catch (const InputError& e) {
        throw InputError(fmt::format("execute: {}: {}", where(index), e.what()));
      }
      return true;
    case OpKind::SwitchRecv: {
      // dst = part 0 (op) part 1 (op) ..., in contributor order.
      std::byte* dst = ptr(b.dst_buffer, b.dst_offset);
      if (!clear_to_write(ch, dst, b.bytes, t)) return false;
      auto consume = [&](std::span<const std::byte* const> parts) {
        memory_->copy(dst, parts[0], b.bytes);
        for (std::size_t k = 1; k < parts.size(); ++k) memory_->reduce(args_.dtype, args_.op, dst, parts[k], b.count);
      };
      try {
        return t.switch_recv(switch_of_[index], b.channel, b.bytes, consume);
      } catch (const InputError& e) {
        throw InputError(fmt::format("execute: {}: {}", where(index), e.what()));
      }
    }
  }
  return true;
}

// The targets of the sends fused into reducing receive `index` (push_plan.hpp) that the transport
// finds ready now, in channel order. Fills pushes_ and records each target for its send, which
// later posts only the descriptor, in its FIFO place (the data is there already).
std::size_t Plan::collect_pushes(std::uint32_t index, Transport& t) {
  pushes_.clear();
  if (push_run_ < 0) return 0;
  const auto pl = static_cast<std::size_t>(push_run_);
  for (std::uint32_t k = fused_begin_[pl][index]; k < fused_begin_[pl][index + 1]; ++k) {
    const std::uint32_t send = fused_[pl][k];
    const PushTarget& p = push_[pl][send];
    const BoundOp& s = ops_[send];
    std::byte* target = t.push_target(s.peer, s.channel, p.buffer, p.offset, s.bytes, p.gate);
    if (target == nullptr) continue;
    pushes_.push_back(target);
    pushed_to_[send] = target;
  }
  return pushes_.size();
}

// A reducing receive read where the transport shows the message, in one pass: dst = own (op)
// message, and the result also written into the targets of the sends fused into it (pushes), one
// tile at a time while it is in cache; those sends are then complete, and skipped.
bool Plan::reduce_in_place(Channel& ch, std::uint32_t index, const std::byte* own, Transport& t) {
  const BoundOp& b = ops_[index];
  std::byte* dst = ptr(b.dst_buffer, b.dst_offset);
  own = own_operand(*memory_, own, dst, b.bytes, reduce_staging_);
  struct Fused {
    Plan* plan;
    std::uint32_t index;
    Transport* t;
    std::byte* dst;
    const std::byte* own;
  } fused{this, index, &t, dst, own};
  auto consume = [](void* context, const std::byte* message) {
    auto* f = static_cast<Fused*>(context);
    Plan& p = *f->plan;
    const BoundOp& op = p.ops_[f->index];
    if (p.collect_pushes(f->index, *f->t) == 0) {
      p.memory_->reduce_copy(p.args_.dtype, p.args_.op, f->dst, f->own, message, op.count);
      return;
    }
    // Tiles of kPushTile bytes (a multiple of every element size), each reduced, then copied to
    // the targets while in cache: read two operands, write 1 + pushes. When the run's buffers do
    // not fit in the last-level cache (stream_), a destination that is not an operand just read
    // (in place, dst is own and a target may be the message itself) is written with streaming
    // stores from a tile that stays in cache: no read for ownership of cold lines.
    const bool dst_hot = f->dst == f->own || !p.stream_;
    for (std::size_t at = 0; at < op.bytes; at += kPushTile) {
      const std::size_t n = std::min(kPushTile, op.bytes - at);
      std::byte* out = dst_hot ? f->dst + at : p.push_tile_.data();
      p.memory_->reduce_copy(p.args_.dtype, p.args_.op, out, f->own + at, message + at, n / p.elem_);
      if (!dst_hot) p.memory_->copy_out(f->dst + at, out, n);
      for (std::byte* target : p.pushes_) {
        if (p.stream_ && target != message)
          p.memory_->copy_out(target + at, out, n);
        else
          p.memory_->copy(target + at, out, n);
      }
    }
  };
  if (!t.test_recv_consume(ch.request, consume, &fused)) return false;
  ch.request = Transport::kDone;
  ch.posted = false;
  pushes_.clear();
  return true;
}

[[noreturn]] void Plan::throw_timeout(const ExecOptions& o) const {
  // Report the first channel that waits; count the others.
  const Channel* first = nullptr;
  std::size_t waiting = 0;
  for (const Channel& ch : channels_) {
    if (ch.done()) continue;
    ++waiting;
    if (first == nullptr) first = &ch;
  }
  TOPOCOLL_ASSERT(first != nullptr, "timeout with every channel finished");
  const std::size_t index = first->ops[first->next];
  const Op& op = program_[index];
  // An op held back by an unfinished send waits for that send's peer to receive it.
  const int peer = first->blocked_on >= 0 ? first->blocked_on : op.peer;
  const std::string held = first->blocked_on >= 0 ? " (to receive an earlier send)" : "";
  const std::string others = waiting > 1 ? fmt::format(" ({} other channels wait too)", waiting - 1) : "";
  if (op.is_switch() && first->blocked_on < 0)
    throw PeerTimeout(
        fmt::format("rank {}: no progress for {} ms: channel {} op {} ({}) waits for the contributors "
                    "of switch group {}{}",
                    rank_, o.progress_timeout.count(), op.channel, index, algo::describe(op), op.peer, others),
        rank_, -1, static_cast<int>(op.channel), index);
  throw PeerTimeout(fmt::format("rank {}: no progress for {} ms: channel {} op {} ({}) waits for peer {}{}{}", rank_,
                                o.progress_timeout.count(), op.channel, index, algo::describe(op), peer, held, others),
                    rank_, peer, static_cast<int>(op.channel), index);
}

[[noreturn]] void Plan::throw_send_timeout(const ExecOptions& o) const {
  const InFlight& f = window_[0];
  const std::string others = in_flight_ > 1 ? fmt::format(" ({} other sends wait too)", in_flight_ - 1) : "";
  throw PeerTimeout(
      fmt::format("rank {}: no progress for {} ms: channel {} op {} ({}) waits for peer {} to receive it{}", rank_,
                  o.progress_timeout.count(), f.channel, f.op, algo::describe(program_[f.op]), f.peer, others),
      rank_, f.peer, f.channel, f.op);
}

// Avg: divide what was accumulated as a sum by the rank count (see executor.hpp).
void finish_avg(const algo::CollectiveArgs& a, int rank, void* output, MemorySpace& memory) {
  if (a.op != algo::ReduceOp::Avg || a.count == 0) return;
  const bool reduces = a.collective == Collective::AllReduce || a.collective == Collective::ReduceScatter ||
                       (a.collective == Collective::Reduce && rank == a.root);
  if (!reduces) return;
  if (output == nullptr) throw InputError(fmt::format("execute: rank {}: the output buffer is null", rank));
  memory.finish_avg(a.dtype, output, static_cast<std::size_t>(a.output_count()), a.ranks);
}

void execute(const algo::Schedule& s, int rank, const Buffers& b, Transport& t, const ExecOptions& o) {
  if (t.runs_switch_ops()) return Plan(s, rank, host_memory(), SwitchOps::Run).run(b, t, o);
  Plan(s, rank).run(b, t, o);
}

ExecOptions ExecOptions::from_environment() {
  ExecOptions o;
  const char* v = std::getenv("TOPOCOLL_TIMEOUT");
  if (v == nullptr || *v == '\0') return o;
  char* end = nullptr;
  const double seconds = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(seconds > 0) || seconds > 1e6)
    throw InputError(
        fmt::format("TOPOCOLL_TIMEOUT='{}': expected the progress timeout in seconds, a number > 0 (e.g. 30)", v));
  o.progress_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0 + 0.5));
  return o;
}

}  // namespace topocoll::runtime
