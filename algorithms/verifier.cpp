#include "algorithms/verifier.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>

#include "algorithms/ir/program_index.hpp"
#include "common/checked.hpp"
#include "common/errors.hpp"

namespace topocoll::algo {

std::string_view to_string(Failure f) {
  switch (f) {
    case Failure::None:
      return "OK";
    case Failure::Deadlock:
      return "deadlock";
    case Failure::UnmatchedSend:
      return "unmatched send";
    case Failure::UnmatchedRecv:
      return "unmatched receive";
    case Failure::OutOfBounds:
      return "out of bounds";
    case Failure::BadPeer:
      return "bad peer";
    case Failure::BadChannel:
      return "bad channel";
    case Failure::WritesInput:
      return "writes the input buffer";
    case Failure::SizeMismatch:
      return "size mismatch";
    case Failure::DoubleCounted:
      return "double-counted contribution";
    case Failure::Missing:
      return "missing contribution";
    case Failure::WrongElement:
      return "wrong element";
    case Failure::Uninitialised:
      return "uninitialised read";
    case Failure::ChannelRace:
      return "write race between channels";
    case Failure::BadGroup:
      return "bad switch group";
  }
  return "?";
}

namespace {

// ---------------------------------------------------------------------------------------------
// Symbolic values.

// A set of ranks as sorted, disjoint, non-adjacent half-open intervals. Ring and tree partial
// sums are contiguous in rank order (or wrap once), so these stay one or two intervals long.
using RankSet = std::vector<std::pair<int, int>>;

bool intersects(const RankSet& a, const RankSet& b, int* witness) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (lo < hi) {
      *witness = lo;
      return true;
    }
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return false;
}

RankSet unite(const RankSet& a, const RankSet& b) {
  RankSet all;
  all.reserve(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(all));
  RankSet out;
  for (const auto& iv : all) {
    if (!out.empty() && iv.first <= out.back().second)
      out.back().second = std::max(out.back().second, iv.second);
    else
      out.push_back(iv);
  }
  return out;
}

std::string rank_set_text(const RankSet& s) {
  std::string t;
  for (const auto& [lo, hi] : s) {
    if (!t.empty()) t += ",";
    t += hi - lo == 1 ? std::to_string(lo) : fmt::format("{}-{}", lo, hi - 1);
  }
  return "{" + t + "}";
}

// The value of a run of elements: at position p it is the reduction, over `ranks`, of input
// element p + shift. An uninitialised run has init == false.
struct Value {
  bool init = false;
  std::int64_t shift = 0;
  RankSet ranks;
  bool operator==(const Value&) const = default;
};

// A run [start, end) inside a snapshot or a buffer.
struct Run {
  std::uint64_t start, end;
  Value value;
};

// One buffer: runs keyed by start, covering [0, size) exactly.
class SymbolicBuffer {
 public:
  void reset(std::uint64_t size, Value initial) {
    runs_.clear();
    if (size > 0) runs_.emplace(0, Entry{size, std::move(initial)});
  }

  // The runs covering [offset, offset + count), positions relative to offset.
  std::vector<Run> read(std::uint64_t offset, std::uint64_t count) {
    std::vector<Run> out;
    const std::uint64_t end = offset + count;
    for (auto it = find(offset); it != runs_.end() && it->first < end; ++it) {
      const std::uint64_t a = std::max(it->first, offset), b = std::min(it->second.end, end);
      Value v = it->second.value;
      if (v.init) v.shift += static_cast<std::int64_t>(a) - static_cast<std::int64_t>(a - offset);  // rebase
      out.push_back({a - offset, b - offset, std::move(v)});
    }
    return out;
  }

  // Overwrites [offset, ...) with relative runs.
  void write(std::uint64_t offset, const std::vector<Run>& runs) {
    if (runs.empty()) return;
    const std::uint64_t end = offset + runs.back().end;
    split(offset);
    split(end);
    runs_.erase(runs_.lower_bound(offset), runs_.lower_bound(end));
    for (const Run& r : runs) {
      Value v = r.value;
      if (v.init) v.shift -= static_cast<std::int64_t>(offset);  // relative -> absolute
      runs_.emplace(offset + r.start, Entry{offset + r.end, std::move(v)});
    }
    coalesce(offset, end);
  }

  auto begin() const { return runs_.begin(); }
  auto end() const { return runs_.end(); }

 private:
  struct Entry {
    std::uint64_t end;
    Value value;
  };
  std::map<std::uint64_t, Entry> runs_;

