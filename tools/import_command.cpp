#include "tools/import_command.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>

#include "algorithms/registry.hpp"
#include "common/cli_io.hpp"
#include "common/errors.hpp"
#include "tools/algo_commands.hpp"
#include "tools/topo_commands.hpp"

namespace topocoll::tools {

namespace {

std::vector<std::string> split_ws(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string where(const std::string& path, int line) {
  return fmt::format("{}:{}", path, line);
}

std::uint64_t to_u64(const std::string& v, const std::string& at, const std::string& field) {
  std::uint64_t x = 0;
  const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size())
    throw InputError(fmt::format("{}: field '{}' = '{}', expected a whole number", at, field, cli::one_line(v)));
  return x;
}

double to_number(const std::string& v, const std::string& at, const std::string& field) {
  double x = 0;
  const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size() || !std::isfinite(x) || x < 0)
    throw InputError(fmt::format("{}: field '{}' = '{}', expected a finite number >= 0", at, field, cli::one_line(v)));
  return x;
}

std::string canonical_dtype(const std::string& v, const std::string& at) {
  try {
    return std::string(algo::to_string(algo::parse_dtype(v)));
  } catch (const InputError&) {
    throw InputError(
        fmt::format("{}: type '{}': expected an nccl-tests data type (float, half, bfloat16, double, "
                    "int8 ... uint64)",
                    at, cli::one_line(v)));
  }
}

// nccl-tests' op column: a reduction, or "none" / "-" for the collectives that do not reduce.
std::string canonical_op(const std::string& v, const std::string& at) {
  if (v == "none" || v == "-") return "sum";
  try {
    return std::string(algo::to_string(algo::parse_op(v)));
  } catch (const InputError&) {
    throw InputError(fmt::format("{}: redop '{}': expected sum, prod, min, max, avg or none", at, cli::one_line(v)));
  }
}

constexpr const char* kBinaries =
    "all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf, reduce_perf "
    "or alltoall_perf";

// ---- the nccl-tests log ------------------------------------------------------------------------

// The columns of a table header (`#  size  count  type  redop  root  time  algbw  busbw  #wrong
// time ...`, every layout since 2.0: `bytes N type op`, no `root`, `error` / `res` for `#wrong`).
struct Header {
  std::vector<std::string> names;
  std::size_t lead = 0;    // the columns before the first time
  std::size_t groups = 0;  // 1: out-of-place only; 2: and in-place
};

std::optional<Header> parse_header(const std::vector<std::string>& words, const std::string& at) {
  if (words.empty() || (words[0] != "size" && words[0] != "bytes")) return std::nullopt;
  if (std::find(words.begin(), words.end(), "time") == words.end()) return std::nullopt;
  Header h;
  h.names = words;
  h.lead = static_cast<std::size_t>(std::find(words.begin(), words.end(), "time") - words.begin());
  const std::size_t rest = words.size() - h.lead;
  h.groups = rest / 4;
  if (rest % 4 != 0 || h.groups < 1 || h.groups > 2)
    throw InputError(
        fmt::format("{}: table header with {} columns after 'time': expected time algbw busbw #wrong, "
                    "once (out-of-place) or twice (and in-place)",
                    at, rest));
  return h;
}

struct Device {
  int rank = 0;
  std::string host, gpu;
};

// The run state a log carries into its next table.
struct LogState {
  std::optional<algo::Collective> collective;
  std::string unknown_binary;  // the last *_perf binary named that has no collective here
  std::vector<Device> devices;
  std::string nccl_version;
  std::string algorithm = "nccl";
};

std::string version_of_code(std::uint64_t code) {
  // NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch since 2.9 (1000 / 100 before).
  if (code >= 20900) return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
}

// What any line (comment or not) says about the run: the binary, NCCL's version, NCCL_ALGO.
void scan_run_facts(const std::string& line, LogState& s) {
  static const std::regex binary(R"(\b([a-z_]+)_perf(_mpi)?\b)");
  static const std::regex starting(R"(Collective test starting:\s*([a-z_]+)_perf)");
  static const std::regex info_version(R"(NCCL version (\d+\.\d+\.\d+))");
  static const std::regex library(R"(nccl-library=(\d+))");
  static const std::regex algo_env(R"(NCCL_ALGO=([A-Za-z_]+))");
  std::smatch m;
  if (std::regex_search(line, m, starting) || std::regex_search(line, m, binary)) {
    if (const auto c = collective_of_binary(m[1].str())) {
      s.collective = c;
      s.unknown_binary.clear();
    } else {
      s.unknown_binary = m[1].str() + "_perf";
    }
  }
  if (std::regex_search(line, m, info_version))
    s.nccl_version = m[1].str();
  else if (std::regex_search(line, m, library) && s.nccl_version.empty())
    s.nccl_version = version_of_code(std::stoull(m[1].str()));
  if (std::regex_search(line, m, algo_env)) {
    std::string a = m[1].str();
    std::transform(a.begin(), a.end(), a.begin(), [](unsigned char c) { return std::tolower(c); });
    s.algorithm = a;
  }
}

std::optional<Device> parse_device(const std::string& body) {
  // `Rank  0 Group  0 Pid 1234 on HOST device  0 [0x07] NVIDIA A100-SXM4-40GB` (Group since 2.8).
  static const std::regex dev(
      R"(^Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s*(.*)$)");
  std::smatch m;
  if (!std::regex_match(body, m, dev)) return std::nullopt;
  return Device{std::stoi(m[1].str()), m[2].str(), trim(m[3].str())};
}

// A table's collective: the log's (its *_perf binary or test line), else --collective. InputError at
// `at` for a binary of no collective of the schema, or when neither says (`none`: what the input
// lacks).
algo::Collective table_collective(const std::string& at, const LogState& s, const ImportOptions& o, const char* none) {
  if (s.collective) return *s.collective;
  if (!s.unknown_binary.empty())
    throw InputError(
        fmt::format("{}: {}: not a collective of the record schema (expected {})", at, s.unknown_binary, kBinaries));
  if (o.collective) return *o.collective;
  throw InputError(fmt::format("{}: {}: give --collective", at, none));
}

// Opens a table at a header line: the collective, the ranks and the machine of the run.
MeasuredTable open_table(const std::string& path, int line, const LogState& s, const ImportOptions& o) {
  const std::string at = where(path, line);
  MeasuredTable t;
  t.file = path;
  t.line = line;
  t.collective = table_collective(
      at, s, o, "the log names no collective (no '# Collective test starting:' line, no *_perf command line)");
  if (!s.devices.empty()) {
    std::vector<int> ranks;
    for (const Device& d : s.devices) ranks.push_back(d.rank);
    std::sort(ranks.begin(), ranks.end());
    for (std::size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i] != static_cast<int>(i))
        throw InputError(
            fmt::format("{}: the device lines of this run list ranks that are not 0..{} once each "
                        "(rank {} {}): mixed rank counts in one table",
                        at, ranks.size() - 1, ranks[i], i > 0 && ranks[i] == ranks[i - 1] ? "twice" : "out of place"));
    t.ranks = static_cast<int>(ranks.size());
    for (const Device& d : s.devices)
      if (std::find(t.hosts.begin(), t.hosts.end(), d.host) == t.hosts.end()) t.hosts.push_back(d.host);
    t.gpu = s.devices.front().gpu;
  }
  if (o.ranks > 0) {
    if (t.ranks > 0 && t.ranks != o.ranks)
      throw InputError(fmt::format("{}: --ranks {}: the log's device lines name {} ranks", at, o.ranks, t.ranks));
    t.ranks = o.ranks;
  }
  t.nodes = o.nodes > 0 ? o.nodes : std::max<int>(1, static_cast<int>(t.hosts.size()));
  t.nccl_version = s.nccl_version;
  t.algorithm = s.algorithm;
  return t;
}

