#include "algorithms/ir/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/checked.hpp"
#include "common/errors.hpp"

namespace topocoll::algo {

std::string_view to_string(BufferId b) {
  switch (b) {
    case BufferId::Input:
      return "input";
    case BufferId::Output:
      return "output";
    case BufferId::Scratch:
      return "scratch";
  }
  return "?";
}

std::string_view to_string(OpKind k) {
  switch (k) {
    case OpKind::Send:
      return "send";
    case OpKind::Recv:
      return "recv";
    case OpKind::RecvReduce:
      return "recv_reduce";
    case OpKind::Copy:
      return "copy";
    case OpKind::Reduce:
      return "reduce";
    case OpKind::SwitchSend:
      return "switch_send";
    case OpKind::SwitchRecv:
      return "switch_recv";
    case OpKind::RecvReduceCopy:
      return "recv_reduce_copy";
  }
  return "?";
}

std::string_view to_string(SwitchKind k) {
  return k == SwitchKind::Sharp ? "sharp" : "nvls";
}

namespace {
std::string chunk_text(const Chunk& c) {
  return fmt::format("{}[{}:{}]", to_string(c.buffer), c.offset, c.end());
}
}  // namespace

std::string describe(const Op& op) {
  switch (op.kind) {
    case OpKind::Send:
      return fmt::format("send(peer {}, {}) ch {}", op.peer, chunk_text(op.src), op.channel);
    case OpKind::Recv:
    case OpKind::RecvReduce:
      return fmt::format("{}(peer {}, {}) ch {}", to_string(op.kind), op.peer, chunk_text(op.dst), op.channel);
    case OpKind::Copy:
    case OpKind::Reduce:
      return fmt::format("{}({} -> {}) ch {}", to_string(op.kind), chunk_text(op.src), chunk_text(op.dst), op.channel);
    case OpKind::SwitchSend:
      return fmt::format("switch_send(group {}, {}) ch {}", op.peer, chunk_text(op.src), op.channel);
    case OpKind::SwitchRecv:
      return fmt::format("switch_recv(group {}, {}) ch {}", op.peer, chunk_text(op.dst), op.channel);
    case OpKind::RecvReduceCopy:
      return fmt::format("recv_reduce_copy(peer {}, {} -> {}) ch {}", op.peer, chunk_text(op.src), chunk_text(op.dst),
                         op.channel);
  }
  return "?";
}

namespace {
Op make(OpKind kind, int peer, Chunk src, Chunk dst, int channel) {
  Op op;
  op.kind = kind;
  op.peer = peer;
  op.src = src;
  op.dst = dst;
  op.channel = static_cast<std::uint16_t>(channel);
  return op;
}
}  // namespace

void ProgramBuilder::send(int peer, Chunk src, int channel) {
  if (src.count > 0) out_.push_back(make(OpKind::Send, peer, src, Chunk{}, channel));
}
void ProgramBuilder::recv(int peer, Chunk dst, int channel) {
  if (dst.count > 0) out_.push_back(make(OpKind::Recv, peer, Chunk{}, dst, channel));
}
void ProgramBuilder::recv_reduce(int peer, Chunk dst, int channel) {
  if (dst.count > 0) out_.push_back(make(OpKind::RecvReduce, peer, Chunk{}, dst, channel));
}
void ProgramBuilder::recv_reduce_copy(int peer, Chunk src, Chunk dst, int channel) {
  TOPOCOLL_ASSERT(src.count == dst.count, fmt::format("recv_reduce_copy of {} into {} elements", src.count, dst.count));
  if (dst.count == 0) return;
  if (src == dst)
    out_.push_back(make(OpKind::RecvReduce, peer, Chunk{}, dst, channel));
  else
    out_.push_back(make(OpKind::RecvReduceCopy, peer, src, dst, channel));
}
void ProgramBuilder::copy(Chunk src, Chunk dst, int channel) {
  TOPOCOLL_ASSERT(src.count == dst.count, fmt::format("copy of {} into {} elements", src.count, dst.count));
  if (src.count > 0 && !(src == dst)) out_.push_back(make(OpKind::Copy, -1, src, dst, channel));
}
void ProgramBuilder::reduce(Chunk src, Chunk dst, int channel) {
  TOPOCOLL_ASSERT(src.count == dst.count, fmt::format("reduce of {} into {} elements", src.count, dst.count));
  if (src.count > 0) out_.push_back(make(OpKind::Reduce, -1, src, dst, channel));
}

void ProgramBuilder::switch_send(int group, Chunk src, int channel) {
  if (src.count > 0) out_.push_back(make(OpKind::SwitchSend, group, src, Chunk{}, channel));
}
void ProgramBuilder::switch_recv(int group, Chunk dst, int channel) {
  if (dst.count > 0) out_.push_back(make(OpKind::SwitchRecv, group, Chunk{}, dst, channel));
}

void validate_header(const std::string& name, const CollectiveArgs& a, int channels, std::uint64_t scratch_count) {
  const std::string what = fmt::format("schedule '{}'", name);
  if (a.ranks < 1 || a.ranks > kMaxRanks)
    throw InputError(fmt::format("{}: ranks {} is outside 1..{} (the rank limit)", what, a.ranks, kMaxRanks));
  if (channels < 1 || channels > kMaxChannels)
    throw InputError(fmt::format("{}: channels {} is outside 1..{} (the channel limit)", what, channels, kMaxChannels));
  if (a.root < 0 || a.root >= a.ranks)
    throw InputError(fmt::format("{}: root {} is not a rank of 0..{}", what, a.root, a.ranks - 1));
  const std::uint64_t element = size_of(a.dtype);
  auto check = [&](std::string_view buffer, std::optional<std::uint64_t> elements, std::string_view formula) {
    const std::optional<std::uint64_t> bytes = elements ? checked_mul(*elements, element) : std::nullopt;
    if (!bytes || *bytes >= kMaxBufferBytes)
      throw InputError(fmt::format("{}: the {} buffer ({}, {} bytes each) is not below the limit of 2^60 bytes", what,
                                   buffer, formula, element));
  };
  const std::uint64_t p = static_cast<std::uint64_t>(a.ranks);
  if (a.collective == Collective::AllToAllV) {
    if (!a.sizes) throw InputError(fmt::format("{}: an alltoallv without a size matrix", what));
    if (a.sizes->ranks() != a.ranks)
      throw InputError(fmt::format("{}: a size matrix of {} ranks for {} ranks", what, a.sizes->ranks(), a.ranks));
    check("input", a.sizes->max_sent(), fmt::format("{} elements, the most a rank sends", a.sizes->max_sent()));
    check("output", a.sizes->max_received(),
          fmt::format("{} elements, the most a rank receives", a.sizes->max_received()));
  } else {
    const bool a2a = a.collective == Collective::AllToAll;
    const bool rs = a.collective == Collective::ReduceScatter || a2a, ag = a.collective == Collective::AllGather || a2a;
    check(
        "input", rs ? checked_mul(a.count, p) : a.count,
        rs ? fmt::format("count {} x ranks {} elements", a.count, a.ranks) : fmt::format("count {} elements", a.count));
    check(
        "output", ag ? checked_mul(a.count, p) : a.count,
        ag ? fmt::format("count {} x ranks {} elements", a.count, a.ranks) : fmt::format("count {} elements", a.count));
  }
  check("scratch", scratch_count, fmt::format("scratch_count {} elements", scratch_count));
}

Schedule::Schedule(std::string name, CollectiveArgs args, int channels, std::uint64_t scratch_count,
                   Generator generator)
    : name_((validate_header(name, args, channels, scratch_count), std::move(name))),
      args_(args),
      channels_(channels),
      scratch_count_(scratch_count),
      generator_(std::move(generator)) {}

Schedule Schedule::from_programs(std::string name, CollectiveArgs args, int channels, std::uint64_t scratch_count,
                                 std::vector<Program> programs) {
  validate_header(name, args, channels, scratch_count);
  TOPOCOLL_ASSERT(programs.size() == static_cast<std::size_t>(args.ranks),
                  fmt::format("{} programs for {} ranks", programs.size(), args.ranks));
  auto shared = std::make_shared<const std::vector<Program>>(std::move(programs));
  // Explicit programs are returned verbatim (zero-element or broken operations included: the
  // verifier must see exactly what was written).
  return Schedule(std::move(name), args, channels, scratch_count,
                  [shared](int rank, Program& out) { out = (*shared)[static_cast<std::size_t>(rank)]; });
}

std::string_view to_string(ChannelPattern p) {
  return p == ChannelPattern::Tree ? "tree" : "pipeline";
}

ChannelPattern Schedule::pattern(int ch) const {
  if (ch < 0 || static_cast<std::size_t>(ch) >= patterns_.size()) return ChannelPattern::Pipeline;
  return patterns_[static_cast<std::size_t>(ch)];
}

void Schedule::set_pattern(int ch, ChannelPattern p) {
  TOPOCOLL_ASSERT(ch >= 0 && ch < channels_, fmt::format("channel {} of a schedule of {} channels", ch, channels_));
  if (patterns_.empty()) patterns_.assign(static_cast<std::size_t>(channels_), ChannelPattern::Pipeline);
  patterns_[static_cast<std::size_t>(ch)] = p;
}

int Schedule::add_switch_group(SwitchGroup g) {
  const int index = static_cast<int>(switch_groups_.size());
  auto check = [&](const std::vector<int>& ranks, std::string_view role) {
    if (ranks.empty())
      throw InputError(
          fmt::format("schedule '{}': switch group {} has no {}: expected at least one rank", name_, index, role));
    std::vector<bool> seen(static_cast<std::size_t>(args_.ranks), false);
    for (int r : ranks) {
      if (r < 0 || r >= args_.ranks)
        throw InputError(fmt::format("schedule '{}': switch group {} names {} {}, not a rank of 0..{}", name_, index,
                                     role, r, args_.ranks - 1));
      if (seen[static_cast<std::size_t>(r)])
        throw InputError(
            fmt::format("schedule '{}': switch group {} names rank {} twice among its {}", name_, index, r, role));
      seen[static_cast<std::size_t>(r)] = true;
    }
  };
  check(g.contributors, "contributors");
  check(g.receivers, "receivers");
  auto sorted = [](const std::vector<int>& ranks) {
    MemberIndex m;
    m.reserve(ranks.size());
    for (std::size_t i = 0; i < ranks.size(); ++i) m.emplace_back(ranks[i], static_cast<int>(i));
    std::sort(m.begin(), m.end());
    return m;
  };
  member_index_.emplace_back(sorted(g.contributors), sorted(g.receivers));
  switch_groups_.push_back(std::move(g));
  return index;
}

namespace {
int find_member(const std::vector<std::pair<int, int>>& m, int rank) {
  auto it = std::lower_bound(m.begin(), m.end(), std::pair<int, int>{rank, -1});
  return it != m.end() && it->first == rank ? it->second : -1;
}
}  // namespace

int Schedule::contributor_index(int g, int rank) const {
  return find_member(member_index_[static_cast<std::size_t>(g)].first, rank);
}
int Schedule::receiver_index(int g, int rank) const {
  return find_member(member_index_[static_cast<std::size_t>(g)].second, rank);
}

std::uint64_t Schedule::buffer_count(BufferId b) const {
  switch (b) {
    case BufferId::Input:
      return args_.input_count();
    case BufferId::Output:
      return args_.output_count();
    case BufferId::Scratch:
      return scratch_count_;
  }
  return 0;
}

void Schedule::set_symmetry(ProgramSymmetry s) {
  TOPOCOLL_ASSERT(s.ranks() == args_.ranks, fmt::format("a symmetry of {} ranks for {}", s.ranks(), args_.ranks));
  TOPOCOLL_ASSERT(!s.rotates() || static_cast<int>(s.pi().size()) == channels_,
                  fmt::format("a channel permutation of {} for {} channels", s.pi().size(), channels_));
  symmetry_ = std::make_shared<const ProgramSymmetry>(std::move(s));
}

Program Schedule::program(int rank) const {
  Program p;
  program_into(rank, p);
  return p;
}

void Schedule::program_into(int rank, Program& out) const {
  TOPOCOLL_ASSERT(rank >= 0 && rank < args_.ranks, fmt::format("rank {} of {}", rank, args_.ranks));
  out.clear();
  generator_(rank, out);
}

}  // namespace topocoll::algo