  std::map<std::uint64_t, Entry>::iterator find(std::uint64_t pos) {
    auto it = runs_.upper_bound(pos);
    if (it != runs_.begin()) --it;
    return it;
  }
  // Makes `pos` the start of a run (when inside the buffer).
  void split(std::uint64_t pos) {
    auto it = find(pos);
    if (it == runs_.end() || it->first == pos || it->second.end <= pos) return;
    Entry tail{it->second.end, it->second.value};
    it->second.end = pos;
    runs_.emplace(pos, std::move(tail));
  }
  // Merges equal neighbours around [from, to] so finished buffers shrink back to a few runs.
  void coalesce(std::uint64_t from, std::uint64_t to) {
    auto it = find(from);
    if (it != runs_.begin()) --it;
    while (it != runs_.end()) {
      auto next = std::next(it);
      if (next == runs_.end() || it->first > to) break;
      if (it->second.end == next->first && it->second.value == next->second.value) {
        it->second.end = next->second.end;
        runs_.erase(next);
      } else {
        it = next;
      }
    }
  }
};

// ---------------------------------------------------------------------------------------------
// The machine.

struct Message {
  std::uint64_t count;
  std::vector<Run> data;
  std::uint64_t clock;
  std::size_t op_index;  // sender's op index (for messages)
};

// Contract rule 11: the instances of one (switch group, channel). Contributor k's n-th
// switch_send gives its part to instance n; receiver i's n-th switch_recv takes instance n once
// every contributor gave its part. `live` holds instances base, base + 1, ... not yet taken by
// every receiver; a part is folded into the instance's value as it arrives (the symbolic
// reduction does not depend on the order; the real executors reduce in contributor order).
struct SwitchInstance {
  std::uint64_t count = 0;
  std::size_t parts = 0, taken = 0;
  std::vector<Run> value;
  std::uint64_t clock = 0;
  int first_rank = -1;  // the first contributor to give a part, and its op (for messages)
  std::size_t first_op = 0;
};
struct SwitchQueue {
  std::vector<std::uint64_t> given;  // per contributor position: parts given
  std::vector<std::uint64_t> taken;  // per receiver position: instances taken
  std::deque<SwitchInstance> live;
  std::uint64_t base = 0;
};

struct ChannelState {
  std::span<const std::uint32_t> ops;  // indices into the rank's program (its ProgramIndex)
  std::size_t next = 0;
  std::uint64_t clock = 0;
  bool queued = false;
  bool done() const { return next == ops.size(); }
};

struct RankState {
  ProgramIndex index;  // the program, checked, per channel
  const Program& program() const { return index.program(); }
  SymbolicBuffer buffers[3];  // storage: input, output, scratch
  std::vector<ChannelState> channels;
  std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> writes, reads;  // per channel, storage packed
  std::uint64_t intra_bytes = 0, inter_bytes = 0;
};

class Verifier {
 public:
  Verifier(const Schedule& s, const VerifyOptions& o) : s_(s), o_(o), args_(s.args()), p_(s.num_ranks()) {}

  VerifyResult run() {
    if (!load()) return result_;
    if (!execute()) return result_;
    if (!check_leftovers()) return result_;
    if (!check_races()) return result_;
    check_postcondition();
    return result_;
  }

 private:
  const Schedule& s_;
  const VerifyOptions& o_;
  const CollectiveArgs args_;
  const int p_;
  std::vector<RankState> ranks_;
  std::unordered_map<std::uint64_t, std::deque<Message>> queues_;
  std::unordered_map<std::uint64_t, SwitchQueue> switch_;  // key: group * K + channel
  std::deque<std::pair<int, int>> work_;
  VerifyResult result_;

  bool fail(Failure f, std::string message) {
    result_.failure = f;
    result_.message = std::move(message);
    return false;
  }
  std::string where(int rank, const Op& op, std::size_t index) const { return locate(rank, op, index); }
  std::uint64_t queue_key(int src, int dst, int channel) const {
    return (static_cast<std::uint64_t>(src) * static_cast<std::uint64_t>(p_) + static_cast<std::uint64_t>(dst)) *
               static_cast<std::uint64_t>(s_.num_channels()) +
           static_cast<std::uint64_t>(channel);
  }
  int node_of(int rank) const { return o_.node_of.empty() ? 0 : o_.node_of[static_cast<std::size_t>(rank)]; }
  int domain_of(int rank) const {
    return o_.domain_of.empty() ? node_of(rank) : o_.domain_of[static_cast<std::size_t>(rank)];
  }
  const SwitchGroup& group(int g) const { return s_.switch_groups()[static_cast<std::size_t>(g)]; }
  SwitchQueue& switch_queue(int g, int channel) {
    const std::uint64_t key = static_cast<std::uint64_t>(g) * static_cast<std::uint64_t>(s_.num_channels()) +
                              static_cast<std::uint64_t>(channel);
    auto [it, added] = switch_.try_emplace(key);
    if (added) {
      it->second.given.assign(group(g).contributors.size(), 0);
      it->second.taken.assign(group(g).receivers.size(), 0);
    }
    return it->second;
  }
  // The first contributor of instance n of (g, channel) that has not given its part; -1 none.
  int missing_contributor(int g, int channel, std::uint64_t n) {
    SwitchQueue& q = switch_queue(g, channel);
    for (std::size_t k = 0; k < q.given.size(); ++k)
      if (q.given[k] <= n) return group(g).contributors[k];
    return -1;
  }
  // The rank whose progress a blocked op waits for: a receive's peer, a switch receive's first
  // missing contributor.
  int waits_for(int rank, const Op& op) {
    if (op.kind != OpKind::SwitchRecv) return op.peer;
    SwitchQueue& q = switch_queue(op.peer, op.channel);
    return missing_contributor(op.peer, op.channel,
                               q.taken[static_cast<std::size_t>(s_.receiver_index(op.peer, rank))]);
  }

