#include "algorithms/ir/schedule_json.hpp"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/errors.hpp"

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
  throw InputError(fmt::format("{}: buffer {} is not one of input, output, scratch", where, j.dump()));
}

std::uint64_t parse_u64(const json& j, const std::string& where, const char* what) {
  if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<std::int64_t>() >= 0))
    throw InputError(fmt::format("{}: {} {} is not a non-negative integer", where, what, j.dump()));
  return j.get<std::uint64_t>();
}

int parse_int(const json& j, const std::string& where, const char* what) {
  if (!j.is_number_integer()) throw InputError(fmt::format("{}: {} {} is not an integer", where, what, j.dump()));
  return j.get<int>();
}

json chunk_fields(const Chunk& c) {
  return json::array({std::string(to_string(c.buffer)), c.offset, c.count});
}

Op parse_op(const json& j, const std::string& where) {
  if (!j.is_array() || j.empty() || !j[0].is_string())
    throw InputError(fmt::format("{}: an operation is [kind, channel, ...], got {}", where, j.dump()));
  const std::string kind = j[0].get<std::string>();
  Op op;
  auto need = [&](std::size_t n) {
    if (j.size() != n) throw InputError(fmt::format("{}: '{}' takes {} fields, got {}", where, kind, n, j.size()));
  };
  if (kind == "send" || kind == "recv" || kind == "recv_reduce") {
    need(6);
    op.kind = kind == "send" ? OpKind::Send : kind == "recv" ? OpKind::Recv : OpKind::RecvReduce;
    op.peer = parse_int(j[2], where, "peer");
    Chunk c{parse_buffer(j[3], where), parse_u64(j[4], where, "offset"), parse_u64(j[5], where, "count")};
    (op.kind == OpKind::Send ? op.src : op.dst) = c;
  } else if (kind == "copy" || kind == "reduce") {
    need(7);
    op.kind = kind == "copy" ? OpKind::Copy : OpKind::Reduce;
    const std::uint64_t count = parse_u64(j[6], where, "count");
    op.src = Chunk{parse_buffer(j[2], where), parse_u64(j[3], where, "offset"), count};
    op.dst = Chunk{parse_buffer(j[4], where), parse_u64(j[5], where, "offset"), count};
  } else {
    throw InputError(
        fmt::format("{}: unknown operation '{}': expected send, recv, recv_reduce, copy or reduce", where, kind));
  }
  const int channel = parse_int(j[1], where, "channel");
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
      << ", \"scratch_count\": " << s.scratch_count() << ",\n \"programs\": [\n";
  // One rank per line, generated and written one at a time (O(one program) memory).
  for (int r = 0; r < a.ranks; ++r) {
    json ops = json::array();
    for (const Op& op : s.program(r)) {
      json o = json::array({std::string(to_string(op.kind)), op.channel});
      switch (op.kind) {
        case OpKind::Send:
          o.push_back(op.peer);
          for (auto& f : chunk_fields(op.src)) o.push_back(f);
          break;
        case OpKind::Recv:
        case OpKind::RecvReduce:
          o.push_back(op.peer);
          for (auto& f : chunk_fields(op.dst)) o.push_back(f);
          break;
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
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    // nlohmann gives a byte offset: turn it into a line.
    const std::size_t upto = std::min<std::size_t>(e.byte, text.size());
    const std::size_t line =
        1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(upto), '\n'));
    throw InputError(fmt::format("{}:{}: not valid JSON ({})", source, line, e.what()));
  }
  if (!j.is_object() || j.value("format", "") != "topocoll-schedule")
    throw InputError(fmt::format("{}: expected a JSON object with \"format\": \"topocoll-schedule\"", source));
  if (j.value("version", 0) != 1) throw InputError(fmt::format("{}: \"version\" must be 1", source));
  for (const char* key : {"collective", "count", "dtype", "op", "ranks", "channels", "programs"})
    if (!j.contains(key)) throw InputError(fmt::format("{}: missing \"{}\"", source, key));
  CollectiveArgs a;
  try {
    a.collective = parse_collective(j["collective"].get<std::string>());
    a.dtype = parse_dtype(j["dtype"].get<std::string>());
    a.op = parse_op(j["op"].get<std::string>());
  } catch (const json::exception&) {
    throw InputError(fmt::format("{}: \"collective\", \"dtype\" and \"op\" must be strings", source));
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", source, e.what()));
  }
  a.count = parse_u64(j["count"], source, "count");
  a.ranks = parse_int(j["ranks"], source, "ranks");
  a.root = j.contains("root") ? parse_int(j["root"], source, "root") : 0;
  if (a.ranks < 1) throw InputError(fmt::format("{}: \"ranks\" must be at least 1, got {}", source, a.ranks));
  const int channels = parse_int(j["channels"], source, "channels");
  if (channels < 1) throw InputError(fmt::format("{}: \"channels\" must be at least 1, got {}", source, channels));
  const std::uint64_t scratch =
      j.contains("scratch_count") ? parse_u64(j["scratch_count"], source, "scratch_count") : 0;
  const json& programs = j["programs"];
  if (!programs.is_array() || programs.size() != static_cast<std::size_t>(a.ranks))
    throw InputError(fmt::format("{}: \"programs\" must be an array of {} programs (one per rank)", source, a.ranks));
  std::vector<Program> progs;
  for (std::size_t r = 0; r < programs.size(); ++r) {
    if (!programs[r].is_array()) throw InputError(fmt::format("{}: programs[{}] is not an array", source, r));
    Program p;
    for (std::size_t i = 0; i < programs[r].size(); ++i)
      p.push_back(parse_op(programs[r][i], fmt::format("{}: programs[{}][{}]", source, r, i)));
    progs.push_back(std::move(p));
  }
  return Schedule::from_programs(j.value("name", "imported"), a, channels, scratch, std::move(progs));
}

Schedule load_schedule_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot read the file (does it exist?)", path));
  std::ostringstream os;
  os << in.rdbuf();
  return read_schedule_json(os.str(), path);
}

}  // namespace topocoll::algo
