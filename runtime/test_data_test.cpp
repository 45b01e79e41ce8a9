#include "runtime/test_data.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "algorithms/ir/types.hpp"
#include "algorithms/testing.hpp"
#include "common/errors.hpp"
#include "runtime/half.hpp"

using namespace topocoll::runtime;
using topocoll::InputError;
using topocoll::algo::Collective;
using topocoll::algo::DataType;
using topocoll::algo::ReduceOp;
using topocoll::algo::size_of;
using topocoll::algo::to_string;

namespace {

constexpr auto& kDataTypes = topocoll::algo::kAllDataTypes;
constexpr auto& kOps = topocoll::algo::kAllOps;

bool is_float(DataType t) {
  return t == DataType::Float16 || t == DataType::BFloat16 || t == DataType::Float32 || t == DataType::Float64;
}
bool is_signed_integer(DataType t) {
  return t == DataType::Int8 || t == DataType::Int32 || t == DataType::Int64;
}

// Element i of a buffer of dtype t, widened: floats to double (exact), integers to their value
// (signed) or bits (unsigned) in 64 bits.
double float_at(DataType t, const std::vector<unsigned char>& b, std::size_t i) {
  switch (t) {
    case DataType::Float16: {
      std::uint16_t h;
      std::memcpy(&h, b.data() + 2 * i, 2);
      return half_to_float(h);
    }
    case DataType::BFloat16: {
      std::uint16_t h;
      std::memcpy(&h, b.data() + 2 * i, 2);
      return bfloat16_to_float(h);
    }
    case DataType::Float32: {
      float f;
      std::memcpy(&f, b.data() + 4 * i, 4);
      return f;
    }
    default: {
      double d;
      std::memcpy(&d, b.data() + 8 * i, 8);
      return d;
    }
  }
}
std::int64_t integer_at(DataType t, const std::vector<unsigned char>& b, std::size_t i) {
  switch (t) {
    case DataType::Int8:
      return static_cast<std::int8_t>(b[i]);
    case DataType::Uint8:
      return b[i];
    case DataType::Int32: {
      std::int32_t v;
      std::memcpy(&v, b.data() + 4 * i, 4);
      return v;
    }
    case DataType::Uint32: {
      std::uint32_t v;
      std::memcpy(&v, b.data() + 4 * i, 4);
      return v;
    }
    default: {
      std::int64_t v;
      std::memcpy(&v, b.data() + 8 * i, 8);
      return v;
    }
  }
}

std::vector<unsigned char> input_of(DataType t, ReduceOp op, int rank, int ranks, std::uint64_t offset, std::size_t n) {
  std::vector<unsigned char> b(n * size_of(t));
  fill_input(t, op, rank, ranks, offset, b.data(), n);
  return b;
}
std::vector<unsigned char> expected_of(DataType t, ReduceOp op, int ranks, std::uint64_t offset, std::size_t n) {
  std::vector<unsigned char> b(n * size_of(t));
  fill_expected(t, op, ranks, offset, b.data(), n);
  return b;
}

// Integer op on 64-bit patterns; truncation to the dtype's width commutes with + and *.
std::uint64_t combine(ReduceOp op, bool is_signed, std::uint64_t a, std::uint64_t b) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      return a + b;
    case ReduceOp::Prod:
      return a * b;
    case ReduceOp::Min:
      return is_signed
                 ? static_cast<std::uint64_t>(std::min(static_cast<std::int64_t>(a), static_cast<std::int64_t>(b)))
                 : std::min(a, b);
    case ReduceOp::Max:
      return is_signed
                 ? static_cast<std::uint64_t>(std::max(static_cast<std::int64_t>(a), static_cast<std::int64_t>(b)))
                 : std::max(a, b);
  }
  return 0;
}

}  // namespace