  // Storage and offset of a chunk after in-place aliasing (in_place_storage): 0 input, 1 output,
  // 2 scratch.
  std::pair<int, std::uint64_t> resolve(int rank, const Chunk& c) const {
    if (!o_.in_place) return {static_cast<int>(c.buffer), c.offset};
    const Storage at = in_place_storage(args_, rank, c);
    return {static_cast<int>(at.buffer), at.offset};
  }

  static Failure failure_of(StaticFault f) {
    switch (f) {
      case StaticFault::BadChannel:
        return Failure::BadChannel;
      case StaticFault::BadPeer:
        return Failure::BadPeer;
      case StaticFault::OutOfBounds:
        return Failure::OutOfBounds;
      case StaticFault::WritesInput:
        return Failure::WritesInput;
      case StaticFault::SizeMismatch:
        return Failure::SizeMismatch;
      case StaticFault::BadGroup:
        return Failure::BadGroup;
    }
    return Failure::None;
  }

  bool load() {
    ranks_.resize(static_cast<std::size_t>(p_));
    for (int r = 0; r < p_; ++r) {
      RankState& st = ranks_[static_cast<std::size_t>(r)];
      Program program = s_.program(r);
      result_.operations += program.size();
      try {
        st.index = ProgramIndex(s_, r, std::move(program));
      } catch (const ProgramError& e) {
        return fail(failure_of(e.fault()), e.what());
      }
      st.channels.resize(static_cast<std::size_t>(s_.num_channels()));
      st.writes.resize(static_cast<std::size_t>(s_.num_channels()));
      st.reads.resize(static_cast<std::size_t>(s_.num_channels()));
      for (int c = 0; c < s_.num_channels(); ++c) st.channels[static_cast<std::size_t>(c)].ops = st.index.channel(c);
      init_buffers(r, st);
    }
    return check_groups();
  }

  // With a layout: an NVLS group stays inside one NVLink domain; a SHARP group spans nodes.
  bool check_groups() {
    if (o_.node_of.empty() && o_.domain_of.empty()) return true;
    for (int g = 0; g < static_cast<int>(s_.switch_groups().size()); ++g) {
      const SwitchGroup& sg = group(g);
      std::vector<int> members = sg.contributors;
      members.insert(members.end(), sg.receivers.begin(), sg.receivers.end());
      const int first = members.front();
      if (sg.kind == SwitchKind::Nvls) {
        for (int r : members)
          if (domain_of(r) != domain_of(first))
            return fail(Failure::BadGroup,
                        fmt::format("switch group {} (nvls) spans NVLink domains: rank {} is in domain {}, rank {} in "
                                    "domain {}; NVLS reduces inside one NVLink domain",
                                    g, first, domain_of(first), r, domain_of(r)));
      } else if (std::all_of(members.begin(), members.end(), [&](int r) { return node_of(r) == node_of(first); })) {
        return fail(Failure::BadGroup,
                    fmt::format("switch group {} (sharp) has all its ranks on node {}; SHARP reduces in the network "
                                "switches, between nodes",
                                g, node_of(first)));
      }
    }
    return true;
  }

  void init_buffers(int r, RankState& st) {
    const Value mine{true, 0, RankSet{{r, r + 1}}};
    st.buffers[0].reset(args_.input_count(), mine);
    st.buffers[1].reset(args_.output_count(), Value{});
    st.buffers[2].reset(s_.scratch_count(), Value{});
    if (!o_.in_place) return;
    const std::uint64_t base = static_cast<std::uint64_t>(r) * args_.count;
    switch (args_.collective) {
      case Collective::ReduceScatter:
        break;  // storage 0 is the shared buffer, already the input
      case Collective::AllGather:
        st.buffers[1].write(base, {{0, args_.count, mine}});
        break;
      default:
        st.buffers[1].reset(args_.output_count(), mine);
        break;
    }
  }

  // Footprints for contract 6. Storage ids are packed in the top bits so one sorted list per
  // channel covers all buffers. Reads of the (read-only, out-of-place) input are not recorded.
  static void append_interval(std::vector<std::pair<std::uint64_t, std::uint64_t>>& v, int storage,
                              std::uint64_t offset, std::uint64_t count) {
    const std::uint64_t tag = static_cast<std::uint64_t>(storage) << 60;
    if (!v.empty() && v.back().second == (tag | offset))
      v.back().second = tag | (offset + count);
    else
      v.push_back({tag | offset, tag | (offset + count)});
  }
  void record_write(int rank, int channel, const Chunk& c) {
    auto [storage, offset] = resolve(rank, c);
    append_interval(ranks_[static_cast<std::size_t>(rank)].writes[static_cast<std::size_t>(channel)], storage, offset,
                    c.count);
  }
  void record_read(int rank, int channel, const Chunk& c) {
    auto [storage, offset] = resolve(rank, c);
    if (storage == 0 && !o_.in_place) return;
    append_interval(ranks_[static_cast<std::size_t>(rank)].reads[static_cast<std::size_t>(channel)], storage, offset,
                    c.count);
  }

