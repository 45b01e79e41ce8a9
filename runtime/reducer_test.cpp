#include "runtime/reducer.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "runtime/half.hpp"
#include "runtime/test_data.hpp"

using namespace topocoll::runtime;
using topocoll::algo::DataType;
using topocoll::algo::ReduceOp;
using topocoll::algo::size_of;
using topocoll::algo::to_string;

namespace {

constexpr auto& kDataTypes = topocoll::algo::kAllDataTypes;
constexpr auto& kOps = topocoll::algo::kAllOps;

using Bytes = std::vector<unsigned char>;

// One rank's fill_input, as bytes.
Bytes input_of(DataType t, ReduceOp op, int rank, int ranks, std::uint64_t offset, std::size_t n) {
  Bytes b(n * size_of(t));
  fill_input(t, op, rank, ranks, offset, b.data(), n);
  return b;
}

// The orders in which the test combines the ranks' inputs.
enum class Order { Forward, Backward, PairwiseTree, OddsThenEvens, Shuffled };

// Reduces every input into one buffer in the given order, then finishes avg.
Bytes reduce_all(DataType t, ReduceOp op, std::vector<Bytes> inputs, std::size_t n, Order order) {
  const std::size_t p = inputs.size();
  switch (order) {
    case Order::Forward:
      // acc = x0; acc op= x1; ...; acc op= x(p-1)
      for (std::size_t r = 1; r < p; ++r) reduce(t, op, inputs[0].data(), inputs[r].data(), n);
      break;
    case Order::Backward:
      // acc = x(p-1); acc op= x(p-2); ...; acc op= x0 (the accumulator is the last input)
      for (std::size_t r = p - 1; r-- > 0;) reduce(t, op, inputs[p - 1].data(), inputs[r].data(), n);
      inputs[0] = inputs[p - 1];
      break;
    case Order::PairwiseTree:
      // Round with distance d: x[i] op= x[i + d] for i a multiple of 2d; the root ends in x[0].
      for (std::size_t d = 1; d < p; d *= 2)
        for (std::size_t i = 0; i + d < p; i += 2 * d) reduce(t, op, inputs[i].data(), inputs[i + d].data(), n);
      break;
    case Order::OddsThenEvens: {
      // Ranks 1, 3, 5, ... then 0, 2, 4, ...: inputs that follow a pattern by slot parity (the 2s
      // and 0.5s of a float product) all meet before their opposites do.
      std::vector<std::size_t> order;
      for (std::size_t r = 1; r < p; r += 2) order.push_back(r);
      for (std::size_t r = 0; r < p; r += 2) order.push_back(r);
      for (std::size_t k = 1; k < p; ++k) reduce(t, op, inputs[order[0]].data(), inputs[order[k]].data(), n);
      inputs[0] = inputs[order[0]];
      break;
    }
    case Order::Shuffled: {
      // A fixed random permutation, accumulated into its first element.
      std::vector<std::size_t> perm(p);
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), std::mt19937(static_cast<unsigned>(p * 7919 + n)));
      for (std::size_t k = 1; k < p; ++k) reduce(t, op, inputs[perm[0]].data(), inputs[perm[k]].data(), n);
      inputs[0] = inputs[perm[0]];
      break;
    }
  }
  if (op == ReduceOp::Avg) finish_avg(t, inputs[0].data(), n, static_cast<int>(p));
  return inputs[0];
}

std::string order_name(Order o) {
  switch (o) {
    case Order::Forward:
      return "forward";
    case Order::Backward:
      return "backward";
    case Order::PairwiseTree:
      return "pairwise tree";
    case Order::OddsThenEvens:
      return "odd ranks then even ranks";
    case Order::Shuffled:
      return "shuffled";
  }
  return "?";
}

std::string hex(std::uint64_t bits) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(bits));
  return text;
}