MeasuredPoint parse_row(const std::string& path, int line, const std::vector<std::string>& v, const Header& h) {
  const std::string at = where(path, line);
  if (v.size() != h.names.size()) {
    std::string cols;
    for (const auto& n : h.names) cols += (cols.empty() ? "" : " ") + n;
    throw InputError(fmt::format("{}: {} fields, expected {} ({})", at, v.size(), h.names.size(), cols));
  }
  MeasuredPoint p;
  p.line = line;
  for (std::size_t i = 0; i < h.lead; ++i) {
    const std::string& n = h.names[i];
    if (n == "size" || n == "bytes")
      p.size_bytes = to_u64(v[i], at, n);
    else if (n == "count" || n == "N")
      p.count = to_u64(v[i], at, n);
    else if (n == "type")
      p.dtype = canonical_dtype(v[i], at);
    else if (n == "redop" || n == "op")
      p.op = canonical_op(v[i], at);
  }
  for (std::size_t g = 0; g < h.groups; ++g) {
    const std::size_t b = h.lead + 4 * g;
    MeasuredColumns c;
    c.time_us = to_number(v[b], at, "time");
    c.algbw_gbps = to_number(v[b + 1], at, "algbw");
    c.busbw_gbps = to_number(v[b + 2], at, "busbw");
    // `#wrong` is a count (or N/A when not checked); older `error` / `res` columns a magnitude.
    if (h.names[b + 3] == "#wrong" && v[b + 3] != "N/A") c.wrong = to_u64(v[b + 3], at, "#wrong");
    if (g == 0)
      p.out_of_place = c;
    else
      p.in_place = c;
  }
  return p;
}