  std::vector<Run> read_chunk(int rank, const Chunk& c) {
    auto [storage, offset] = resolve(rank, c);
    return ranks_[static_cast<std::size_t>(rank)].buffers[storage].read(offset, c.count);
  }

  bool write_chunk(int rank, const Chunk& c, const std::vector<Run>& data) {
    auto [storage, offset] = resolve(rank, c);
    ranks_[static_cast<std::size_t>(rank)].buffers[storage].write(offset, data);
    return true;
  }

  // dst (op)= data: every overlapping pair of runs must reduce the same input element from
  // disjoint rank sets.
  bool reduce_chunk(int rank, const Op& op, std::size_t index, const Chunk& c, const std::vector<Run>& data) {
    std::vector<Run> merged;
    if (!combine(rank, op, index, read_chunk(rank, c), data, merged)) return false;
    return write_chunk(rank, c, merged);
  }

  // merged = current (op) data, run by run (positions relative to the chunk).
  bool combine(int rank, const Op& op, std::size_t index, const std::vector<Run>& current, const std::vector<Run>& data,
               std::vector<Run>& merged) {
    std::size_t i = 0, j = 0;
    while (i < current.size() && j < data.size()) {
      const std::uint64_t a = std::max(current[i].start, data[j].start), b = std::min(current[i].end, data[j].end);
      const Value& x = current[i].value;
      const Value& y = data[j].value;
      if (!x.init || !y.init)
        return fail(Failure::Uninitialised,
                    fmt::format("{}: reduces elements [{}:{}] of the chunk that were never written",
                                where(rank, op, index), a, b));
      if (x.shift != y.shift)
        return fail(
            Failure::WrongElement,
            fmt::format("{}: reduces input element {} into a value of input element {} (chunk elements [{}:{}])",
                        where(rank, op, index), static_cast<std::int64_t>(a) + y.shift,
                        static_cast<std::int64_t>(a) + x.shift, a, b));
      int witness = -1;
      if (intersects(x.ranks, y.ranks, &witness))
        return fail(Failure::DoubleCounted,
                    fmt::format("{}: rank {}'s contribution counted twice ({} + {}) in chunk elements [{}:{}]",
                                where(rank, op, index), witness, rank_set_text(x.ranks), rank_set_text(y.ranks), a, b));
      merged.push_back({a, b, Value{true, x.shift, unite(x.ranks, y.ranks)}});
      (current[i].end < data[j].end) ? ++i : ((current[i].end == data[j].end) ? (++i, ++j) : ++j);
    }
    return true;
  }

  // Contract rule 11, a contributor's part: captured now, folded into instance n.
  bool switch_send(int rank, int channel, const Op& op, std::size_t index) {
    RankState& st = ranks_[static_cast<std::size_t>(rank)];
    ChannelState& ch = st.channels[static_cast<std::size_t>(channel)];
    record_read(rank, channel, op.src);
    std::vector<Run> data = read_chunk(rank, op.src);
    if (!check_initialised(rank, op, index, data)) return false;
    const SwitchGroup& sg = group(op.peer);
    const std::uint64_t bytes = op.src.count * size_of(args_.dtype);
    std::uint64_t& sum = sg.kind == SwitchKind::Nvls ? st.intra_bytes : st.inter_bytes;
    const std::optional<std::uint64_t> total = checked_add(sum, bytes);
    if (!total)
      throw ScheduleError(fmt::format("{}: the rank sends 2^64 bytes or more in total", where(rank, op, index)), rank,
                          channel, index);
    sum = *total;
    SwitchQueue& q = switch_queue(op.peer, channel);
    const std::size_t k = static_cast<std::size_t>(s_.contributor_index(op.peer, rank));
    const std::uint64_t n = q.given[k]++;
    while (q.base + q.live.size() <= n) q.live.emplace_back();
    SwitchInstance& inst = q.live[static_cast<std::size_t>(n - q.base)];
    if (inst.parts == 0) {
      inst.count = op.src.count;
      inst.value = std::move(data);
      inst.first_rank = rank;
      inst.first_op = index;
    } else {
      if (inst.count != op.src.count)
        return fail(Failure::SizeMismatch,
                    fmt::format("{}: gives {} elements to instance {} of switch group {} on channel {}, but rank {} "
                                "gave {} (its op {})",
                                where(rank, op, index), op.src.count, n, op.peer, channel, inst.first_rank, inst.count,
                                inst.first_op));
      std::vector<Run> merged;
      if (!combine(rank, op, index, inst.value, data, merged)) return false;
      inst.value = std::move(merged);
    }
    inst.clock = std::max(inst.clock, ch.clock);
    if (++inst.parts < sg.contributors.size()) return true;
    for (int r : sg.receivers) {  // complete: wake the receivers
      ChannelState& other = ranks_[static_cast<std::size_t>(r)].channels[static_cast<std::size_t>(channel)];
      if (!other.queued && !other.done()) {
        other.queued = true;
        work_.push_back({r, channel});
      }
    }
    return true;
  }