template <class T>
T reduce_one(DataType t, ReduceOp op, T a, T b) {
  reduce(t, op, &a, &b, 1);
  return a;
}

}  // namespace

TEST_CASE("reducer: every dtype and op reduces fill_input to exactly fill_expected, in any order") {
  constexpr std::array kRanks{1, 2, 3, 7, 17, 64};
  constexpr std::array<std::size_t, 4> kCounts{0, 1, 5, 1000};
  constexpr std::array kOrders{Order::Forward, Order::Backward, Order::PairwiseTree, Order::OddsThenEvens,
                               Order::Shuffled};
  for (DataType t : kDataTypes)
    for (ReduceOp op : kOps)
      for (int ranks : kRanks)
        for (std::size_t n : kCounts) {
          // A slice far into a large buffer for the odd counts, the start of one otherwise.
          const std::uint64_t offset = n == 5 ? (std::uint64_t{1} << 40) + 3 : 0;
          std::vector<Bytes> inputs;
          for (int r = 0; r < ranks; ++r) inputs.push_back(input_of(t, op, r, ranks, offset, n));
          Bytes expected(n * size_of(t));
          fill_expected(t, op, ranks, offset, expected.data(), n);
          for (Order order : kOrders) {
            const Bytes got = reduce_all(t, op, inputs, n, order);
            INFO(to_string(t), " ", to_string(op), " ranks=", ranks, " n=", n, " ", order_name(order));
            CHECK(count_wrong(t, got.data(), expected.data(), n) == 0);
          }
        }
}

TEST_CASE("reducer: fill_input stays exact beyond 64 ranks, past fp16's and bf16's integer range") {
  // bf16 holds every integer up to 256, fp16 up to 2048: beyond, only that many ranks contribute.
  struct Case {
    DataType dtype;
    int ranks;
  };
  constexpr Case kCases[] = {{DataType::BFloat16, 255}, {DataType::BFloat16, 256}, {DataType::BFloat16, 257},
                             {DataType::BFloat16, 700}, {DataType::Float16, 2049}, {DataType::Float16, 2100},
                             {DataType::Float32, 1000}, {DataType::Int8, 300}};
  constexpr std::array kOrders{Order::Forward, Order::Backward, Order::PairwiseTree, Order::OddsThenEvens,
                               Order::Shuffled};
  constexpr std::size_t n = 24;
  for (const Case& c : kCases)
    for (ReduceOp op : kOps) {
      std::vector<Bytes> inputs;
      for (int r = 0; r < c.ranks; ++r) inputs.push_back(input_of(c.dtype, op, r, c.ranks, 0, n));
      Bytes expected(n * size_of(c.dtype));
      fill_expected(c.dtype, op, c.ranks, 0, expected.data(), n);
      for (Order order : kOrders) {
        const Bytes got = reduce_all(c.dtype, op, inputs, n, order);
        INFO(to_string(c.dtype), " ", to_string(op), " ranks=", c.ranks, " ", order_name(order));
        CHECK(count_wrong(c.dtype, got.data(), expected.data(), n) == 0);
      }
    }
}

TEST_CASE("reducer: integer sum and prod wrap modulo 2^bits, signed types included") {
  CHECK(reduce_one<std::int8_t>(DataType::Int8, ReduceOp::Sum, 127, 1) == -128);
  CHECK(reduce_one<std::uint8_t>(DataType::Uint8, ReduceOp::Sum, 255, 2) == 1);
  CHECK(reduce_one<std::int8_t>(DataType::Int8, ReduceOp::Prod, 16, 16) == 0);
  CHECK(reduce_one<std::int8_t>(DataType::Int8, ReduceOp::Prod, -3, 50) == static_cast<std::int8_t>(-150));
  CHECK(reduce_one<std::int32_t>(DataType::Int32, ReduceOp::Sum, std::numeric_limits<std::int32_t>::max(), 1) ==
        std::numeric_limits<std::int32_t>::min());
  CHECK(reduce_one<std::int32_t>(DataType::Int32, ReduceOp::Prod, 65536, 65536) == 0);
  CHECK(reduce_one<std::int64_t>(DataType::Int64, ReduceOp::Prod, std::numeric_limits<std::int64_t>::min(), -1) ==
        std::numeric_limits<std::int64_t>::min());
  CHECK(reduce_one<std::uint64_t>(DataType::Uint64, ReduceOp::Sum, ~0ull, ~0ull) == ~0ull - 1);
  // Avg accumulates as sum.
  CHECK(reduce_one<std::int32_t>(DataType::Int32, ReduceOp::Avg, 5, 7) == 12);
}