// busbw / algbw = nccl-tests' factor of the collective for the run's ranks; a row whose ratio
// is another rank count's does not belong to this table. Only rows with algbw >= 1 GB/s: the
// two printed decimals blur the ratio below it.
void check_factor(const MeasuredTable& t, const MeasuredPoint& p) {
  const MeasuredColumns& c = p.out_of_place;
  if (c.algbw_gbps < 1.0 || t.ranks <= 0) return;
  const double want = algo::busbw_factor(t.collective, t.ranks);
  const double got = c.busbw_gbps / c.algbw_gbps;
  const double tol = 0.01 / c.algbw_gbps * (1 + want) + 0.005;
  if (std::abs(got - want) > tol)
    throw InputError(
        fmt::format("{}: busbw / algbw = {:.3f}, expected {:.3f} for {} ranks ({}): mixed rank counts in "
                    "one table",
                    where(t.file, p.line), got, want, t.ranks, algo::nccl_tests_name(t.collective)));
}

// No device line and no --ranks: the rank count whose busbw factor the rows show (allreduce,
// allgather, reduce_scatter, alltoall; broadcast and reduce have factor 1 at every count).
int infer_ranks(const MeasuredTable& t) {
  const MeasuredPoint* best = nullptr;
  for (const MeasuredPoint& p : t.points)
    if (!best || p.out_of_place.algbw_gbps > best->out_of_place.algbw_gbps) best = &p;
  const bool rootless = t.collective != algo::Collective::Broadcast && t.collective != algo::Collective::Reduce;
  if (best && rootless && best->out_of_place.algbw_gbps >= 1.0) {
    const double f = best->out_of_place.busbw_gbps / best->out_of_place.algbw_gbps;
    const double scale = t.collective == algo::Collective::AllReduce ? 2.0 : 1.0;  // f = scale (p-1)/p
    if (f < scale * 0.999) {
      const int p = static_cast<int>(std::lround(scale / (scale - f)));
      if (p >= 2 && std::abs(algo::busbw_factor(t.collective, p) - f) < 0.01 * scale) return p;
    }
  }
  throw InputError(
      fmt::format("{}: the log has no device lines ('#  Rank  0 Group  0 Pid ... on HOST device 0') and "
                  "its busbw / algbw ratio does not tell the rank count: give --ranks",
                  where(t.file, t.line)));
}