  // Contract rule 11, a receiver: blocks (returns false in `ready`) until instance n is complete.
  bool switch_recv(int rank, int channel, const Op& op, std::size_t index, bool& ready) {
    ChannelState& ch = ranks_[static_cast<std::size_t>(rank)].channels[static_cast<std::size_t>(channel)];
    const SwitchGroup& sg = group(op.peer);
    SwitchQueue& q = switch_queue(op.peer, channel);
    const std::size_t i = static_cast<std::size_t>(s_.receiver_index(op.peer, rank));
    const std::uint64_t n = q.taken[i];
    ready = n < q.base + q.live.size() && q.live[static_cast<std::size_t>(n - q.base)].parts == sg.contributors.size();
    if (!ready) return true;
    SwitchInstance& inst = q.live[static_cast<std::size_t>(n - q.base)];
    if (inst.count != op.dst.count)
      return fail(
          Failure::SizeMismatch,
          fmt::format("{}: receives {} elements from instance {} of switch group {}, whose parts have {} "
                      "(rank {} op {})",
                      where(rank, op, index), op.dst.count, n, op.peer, inst.count, inst.first_rank, inst.first_op));
    write_chunk(rank, op.dst, inst.value);
    record_write(rank, channel, op.dst);
    ch.clock = std::max(ch.clock, inst.clock + 1);
    result_.steps = std::max(result_.steps, ch.clock);
    ++q.taken[i];
    ++inst.taken;
    while (!q.live.empty() && q.live.front().taken == sg.receivers.size() &&
           q.live.front().parts == sg.contributors.size()) {
      q.live.pop_front();
      ++q.base;
    }
    return true;
  }

  bool check_initialised(int rank, const Op& op, std::size_t index, const std::vector<Run>& data) {
    for (const Run& r : data)
      if (!r.value.init)
        return fail(Failure::Uninitialised,
                    fmt::format("{}: reads elements [{}:{}] of the chunk that were never written",
                                where(rank, op, index), r.start, r.end));
    return true;
  }

  // Runs (rank, channel) until it finishes or blocks on an empty queue.
  bool step_channel(int rank, int channel) {
    RankState& st = ranks_[static_cast<std::size_t>(rank)];
    ChannelState& ch = st.channels[static_cast<std::size_t>(channel)];
    while (!ch.done()) {
      const std::size_t index = ch.ops[ch.next];
      const Op& op = st.program()[index];
      switch (op.kind) {
        case OpKind::Send: {
          record_read(rank, channel, op.src);
          std::vector<Run> data = read_chunk(rank, op.src);
          if (!check_initialised(rank, op, index, data)) return false;
          // Below kMaxBufferBytes (the chunk is inside its buffer); the sums are checked.
          const std::uint64_t bytes = op.src.count * size_of(args_.dtype);
          std::uint64_t& sum = node_of(op.peer) == node_of(rank) ? st.intra_bytes : st.inter_bytes;
          const std::optional<std::uint64_t> total = checked_add(sum, bytes);
          if (!total)
            throw ScheduleError(fmt::format("{}: the rank sends 2^64 bytes or more in total", where(rank, op, index)),
                                rank, channel, index);
          sum = *total;
          queues_[queue_key(rank, op.peer, channel)].push_back({op.src.count, std::move(data), ch.clock, index});
          ChannelState& peer = ranks_[static_cast<std::size_t>(op.peer)].channels[static_cast<std::size_t>(channel)];
          if (!peer.queued && !peer.done()) {
            peer.queued = true;
            work_.push_back({op.peer, channel});
          }
          break;
        }
        case OpKind::Recv:
        case OpKind::RecvReduce:
        case OpKind::RecvReduceCopy: {
          auto it = queues_.find(queue_key(op.peer, rank, channel));
          if (it == queues_.end() || it->second.empty()) return true;  // blocked
          Message m = std::move(it->second.front());
          it->second.pop_front();
          if (m.count != op.dst.count)
            return fail(Failure::SizeMismatch,
                        fmt::format("{}: receives {} elements but rank {} sent {} (its op {})", where(rank, op, index),
                                    op.dst.count, op.peer, m.count, m.op_index));
          ch.clock = std::max(ch.clock, m.clock + 1);
          result_.steps = std::max(result_.steps, ch.clock);
          if (op.kind == OpKind::Recv) {
            write_chunk(rank, op.dst, m.data);
          } else if (op.kind == OpKind::RecvReduceCopy) {
            // dst = src (op) data: src read (all of it) before dst is written (rule 9).
            record_read(rank, channel, op.src);
            const std::vector<Run> own = read_chunk(rank, op.src);
            if (!check_initialised(rank, op, index, own)) return false;
            std::vector<Run> merged;
            if (!combine(rank, op, index, own, m.data, merged)) return false;
            write_chunk(rank, op.dst, merged);
          } else if (!reduce_chunk(rank, op, index, op.dst, m.data)) {
            return false;
          }
          record_write(rank, channel, op.dst);
          break;
        }
        case OpKind::Copy: {
          record_read(rank, channel, op.src);
          std::vector<Run> data = read_chunk(rank, op.src);
          if (!check_initialised(rank, op, index, data)) return false;
          write_chunk(rank, op.dst, data);
          record_write(rank, channel, op.dst);
          break;
        }
        case OpKind::Reduce: {
          record_read(rank, channel, op.src);
          std::vector<Run> data = read_chunk(rank, op.src);
          if (!check_initialised(rank, op, index, data)) return false;
          if (!reduce_chunk(rank, op, index, op.dst, data)) return false;
          record_write(rank, channel, op.dst);
          break;
        }
        case OpKind::SwitchSend:
          if (!switch_send(rank, channel, op, index)) return false;
          break;
        case OpKind::SwitchRecv: {
          bool ready = false;
          if (!switch_recv(rank, channel, op, index, ready)) return false;
          if (!ready) return true;  // blocked
          break;
        }
      }
      ++ch.next;
    }
    return true;
  }

