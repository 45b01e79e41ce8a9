#include "runtime/bench/mpi_arithmetic.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/test_data.hpp"

namespace topocoll::runtime {

namespace {

struct IntType {
  bool integer = false, is_signed = false;
  int bits = 0;
};

IntType int_type(algo::DataType t) {
  switch (t) {
    case algo::DataType::Int8:
      return {true, true, 8};
    case algo::DataType::Uint8:
      return {true, false, 8};
    case algo::DataType::Int32:
      return {true, true, 32};
    case algo::DataType::Uint32:
      return {true, false, 32};
    case algo::DataType::Int64:
      return {true, true, 64};
    case algo::DataType::Uint64:
      return {true, false, 64};
    default:
      return {};
  }
}

// Element i of an integer buffer as a value of its type (sign-extended or not).
std::int64_t load(const IntType& it, const void* data, std::size_t i) {
  const auto* p = static_cast<const std::byte*>(data);
  switch (it.bits) {
    case 8: {
      std::uint8_t v;
      std::memcpy(&v, p + i, 1);
      return it.is_signed ? static_cast<std::int8_t>(v) : v;
    }
    case 32: {
      std::uint32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      return it.is_signed ? static_cast<std::int32_t>(v) : static_cast<std::int64_t>(v);
    }
    default: {
      std::int64_t v;
      std::memcpy(&v, p + 8 * i, 8);
      return v;
    }
  }
}

void store_max(const IntType& it, void* data, std::size_t n) {
  auto* p = static_cast<std::byte*>(data);
  const std::size_t elem = static_cast<std::size_t>(it.bits / 8);
  for (std::size_t i = 0; i < n; ++i) {
    std::memset(p + i * elem, 0xFF, elem);
    if (it.is_signed) p[i * elem + elem - 1] = std::byte{0x7F};  // little endian: the top byte
  }
}

std::int64_t max_of(const IntType& it) {
  if (it.bits == 64) return it.is_signed ? INT64_MAX : -1;  // uint64's max as its bit pattern
  return it.is_signed ? (std::int64_t{1} << (it.bits - 1)) - 1 : (std::int64_t{1} << it.bits) - 1;
}

std::int64_t min_of(const IntType& it) {
  if (!it.is_signed) return 0;
  return it.bits == 64 ? INT64_MIN : -(std::int64_t{1} << (it.bits - 1));
}

}  // namespace

MpiSumArithmetic probe_mpi_sum(algo::DataType t, MPI_Datatype type) {
  MpiSumArithmetic m;
  const IntType it = int_type(t);
  if (!it.integer) return m;
  // 4096 elements: whole vectors of any width up to 512 bits for every integer type.
  constexpr std::size_t kVector = 4096;
  const std::size_t elem = static_cast<std::size_t>(it.bits / 8);
  for (const std::size_t n : {kVector, std::size_t{1}}) {
    std::vector<std::byte> in(n * elem), inout(n * elem);
    store_max(it, in.data(), n);
    store_max(it, inout.data(), n);
    MPI_Reduce_local(in.data(), inout.data(), static_cast<int>(n), type, MPI_SUM);
    const std::int64_t got = load(it, inout.data(), 0);
    const bool saturated = got == load(it, in.data(), 0);  // max + max wraps to max - 1 + min
    (n == kVector ? m.vector_saturates : m.scalar_saturates) = saturated;
    (n == kVector ? m.vector_result : m.scalar_result) = got;
  }
  return m;
}

std::string describe_mpi_sum(const MpiSumArithmetic& m, algo::DataType t, const std::string& library) {
  if (!m.saturates()) return {};
  const IntType it = int_type(t);
  const std::int64_t max = max_of(it);
  const std::string loops =
      m.vector_saturates && m.scalar_saturates
          ? fmt::format("saturates ({} + {} = {} on 4096 elements and on 1)", max, max, m.vector_result)
      : m.vector_saturates
          ? fmt::format(
                "saturates in its vectorised loop ({} + {} = {} on 4096 elements) and wraps in its scalar "
                "one ({} on 1 element)",
                max, max, m.vector_result, m.scalar_result)
          : fmt::format(
                "wraps in its vectorised loop ({} + {} = {} on 4096 elements) and saturates in its scalar "
                "one ({} on 1 element)",
                max, max, m.vector_result, m.scalar_result);
  return fmt::format(
      "mpi: {}'s MPI_SUM on {}, asked with MPI_Reduce_local, {}; nccl-tests' inputs overflow and expect the sum to "
      "wrap, as "
      "topocoll's algorithms compute it. #wrong of mpi counts an element wrong when it is neither {}the result of "
      "saturating additions in some order (exact on 2 ranks; on more, anywhere between the least and the greatest "
      "such result)",
      library, algo::to_string(t), loops, m.vector_saturates && m.scalar_saturates ? "" : "the wrapping sum nor ");
}

SumRange saturating_sum_range(std::span<const std::int64_t> values, std::int64_t lo_limit, std::int64_t hi_limit) {
  // Both chains in exact arithmetic first (|values| <= 2^32, p small: no overflow of int64 for
  // the types this serves), then one clamp each: a chain of same-sign values saturates once.
  std::int64_t negatives = 0, positives = 0;
  for (const std::int64_t v : values) (v < 0 ? negatives : positives) += v;
  const auto clamp = [&](std::int64_t v) { return std::clamp(v, lo_limit, hi_limit); };
  // Greatest: negatives first (clamped at lo_limit), then the positives, rising to hi_limit at most.
  // Least: the other way round.
  return {clamp(clamp(positives) + negatives), clamp(clamp(negatives) + positives)};
}

std::uint64_t count_wrong_mpi_sum(const algo::CollectiveArgs& a, int rank, const void* output,
                                  const MpiSumArithmetic& m) {
  const IntType it = int_type(a.dtype);
  if (!m.saturates() || !it.integer || it.bits > 32 || a.op != algo::ReduceOp::Sum ||
      (a.collective != algo::Collective::AllReduce && a.collective != algo::Collective::Reduce &&
       a.collective != algo::Collective::ReduceScatter))
    return count_wrong_output(a, rank, output);
  if (a.collective == algo::Collective::Reduce && rank != a.root) return 0;
  const bool wrap_allowed = !(m.vector_saturates && m.scalar_saturates);
  const std::size_t elem = algo::size_of(a.dtype);
  const std::uint64_t total = a.defined_output_count(rank);
  // Output element i is the reduction of every rank's input element `first + i`.
  const std::uint64_t first =
      a.collective == algo::Collective::ReduceScatter ? static_cast<std::uint64_t>(rank) * a.count : 0;
  constexpr std::uint64_t kSlice = std::uint64_t{1} << 14;
  const auto p = static_cast<std::size_t>(a.ranks);
  std::vector<std::byte> expected(kSlice * elem), inputs(p * kSlice * elem);
  std::vector<std::int64_t> values(p);
  std::uint64_t wrong = 0;
  for (std::uint64_t off = 0; off < total; off += kSlice) {
    const std::size_t n = static_cast<std::size_t>(std::min(kSlice, total - off));
    fill_collective_expected(a, rank, off, expected.data(), n);
    for (std::size_t r = 0; r < p; ++r)
      fill_input(a.dtype, a.op, static_cast<int>(r), a.ranks, first + off, inputs.data() + r * kSlice * elem, n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t got = load(it, output, off + i);
      if (wrap_allowed && got == load(it, expected.data(), i)) continue;
      for (std::size_t r = 0; r < p; ++r) values[r] = load(it, inputs.data() + r * kSlice * elem, i);
      const SumRange range = saturating_sum_range(values, min_of(it), max_of(it));
      if (got < range.least || got > range.greatest) ++wrong;
    }
  }
  return wrong;
}

}  // namespace topocoll::runtime