TEST_CASE("reducer: min and max compare signed types as signed, unsigned as unsigned") {
  CHECK(reduce_one<std::int8_t>(DataType::Int8, ReduceOp::Min, -1, 1) == -1);
  CHECK(reduce_one<std::uint8_t>(DataType::Uint8, ReduceOp::Min, 255, 1) == 1);
  CHECK(reduce_one<std::int64_t>(DataType::Int64, ReduceOp::Max, -5, std::numeric_limits<std::int64_t>::min()) == -5);
  CHECK(reduce_one<std::uint32_t>(DataType::Uint32, ReduceOp::Max, 0x80000000u, 7) == 0x80000000u);
  CHECK(reduce_one<float>(DataType::Float32, ReduceOp::Min, -0.5f, 0.25f) == -0.5f);
  CHECK(reduce_one<double>(DataType::Float64, ReduceOp::Max, -0.5, -0.25) == -0.25);
  // 16-bit floats compare by value, not by bit pattern: -1 (0xbc00) < 0.5 (0x3800).
  CHECK(reduce_one<std::uint16_t>(DataType::Float16, ReduceOp::Min, 0x3800, 0xbc00) == 0xbc00);
  CHECK(reduce_one<std::uint16_t>(DataType::Float16, ReduceOp::Max, 0xc000, 0xbc00) == 0xbc00);
  CHECK(reduce_one<std::uint16_t>(DataType::BFloat16, ReduceOp::Min, 0x3f80, 0xbf80) == 0xbf80);
  CHECK(reduce_one<std::uint16_t>(DataType::BFloat16, ReduceOp::Max, 0x0001, 0x8001) == 0x0001);
}

TEST_CASE("reducer: fp16 and bf16 arithmetic rounds each result to nearest even") {
  // fp16 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties go to 1 (even mantissa).
  CHECK(reduce_one<std::uint16_t>(DataType::Float16, ReduceOp::Sum, 0x3c00, float_to_half(0x1p-11f)) == 0x3c00);
  // 1 + 2^-10 + 2^-11 lies halfway between 1 + 2^-10 (odd) and 1 + 2^-9: up to the even one.
  CHECK(reduce_one<std::uint16_t>(DataType::Float16, ReduceOp::Sum, 0x3c01, float_to_half(0x1p-11f)) == 0x3c02);
  // 65504 + 16 = 65520: the midpoint to 2^16 rounds to infinity.
  CHECK(reduce_one<std::uint16_t>(DataType::Float16, ReduceOp::Sum, 0x7bff, float_to_half(16.0f)) == 0x7c00);
  // 2^-14 * 2^-10 = 2^-24: the smallest subnormal, exact.
  CHECK(reduce_one<std::uint16_t>(DataType::Float16, ReduceOp::Prod, 0x0400, float_to_half(0x1p-10f)) == 0x0001);
  // bf16 1 + 2^-8 ties to 1; 1 + 2^-7 + 2^-8 ties up to 1 + 2^-6.
  CHECK(reduce_one<std::uint16_t>(DataType::BFloat16, ReduceOp::Sum, 0x3f80, float_to_bfloat16(0x1p-8f)) == 0x3f80);
  CHECK(reduce_one<std::uint16_t>(DataType::BFloat16, ReduceOp::Sum, 0x3f81, float_to_bfloat16(0x1p-8f)) == 0x3f82);
  // bf16 3 * 3 = 9 exactly; 1.5 * (1 + 2^-7) = 1 + 65.5/128 is a tie between 0x3fc1 and 0x3fc2:
  // to the even 0x3fc2.
  CHECK(reduce_one<std::uint16_t>(DataType::BFloat16, ReduceOp::Prod, 0x4040, 0x4040) == 0x4110);
  CHECK(reduce_one<std::uint16_t>(DataType::BFloat16, ReduceOp::Prod, 0x3fc0, 0x3f81) == 0x3fc2);
}