  bool execute() {
    for (int r = 0; r < p_; ++r)
      for (int c = 0; c < s_.num_channels(); ++c) {
        ranks_[static_cast<std::size_t>(r)].channels[static_cast<std::size_t>(c)].queued = true;
        work_.push_back({r, c});
      }
    while (!work_.empty()) {
      auto [r, c] = work_.front();
      work_.pop_front();
      ranks_[static_cast<std::size_t>(r)].channels[static_cast<std::size_t>(c)].queued = false;
      if (!step_channel(r, c)) return false;
    }
    return find_blocked();
  }

  // After the run: every channel finished, or report the wait cycle / the unmatched receive.
  bool find_blocked() {
    for (int r = 0; r < p_; ++r)
      for (int c = 0; c < s_.num_channels(); ++c) {
        const ChannelState& ch = ranks_[static_cast<std::size_t>(r)].channels[static_cast<std::size_t>(c)];
        if (ch.done()) continue;
        // Follow who waits on whom from (r, c) until a finished channel or a repeat.
        std::vector<int> chain;
        std::vector<char> seen(static_cast<std::size_t>(p_), 0);
        int cur = r;
        while (true) {
          const RankState& st = ranks_[static_cast<std::size_t>(cur)];
          const ChannelState& cc = st.channels[static_cast<std::size_t>(c)];
          if (cc.done()) break;
          if (seen[static_cast<std::size_t>(cur)]) {
            auto start = std::find(chain.begin(), chain.end(), cur);
            std::string cycle;
            for (auto it = start; it != chain.end(); ++it) cycle += fmt::format("{} -> ", *it);
            cycle += std::to_string(cur);
            const std::size_t index = cc.ops[cc.next];
            return fail(Failure::Deadlock, fmt::format("deadlock on channel {}: ranks wait in a cycle {} (e.g. {})", c,
                                                       cycle, where(cur, st.program()[index], index)));
          }
          seen[static_cast<std::size_t>(cur)] = 1;
          chain.push_back(cur);
          cur = waits_for(cur, st.program()[cc.ops[cc.next]]);
          TOPOCOLL_ASSERT(cur >= 0, "a blocked switch receive whose instance is complete");
        }
        // The chain ends at a rank whose channel finished: the last waiter's receive is unmatched.
        const int waiter = chain.back();
        const RankState& st = ranks_[static_cast<std::size_t>(waiter)];
        const ChannelState& cc = st.channels[static_cast<std::size_t>(c)];
        const std::size_t index = cc.ops[cc.next];
        const Op& op = st.program()[index];
        if (op.kind == OpKind::SwitchRecv) {
          const SwitchQueue& q = switch_queue(op.peer, c);
          const std::uint64_t n = q.taken[static_cast<std::size_t>(s_.receiver_index(op.peer, waiter))];
          const int missing = waits_for(waiter, op);
          return fail(Failure::UnmatchedRecv,
                      fmt::format("{}: waits for instance {} of switch group {}, but contributor rank {} finished "
                                  "channel {} after giving {} parts",
                                  where(waiter, op, index), n, op.peer, missing, c,
                                  q.given[static_cast<std::size_t>(s_.contributor_index(op.peer, missing))]));
        }
        return fail(Failure::UnmatchedRecv,
                    fmt::format("{}: waits for rank {}, which finished channel {} without sending it",
                                where(waiter, st.program()[index], index), st.program()[index].peer, c));
      }
    return true;
  }