TEST_CASE("test_data: fill_expected is the reduction of the inputs computed independently") {
  // Oracle without the reducer: floats in double (exact for these inputs: small integers times
  // 2^e, or a mantissa times powers of two), integers modulo 2^64 then truncated.
  constexpr std::size_t n = 300;
  for (DataType t : kDataTypes)
    for (ReduceOp op : kOps)
      for (int ranks : {1, 2, 3, 7, 17, 64}) {
        INFO(to_string(t), " ", to_string(op), " ranks=", ranks);
        const std::uint64_t offset = 977;
        const auto expected = expected_of(t, op, ranks, offset, n);
        std::vector<std::vector<unsigned char>> inputs;
        for (int r = 0; r < ranks; ++r) inputs.push_back(input_of(t, op, r, ranks, offset, n));
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < n; ++i) {
          if (is_float(t)) {
            double acc = float_at(t, inputs[0], i);
            for (int r = 1; r < ranks; ++r) {
              const double x = float_at(t, inputs[r], i);
              acc = op == ReduceOp::Prod  ? acc * x
                    : op == ReduceOp::Min ? std::min(acc, x)
                    : op == ReduceOp::Max ? std::max(acc, x)
                                          : acc + x;
            }
            if (op == ReduceOp::Avg) acc /= ranks;
            wrong += acc != float_at(t, expected, i);
          } else {
            const bool is_signed = is_signed_integer(t);
            std::uint64_t acc = static_cast<std::uint64_t>(integer_at(t, inputs[0], i));
            for (int r = 1; r < ranks; ++r)
              acc = combine(op, is_signed, acc, static_cast<std::uint64_t>(integer_at(t, inputs[r], i)));
            const auto want = static_cast<std::uint64_t>(integer_at(t, expected, i));
            const std::uint64_t mask = size_of(t) == 8 ? ~0ull : (1ull << (8 * size_of(t))) - 1;
            if (op == ReduceOp::Avg) {
              // The sum must not wrap: p * v exactly, in the type's range.
              const std::int64_t sum =
                  is_signed ? integer_at(t, expected, i) * ranks : static_cast<std::int64_t>(want * ranks);
              wrong += ((acc ^ static_cast<std::uint64_t>(sum)) & mask) != 0;
              if (size_of(t) < 8) {
                const double wide = static_cast<double>(integer_at(t, expected, i)) * ranks;
                const double lo = is_signed ? -std::ldexp(1.0, 8 * static_cast<int>(size_of(t)) - 1) : 0.0;
                const double hi = std::ldexp(1.0, 8 * static_cast<int>(size_of(t)) - (is_signed ? 1 : 0)) - 1;
                wrong += wide < lo || wide > hi;
              }
            } else {
              wrong += ((acc ^ want) & mask) != 0;
            }
          }
        }
        CHECK(wrong == 0);
      }
}

TEST_CASE("test_data: a slice filled at an offset equals that part of the whole buffer") {
  for (DataType t : kDataTypes)
    for (ReduceOp op : kOps) {
      INFO(to_string(t), " ", to_string(op));
      const std::size_t whole = 100, offset = 37, n = 41;
      const auto all_input = input_of(t, op, 5, 7, 0, whole);
      const auto slice_input = input_of(t, op, 5, 7, offset, n);
      CHECK(std::memcmp(all_input.data() + offset * size_of(t), slice_input.data(), n * size_of(t)) == 0);
      const auto all_expected = expected_of(t, op, 7, 0, whole);
      const auto slice_expected = expected_of(t, op, 7, offset, n);
      CHECK(std::memcmp(all_expected.data() + offset * size_of(t), slice_expected.data(), n * size_of(t)) == 0);
    }
}

TEST_CASE("test_data: values are distinct per rank where the type has room, and vary per element") {
  // The largest rank count with distinct values per element (documented in test_data.cpp): every
  // integer case and float min / max at 64; float sum / avg at 2 D + 1; float prod never beyond 5.
  const auto distinct_up_to = [](DataType t, ReduceOp op) {
    if (!is_float(t) || op == ReduceOp::Min || op == ReduceOp::Max) return 64;
    if (op == ReduceOp::Prod) return 1;
    if (t == DataType::Float16) return 33;
    if (t == DataType::BFloat16) return 5;
    return 64;
  };
  constexpr std::size_t n = 200;
  for (DataType t : kDataTypes)
    for (ReduceOp op : kOps)
      for (int ranks : {2, 5, 33, 64}) {
        INFO(to_string(t), " ", to_string(op), " ranks=", ranks);
        std::vector<std::vector<unsigned char>> inputs;
        for (int r = 0; r < ranks; ++r) inputs.push_back(input_of(t, op, r, ranks, 0, n));
        if (ranks <= distinct_up_to(t, op)) {
          std::size_t repeated = 0;
          for (std::size_t i = 0; i < n; ++i) {
            std::set<std::vector<unsigned char>> seen;
            for (int r = 0; r < ranks; ++r) {
              const auto* first = inputs[r].data() + i * size_of(t);
              seen.emplace(first, first + size_of(t));
            }
            repeated += seen.size() != static_cast<std::size_t>(ranks);
          }
          CHECK(repeated == 0);
        }
        // Along the elements, rank 0 holds many different values (float prod: a random mantissa
        // once every `ranks` elements, +-2, +-0.5 or +-1 otherwise).
        std::set<std::vector<unsigned char>> along;
        for (std::size_t i = 0; i < n; ++i) {
          const auto* first = inputs[0].data() + i * size_of(t);
          along.emplace(first, first + size_of(t));
        }
        CHECK(along.size() >= (is_float(t) && op == ReduceOp::Prod ? 8u : 20u));
      }
}