TEST_CASE("reducer: a long buffer is reduced in full, tail included") {
  // 1003 elements: not a multiple of any vector width.
  constexpr std::size_t n = 1003;
  std::vector<float> dst(n), src(n);
  for (std::size_t i = 0; i < n; ++i) {
    dst[i] = static_cast<float>(i);
    src[i] = static_cast<float>(2 * i);
  }
  reduce(DataType::Float32, ReduceOp::Sum, dst.data(), src.data(), n);
  for (std::size_t i = 0; i < n; ++i) REQUIRE(dst[i] == static_cast<float>(3 * i));
  std::vector<std::uint16_t> h(n), g(n);
  for (std::size_t i = 0; i < n; ++i) {
    h[i] = float_to_bfloat16(static_cast<float>(i % 100));
    g[i] = float_to_bfloat16(static_cast<float>(i % 7));
  }
  reduce(DataType::BFloat16, ReduceOp::Max, h.data(), g.data(), n);
  for (std::size_t i = 0; i < n; ++i) REQUIRE(h[i] == float_to_bfloat16(static_cast<float>(std::max(i % 100, i % 7))));
}

TEST_CASE("reducer: finish_avg divides by the rank count") {
  std::array<std::int32_t, 4> ints{-7, 7, 12, -12};
  finish_avg(DataType::Int32, ints.data(), ints.size(), 2);
  CHECK(ints == std::array<std::int32_t, 4>{-3, 3, 6, -6});  // integer division truncates towards 0
  // 200 ranks over int8 data: the divisor is 200, not int8(200) = -56.
  std::array<std::uint8_t, 1> bytes{250};
  finish_avg(DataType::Uint8, bytes.data(), bytes.size(), 200);
  CHECK(bytes[0] == 1);
  std::array<std::int8_t, 1> signed_bytes{-100};
  finish_avg(DataType::Int8, signed_bytes.data(), signed_bytes.size(), 200);
  CHECK(signed_bytes[0] == 0);
  std::array<std::uint64_t, 1> big{~0ull};
  finish_avg(DataType::Uint64, big.data(), big.size(), 3);
  CHECK(big[0] == ~0ull / 3);
  std::array<double, 2> doubles{3.0, -1.0};
  finish_avg(DataType::Float64, doubles.data(), doubles.size(), 3);
  CHECK(doubles[0] == 1.0);
  CHECK(doubles[1] == -1.0 / 3.0);
  std::array<std::uint16_t, 2> halves{float_to_half(6.0f), float_to_half(1.0f)};
  finish_avg(DataType::Float16, halves.data(), halves.size(), 3);
  CHECK(halves[0] == float_to_half(2.0f));
  CHECK(halves[1] == 0x3555);  // 1/3 rounded to fp16: 0.333251953125
  std::array<std::uint16_t, 1> brain{float_to_bfloat16(12.0f)};
  finish_avg(DataType::BFloat16, brain.data(), brain.size(), 4);
  CHECK(brain[0] == float_to_bfloat16(3.0f));
  CHECK_THROWS_AS(finish_avg(DataType::Float32, doubles.data(), 0, 0), topocoll::InternalError);
}

