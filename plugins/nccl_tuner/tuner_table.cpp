#include "plugins/nccl_tuner/tuner_table.hpp"

#include <array>
#include <charconv>
#include <fstream>
#include <sstream>

namespace topocoll::tuner {

namespace {

constexpr std::array<std::string_view, 5> kCollectiveNames = {"broadcast", "reduce", "allgather", "reducescatter",
                                                              "allreduce"};
constexpr std::array<std::string_view, 7> kAlgorithmNames = {
    "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
constexpr std::array<std::string_view, 3> kProtocolNames = {"LL", "LL128", "SIMPLE"};
constexpr std::size_t kFields = 8;
constexpr std::size_t kEchoChars = 40;  // an echoed value is cut after this many characters

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool same_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

std::string_view trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    out.push_back(trim(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

// A value as an error message quotes it: printable ASCII only, cut after kEchoChars.
std::string echo(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, kEchoChars)) out += (c >= ' ' && c <= '~') ? c : '?';
  if (s.size() > kEchoChars) out += "...";
  return "'" + out + "'";
}

template <std::size_t N>
std::string name_list(const std::array<std::string_view, N>& names) {
  std::string out;
  for (std::size_t i = 0; i < N; ++i)
    out += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(names[i]);
  return out;
}

template <typename Enum, std::size_t N>
std::optional<Enum> parse_name(std::string_view s, const std::array<std::string_view, N>& names) {
  for (std::size_t i = 0; i < N; ++i)
    if (same_ignoring_case(s, names[i])) return static_cast<Enum>(i);
  return std::nullopt;
}

std::optional<std::uint64_t> parse_bytes(std::string_view s) {
  std::uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// 1..max, or -1 (kAny).
std::optional<int> parse_count(std::string_view s, int max) {
  int v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  if (v == kAny || (v >= 1 && v <= max)) return v;
  return std::nullopt;
}

// One data row, or the error message (without the line number).
std::string parse_row(std::string_view line, Row& row) {
  const std::vector<std::string_view> f = split_fields(line);
  if (f.size() != kFields)
    return std::to_string(f.size()) + " fields, expected " + std::to_string(kFields) + " (" + std::string(kHeader) +
           ")";
  const auto collective = parse_collective(f[0]);
  if (!collective) return "collective " + echo(f[0]) + ": expected " + name_list(kCollectiveNames);
  const auto min_bytes = parse_bytes(f[1]);
  if (!min_bytes) return "min_bytes " + echo(f[1]) + ": expected a whole number of bytes";
  const auto max_bytes = parse_bytes(f[2]);
  if (!max_bytes) return "max_bytes " + echo(f[2]) + ": expected a whole number of bytes";
  if (*max_bytes < *min_bytes)
    return "max_bytes " + std::to_string(*max_bytes) + " is below min_bytes " + std::to_string(*min_bytes);
  const auto algorithm = parse_algorithm(f[3]);
  if (!algorithm) return "algorithm " + echo(f[3]) + ": expected " + name_list(kAlgorithmNames);
  const auto protocol = parse_protocol(f[4]);
  if (!protocol) return "protocol " + echo(f[4]) + ": expected " + name_list(kProtocolNames);
  const auto channels = parse_count(f[5], kMaxChannels);
  if (!channels)
    return "channels " + echo(f[5]) + ": expected 1 to " + std::to_string(kMaxChannels) + ", or -1 (NCCL's own)";
  const auto nodes = parse_count(f[6], 1 << 30);
  if (!nodes) return "nodes " + echo(f[6]) + ": expected a node count (1 or more), or -1 (any)";
  const auto ranks = parse_count(f[7], 1 << 30);
  if (!ranks) return "ranks " + echo(f[7]) + ": expected a rank count (1 or more), or -1 (any)";
  row = Row{*collective, *min_bytes, *max_bytes, *algorithm, *protocol, *channels, *nodes, *ranks};
  return {};
}

bool is_header(std::string_view line) {
  const std::vector<std::string_view> got = split_fields(line);
  const std::vector<std::string_view> want = split_fields(kHeader);
  if (got.size() != want.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!same_ignoring_case(got[i], want[i])) return false;
  return true;
}

// NCCL's example tuner reads lines of up to 255 characters (fgets into 256 bytes): longer
// comments are cut for it.
constexpr std::size_t kExampleLineChars = 200;

void write_comments(std::ostringstream& out, const std::vector<std::string>& comments, std::size_t max_chars) {
  for (const std::string& c : comments) out << "# " << c.substr(0, max_chars) << "\n";
}

}  // namespace

std::string lower_case(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

std::string_view to_string(Collective c) {
  return kCollectiveNames[static_cast<std::size_t>(c)];
}
std::string_view to_string(Algorithm a) {
  return kAlgorithmNames[static_cast<std::size_t>(a)];
}
std::string_view to_string(Protocol p) {
  return kProtocolNames[static_cast<std::size_t>(p)];
}
std::optional<Collective> parse_collective(std::string_view s) {
  return parse_name<Collective>(s, kCollectiveNames);
}
std::optional<Algorithm> parse_algorithm(std::string_view s) {
  return parse_name<Algorithm>(s, kAlgorithmNames);
}
std::optional<Protocol> parse_protocol(std::string_view s) {
  return parse_name<Protocol>(s, kProtocolNames);
}

ParseResult parse_table(std::string_view text) {
  ParseResult r;
  bool header_seen = false;
  int number = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = trim(text.substr(start, end - start));
    start = end + 1;
    ++number;
    if (line.empty() || line.front() == '#') continue;
    if (!header_seen) {
      if (!is_header(line)) {
        r.error_line = number;
        r.error = "expected the header line " + std::string(kHeader) + ", found " + echo(line);
        return r;
      }
      header_seen = true;
      continue;
    }
    Row row;
    if (std::string why = parse_row(line, row); !why.empty()) {
      r.rows.clear();
      r.error_line = number;
      r.error = std::move(why);
      return r;
    }
    r.rows.push_back(row);
  }
  if (!header_seen) r.error = "no header line: expected " + std::string(kHeader) + " before the rows";
  return r;
}

ParseResult read_table(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ParseResult r;
    r.error = "cannot open the file";
    return r;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    ParseResult r;
    r.error = "cannot read the file";
    return r;
  }
  return parse_table(text.str());
}

const Row* find_row(const std::vector<Row>& rows, Collective c, std::uint64_t bytes, int nodes, int ranks) {
  for (const Row& r : rows) {
    if (r.collective != c || bytes < r.min_bytes || bytes > r.max_bytes) continue;
    if ((r.nodes != kAny && r.nodes != nodes) || (r.ranks != kAny && r.ranks != ranks)) continue;
    return &r;
  }
  return nullptr;
}

std::string format_table(const std::vector<Row>& rows, const std::vector<std::string>& comments) {
  std::ostringstream out;
  write_comments(out, comments, std::string::npos);
  out << kHeader << "\n";
  for (const Row& r : rows)
    out << to_string(r.collective) << ',' << r.min_bytes << ',' << r.max_bytes << ',' << to_string(r.algorithm) << ','
        << to_string(r.protocol) << ',' << r.channels << ',' << r.nodes << ',' << r.ranks << "\n";
  return out.str();
}

std::string format_nccl_example(const std::vector<Row>& rows, const std::vector<std::string>& comments) {
  std::ostringstream out;
  write_comments(out, comments, kExampleLineChars);
  out << "# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks\n";
  for (const Row& r : rows)
    out << to_string(r.collective) << ',' << r.min_bytes << ',' << r.max_bytes << ','
        << lower_case(to_string(r.algorithm)) << ',' << lower_case(to_string(r.protocol)) << ',' << r.channels << ','
        << r.nodes << ',' << r.ranks << "\n";
  return out.str();
}

}  // namespace topocoll::tuner