TEST_CASE("test_data: float inputs and results stay finite, and fp16 / bf16 hold them exactly") {
  for (DataType t : {DataType::Float16, DataType::BFloat16, DataType::Float32, DataType::Float64})
    for (ReduceOp op : kOps)
      for (int ranks : {1, 64}) {
        INFO(to_string(t), " ", to_string(op), " ranks=", ranks);
        const auto expected = expected_of(t, op, ranks, 12345, 500);
        const auto input = input_of(t, op, ranks - 1, ranks, 12345, 500);
        std::size_t bad = 0;
        for (std::size_t i = 0; i < 500; ++i)
          bad += !std::isfinite(float_at(t, expected, i)) || !std::isfinite(float_at(t, input, i));
        CHECK(bad == 0);
      }
}

TEST_CASE("test_data: count_wrong finds one flipped bit in any position, NaNs compare equal") {
  constexpr std::size_t n = 64;
  for (DataType t : kDataTypes) {
    INFO(to_string(t));
    const auto expected = expected_of(t, ReduceOp::Sum, 3, 0, n);
    CHECK(count_wrong(t, expected.data(), expected.data(), n) == 0);
    // Each bit of the element's width, in a different element each time.
    for (std::size_t bit = 0; bit < 8 * size_of(t); ++bit) {
      auto got = expected;
      const std::size_t element = bit % n;
      got[element * size_of(t) + bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
      CHECK(count_wrong(t, got.data(), expected.data(), n) == 1);
    }
  }
  // Two NaNs with different payloads are equal; +0 and -0 are not; NaN and a number are not.
  const std::array<float, 3> nans{std::bit_cast<float>(0x7fc00000u), 0.0f, std::bit_cast<float>(0x7f800001u)};
  const std::array<float, 3> other{std::bit_cast<float>(0xffc00123u), -0.0f, 1.0f};
  CHECK(count_wrong(DataType::Float32, nans.data(), other.data(), 3) == 2);
  const std::array<std::uint16_t, 2> half_nans{0x7e00, 0x7c01};
  const std::array<std::uint16_t, 2> half_other{0xfe01, 0x7c00};  // NaN, infinity
  CHECK(count_wrong(DataType::Float16, half_nans.data(), half_other.data(), 2) == 1);
  const std::array<std::uint16_t, 2> bf_nans{0x7fc0, 0x7f81};
  const std::array<std::uint16_t, 2> bf_other{0xffc1, 0x7f80};
  CHECK(count_wrong(DataType::BFloat16, bf_nans.data(), bf_other.data(), 2) == 1);
  const std::array<double, 1> d_nan{std::bit_cast<double>(0x7ff8000000000001ull)};
  const std::array<double, 1> d_other{std::bit_cast<double>(0x7ff0000000000002ull)};
  CHECK(count_wrong(DataType::Float64, d_nan.data(), d_other.data(), 1) == 0);
}

TEST_CASE("test_data: a rank outside [0, ranks) or no ranks at all is refused") {
  std::array<float, 4> buffer{};
  CHECK_THROWS_WITH_AS(fill_input(DataType::Float32, ReduceOp::Sum, 4, 4, 0, buffer.data(), 4),
                       "test data for rank 4: expected a rank in [0, 4)", InputError);
  CHECK_THROWS_WITH_AS(fill_input(DataType::Float32, ReduceOp::Sum, -1, 4, 0, buffer.data(), 4),
                       "test data for rank -1: expected a rank in [0, 4)", InputError);
  CHECK_THROWS_WITH_AS(fill_expected(DataType::Float32, ReduceOp::Sum, 0, 0, buffer.data(), 4),
                       "test data for 0 ranks: expected at least 1 rank", InputError);
}

// ----- algorithms/ir/types.cpp: the names bench and the command line take. These belong in
// algorithms/types_test.cpp; they are here until that file exists.

TEST_CASE("test_data: dtype names, nccl-tests spellings included, parse and print") {
  struct Case {
    const char* name;
    DataType dtype;
  };
  constexpr Case kCases[] = {
      {"int8", DataType::Int8},         {"uint8", DataType::Uint8},     {"int32", DataType::Int32},
      {"uint32", DataType::Uint32},     {"int64", DataType::Int64},     {"uint64", DataType::Uint64},
      {"half", DataType::Float16},      {"float16", DataType::Float16}, {"fp16", DataType::Float16},
      {"bfloat16", DataType::BFloat16}, {"bf16", DataType::BFloat16},   {"float", DataType::Float32},
      {"float32", DataType::Float32},   {"fp32", DataType::Float32},    {"double", DataType::Float64},
      {"float64", DataType::Float64},   {"fp64", DataType::Float64},    {"BF16", DataType::BFloat16},
  };
  for (const Case& c : kCases) CHECK(topocoll::algo::parse_dtype(c.name) == c.dtype);
  for (DataType t : kDataTypes) CHECK(topocoll::algo::parse_dtype(to_string(t)) == t);
  CHECK(to_string(DataType::Float16) == "half");
  CHECK(to_string(DataType::BFloat16) == "bfloat16");
  CHECK(to_string(DataType::Float32) == "float");
  CHECK(to_string(DataType::Float64) == "double");
  CHECK(size_of(DataType::Int8) == 1);
  CHECK(size_of(DataType::BFloat16) == 2);
  CHECK(size_of(DataType::Uint32) == 4);
  CHECK(size_of(DataType::Float64) == 8);
  const char* kAccepted =
      "int8, uint8, int32, uint32, int64, uint64, half, float16, fp16, bfloat16, bf16, float, float32, fp32, double, "
      "float64, fp64";
  CHECK_THROWS_WITH_AS(topocoll::algo::parse_dtype("float8"),
                       (std::string("unknown data type 'float8': expected one of ") + kAccepted).c_str(), InputError);
  CHECK_THROWS_WITH_AS(topocoll::algo::parse_dtype(""),
                       (std::string("unknown data type '': expected one of ") + kAccepted).c_str(), InputError);
  CHECK_THROWS_AS(topocoll::algo::parse_dtype("int16"), InputError);
  CHECK_THROWS_AS(topocoll::algo::parse_dtype("float "), InputError);
}

TEST_CASE("test_data: op and collective names parse and print") {
  for (ReduceOp op : kOps) CHECK(topocoll::algo::parse_op(to_string(op)) == op);
  CHECK(topocoll::algo::parse_op("sum") == ReduceOp::Sum);
  CHECK(topocoll::algo::parse_op("prod") == ReduceOp::Prod);
  CHECK(topocoll::algo::parse_op("min") == ReduceOp::Min);
  CHECK(topocoll::algo::parse_op("max") == ReduceOp::Max);
  CHECK(topocoll::algo::parse_op("avg") == ReduceOp::Avg);
  CHECK(topocoll::algo::parse_op("Max") == ReduceOp::Max);
  CHECK_THROWS_WITH_AS(topocoll::algo::parse_op("mean"),
                       "unknown reduction op 'mean': expected one of sum, prod, min, max, avg", InputError);
  CHECK_THROWS_AS(topocoll::algo::parse_op("premulsum"), InputError);

  for (Collective c : topocoll::algo::kAllCollectives) CHECK(topocoll::algo::parse_collective(to_string(c)) == c);
  CHECK(topocoll::algo::parse_collective("allreduce") == Collective::AllReduce);
  CHECK(topocoll::algo::parse_collective("reduce_scatter") == Collective::ReduceScatter);
  CHECK(topocoll::algo::parse_collective("allgather") == Collective::AllGather);
  CHECK(topocoll::algo::parse_collective("broadcast") == Collective::Broadcast);
  CHECK(topocoll::algo::parse_collective("reduce") == Collective::Reduce);
  CHECK(topocoll::algo::parse_collective("alltoall") == Collective::AllToAll);
  CHECK_THROWS_WITH_AS(topocoll::algo::parse_collective("gather"),
                       doctest::Contains("unknown collective 'gather': expected one of allreduce, reduce_scatter, "
                                         "allgather, broadcast, reduce, alltoall"),
                       InputError);
}

// The per-collective view against the plain functions it numbers: every rank's expected output
// is built from the other ranks' inputs (or the reduction), a slice of it equals the same part of
// the whole, and ranges outside a buffer are refused.
TEST_CASE("test_data: per-collective inputs and expected outputs") {
  const int p = 3;
  const std::uint64_t count = 5;
  for (Collective c : topocoll::algo::kAllCollectives) {
    topocoll::algo::CollectiveArgs a;
    a.collective = c;
    a.count = count;
    a.dtype = DataType::Int32;
    a.op = ReduceOp::Sum;
    a.ranks = p;
    a.root = 1;
    if (c == Collective::AllToAllV) {  // blocks of 0, 2, 5 and 7 elements
      a.count = 0;
      a.sizes = topocoll::algo::testing::skewed_alltoallv_sizes(p, count, false);
    }
    CAPTURE(to_string(c));
    const std::size_t in_n = a.input_count(), out_n = a.output_count();
    std::vector<std::vector<std::int32_t>> in(p, std::vector<std::int32_t>(in_n));
    for (int r = 0; r < p; ++r) fill_collective_input(a, r, 0, in[r].data(), in_n);
    // The reduction of the inputs, element by element. The inputs span the whole int32 range, so
    // the sum is taken as the wrapping two's-complement sum that the runtime computes.
    const auto wrap_add = [](std::int32_t x, std::int32_t y) {
      return static_cast<std::int32_t>(static_cast<std::uint32_t>(x) + static_cast<std::uint32_t>(y));
    };
    std::vector<std::int32_t> sum(out_n);
    for (int r = 0; r < p; ++r)
      for (std::size_t i = 0; i < std::min(in_n, out_n); ++i) sum[i] = wrap_add(sum[i], in[r][i]);
    for (int r = 0; r < p; ++r) {
      CAPTURE(r);
      std::vector<std::int32_t> want(out_n, -7), got(out_n, -7);
      const std::size_t defined_n = a.defined_output_count(r);
      for (std::size_t g = 0; g < out_n; ++g) {
        const std::size_t j = g / count, i = g % count;
        switch (c) {
          case Collective::AllReduce:
          case Collective::Reduce:
            want[g] = sum[g];
            break;
          case Collective::ReduceScatter: {
            std::int32_t s = 0;
            for (int q = 0; q < p; ++q) s = wrap_add(s, in[q][r * count + g]);
            want[g] = s;
            break;
          }
          case Collective::AllGather:
            want[g] = in[j][i];
            break;
          case Collective::Broadcast:
            want[g] = in[a.root][g];
            break;
          case Collective::AllToAll:
            want[g] = in[j][r * count + i];
            break;
          case Collective::AllToAllV:  // beyond what rank r receives: padding, left alone
            if (g < defined_n) {
              const int src = a.sizes->source_at(r, g);
              want[g] = in[src][a.sizes->send_displ(src, r) + g - a.sizes->recv_displ(r, src)];
            }
            break;
        }
      }
      const bool defined = fill_collective_expected(a, r, 0, got.data(), out_n);
      CHECK(defined == (c != Collective::Reduce || r == a.root));
      if (!defined) {
        CHECK(got == std::vector<std::int32_t>(out_n, -7));  // nothing written
        CHECK(count_wrong_output(a, r, got.data()) == 0);
        continue;
      }
      CHECK(got == want);
      CHECK(count_wrong_output(a, r, want.data()) == 0);
      want[defined_n - 1] = wrap_add(want[defined_n - 1], 1);
      CHECK(count_wrong_output(a, r, want.data()) == 1);
      if (defined_n < out_n) {  // the padding is not compared, and a range inside it is undefined
        want[out_n - 1] = wrap_add(want[out_n - 1], 1);
        CHECK(count_wrong_output(a, r, want.data()) == 1);
        CHECK_FALSE(fill_collective_expected(a, r, defined_n, got.data(), out_n - defined_n));
      }
      std::vector<std::int32_t> part(out_n - 4, -7);  // from 3: across a block boundary where there are blocks
      fill_collective_expected(a, r, 3, part.data(), part.size());
      CHECK(std::equal(part.begin(), part.end(), got.begin() + 3));
    }
    std::int32_t x = 0;
    CHECK_THROWS_AS(fill_collective_input(a, 0, in_n, &x, 1), InputError);
    CHECK_THROWS_AS(fill_collective_expected(a, a.root, out_n, &x, 1), InputError);
  }
}
