#include "simulator/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>

#include "algorithms/ir/program_index.hpp"
#include "common/errors.hpp"

namespace topocoll::sim {

namespace {

using algo::OpKind;

// A JSON string literal: quotes, backslashes and control characters escaped (nlohmann).
std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump();
}

// Nanoseconds as the format's microseconds, exactly: "12.345".
std::string micros(std::int64_t ns) {
  return fmt::format("{}.{:03}", ns / 1000, ns % 1000);
}

// One event on its track, in integer nanoseconds.
struct Placed {
  std::size_t index = 0;  // into the engine's events
  std::int64_t tid = 0;
  std::int64_t start = 0, end = 0;
};

bool in_ranges(const std::vector<std::pair<int, int>>& ranges, int r) {
  if (ranges.empty()) return true;
  for (const auto& [lo, hi] : ranges)
    if (r >= lo && r <= hi) return true;
  return false;
}

}  // namespace

std::vector<std::pair<int, int>> parse_rank_ranges(const std::string& text, int ranks) {
  const auto bad = [&](const std::string& why) {
    return InputError(fmt::format("--trace-ranks {}: {}; expected ranks or ranges of 0..{}, e.g. 0-15,{}-{}", text, why,
                                  ranks - 1, std::max(0, ranks - 8), ranks - 1));
  };
  const auto number = [&](std::string_view s) {
    int v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || ptr != s.data() + s.size()) throw bad(fmt::format("'{}' is not a rank", s));
    if (v < 0 || v >= ranks) throw bad(fmt::format("rank {} is not one of the {} ranks", v, ranks));
    return v;
  };
  std::vector<std::pair<int, int>> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string_view part = std::string_view(text).substr(start, comma - start);
    const std::size_t dash = part.find('-');
    const int lo = number(part.substr(0, dash));
    const int hi = dash == std::string_view::npos ? lo : number(part.substr(dash + 1));
    if (hi < lo) throw bad(fmt::format("range {}-{} runs backwards", lo, hi));
    out.emplace_back(lo, hi);
    start = comma + 1;
  }
  std::sort(out.begin(), out.end());
  std::vector<std::pair<int, int>> merged;
  for (const auto& r : out) {
    if (!merged.empty() && r.first <= merged.back().second + 1)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  return merged;
}

std::vector<std::pair<int, int>> default_trace_ranks(int ranks) {
  if (ranks <= kTraceAllRanks) return {{0, std::max(0, ranks - 1)}};
  return {{0, kTraceEdgeRanks - 1}, {ranks - kTraceEdgeRanks, ranks - 1}};
}

