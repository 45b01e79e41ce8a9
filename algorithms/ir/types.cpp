#include "algorithms/ir/types.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "common/checked.hpp"
#include "common/errors.hpp"

namespace topocoll::algo {
namespace {

// A spelling accepted on input and the value it names.
template <class Enum>
struct Spelling {
  std::string_view name;
  Enum value;
};

// The first spelling of each value is its canonical name (what to_string prints): nccl-tests'
// names, so that `topocoll bench` tables read like theirs.
constexpr std::array<Spelling<Collective>, 16> kCollectiveSpellings{{
    {"allreduce", Collective::AllReduce},
    {"reduce_scatter", Collective::ReduceScatter},
    {"allgather", Collective::AllGather},
    {"broadcast", Collective::Broadcast},
    {"reduce", Collective::Reduce},
    {"alltoall", Collective::AllToAll},
    {"alltoallv", Collective::AllToAllV},
    {"all_to_allv", Collective::AllToAllV},
    {"all-to-allv", Collective::AllToAllV},
    {"all_reduce", Collective::AllReduce},
    {"reducescatter", Collective::ReduceScatter},
    {"reduce-scatter", Collective::ReduceScatter},
    {"all_gather", Collective::AllGather},
    {"bcast", Collective::Broadcast},
    {"all_to_all", Collective::AllToAll},
    {"all-to-all", Collective::AllToAll},
}};

constexpr std::array<Spelling<DataType>, 17> kDataTypeSpellings{{
    {"int8", DataType::Int8},
    {"uint8", DataType::Uint8},
    {"int32", DataType::Int32},
    {"uint32", DataType::Uint32},
    {"int64", DataType::Int64},
    {"uint64", DataType::Uint64},
    {"half", DataType::Float16},
    {"float16", DataType::Float16},
    {"fp16", DataType::Float16},
    {"bfloat16", DataType::BFloat16},
    {"bf16", DataType::BFloat16},
    {"float", DataType::Float32},
    {"float32", DataType::Float32},
    {"fp32", DataType::Float32},
    {"double", DataType::Float64},
    {"float64", DataType::Float64},
    {"fp64", DataType::Float64},
}};

constexpr std::array<Spelling<ReduceOp>, 5> kReduceOpSpellings{{
    {"sum", ReduceOp::Sum},
    {"prod", ReduceOp::Prod},
    {"min", ReduceOp::Min},
    {"max", ReduceOp::Max},
    {"avg", ReduceOp::Avg},
}};

template <class Enum, std::size_t N>
std::string_view name_of(const std::array<Spelling<Enum>, N>& spellings, Enum value) {
  for (const Spelling<Enum>& s : spellings)
    if (s.value == value) return s.name;
  return "?";
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

// Looks `given` up among the spellings (ASCII case ignored); unknown names throw InputError
// naming the value given and every accepted spelling.
template <class Enum, std::size_t N>
Enum parse(const std::array<Spelling<Enum>, N>& spellings, std::string_view what, std::string_view given) {
  std::string accepted;
  for (const Spelling<Enum>& s : spellings) {
    if (equal_ignoring_case(s.name, given)) return s.value;
    accepted += accepted.empty() ? "" : ", ";
    accepted += s.name;
  }
  throw InputError(fmt::format("unknown {} '{}': expected one of {}", what, given, accepted));
}

}  // namespace

std::string_view to_string(Collective c) {
  return name_of(kCollectiveSpellings, c);
}
std::string_view to_string(DataType t) {
  return name_of(kDataTypeSpellings, t);
}
std::string_view to_string(ReduceOp op) {
  return name_of(kReduceOpSpellings, op);
}

Collective parse_collective(std::string_view s) {
  return parse(kCollectiveSpellings, "collective", s);
}
DataType parse_dtype(std::string_view s) {
  return parse(kDataTypeSpellings, "data type", s);
}
ReduceOp parse_op(std::string_view s) {
  return parse(kReduceOpSpellings, "reduction op", s);
}

std::size_t size_of(DataType t) {
  switch (t) {
    case DataType::Int8:
    case DataType::Uint8:
      return 1;
    case DataType::Float16:
    case DataType::BFloat16:
      return 2;
    case DataType::Int32:
    case DataType::Uint32:
    case DataType::Float32:
      return 4;
    case DataType::Int64:
    case DataType::Uint64:
    case DataType::Float64:
      return 8;
  }
  TOPOCOLL_ASSERT(false, fmt::format("unknown DataType {}", static_cast<int>(t)));
}

CollectiveArgs nccl_tests_args(Collective c, std::uint64_t bytes, DataType dtype, ReduceOp op, int ranks, int root) {
  if (ranks < 1) throw InputError(fmt::format("{}: {} ranks: expected at least 1", to_string(c), ranks));
  if (c == Collective::AllToAllV)
    throw InputError(
        fmt::format("alltoallv of {} bytes: an all-to-allv takes its sizes from a size matrix "
                    "(--sizes FILE), not from one byte count",
                    bytes));
  CollectiveArgs a;
  a.collective = c;
  a.dtype = dtype;
  a.op = op;
  a.ranks = ranks;
  a.root = root;
  const std::uint64_t elements = bytes / size_of(dtype);
  const bool split = c == Collective::AllGather || c == Collective::ReduceScatter || c == Collective::AllToAll;
  a.count = split ? elements / static_cast<std::uint64_t>(ranks) : elements;
  return a;
}

std::uint64_t nccl_tests_bytes(const CollectiveArgs& a) {
  return std::max(a.input_count(), a.output_count()) * size_of(a.dtype);
}

std::string_view nccl_tests_name(Collective c) {
  switch (c) {
    case Collective::AllReduce:
      return "all_reduce_perf";
    case Collective::ReduceScatter:
      return "reduce_scatter_perf";
    case Collective::AllGather:
      return "all_gather_perf";
    case Collective::Broadcast:
      return "broadcast_perf";
    case Collective::Reduce:
      return "reduce_perf";
    case Collective::AllToAll:
      return "alltoall_perf";
    case Collective::AllToAllV:  // nccl-tests has no all-to-allv; its sizes are alltoall_perf's
      return "alltoall_perf";
  }
  return "?";
}

CollectiveArgs alltoallv_args(std::shared_ptr<const AllToAllVSizes> sizes, DataType dtype) {
  if (!sizes) throw InputError("alltoallv: no size matrix given (--sizes FILE)");
  CollectiveArgs a;
  a.collective = Collective::AllToAllV;
  a.dtype = dtype;
  a.ranks = sizes->ranks();
  a.sizes = std::move(sizes);
  return a;
}

CollectiveArgs collective_call(Collective c, std::uint64_t bytes, const std::shared_ptr<const AllToAllVSizes>& sizes,
                               DataType dtype, ReduceOp op, int ranks, int root) {
  if (c != Collective::AllToAllV) {
    TOPOCOLL_ASSERT(!sizes, fmt::format("collective_call: a size matrix given for {}", to_string(c)));
    return nccl_tests_args(c, bytes, dtype, op, ranks, root);
  }
  CollectiveArgs a = alltoallv_args(sizes, dtype);
  if (a.ranks != ranks)
    throw InputError(fmt::format("alltoallv: the size matrix ({}) is for {} ranks; the job has {}", sizes->describe(),
                                 a.ranks, ranks));
  a.op = op;
  return a;
}

std::shared_ptr<const AllToAllVSizes> AllToAllVSizes::make(int ranks, std::vector<std::uint64_t> counts) {
  if (ranks < 1 || ranks > kMaxMatrixRanks)
    throw InputError(fmt::format("alltoallv size matrix of {} ranks: expected 1 to {} ranks", ranks, kMaxMatrixRanks));
  const std::size_t p = static_cast<std::size_t>(ranks);
  if (counts.size() != p * p)
    throw InputError(fmt::format("alltoallv size matrix of {} ranks: {} counts given, expected {} x {} = {}", ranks,
                                 counts.size(), ranks, ranks, p * p));
  auto m = std::make_shared<AllToAllVSizes>();
  m->ranks_ = ranks;
  m->counts_ = std::move(counts);
  m->send_displ_.assign(p * p, 0);
  m->recv_displ_.assign(p * p, 0);
  m->sent_.assign(p, 0);
  m->received_.assign(p, 0);
  // Every buffer below 2^60 bytes at 8 bytes per element: no sum below overflows.
  constexpr std::uint64_t kMaxElements = (std::uint64_t{1} << 60) / 8;
  for (int i = 0; i < ranks; ++i)
    for (int j = 0; j < ranks; ++j) {
      const std::uint64_t c = m->count(i, j);
      const auto add = [&](std::uint64_t& total, const char* what, int rank) {
        if (c > kMaxElements - total)
          throw InputError(fmt::format("alltoallv size matrix: rank {} {} more than {} elements (count({}, {}) = {})",
                                       rank, what, kMaxElements, i, j, c));
        total += c;
      };
      m->send_displ_[m->at(i, j)] = m->sent_[static_cast<std::size_t>(i)];
      add(m->sent_[static_cast<std::size_t>(i)], "sends", i);
      m->recv_displ_[m->at(j, i)] = m->received_[static_cast<std::size_t>(j)];
      add(m->received_[static_cast<std::size_t>(j)], "receives", j);
      m->symmetric_ = m->symmetric_ && c == m->count(j, i);
    }
  for (int r = 0; r < ranks; ++r) {
    m->max_sent_ = std::max(m->max_sent_, m->sent(r));
    m->max_received_ = std::max(m->max_received_, m->received(r));
    if (m->sent(r) > std::numeric_limits<std::uint64_t>::max() - m->total_)
      throw InputError(fmt::format("alltoallv size matrix of {} ranks: more than 2^64 elements in all", ranks));
    m->total_ += m->sent(r);
  }
  return m;
}

int AllToAllVSizes::source_at(int dst, std::uint64_t pos) const {
  // The last source whose block starts at or before pos and is not empty.
  int lo = 0, hi = ranks_ - 1;
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    if (recv_displ(dst, mid) <= pos)
      lo = mid;
    else
      hi = mid - 1;
  }
  while (lo > 0 && count(lo, dst) == 0) --lo;
  return lo;
}

std::string AllToAllVSizes::describe() const {
  std::uint64_t lo = sent(0), hi = sent(0);
  for (int r = 0; r < ranks_; ++r) {
    lo = std::min(lo, sent(r));
    hi = std::max(hi, sent(r));
  }
  return fmt::format("{}x{} size matrix, {} elements in all, {} to {} sent per rank{}", ranks_, ranks_, total_, lo, hi,
                     symmetric_ ? ", symmetric" : "");
}

std::shared_ptr<const AllToAllVSizes> parse_alltoallv_sizes(std::string_view text, const std::string& source) {
  std::vector<std::uint64_t> counts;
  std::size_t columns = 0, rows = 0, line_no = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t nl = text.find('\n', start);
    std::string_view line = text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    start = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    std::size_t fields = 0;
    std::size_t i = 0;
    while (i < line.size()) {
      const char ch = line[i];
      if (ch == ' ' || ch == '\t' || ch == ',' || ch == '\r') {
        ++i;
        continue;
      }
      std::size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != ',' && line[j] != '\r') ++j;
      const std::string_view field = line.substr(i, j - i);
      std::uint64_t v = 0;
      const auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
      if (ec != std::errc{} || ptr != field.data() + field.size())
        throw InputError(fmt::format("{}:{}: '{}' is not an element count: expected a non-negative integer", source,
                                     line_no, field));
      counts.push_back(v);
      ++fields;
      i = j;
    }
    if (fields == 0) continue;
    if (columns == 0) columns = fields;
    if (fields != columns)
      throw InputError(
          fmt::format("{}:{}: a row of {} counts: expected {}, as the first row", source, line_no, fields, columns));
    ++rows;
  }
  if (rows == 0) throw InputError(fmt::format("{}: no size matrix: expected one row of counts per rank", source));
  if (rows != columns)
    throw InputError(fmt::format("{}: {} rows of {} counts: expected a square matrix (one row and one column per rank)",
                                 source, rows, columns));
  try {
    return AllToAllVSizes::make(static_cast<int>(std::min<std::size_t>(rows, 1u << 30)), std::move(counts));
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", source, e.what()));
  }
}

std::shared_ptr<const AllToAllVSizes> load_alltoallv_sizes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("cannot read the size matrix '{}': no such readable file", path));
  std::ostringstream text;
  text << in.rdbuf();
  return parse_alltoallv_sizes(text.str(), path);
}

std::string format_alltoallv_sizes(const AllToAllVSizes& m) {
  std::string out;
  for (int i = 0; i < m.ranks(); ++i) {
    for (int j = 0; j < m.ranks(); ++j) {
      if (j > 0) out += ',';
      out += std::to_string(m.count(i, j));
    }
    out += '\n';
  }
  return out;
}

std::uint64_t CollectiveArgs::count_times_ranks() const {
  const std::optional<std::uint64_t> n =
      ranks < 0 ? std::nullopt : checked_mul(count, static_cast<std::uint64_t>(ranks));
  if (!n)
    throw InputError(
        fmt::format("{}: count {} x ranks {} does not fit in 64 bits", to_string(collective), count, ranks));
  return *n;
}

}  // namespace topocoll::algo