  bool check_leftovers() {
    std::vector<std::uint64_t> keys;
    for (const auto& [key, q] : switch_)
      if (!q.live.empty()) keys.push_back(key);
    std::sort(keys.begin(), keys.end());
    for (std::uint64_t key : keys) {  // parts no receiver takes, lowest (group, channel) first
      const SwitchQueue& q = switch_.at(key);
      const int g = static_cast<int>(key / static_cast<std::uint64_t>(s_.num_channels()));
      const int channel = static_cast<int>(key % static_cast<std::uint64_t>(s_.num_channels()));
      const SwitchInstance& inst = q.live.front();
      const std::uint64_t n = q.base;
      const SwitchGroup& sg = group(g);
      const Op& op = ranks_[static_cast<std::size_t>(inst.first_rank)].program()[inst.first_op];
      for (std::size_t i = 0; i < q.taken.size(); ++i)
        if (q.taken[i] <= n)
          return fail(Failure::UnmatchedSend,
                      fmt::format("{}: its part of instance {} of switch group {} is never received: receiver rank {} "
                                  "finished channel {} after receiving {} instances ({} of {} parts given)",
                                  where(inst.first_rank, op, inst.first_op), n, g, sg.receivers[i], channel, q.taken[i],
                                  inst.parts, sg.contributors.size()));
    }
    for (const auto& [key, q] : queues_) {
      if (q.empty()) continue;
      const std::uint64_t channel = key % static_cast<std::uint64_t>(s_.num_channels());
      const std::uint64_t pair = key / static_cast<std::uint64_t>(s_.num_channels());
      const int src = static_cast<int>(pair / static_cast<std::uint64_t>(p_)),
                dst = static_cast<int>(pair % static_cast<std::uint64_t>(p_));
      const Message& m = q.front();
      const Op& op = ranks_[static_cast<std::size_t>(src)].program()[m.op_index];
      return fail(Failure::UnmatchedSend,
                  fmt::format("{}: rank {} never receives it on channel {} ({} unmatched sends)",
                              where(src, op, m.op_index), dst, channel, q.size()));
    }
    for (int r = 0; r < p_; ++r) {
      const RankState& st = ranks_[static_cast<std::size_t>(r)];
      const std::optional<std::uint64_t> sent = checked_add(st.intra_bytes, st.inter_bytes);
      const std::optional<std::uint64_t> total = sent ? checked_add(result_.total_bytes_sent, *sent) : std::nullopt;
      if (!total)
        throw ScheduleError(fmt::format("rank {}: the bytes sent ({} within nodes, {} between, {} by earlier ranks) "
                                        "do not fit in 64 bits",
                                        r, st.intra_bytes, st.inter_bytes, result_.total_bytes_sent),
                            r);
      result_.max_intra_bytes_sent = std::max(result_.max_intra_bytes_sent, st.intra_bytes);
      result_.max_inter_bytes_sent = std::max(result_.max_inter_bytes_sent, st.inter_bytes);
      result_.max_bytes_sent = std::max(result_.max_bytes_sent, *sent);
      result_.total_bytes_sent = *total;
    }
    return true;
  }

  // Merges one channel's intervals (a channel may touch its own elements many times).
  static void merge_into(std::vector<std::pair<std::uint64_t, std::uint64_t>>& v, int channel, bool write,
                         std::vector<std::tuple<std::uint64_t, std::uint64_t, int, bool>>& out) {
    std::sort(v.begin(), v.end());
    std::size_t i = 0;
    while (i < v.size()) {
      std::uint64_t lo = v[i].first, hi = v[i].second;
      for (++i; i < v.size() && v[i].first <= hi; ++i) hi = std::max(hi, v[i].second);
      out.emplace_back(lo, hi, channel, write);
    }
  }

  // Contract 6: an element written by one channel is neither written nor read by another.
  // A sweep in order of interval start keeps, for writes and for all accesses, the two
  // farthest-reaching intervals of distinct channels: enough to find an overlap with a channel
  // other than the current one.
  bool check_races() {
    static constexpr const char* kStorage[] = {"input", "output", "scratch"};
    const std::uint64_t mask = (std::uint64_t{1} << 60) - 1;
    struct Reach {
      std::uint64_t hi = 0;
      int channel = -1;
    };
    auto insert = [](std::array<Reach, 2>& top, std::uint64_t hi, int channel) {
      for (Reach& r : top)
        if (r.channel == channel) {
          r.hi = std::max(r.hi, hi);
          return;
        }
      Reach& lowest = top[0].hi <= top[1].hi ? top[0] : top[1];
      if (lowest.channel < 0 || hi > lowest.hi) lowest = {hi, channel};
    };
    for (int r = 0; r < p_; ++r) {
      RankState& st = ranks_[static_cast<std::size_t>(r)];
      std::vector<std::tuple<std::uint64_t, std::uint64_t, int, bool>> all;
      for (int c = 0; c < s_.num_channels(); ++c) {
        merge_into(st.writes[static_cast<std::size_t>(c)], c, true, all);
        merge_into(st.reads[static_cast<std::size_t>(c)], c, false, all);
      }
      std::sort(all.begin(), all.end());
      std::array<Reach, 2> writes{}, any{};
      for (const auto& [lo, hi, c, write] : all) {
        for (const Reach& w : writes)
          if (w.channel >= 0 && w.channel != c && w.hi > lo)
            return fail(
                Failure::ChannelRace,
                fmt::format("rank {}: channel {} writes {}[{}:{}] that channel {} {}", r, w.channel, kStorage[lo >> 60],
                            lo & mask, std::min(w.hi, hi) & mask, c, write ? "writes too" : "reads"));
        if (write)
          for (const Reach& a : any)
            if (a.channel >= 0 && a.channel != c && a.hi > lo)
              return fail(Failure::ChannelRace,
                          fmt::format("rank {}: channel {} writes {}[{}:{}] that channel {} reads", r, c,
                                      kStorage[lo >> 60], lo & mask, std::min(a.hi, hi) & mask, a.channel));
        insert(any, hi, c);
        if (write) insert(writes, hi, c);
      }
      st.writes.clear();
      st.reads.clear();
    }
    return true;
  }

