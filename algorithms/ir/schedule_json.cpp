#include "algorithms/ir/schedule_json.hpp"

#include <fmt/format.h>

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "common/errors.hpp"
#include "common/json_input.hpp"

namespace topocoll::algo {

using nlohmann::json;

namespace {

BufferId parse_buffer(const json& j, const std::string& where) {
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "input") return BufferId::Input;
    if (s == "output") return BufferId::Output;
    if (s == "scratch") return BufferId::Scratch;
  }
  throw InputError(fmt::format("{}: buffer {} is not one of input, output, scratch", where, json_input::echo(j)));
}

// An integer field in [lo, hi] (hi: the limit named `limit`), range-checked before it is narrowed.
template <typename T>
T bounded(const json& j, const std::string& where, const std::string& what, T lo, T hi, const char* limit) {
  if (!j.is_number_integer())
    throw InputError(fmt::format("{}: {} {} is not an integer", where, what, json_input::echo(j)));
  const bool negative = !j.is_number_unsigned() && j.get<std::int64_t>() < 0;
  if (negative ? std::cmp_less(j.get<std::int64_t>(), lo) : std::cmp_less(j.get<std::uint64_t>(), lo))
    throw InputError(lo == 0 ? fmt::format("{}: {} {} is not a non-negative integer", where, what, json_input::echo(j))
                             : fmt::format("{}: {} must be at least {}, got {}", where, what, lo, json_input::echo(j)));
  if (!negative && std::cmp_greater(j.get<std::uint64_t>(), hi))
    throw InputError(
        fmt::format("{}: {} {} is more than {} (the limit {})", where, what, json_input::echo(j), hi, limit));
  return negative ? static_cast<T>(j.get<std::int64_t>()) : static_cast<T>(j.get<std::uint64_t>());
}

// Offsets and counts of elements: at most kMaxScheduleElements, so that no end or size wraps.
std::uint64_t parse_u64(const json& j, const std::string& where, const char* what) {
  return bounded<std::uint64_t>(j, where, what, 0, kMaxScheduleElements, "kMaxScheduleElements");
}

int parse_int(const json& j, const std::string& where, const char* what) {
  return bounded<int>(j, where, what, std::numeric_limits<int>::min(), std::numeric_limits<int>::max(), "INT_MAX");
}

json chunk_fields(const Chunk& c) {
  return json::array({std::string(to_string(c.buffer)), c.offset, c.count});
}

Op parse_op(const json& j, const std::string& where, int groups) {
  if (!j.is_array() || j.empty() || !j[0].is_string())
    throw InputError(fmt::format("{}: an operation is [kind, channel, ...], got {}", where, json_input::echo(j)));
  const std::string kind = j[0].get<std::string>();
  Op op;
  auto need = [&](std::size_t n) {
    if (j.size() != n) throw InputError(fmt::format("{}: '{}' takes {} fields, got {}", where, kind, n, j.size()));
  };
  if (kind == "send" || kind == "recv" || kind == "recv_reduce") {
    need(6);
    op.kind = kind == "send" ? OpKind::Send : kind == "recv" ? OpKind::Recv : OpKind::RecvReduce;
    op.peer = parse_int(j[2], where, "peer");  // the verifier checks the rank
    Chunk c{parse_buffer(j[3], where), parse_u64(j[4], where, "offset"), parse_u64(j[5], where, "count")};
    (op.kind == OpKind::Send ? op.src : op.dst) = c;
  } else if (kind == "recv_reduce_copy") {
    need(8);
    op.kind = OpKind::RecvReduceCopy;
    op.peer = parse_int(j[2], where, "peer");
    const std::uint64_t count = parse_u64(j[7], where, "count");
    op.src = Chunk{parse_buffer(j[3], where), parse_u64(j[4], where, "offset"), count};
    op.dst = Chunk{parse_buffer(j[5], where), parse_u64(j[6], where, "offset"), count};
  } else if (kind == "switch_send" || kind == "switch_recv") {
    need(6);
    op.kind = kind == "switch_send" ? OpKind::SwitchSend : OpKind::SwitchRecv;
    op.peer = parse_int(j[2], where, "group");
    if (op.peer < 0 || op.peer >= groups)
      throw InputError(groups == 0
                           ? fmt::format("{}: switch group {} but \"switch_groups\" declares none", where, op.peer)
                           : fmt::format("{}: switch group {} is not one of the {} in \"switch_groups\" "
                                         "(0..{})",
                                         where, op.peer, groups, groups - 1));
    Chunk c{parse_buffer(j[3], where), parse_u64(j[4], where, "offset"), parse_u64(j[5], where, "count")};
    (op.kind == OpKind::SwitchSend ? op.src : op.dst) = c;
  } else if (kind == "copy" || kind == "reduce") {
    need(7);
    op.kind = kind == "copy" ? OpKind::Copy : OpKind::Reduce;
    const std::uint64_t count = parse_u64(j[6], where, "count");
    op.src = Chunk{parse_buffer(j[2], where), parse_u64(j[3], where, "offset"), count};
    op.dst = Chunk{parse_buffer(j[4], where), parse_u64(j[5], where, "offset"), count};
  } else {
    throw InputError(
        fmt::format("{}: unknown operation '{}': expected send, recv, recv_reduce, "
                    "recv_reduce_copy, copy, reduce, switch_send or switch_recv",
                    where, json_input::escaped(kind)));
  }
  const int channel = parse_int(j[1], where, "channel");  // the verifier checks it against "channels"
  if (channel < 0 || channel > 65535) throw InputError(fmt::format("{}: channel {} is out of range", where, channel));
  op.channel = static_cast<std::uint16_t>(channel);
  return op;
}

}  // namespace