void finish_table(MeasuredTable& t) {
  if (t.points.empty())
    throw InputError(fmt::format("{}: a table header and no rows (a truncated log?): expected rows of numbers under it",
                                 where(t.file, t.line)));
  if (t.ranks <= 0) t.ranks = infer_ranks(t);
  for (const MeasuredPoint& p : t.points) check_factor(t, p);
}

std::vector<MeasuredTable> parse_log(const std::string& path, const std::string& text, const ImportOptions& o) {
  std::vector<MeasuredTable> tables;
  LogState s;
  std::optional<Header> header;
  std::istringstream in(text);
  int lineno = 0;
  bool in_table = false;
  for (std::string raw; std::getline(in, raw);) {
    ++lineno;
    const std::string line = trim(raw);
    if (line.empty()) continue;
    if (line[0] == '#') {
      const std::string body = trim(line.substr(1));
      if (body.rfind("nThread", 0) == 0) {  // a run's first line: a new run
        if (in_table) finish_table(tables.back());
        in_table = false;
        s.devices.clear();
        s.algorithm = "nccl";
        continue;
      }
      if (auto d = parse_device(body)) {
        s.devices.push_back(*d);
        continue;
      }
      scan_run_facts(body, s);
      if (auto h = parse_header(split_ws(body), where(path, lineno))) {
        if (in_table) finish_table(tables.back());
        header = h;
        tables.push_back(open_table(path, lineno, s, o));
        in_table = true;
      }
      continue;
    }
    const std::vector<std::string> words = split_ws(line);
    if (!all_digits(words[0])) {  // NCCL INFO lines, the shell's, mpirun's
      scan_run_facts(line, s);
      if (in_table && tables.back().nccl_version.empty()) tables.back().nccl_version = s.nccl_version;
      continue;
    }
    if (!in_table)
      throw InputError(
          fmt::format("{}: a row of numbers outside a table: expected a '#  size  count  type ...' header "
                      "line before it",
                      where(path, lineno)));
    tables.back().points.push_back(parse_row(path, lineno, words, *header));
  }
  if (in_table) finish_table(tables.back());
  if (tables.empty())
    throw InputError(
        fmt::format("{}: no nccl-tests table: expected a '#  size  count  type  redop ... time  algbw  "
                    "busbw' header line and rows, or a calibration CSV with a size_bytes column",
                    path));
  return tables;
}

// ---- the calibration CSV layout ------------------------------------------------------------------

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : line) {
    if (c == '"')
      quoted = !quoted;
    else if (c == ',' && !quoted) {
      out.push_back(trim(cur));
      cur.clear();
    } else
      cur += c;
  }
  out.push_back(trim(cur));
  return out;
}