  // The expected value of output element `pos` of rank `rank`, or nullopt when unconstrained.
  std::optional<Value> expected(int rank, std::uint64_t pos) const {
    const RankSet all{{0, p_}};
    switch (args_.collective) {
      case Collective::AllReduce:
        return Value{true, 0, all};
      case Collective::ReduceScatter:
        return Value{true, static_cast<std::int64_t>(rank * args_.count), all};
      case Collective::AllGather: {
        const int j = static_cast<int>(pos / std::max<std::uint64_t>(args_.count, 1));
        return Value{true, -static_cast<std::int64_t>(static_cast<std::uint64_t>(j) * args_.count),
                     RankSet{{j, j + 1}}};
      }
      case Collective::Broadcast:
        return Value{true, 0, RankSet{{args_.root, args_.root + 1}}};
      case Collective::Reduce:
        if (rank != args_.root) return std::nullopt;
        return Value{true, 0, all};
      case Collective::AllToAll: {  // output block j = input block `rank` of rank j
        const std::uint64_t c = std::max<std::uint64_t>(args_.count, 1);
        const std::uint64_t j = pos / c;
        return Value{true,
                     static_cast<std::int64_t>(static_cast<std::uint64_t>(rank) * c) - static_cast<std::int64_t>(j * c),
                     RankSet{{static_cast<int>(j), static_cast<int>(j) + 1}}};
      }
      case Collective::AllToAllV: {  // the block from rank i = rank i's block for `rank`
        const AllToAllVSizes& m = *args_.sizes;
        if (pos >= m.received(rank)) return std::nullopt;
        const int i = m.source_at(rank, pos);
        return Value{
            true, static_cast<std::int64_t>(m.send_displ(i, rank)) - static_cast<std::int64_t>(m.recv_displ(rank, i)),
            RankSet{{i, i + 1}}};
      }
    }
    return std::nullopt;
  }

  // Where the expectation of output element `pos` of `rank` next changes (at most `end`).
  std::uint64_t block_end(int rank, std::uint64_t pos, std::uint64_t end) const {
    switch (args_.collective) {
      case Collective::AllGather:
      case Collective::AllToAll:
        return args_.count > 0 ? std::min(end, (pos / args_.count + 1) * args_.count) : end;
      case Collective::AllToAllV: {
        const AllToAllVSizes& m = *args_.sizes;
        if (pos >= m.received(rank)) return end;
        const int i = m.source_at(rank, pos);
        return std::min(end, m.recv_displ(rank, i) + m.count(i, rank));
      }
      default:
        return end;
    }
  }

  bool check_postcondition() {
    for (int r = 0; r < p_; ++r) {
      // Read the output through the aliasing so in-place runs are checked where the data is.
      const Chunk out{BufferId::Output, 0, args_.output_count()};
      std::vector<Run> runs = read_chunk(r, out);
      for (const Run& run : runs) {
        // Allgather's and all-to-all's expectation changes every `count` elements: check block by block.
        std::uint64_t pos = run.start;
        while (pos < run.end) {
          const std::uint64_t block_end = this->block_end(r, pos, run.end);
          const std::optional<Value> want = expected(r, pos);
          if (want) {
            const Value& got = run.value;
            const std::string at = fmt::format("rank {}: output[{}:{}]", r, pos, block_end);
            if (!got.init) return fail(Failure::Missing, at + " is never written");
            if (got.shift != want->shift)
              return fail(Failure::WrongElement, fmt::format("{} holds input elements offset by {} instead of {}", at,
                                                             got.shift, want->shift));
            if (got.ranks != want->ranks) {
              const bool subset = unite(got.ranks, want->ranks) == want->ranks;
              return fail(subset ? Failure::Missing : Failure::WrongElement,
                          fmt::format("{} is the reduction of ranks {} but must be of ranks {}", at,
                                      rank_set_text(got.ranks), rank_set_text(want->ranks)));
            }
          }
          pos = block_end;
        }
      }
    }
    return true;
  }
};

}  // namespace

VerifyResult verify(const Schedule& schedule, const VerifyOptions& options) {
  if (!options.node_of.empty() && options.node_of.size() != static_cast<std::size_t>(schedule.num_ranks()))
    throw InputError(
        fmt::format("verify: node_of has {} entries for {} ranks", options.node_of.size(), schedule.num_ranks()));
  const CollectiveArgs& a = schedule.args();
  if (options.in_place && a.collective == Collective::AllToAllV && a.sizes && !a.sizes->symmetric())
    throw InputError(
        fmt::format("verify '{}' in place: an in-place alltoallv needs a symmetric size matrix "
                    "(MPI_IN_PLACE's condition: every rank sends each peer what it receives from it); "
                    "this one is not",
                    schedule.name()));
  return Verifier(schedule, options).run();
}

}  // namespace topocoll::algo