TEST_CASE("reducer: n = 0 touches nothing") {
  // Null pointers are fine when there is nothing to do.
  for (DataType t : kDataTypes) {
    for (ReduceOp op : kOps) CHECK_NOTHROW(reduce(t, op, nullptr, nullptr, 0));
    CHECK_NOTHROW(finish_avg(t, nullptr, 0, 3));
  }
}

// ----- runtime/half.hpp

TEST_CASE("reducer: fp16 conversions match known bit patterns") {
  struct Case {
    std::uint16_t bits;
    float value;
  };
  constexpr Case kCases[] = {
      {0x0000, 0.0f},     {0x3c00, 1.0f},      {0xc000, -2.0f},          {0x3555, 0.333251953125f},
      {0x7bff, 65504.0f}, {0xfbff, -65504.0f}, {0x0400, 0x1p-14f},       {0x03ff, 1023 * 0x1p-24f},
      {0x0001, 0x1p-24f}, {0x8001, -0x1p-24f}, {0x3bff, 0.99951171875f}, {0x5640, 100.0f},
  };
  for (const Case& c : kCases) {
    INFO("bits ", hex(c.bits));
    CHECK(half_to_float(c.bits) == c.value);
    CHECK(float_to_half(c.value) == c.bits);
  }
  CHECK(std::bit_cast<std::uint32_t>(half_to_float(0x8000)) == 0x80000000u);  // -0
  CHECK(float_to_half(-0.0f) == 0x8000);
  CHECK(half_to_float(0x7c00) == std::numeric_limits<float>::infinity());
  CHECK(half_to_float(0xfc00) == -std::numeric_limits<float>::infinity());
  CHECK(float_to_half(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(float_to_half(-std::numeric_limits<float>::infinity()) == 0xfc00);
  CHECK(std::isnan(half_to_float(0x7e00)));
  CHECK(std::isnan(half_to_float(0x7c01)));  // signalling NaN stays NaN
  CHECK(std::isnan(half_to_float(0xfe00)));
  CHECK(float_to_half(std::numeric_limits<float>::quiet_NaN()) == 0x7e00);
  CHECK(float_to_half(std::bit_cast<float>(0x7f800001u)) == 0x7e00);  // sNaN: quiet NaN, not infinity
  CHECK(float_to_half(std::bit_cast<float>(0xffc00000u)) == 0xfe00);  // the sign is kept
}

TEST_CASE("reducer: float to fp16 rounds to nearest even, overflow and subnormals included") {
  CHECK(float_to_half(1.0f + 0x1p-11f) == 0x3c00);             // tie, to even
  CHECK(float_to_half(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01);  // just above the tie
  CHECK(float_to_half(1.0f + 3 * 0x1p-11f) == 0x3c02);         // tie, to even (up)
  CHECK(float_to_half(65519.0f) == 0x7bff);                    // below the midpoint to 2^16
  CHECK(float_to_half(65520.0f) == 0x7c00);                    // the midpoint: infinity
  CHECK(float_to_half(1e10f) == 0x7c00);
  CHECK(float_to_half(-1e10f) == 0xfc00);
  CHECK(float_to_half(0x1p-25f) == 0x0000);  // tie between 0 and 2^-24: 0
  CHECK(float_to_half(0x1p-25f + 0x1p-40f) == 0x0001);
  CHECK(float_to_half(3 * 0x1p-25f) == 0x0002);  // tie between 1 and 2 steps: 2
  CHECK(float_to_half(-3 * 0x1p-25f) == 0x8002);
  CHECK(float_to_half(1e-10f) == 0x0000);
  CHECK(float_to_half(-1e-10f) == 0x8000);
  CHECK(float_to_half(std::bit_cast<float>(0x00000001u)) == 0x0000);  // float subnormal
  CHECK(float_to_half(1023.5f * 0x1p-24f) == 0x0400);                 // largest subnormal ties up to 2^-14
  CHECK(float_to_half(0x1p-14f - 0x1p-30f) == 0x0400);
}

TEST_CASE("reducer: every fp16 value round-trips through float") {
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = half_to_float(bits);
    if ((bits & 0x7fff) > 0x7c00) {
      REQUIRE(std::isnan(f));
      REQUIRE((float_to_half(f) & 0x7fff) > 0x7c00);
      REQUIRE((float_to_half(f) & 0x8000) == (bits & 0x8000));
    } else {
      REQUIRE(float_to_half(f) == bits);
    }
  }
}

TEST_CASE("reducer: fp16 conversions agree with the compiler's _Float16") {
#ifdef __FLT16_MAX__
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float ours = half_to_float(bits);
    const float theirs = static_cast<float>(std::bit_cast<_Float16>(bits));
    if (std::isnan(theirs))
      REQUIRE(std::isnan(ours));
    else
      REQUIRE(std::bit_cast<std::uint32_t>(ours) == std::bit_cast<std::uint32_t>(theirs));
  }
  // Every 251st float bit pattern (17 million of them), all signs and exponents.
  for (std::uint64_t x = 0; x <= 0xffffffffull; x += 251) {
    const float f = std::bit_cast<float>(static_cast<std::uint32_t>(x));
    const auto theirs = std::bit_cast<std::uint16_t>(static_cast<_Float16>(f));
    const std::uint16_t ours = float_to_half(f);
    if (std::isnan(f))
      REQUIRE((ours & 0x7fff) > 0x7c00);
    else if (ours != theirs)
      REQUIRE_MESSAGE(ours == theirs, "float bits ", hex(x));
  }
#else
  MESSAGE("no _Float16 in this compiler: cross-check skipped");
#endif
}

TEST_CASE("reducer: bf16 conversions match known bit patterns and round to nearest even") {
  struct Case {
    std::uint16_t bits;
    float value;
  };
  constexpr Case kCases[] = {
      {0x0000, 0.0f},      {0x3f80, 1.0f},      {0xc000, -2.0f},      {0x4049, 3.140625f}, {0x7f7f, 0x1.fep127f},
      {0x0080, 0x1p-126f}, {0x0001, 0x1p-133f}, {0x8001, -0x1p-133f}, {0x42c8, 100.0f},
  };
  for (const Case& c : kCases) {
    INFO("bits ", hex(c.bits));
    CHECK(bfloat16_to_float(c.bits) == c.value);
    CHECK(float_to_bfloat16(c.value) == c.bits);
  }
  CHECK(bfloat16_to_float(0x7f80) == std::numeric_limits<float>::infinity());
  CHECK(bfloat16_to_float(0xff80) == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(bfloat16_to_float(0x7fc0)));
  CHECK(std::isnan(bfloat16_to_float(0x7f81)));
  CHECK(float_to_bfloat16(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(float_to_bfloat16(std::numeric_limits<float>::quiet_NaN()) == 0x7fc0);
  CHECK(float_to_bfloat16(std::bit_cast<float>(0x7f800001u)) == 0x7fc0);  // sNaN: not rounded to infinity
  CHECK(float_to_bfloat16(std::bit_cast<float>(0x7fffffffu)) == 0x7fff);  // all-ones NaN: not a carry into sign
  CHECK(float_to_bfloat16(std::bit_cast<float>(0xffc00000u)) == 0xffc0);
  CHECK(float_to_bfloat16(-0.0f) == 0x8000);
  CHECK(float_to_bfloat16(1.0f + 0x1p-8f) == 0x3f80);      // tie, to even
  CHECK(float_to_bfloat16(1.0f + 3 * 0x1p-8f) == 0x3f82);  // tie, to even (up)
  CHECK(float_to_bfloat16(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81);
  CHECK(float_to_bfloat16(std::numeric_limits<float>::max()) == 0x7f80);  // rounds up to infinity
  CHECK(float_to_bfloat16(std::bit_cast<float>(0x7f7f7fffu)) == 0x7f7f);
  CHECK(float_to_bfloat16(std::bit_cast<float>(0x00008000u)) == 0x0000);  // subnormal tie, to even
  CHECK(float_to_bfloat16(std::bit_cast<float>(0x00018000u)) == 0x0002);
  // Every bf16 value round-trips.
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    if ((bits & 0x7fff) > 0x7f80)
      REQUIRE(float_to_bfloat16(bfloat16_to_float(bits)) == (bits | 0x0040));
    else
      REQUIRE(float_to_bfloat16(bfloat16_to_float(bits)) == bits);
  }
}

TEST_CASE("reducer: float to bf16 agrees with rounding computed in double") {
  // Reference: the two bf16 neighbours of f, the nearer one, ties to the even one. Infinity plays
  // the neighbour 2^128 above the largest finite value.
  const auto magnitude = [](std::uint16_t bits) {
    return (bits & 0x7fff) == 0x7f80 ? 0x1p128 : std::fabs(static_cast<double>(bfloat16_to_float(bits)));
  };
  const auto reference = [&](float f) {
    const double a = std::fabs(static_cast<double>(f));
    const auto below = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(f) >> 16);  // towards zero
    const auto above = static_cast<std::uint16_t>(below + 1);
    const double to_below = a - magnitude(below), to_above = magnitude(above) - a;
    if (to_below != to_above) return to_below < to_above ? below : above;
    return (below & 1) == 0 ? below : above;
  };
  for (std::uint64_t x = 0; x <= 0xffffffffull; x += 241) {
    const float f = std::bit_cast<float>(static_cast<std::uint32_t>(x));
    if (std::isnan(f) || std::isinf(f)) continue;
    const std::uint16_t ours = float_to_bfloat16(f);
    if (ours != reference(f)) REQUIRE_MESSAGE(ours == reference(f), "float bits ", hex(x));
  }
}

TEST_CASE("reducer: reduce_copy gives copy-then-reduce bit for bit, every dtype and op, and in place") {
  // Random bytes (NaN and infinities included for the float types): dst = a (op) b must equal
  // the two-step form exactly, bit for bit, whatever the values; 1003 elements leave a tail.
  constexpr std::size_t n = 1003;
  std::mt19937 rng(20261207);
  for (DataType t : kDataTypes)
    for (ReduceOp op : kOps) {
      CAPTURE(to_string(t));
      CAPTURE(to_string(op));
      const std::size_t bytes = n * size_of(t);
      Bytes a(bytes), b(bytes);
      for (auto& x : a) x = static_cast<unsigned char>(rng());
      for (auto& x : b) x = static_cast<unsigned char>(rng());
      if (op == ReduceOp::Min || op == ReduceOp::Max) {
        // min / max of NaN is unspecified (reducer.hpp): compare on NaN-free values.
        fill_input(t, ReduceOp::Sum, 0, 2, 0, a.data(), n);
        fill_input(t, ReduceOp::Sum, 1, 2, 0, b.data(), n);
      }
      Bytes two_step = a;
      reduce(t, op, two_step.data(), b.data(), n);
      Bytes fused(bytes, 0xAB);
      reduce_copy(t, op, fused.data(), a.data(), b.data(), n);
      CHECK(std::memcmp(fused.data(), two_step.data(), bytes) == 0);
      Bytes in_place = a;  // dst == a: the plain reduce
      reduce_copy(t, op, in_place.data(), in_place.data(), b.data(), n);
      CHECK(std::memcmp(in_place.data(), two_step.data(), bytes) == 0);
    }
  // n = 0 touches nothing.
  float d = 7.0F, x = 1.0F, y = 2.0F;
  reduce_copy(DataType::Float32, ReduceOp::Sum, &d, &x, &y, 0);
  CHECK(d == 7.0F);
}