std::vector<MeasuredTable> parse_csv(const std::string& path, const std::string& text, const ImportOptions& o) {
  LogState s;
  std::istringstream in(text);
  int lineno = 0;
  std::vector<std::string> header;
  std::map<std::string, std::size_t> col;
  std::vector<MeasuredTable> tables;
  std::map<std::string, std::size_t> table_of;  // run label -> index
  const std::vector<std::string> run_cols = {"source_file", "node_pair", "env", "driver"};
  auto has = [&](const std::string& c) { return col.count(c) > 0; };
  auto first_of = [&](std::initializer_list<const char*> names) -> std::optional<std::size_t> {
    for (const char* n : names)
      if (has(n)) return col.at(n);
    return std::nullopt;
  };
  for (std::string raw; std::getline(in, raw);) {
    ++lineno;
    const std::string line = trim(raw);
    if (line.empty()) continue;
    if (line[0] == '#') {
      scan_run_facts(line, s);
      continue;
    }
    const std::string at = where(path, lineno);
    const std::vector<std::string> v = split_csv(line);
    if (header.empty()) {
      header = v;
      for (std::size_t i = 0; i < v.size(); ++i) col[v[i]] = i;
      if (!first_of({"oop_time_us", "time_us"}))
        throw InputError(
            fmt::format("{}: calibration CSV header without a time column: expected time_us or "
                        "oop_time_us",
                        at));
      continue;
    }
    if (v.size() != header.size())
      throw InputError(
          fmt::format("{}: {} fields, expected {} ({})", at, v.size(), header.size(), fmt::join(header, ",")));
    std::string label;
    for (const std::string& c : run_cols)
      if (has(c)) label += (label.empty() ? "" : " | ") + v[col.at(c)];
    auto it = table_of.find(label);
    if (it == table_of.end()) {
      MeasuredTable t;
      t.file = path;
      t.line = lineno;
      t.label = label;
      t.collective = table_collective(at, s, o, "the file names no collective (no *_perf command in its # lines)");
      t.algorithm = s.algorithm;
      if (has("node_pair")) {
        std::string hosts = v[col.at("node_pair")];
        for (std::size_t b = 0, e; b <= hosts.size(); b = e + 1) {
          e = hosts.find('+', b);
          if (e == std::string::npos) e = hosts.size();
          if (e > b) t.hosts.push_back(hosts.substr(b, e - b));
        }
      }
      if (has("nccl_version")) {
        static const std::regex ver(R"(^\d+\.\d+\.\d+)");
        std::smatch m;
        if (std::regex_search(v[col.at("nccl_version")], m, ver)) t.nccl_version = m.str();
      }
      if (t.nccl_version.empty()) t.nccl_version = s.nccl_version;
      table_of[label] = tables.size();
      tables.push_back(t);
      it = table_of.find(label);
    }
    MeasuredTable& t = tables[it->second];
    // The rank and node counts: the columns, else the command line.
    int ranks = o.ranks;
    if (auto c = first_of({"total_gpus", "ranks"})) ranks = static_cast<int>(to_u64(v[*c], at, header[*c]));
    if (ranks <= 0)
      throw InputError(fmt::format("{}: no total_gpus column and no --ranks: expected the rank count", at));
    if (t.ranks != 0 && t.ranks != ranks)
      throw InputError(fmt::format("{}: {} ranks in a table of {} ranks (from line {}): mixed rank counts in one table",
                                   at, ranks, t.ranks, t.line));
    t.ranks = ranks;
    int nodes = o.nodes;
    if (has("nodes") && nodes == 0) nodes = static_cast<int>(to_u64(v[col.at("nodes")], at, "nodes"));
    t.nodes = nodes > 0 ? nodes : std::max<int>(1, static_cast<int>(t.hosts.size()));
    MeasuredPoint p;
    p.line = lineno;
    if (!has("size_bytes")) throw InputError(fmt::format("{}: no size_bytes column", at));
    p.size_bytes = to_u64(v[col.at("size_bytes")], at, "size_bytes");
    if (has("dtype")) p.dtype = canonical_dtype(v[col.at("dtype")], at);
    const auto time_col = first_of({"oop_time_us", "time_us"});
    const auto alg_col = first_of({"oop_algbw_GBps", "algbw_GBps"});
    const auto bus_col = first_of({"oop_busbw_GBps", "busbw_GBps"});
    p.out_of_place.time_us = to_number(v[*time_col], at, header[*time_col]);
    p.out_of_place.algbw_gbps =
        alg_col ? to_number(v[*alg_col], at, header[*alg_col]) : p.size_bytes / (p.out_of_place.time_us * 1e3);
    p.out_of_place.busbw_gbps = bus_col ? to_number(v[*bus_col], at, header[*bus_col])
                                        : p.out_of_place.algbw_gbps * algo::busbw_factor(t.collective, ranks);
    if (has("ip_time_us")) {
      MeasuredColumns c;
      c.time_us = to_number(v[col.at("ip_time_us")], at, "ip_time_us");
      c.algbw_gbps = has("ip_algbw_GBps") ? to_number(v[col.at("ip_algbw_GBps")], at, "ip_algbw_GBps")
                                          : p.size_bytes / (c.time_us * 1e3);
      c.busbw_gbps = has("ip_busbw_GBps") ? to_number(v[col.at("ip_busbw_GBps")], at, "ip_busbw_GBps")
                                          : c.algbw_gbps * algo::busbw_factor(t.collective, ranks);
      p.in_place = c;
    }
    const algo::DataType dt = algo::parse_dtype(p.dtype);
    p.count = has("count") ? to_u64(v[col.at("count")], at, "count")
                           : algo::nccl_tests_args(t.collective, p.size_bytes, dt, algo::ReduceOp::Sum, ranks).count;
    t.points.push_back(p);
  }
  if (header.empty() || tables.empty())
    throw InputError(fmt::format("{}: a calibration CSV header and no rows: expected rows under it", path));
  for (MeasuredTable& t : tables) finish_table(t);
  return tables;
}