TraceStats write_chrome_trace(const std::vector<TraceEvent>& events, int ranks, int channels, std::ostream& out,
                              const TraceOptions& options) {
  // Track numbers: per channel, 0 for the blocking operations, 1 + q for sends to rank q,
  // 1 + ranks + g for switch sends to group g; within 32 bits for 2^17 ranks and 64 channels.
  int groups = 0;
  for (const TraceEvent& e : events)
    if (e.kind == OpKind::SwitchSend) groups = std::max(groups, e.peer + 1);
  const std::int64_t stride = static_cast<std::int64_t>(ranks) + groups + 1;
  const auto track = [&](const TraceEvent& e) -> std::int64_t {
    const std::int64_t base = static_cast<std::int64_t>(e.channel) * stride;
    if (e.kind == OpKind::Send) return base + 1 + e.peer;
    if (e.kind == OpKind::SwitchSend) return base + 1 + ranks + e.peer;
    return base;
  };
  std::vector<Placed> placed;
  placed.reserve(events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    if (!in_ranges(options.ranks, e.rank) || !std::isfinite(e.start_s) || !std::isfinite(e.end_s)) continue;
    const std::int64_t s = std::llround(std::max(0.0, e.start_s) * 1e9);
    const std::int64_t f = std::max(s, static_cast<std::int64_t>(std::llround(std::max(0.0, e.end_s) * 1e9)));
    placed.push_back({i, track(e), s, f});
  }

  // The slices: one per operation, or each track's runs of operations of one kind and peer cut
  // into pieces of up to `per` (the header's aggregation).
  struct Slice {
    std::size_t first;  // into placed: the slice's first operation (its kind, peer and rank)
    std::int64_t tid, start, end;
    std::uint64_t bytes, ops;
  };
  std::uint64_t per = 1;
  if (options.max_slices > 0 && placed.size() > options.max_slices)
    per = (placed.size() + options.max_slices - 1) / options.max_slices;
  std::vector<Slice> slices;
  std::vector<std::size_t> slice_of(placed.size());
  if (per == 1) {
    for (std::size_t k = 0; k < placed.size(); ++k) {
      slices.push_back({k, placed[k].tid, placed[k].start, placed[k].end, events[placed[k].index].bytes, 1});
      slice_of[k] = k;
    }
  } else {
    std::vector<std::size_t> order(placed.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    const auto on_track = [&](std::size_t a, std::size_t b) {
      const Placed &x = placed[a], &y = placed[b];
      return std::tie(events[x.index].rank, x.tid, x.start, x.end, x.index) <
             std::tie(events[y.index].rank, y.tid, y.start, y.end, y.index);
    };
    std::sort(order.begin(), order.end(), on_track);
    for (std::size_t k : order) {
      const TraceEvent& e = events[placed[k].index];
      if (!slices.empty()) {
        Slice& last = slices.back();
        const TraceEvent& f = events[placed[last.first].index];
        if (last.ops < per && f.rank == e.rank && last.tid == placed[k].tid && f.kind == e.kind && f.peer == e.peer) {
          last.end = std::max(last.end, placed[k].end);
          last.bytes += e.bytes;
          ++last.ops;
          slice_of[k] = slices.size() - 1;
          continue;
        }
      }
      slices.push_back({k, placed[k].tid, placed[k].start, placed[k].end, e.bytes, 1});
      slice_of[k] = slices.size() - 1;
    }
  }

  std::map<std::string, std::string> metadata = options.metadata;
  if (per > 1) metadata["ops_per_slice"] = fmt::format("up to {}", per);
  out << "{\"displayTimeUnit\": \"ns\"";
  if (!metadata.empty())
    out << ", \"otherData\": "
        << nlohmann::json(metadata).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out << ", \"traceEvents\": [\n";
  bool first = true;
  auto sep = [&] {
    if (!first) out << ",\n";
    first = false;
  };
  // Names of the processes (ranks) and of the threads that hold events.
  std::set<int> written_ranks;
  std::set<std::pair<int, std::int64_t>> tracks;
  for (const Placed& p : placed) {
    written_ranks.insert(events[p.index].rank);
    tracks.insert({events[p.index].rank, p.tid});
  }
  TraceStats stats;
  stats.ops = placed.size();
  stats.ops_per_slice = per;
  for (int r : written_ranks) {
    sep();
    out << fmt::format(R"({{"ph": "M", "name": "process_name", "pid": {}, "tid": 0, "args": {{"name": "rank {}"}}}})",
                       r, r);
    sep();
    out << fmt::format(
        R"({{"ph": "M", "name": "process_sort_index", "pid": {}, "tid": 0, "args": {{"sort_index": {}}}}})", r, r);
  }
  for (const auto& [r, tid] : tracks) {
    const std::int64_t ch = tid / stride, slot = tid % stride;
    const std::string name = slot == 0       ? fmt::format("channel {}", ch)
                             : slot <= ranks ? fmt::format("channel {} sends to {}", ch, slot - 1)
                                             : fmt::format("channel {} switch group {}", ch, slot - 1 - ranks);
    sep();
    out << fmt::format(R"({{"ph": "M", "name": "thread_name", "pid": {}, "tid": {}, "args": {{"name": {}}}}})", r, tid,
                       quoted(name));
    sep();
    out << fmt::format(
        R"({{"ph": "M", "name": "thread_sort_index", "pid": {}, "tid": {}, "args": {{"sort_index": {}}}}})", r, tid,
        tid);
  }
  for (const Slice& sl : slices) {
    const TraceEvent& e = events[placed[sl.first].index];
    const std::string kind(algo::to_string(e.kind));
    const std::string name = e.peer >= 0 ? fmt::format("{} {}", kind, e.peer) : kind;
    const std::string ops = per > 1 ? fmt::format(", \"ops\": {}", sl.ops) : "";
    sep();
    out << fmt::format(
        R"({{"ph": "X", "name": {}, "cat": {}, "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{"bytes": {}{}}}}})",
        quoted(name), quoted(kind), e.rank, sl.tid, micros(sl.start), micros(sl.end - sl.start), sl.bytes, ops);
    ++stats.events;
  }
  // Flows: the k-th send of (src, dst, channel) to the k-th receive of it, both written. The
  // arrow starts at the send's midpoint and ends at the receive's, or at the send's end when the
  // receive was waiting before the send began: off the boundaries one slice shares with the next,
  // where binding would be ambiguous, wherever the times allow.
  using Key = std::tuple<int, int, int>;  // src, dst, channel
  std::map<Key, std::vector<const Placed*>> sends, recvs;
  const auto slice_at = [&](const Placed* p) -> const Slice& {
    return slices[slice_of[static_cast<std::size_t>(p - placed.data())]];
  };
  for (const Placed& p : placed) {
    const TraceEvent& e = events[p.index];
    if (e.kind == OpKind::Send)
      sends[{e.rank, e.peer, e.channel}].push_back(&p);
    else if (algo::is_receive(e.kind))
      recvs[{e.peer, e.rank, e.channel}].push_back(&p);
  }
  const auto by_time = [](const Placed* a, const Placed* b) {
    return std::tie(a->start, a->end, a->index) < std::tie(b->start, b->end, b->index);
  };
  std::uint64_t id = 0;
  // One arrow from operation `from` (in its slice) to operation `to` (in its slice): from the
  // send's midpoint to the receive's, or to the send's end when the receive was waiting before
  // the send began (the data lands after its last byte left).
  const auto arrow = [&](const char* name, const Placed* from, const Placed* to) {
    const Slice& ss = slice_at(from);
    const Slice& rs = slice_at(to);
    const std::int64_t at = std::clamp(std::max(to->start + (to->end - to->start) / 2, from->end), rs.start, rs.end);
    const std::int64_t begin = std::max(ss.start, std::min(ss.start + (ss.end - ss.start) / 2, at));
    sep();
    out << fmt::format(R"({{"ph": "s", "name": "{}", "cat": "flow", "id": {}, "pid": {}, "tid": {}, "ts": {}}})", name,
                       id, events[from->index].rank, ss.tid, micros(begin));
    sep();
    out << fmt::format(
        R"({{"ph": "f", "bp": "e", "name": "{}", "cat": "flow", "id": {}, "pid": {}, "tid": {}, "ts": {}}})", name, id,
        events[to->index].rank, rs.tid, micros(at));
    ++id;
  };
  for (auto& [key, s] : sends) {
    auto it = recvs.find(key);
    if (it == recvs.end()) continue;
    std::vector<const Placed*>& r = it->second;
    std::stable_sort(s.begin(), s.end(), by_time);
    std::stable_sort(r.begin(), r.end(), by_time);
    for (std::size_t k = 0; k < std::min(s.size(), r.size()); ++k) {
      const Slice& ss = slice_at(s[k]);
      if (&placed[ss.first] != s[k]) continue;  // aggregated: one arrow per send slice, from its first send
      arrow("data", s[k], r[k]);
    }
  }
  // Switch groups (contract rule 11): a receiver's k-th switch_recv of group g on channel c
  // takes the result of instance k, made of every contributor's k-th switch_send of (g, c).
  // One arrow to each such receive (or receive slice), from the traced contribution that ended
  // last: the one the result waited for (ties: the lowest rank).
  using GroupKey = std::pair<int, int>;                                          // group, channel
  std::map<GroupKey, std::map<int, std::vector<const Placed*>>> parts, results;  // per rank
  for (const Placed& p : placed) {
    const TraceEvent& e = events[p.index];
    if (e.kind == OpKind::SwitchSend)
      parts[{e.peer, e.channel}][e.rank].push_back(&p);
    else if (e.kind == OpKind::SwitchRecv)
      results[{e.peer, e.channel}][e.rank].push_back(&p);
  }
  for (auto& [key, receivers] : results) {
    const auto it = parts.find(key);
    if (it == parts.end()) continue;
    for (auto& [rank, list] : it->second) std::stable_sort(list.begin(), list.end(), by_time);
    for (auto& [rank, list] : receivers) {
      std::stable_sort(list.begin(), list.end(), by_time);
      for (std::size_t k = 0; k < list.size(); ++k) {
        const Placed* last = nullptr;
        for (const auto& [from, sent] : it->second)
          if (k < sent.size() && (last == nullptr || sent[k]->end > last->end)) last = sent[k];
        if (last == nullptr) continue;
        const Slice& rs = slice_at(list[k]);
        if (&placed[rs.first] != list[k]) continue;  // aggregated: one arrow per receive slice
        arrow("switch", last, list[k]);
      }
    }
  }
  stats.flows = id;
  stats.ranks = static_cast<int>(written_ranks.size());
  (void)channels;
  out << "\n]}\n";
  return stats;
}

}  // namespace topocoll::sim
