#include "algorithms/ir/program_index.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/checked.hpp"

namespace topocoll::algo {

std::string locate(int rank, const Op& op, std::size_t index) {
  return fmt::format("rank {} channel {} op {} ({})", rank, op.channel, index, describe(op));
}

namespace {

[[noreturn]] void fail(StaticFault f, int rank, const Op& op, std::size_t index, const std::string& what) {
  throw ProgramError(f, fmt::format("{}: {}", locate(rank, op, index), what), rank, op.channel, index);
}

void check_chunk(const Schedule& s, int rank, const Op& op, std::size_t index, const Chunk& c) {
  const std::uint64_t size = s.buffer_count(c.buffer);
  const std::optional<std::uint64_t> end = checked_add(c.offset, c.count);
  if (!end)
    fail(StaticFault::OutOfBounds, rank, op, index,
         fmt::format("{} offset {} + count {} does not fit in 64 bits (the {} buffer has {} elements)",
                     to_string(c.buffer), c.offset, c.count, to_string(c.buffer), size));
  if (*end > size)
    fail(StaticFault::OutOfBounds, rank, op, index,
         fmt::format("{}[{}:{}] is outside the {} buffer of {} elements", to_string(c.buffer), c.offset, *end,
                     to_string(c.buffer), size));
}

}  // namespace

void check_op(const Schedule& s, int rank, const Op& op, std::size_t index) {
  const int p = s.num_ranks();
  if (op.channel >= s.num_channels())
    fail(StaticFault::BadChannel, rank, op, index,
         fmt::format("channel {} but the schedule has {} channels", op.channel, s.num_channels()));
  if (is_transfer(op.kind) && (op.peer < 0 || op.peer >= p || op.peer == rank))
    fail(StaticFault::BadPeer, rank, op, index, fmt::format("peer {} is not another rank of 0..{}", op.peer, p - 1));
  if (is_switch(op.kind)) {
    const int groups = static_cast<int>(s.switch_groups().size());
    if (op.peer < 0 || op.peer >= groups)
      fail(StaticFault::BadGroup, rank, op, index,
           groups == 0 ? fmt::format("switch group {} but the schedule declares no switch groups", op.peer)
                       : fmt::format("switch group {} is not a group of 0..{}", op.peer, groups - 1));
    const bool send = op.kind == OpKind::SwitchSend;
    if ((send ? s.contributor_index(op.peer, rank) : s.receiver_index(op.peer, rank)) < 0)
      fail(StaticFault::BadGroup, rank, op, index,
           fmt::format("rank {} is not a {} of switch group {} ({})", rank, send ? "contributor" : "receiver", op.peer,
                       to_string(s.switch_groups()[static_cast<std::size_t>(op.peer)].kind)));
  }
  if (reads_src(op.kind)) check_chunk(s, rank, op, index, op.src);
  if (writes_dst(op.kind)) check_chunk(s, rank, op, index, op.dst);
  if (writes_dst(op.kind) && op.dst.buffer == BufferId::Input)
    fail(StaticFault::WritesInput, rank, op, index, "the input buffer is read-only");
  if (equal_sizes(op.kind) && op.src.count != op.dst.count)
    fail(StaticFault::SizeMismatch, rank, op, index, fmt::format("{} elements into {}", op.src.count, op.dst.count));
}

ProgramIndex::ProgramIndex(const Schedule& s, int rank, bool by_channel)
    : ProgramIndex(s, rank, s.program(rank), by_channel) {}

ProgramIndex::ProgramIndex(const Schedule& s, int rank, Program program, bool by_channel)
    : rank_(rank), program_(std::move(program)) {
  TOPOCOLL_ASSERT(rank >= 0 && rank < s.num_ranks(),
                  fmt::format("rank {} of a schedule of {} ranks", rank, s.num_ranks()));
  TOPOCOLL_ASSERT(program_.size() < UINT32_MAX, fmt::format("rank {}: {} operations", rank, program_.size()));
  const std::size_t K = static_cast<std::size_t>(std::max(s.num_channels(), 0));
  const int p = s.num_ranks();
  const int groups = static_cast<int>(s.switch_groups().size());
  auto member = [&](const Op& op) {
    if (op.peer < 0 || op.peer >= groups) return false;
    return (op.kind == OpKind::SwitchSend ? s.contributor_index(op.peer, rank) : s.receiver_index(op.peer, rank)) >= 0;
  };
  const std::uint64_t size[3] = {s.buffer_count(BufferId::Input), s.buffer_count(BufferId::Output),
                                 s.buffer_count(BufferId::Scratch)};
  auto inside = [&](const Chunk& c) {
    const auto b = static_cast<std::size_t>(c.buffer);
    const std::optional<std::uint64_t> end = checked_add(c.offset, c.count);
    return end && *end <= (b < 3 ? size[b] : 0);
  };
  // Check (check_op's rules, inline: it runs for every op of every rank), count per channel, then
  // place (a counting sort: program order within a channel).
  channel_begin_.assign(K + 1, 0);
  for (std::size_t i = 0; i < program_.size(); ++i) {
    const Op& op = program_[i];
    const bool ok = op.channel < K && (!is_transfer(op.kind) || (op.peer >= 0 && op.peer < p && op.peer != rank)) &&
                    (!reads_src(op.kind) || inside(op.src)) &&
                    (!writes_dst(op.kind) || (inside(op.dst) && op.dst.buffer != BufferId::Input)) &&
                    (!equal_sizes(op.kind) || op.src.count == op.dst.count) && (!is_switch(op.kind) || member(op));
    if (!ok) {
      check_op(s, rank, op, i);  // throws, naming what is wrong
      TOPOCOLL_ASSERT(false, fmt::format("{}: the inline check and check_op disagree", locate(rank, op, i)));
    }
    ++channel_begin_[op.channel + 1];
  }
  for (std::size_t c = 0; c < K; ++c) channel_begin_[c + 1] += channel_begin_[c];
  if (!by_channel) return;
  by_channel_.resize(program_.size());
  std::vector<std::uint32_t> at(channel_begin_.begin(), channel_begin_.end() - 1);
  for (std::size_t i = 0; i < program_.size(); ++i)
    by_channel_[at[program_[i].channel]++] = static_cast<std::uint32_t>(i);
}

std::vector<std::vector<OpRef>> match_fifo(const std::vector<ProgramIndex>& indexes, int channels) {
  const int p = static_cast<int>(indexes.size());
  Connections conns(p, channels);
  std::vector<std::vector<OpRef>> sends, recvs;  // per connection, program order
  std::vector<std::vector<OpRef>> partner(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    const Program& pr = indexes[static_cast<std::size_t>(r)].program();
    partner[static_cast<std::size_t>(r)].resize(pr.size());
    for (std::uint32_t i = 0; i < pr.size(); ++i) {
      const Op& op = pr[i];
      if (!is_transfer(op.kind)) continue;
      const std::uint32_t id = conns.id_of(r, op);
      if (id == sends.size()) sends.emplace_back(), recvs.emplace_back();
      (op.kind == OpKind::Send ? sends : recvs)[id].push_back({r, i});
    }
  }
  auto op_of = [&](OpRef o) -> const Op& { return indexes[static_cast<std::size_t>(o.rank)].op(o.op); };
  for (std::size_t c = 0; c < sends.size(); ++c) {
    const std::vector<OpRef>& snd = sends[c];
    const std::vector<OpRef>& rcv = recvs[c];
    for (std::size_t n = 0; n < snd.size(); ++n) {
      const Op& so = op_of(snd[n]);
      if (n >= rcv.size())
        throw ScheduleError(fmt::format("rank {} op {} ({}) has no matching receive on rank {}", snd[n].rank, snd[n].op,
                                        describe(so), so.peer),
                            snd[n].rank, so.channel, snd[n].op);
      const Op& ro = op_of(rcv[n]);
      if (so.count() != ro.count())
        throw ScheduleError(
            fmt::format("rank {} op {} ({}) sends {} elements, rank {} op {} ({}) receives {}", snd[n].rank, snd[n].op,
                        describe(so), so.count(), rcv[n].rank, rcv[n].op, describe(ro), ro.count()),
            rcv[n].rank, ro.channel, rcv[n].op);
      partner[static_cast<std::size_t>(snd[n].rank)][snd[n].op] = rcv[n];
      partner[static_cast<std::size_t>(rcv[n].rank)][rcv[n].op] = snd[n];
    }
    if (rcv.size() > snd.size()) {
      const OpRef o = rcv[snd.size()];
      throw ScheduleError(fmt::format("rank {} op {} ({}) has no matching send", o.rank, o.op, describe(op_of(o))),
                          o.rank, op_of(o).channel, o.op);
    }
  }
  return partner;
}

Storage in_place_storage(const CollectiveArgs& a, int rank, const Chunk& c) {
  if (c.buffer == BufferId::Scratch) return {BufferId::Scratch, c.offset};
  const std::uint64_t shift = static_cast<std::uint64_t>(rank) * a.count;
  switch (a.collective) {
    case Collective::ReduceScatter:  // output lives inside input at rank * count
      return {BufferId::Input, c.buffer == BufferId::Input ? c.offset : c.offset + shift};
    case Collective::AllGather:  // input lives inside output at rank * count
      return {BufferId::Output, c.buffer == BufferId::Output ? c.offset : c.offset + shift};
    default:
      return {BufferId::Output, c.offset};
  }
}

}  // namespace topocoll::algo