bool is_calibration_csv(const std::string& text) {
  std::istringstream in(text);
  for (std::string raw; std::getline(in, raw);) {
    const std::string line = trim(raw);
    if (line.empty() || line[0] == '#') continue;
    return line.find(',') != std::string::npos && line.find("size_bytes") != std::string::npos;
  }
  return false;
}

}  // namespace

std::optional<algo::Collective> collective_of_binary(const std::string& name) {
  static const std::map<std::string, algo::Collective> kNames = {{"all_reduce", algo::Collective::AllReduce},
                                                                 {"all_gather", algo::Collective::AllGather},
                                                                 {"reduce_scatter", algo::Collective::ReduceScatter},
                                                                 {"broadcast", algo::Collective::Broadcast},
                                                                 {"reduce", algo::Collective::Reduce},
                                                                 {"alltoall", algo::Collective::AllToAll}};
  std::string n = name;
  if (n.size() > 5 && n.substr(n.size() - 5) == "_perf") n = n.substr(0, n.size() - 5);
  const auto it = kNames.find(n);
  if (it == kNames.end()) return std::nullopt;
  return it->second;
}

std::vector<MeasuredTable> parse_measured(const std::string& path, const std::string& text, const ImportOptions& o) {
  return is_calibration_csv(text) ? parse_csv(path, text, o) : parse_log(path, text, o);
}

std::vector<MeasuredTable> load_measured(const std::string& path, const ImportOptions& o) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read the file (an nccl-tests log or a calibration CSV)", path));
  std::ostringstream os;
  os << in.rdbuf();
  return parse_measured(path, os.str(), o);
}

std::vector<records::Record> table_records(const MeasuredTable& t, const std::string& topology) {
  std::vector<records::Record> out;
  std::string machine;
  for (const std::string& h : t.hosts) machine += (machine.empty() ? "" : "+") + h;
  if (!t.gpu.empty()) machine += (machine.empty() ? "" : ": ") + t.gpu;
  if (machine.empty()) machine = fmt::format("imported: {}", t.file.substr(t.file.find_last_of('/') + 1));
  for (const MeasuredPoint& p : t.points) {
    for (int g = 0; g < 2; ++g) {
      const MeasuredColumns* c = g == 0 ? &p.out_of_place : (p.in_place ? &*p.in_place : nullptr);
      if (!c) continue;
      records::Record r;
      r.kind = "measured";
      r.engine = "nccl-tests";
      r.collective = std::string(algo::to_string(t.collective));
      r.algorithm = t.algorithm;
      r.topology = topology;
      r.nodes = t.nodes;
      r.fabric = t.nodes > 1 ? "rail-fat-tree" : "";
      r.ranks = t.ranks;
      r.size_bytes = p.size_bytes;
      r.count = p.count;
      r.dtype = p.dtype;
      r.op = p.op;
      r.in_place = g == 1;
      r.time_us = c->time_us;
      r.algbw_gbps = c->algbw_gbps;
      r.busbw_gbps = c->busbw_gbps;
      r.wrong = c->wrong;
      if (!t.nccl_version.empty()) r.nccl_version = t.nccl_version;
      r.machine = machine;
      out.push_back(std::move(r));
    }
  }
  return out;
}