void write_schedule_json(const Schedule& s, std::ostream& out) {
  const CollectiveArgs& a = s.args();
  out << "{\"format\": \"topocoll-schedule\", \"version\": 1, \"name\": " << json(s.name()).dump()
      << ", \"collective\": " << json(std::string(to_string(a.collective))).dump() << ", \"count\": " << a.count
      << ", \"dtype\": " << json(std::string(to_string(a.dtype))).dump()
      << ", \"op\": " << json(std::string(to_string(a.op))).dump() << ", \"ranks\": " << a.ranks
      << ", \"root\": " << a.root << ", \"channels\": " << s.num_channels()
      << ", \"scratch_count\": " << s.scratch_count();
  // An all-to-allv's size matrix: "sizes": [[count(0, 0), count(0, 1), ...], ...] (required there).
  if (a.collective == Collective::AllToAllV && a.sizes) {
    json rows = json::array();
    for (int i = 0; i < a.sizes->ranks(); ++i) {
      json row = json::array();
      for (int j = 0; j < a.sizes->ranks(); ++j) row.push_back(a.sizes->count(i, j));
      rows.push_back(std::move(row));
    }
    out << ",\n \"sizes\": " << rows.dump();
  }
  // Tree channels, when there are any (ChannelPattern; optional on input).
  json trees = json::array();
  for (int ch = 0; ch < s.num_channels(); ++ch)
    if (s.pattern(ch) == ChannelPattern::Tree) trees.push_back(ch);
  if (!trees.empty()) out << ", \"tree_channels\": " << trees.dump();
  // In-network reduction groups, when there are any (contract rule 11; optional on input).
  if (s.uses_switch()) {
    json groups = json::array();
    for (const SwitchGroup& g : s.switch_groups())
      groups.push_back(
          json{{"kind", std::string(to_string(g.kind))}, {"contributors", g.contributors}, {"receivers", g.receivers}});
    out << ",\n \"switch_groups\": " << groups.dump();
  }
  out << ",\n \"programs\": [\n";
  // One rank per line, generated and written one at a time (O(one program) memory).
  for (int r = 0; r < a.ranks; ++r) {
    json ops = json::array();
    for (const Op& op : s.program(r)) {
      json o = json::array({std::string(to_string(op.kind)), op.channel});
      switch (op.kind) {
        case OpKind::Send:
        case OpKind::SwitchSend:
          o.push_back(op.peer);
          for (auto& f : chunk_fields(op.src)) o.push_back(f);
          break;
        case OpKind::Recv:
        case OpKind::RecvReduce:
        case OpKind::SwitchRecv:
          o.push_back(op.peer);
          for (auto& f : chunk_fields(op.dst)) o.push_back(f);
          break;
        case OpKind::RecvReduceCopy:
          o.push_back(op.peer);
          [[fallthrough]];
        case OpKind::Copy:
        case OpKind::Reduce:
          o.push_back(std::string(to_string(op.src.buffer)));
          o.push_back(op.src.offset);
          o.push_back(std::string(to_string(op.dst.buffer)));
          o.push_back(op.dst.offset);
          o.push_back(op.src.count);
          break;
      }
      ops.push_back(std::move(o));
    }
    out << "  " << ops.dump() << (r + 1 < a.ranks ? ",\n" : "\n");
  }
  out << " ]}\n";
}

