#include "algorithms/ir/types.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
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
constexpr std::array<Spelling<Collective>, 13> kCollectiveSpellings{{
    {"allreduce", Collective::AllReduce},
    {"reduce_scatter", Collective::ReduceScatter},
    {"allgather", Collective::AllGather},
    {"broadcast", Collective::Broadcast},
    {"reduce", Collective::Reduce},
    {"alltoall", Collective::AllToAll},
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
  }
  return "?";
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