int import_command(const ImportArgs& a, std::ostream& out) {
  if (a.logs.empty()) throw InputError("import nccl-tests: expected at least one LOG file");
  ImportOptions o;
  if (!a.collective.empty()) o.collective = parse_collective_flag(a.collective, "--collective");
  o.ranks = a.ranks;
  o.nodes = a.nodes;
  std::vector<records::Record> recs;
  std::vector<std::string> notes;
  for (const std::string& log : a.logs) {
    for (const MeasuredTable& t : load_measured(log, o)) {
      std::vector<records::Record> r = table_records(t, a.topology);
      if (!a.algorithm.empty())
        for (auto& x : r) x.algorithm = a.algorithm;
      notes.push_back(fmt::format("import: {}:{}: {} {} rows, {} ranks on {} node{}{}{}{}", log, t.line,
                                  t.points.size(), algo::nccl_tests_name(t.collective), t.ranks, t.nodes,
                                  t.nodes == 1 ? "" : "s", t.nccl_version.empty() ? "" : ", NCCL " + t.nccl_version,
                                  t.points.front().in_place ? ", in-place too" : "",
                                  t.label.empty() ? "" : " (" + t.label + ")"));
      recs.insert(recs.end(), r.begin(), r.end());
    }
  }
  cli::Output output(a.output, out);
  for (const records::Record& r : recs)
    output.stream() << to_json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  output.close();
  for (const std::string& n : notes) std::cerr << n << "\n";
  std::cerr << fmt::format("import: {} records{}\n", recs.size(),
                           a.output.empty() || a.output == "-" ? "" : " -> " + a.output);
  return 0;
}

CLI::App* add_import_command(CLI::App& app, ImportArgs& a) {
  CLI::App* imp = app.add_subcommand("import", "bring measurements in as records (docs/records.md)");
  imp->require_subcommand(1);
  CLI::App* c =
      imp->add_subcommand("nccl-tests", "nccl-tests stdout logs or calibration CSVs -> measured records (JSONL)");
  c->add_option("logs", a.logs, "nccl-tests logs (any 2.x layout, several runs per file) or calibration CSVs")
      ->required();
  c->add_option("-o,--output", a.output, "records file (JSONL; default stdout)");
  c->add_option("--topology", a.topology,
                "the topology name the records carry (the preset the simulated records use, so scripts/plot pairs "
                "them)")
      ->default_val("unknown");
  c->add_option("--collective", a.collective, "the collective when the log names none (allreduce, allgather, ...)");
  c->add_option("--algorithm", a.algorithm, "the records' algorithm (default nccl: NCCL's own choice)");
  c->add_option("--ranks", a.ranks, "the rank count when the log has no device lines");
  c->add_option("--nodes", a.nodes, "the node count (default: the hosts the device lines name, else 1)");
  c->footer(R"(
Examples:
  topocoll import nccl-tests all_reduce.log all_gather.log --topology dgx-a100 -o measured.jsonl
  topocoll import nccl-tests experiments/calibration/data/stas00-a100-1node.csv --topology dgx-a100
Records: kind measured, engine nccl-tests (docs/records.md, "Importing nccl-tests logs").)");
  return c;
}

}  // namespace topocoll::tools