Schedule read_schedule_json(const std::string& text, const std::string& source) {
  const json j = json_input::parse(text, source);
  if (!j.is_object() || !j.contains("format") || j["format"] != "topocoll-schedule")
    throw InputError(fmt::format("{}: expected a JSON object with \"format\": \"topocoll-schedule\"", source));
  if (!j.contains("version") || j["version"] != 1)
    throw InputError(fmt::format("{}: \"version\" must be 1, got {}", source,
                                 j.contains("version") ? json_input::echo(j["version"]) : "none"));
  for (const char* key : {"collective", "count", "dtype", "op", "ranks", "channels", "programs"})
    if (!j.contains(key)) throw InputError(fmt::format("{}: missing \"{}\"", source, key));
  CollectiveArgs a;
  try {
    a.collective = parse_collective(json_input::string(j["collective"], source, "\"collective\""));
    a.dtype = parse_dtype(json_input::string(j["dtype"], source, "\"dtype\""));
    a.op = parse_op(json_input::string(j["op"], source, "\"op\""));
  } catch (const InputError& e) {
    const std::string what = e.what();
    throw InputError(what.starts_with(source) ? what : fmt::format("{}: {}", source, what));
  }
  a.ranks = bounded<int>(j["ranks"], source, "\"ranks\"", 1, kMaxScheduleRanks, "kMaxScheduleRanks");
  const int channels =
      bounded<int>(j["channels"], source, "\"channels\"", 1, kMaxScheduleChannels, "kMaxScheduleChannels");
  a.root = j.contains("root") ? bounded<int>(j["root"], source, "\"root\"", 0, a.ranks - 1, "\"ranks\" - 1") : 0;
  // No buffer (input, output, scratch) reaches the IR's kMaxBufferBytes (schedule.hpp, the one
  // buffer limit every schedule is built under): counts times ranks times the element size never
  // wrap 64 bits.
  const std::uint64_t elem = size_of(a.dtype);
  a.count = bounded<std::uint64_t>(j["count"], source, "\"count\"", 0,
                                   (kMaxBufferBytes - 1) / static_cast<std::uint64_t>(a.ranks) / elem,
                                   "kMaxBufferBytes: below 2^60 bytes per buffer");
  const std::uint64_t scratch =
      j.contains("scratch_count")
          ? bounded<std::uint64_t>(j["scratch_count"], source, "\"scratch_count\"", 0, (kMaxBufferBytes - 1) / elem,
                                   "kMaxBufferBytes: below 2^60 bytes")
          : 0;
  if (a.collective == Collective::AllToAllV) {
    if (!j.contains("sizes"))
      throw InputError(fmt::format("{}: an alltoallv schedule needs \"sizes\": one row of {} element counts per rank",
                                   source, a.ranks));
    const json& rows = j["sizes"];
    if (!rows.is_array() || rows.size() != static_cast<std::size_t>(a.ranks))
      throw InputError(fmt::format("{}: \"sizes\" must be {} rows (one per rank) of {} element counts, got {}", source,
                                   a.ranks, a.ranks, json_input::echo(rows)));
    std::vector<std::uint64_t> counts;
    counts.reserve(static_cast<std::size_t>(a.ranks) * static_cast<std::size_t>(a.ranks));
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const std::string where = fmt::format("\"sizes\"[{}]", i);
      if (!rows[i].is_array() || rows[i].size() != static_cast<std::size_t>(a.ranks))
        throw InputError(fmt::format("{}: {} must be a row of {} element counts, got {}", source, where, a.ranks,
                                     json_input::echo(rows[i])));
      for (const json& v : rows[i])
        counts.push_back(bounded<std::uint64_t>(v, source, where, 0, (kMaxBufferBytes - 1) / elem,
                                                "kMaxBufferBytes: below 2^60 bytes"));
    }
    try {
      a.sizes = AllToAllVSizes::make(a.ranks, std::move(counts));
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: \"sizes\": {}", source, e.what()));
    }
  }
  std::string name = "imported";
  if (j.contains("name")) name = json_input::string(j["name"], source, "\"name\"");
  // Switch groups: [{"kind": "nvls" | "sharp", "contributors": [ranks], "receivers": [ranks]}].
  std::vector<SwitchGroup> groups;
  if (j.contains("switch_groups")) {
    const json& gs = j["switch_groups"];
    if (!gs.is_array())
      throw InputError(
          fmt::format("{}: \"switch_groups\" must be an array of groups, got {}", source, json_input::echo(gs)));
    for (std::size_t g = 0; g < gs.size(); ++g) {
      const std::string where = fmt::format("{}: switch_groups[{}]", source, g);
      const json& e = gs[g];
      if (!e.is_object() || !e.contains("kind") || !e.contains("contributors") || !e.contains("receivers"))
        throw InputError(
            fmt::format("{}: expected {{\"kind\": \"nvls\" or \"sharp\", \"contributors\": [ranks], "
                        "\"receivers\": [ranks]}}, got {}",
                        where, json_input::echo(e)));
      SwitchGroup sg;
      const std::string kind = json_input::string(e["kind"], where, "\"kind\"");
      if (kind == "nvls")
        sg.kind = SwitchKind::Nvls;
      else if (kind == "sharp")
        sg.kind = SwitchKind::Sharp;
      else
        throw InputError(
            fmt::format("{}: unknown switch kind '{}': expected nvls or sharp", where, json_input::escaped(kind)));
      for (const char* role : {"contributors", "receivers"}) {
        const json& list = e[role];
        if (!list.is_array())
          throw InputError(
              fmt::format("{}: \"{}\" must be an array of ranks, got {}", where, role, json_input::echo(list)));
        std::vector<int>& out = std::string_view(role) == "contributors" ? sg.contributors : sg.receivers;
        for (const json& r : list)
          out.push_back(bounded<int>(r, where, fmt::format("{} rank", role), 0, a.ranks - 1, "\"ranks\" - 1"));
      }
      groups.push_back(std::move(sg));
    }
  }
  const json& programs = j["programs"];
  if (!programs.is_array() || programs.size() != static_cast<std::size_t>(a.ranks))
    throw InputError(fmt::format("{}: \"programs\" must be an array of {} programs (one per rank)", source, a.ranks));
  std::vector<Program> progs;
  std::uint64_t operations = 0;
  for (std::size_t r = 0; r < programs.size(); ++r) {
    if (!programs[r].is_array()) throw InputError(fmt::format("{}: programs[{}] is not an array", source, r));
    operations += programs[r].size();
    if (operations > kMaxScheduleOperations)
      throw InputError(
          fmt::format("{}: programs[{}]: more than {} operations in all (the limit kMaxScheduleOperations)", source, r,
                      kMaxScheduleOperations));
    Program p;
    for (std::size_t i = 0; i < programs[r].size(); ++i)
      p.push_back(
          parse_op(programs[r][i], fmt::format("{}: programs[{}][{}]", source, r, i), static_cast<int>(groups.size())));
    progs.push_back(std::move(p));
  }
  Schedule sched = Schedule::from_programs(name, a, channels, scratch, std::move(progs));
  for (std::size_t g = 0; g < groups.size(); ++g) {
    try {
      sched.add_switch_group(std::move(groups[g]));
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: switch_groups[{}]: {}", source, g, e.what()));
    }
  }
  if (j.contains("tree_channels")) {
    const json& trees = j["tree_channels"];
    if (!trees.is_array())
      throw InputError(fmt::format("{}: \"tree_channels\" must be an array of channel numbers, got {}", source,
                                   json_input::echo(trees)));
    for (const json& ch : trees)
      sched.set_pattern(bounded<int>(ch, source, "\"tree_channels\" entry", 0, channels - 1, "\"channels\" - 1"),
                        ChannelPattern::Tree);
  }
  return sched;
}

Schedule load_schedule_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot read the file (does it exist?)", path));
  std::ostringstream os;
  os << in.rdbuf();
  return read_schedule_json(os.str(), path);
}

}  // namespace topocoll::algo
