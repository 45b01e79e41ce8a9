// IEEE binary16 (fp16) and bfloat16 (bf16) <-> float conversions, stored as std::uint16_t.
//
// Both directions are branch-free (every case is computed and one is selected), so that loops
// calling them auto-vectorise. Narrowing rounds to nearest, ties to even, as CUDA's __float2half
// and __float2bfloat16 do; NaN stays NaN (quiet, sign and top payload bits kept), overflow goes
// to infinity, fp16 subnormals are produced and read exactly (no flush to zero).
//
//   fp16:  s eeeee mmmmmmmmmm        bias 15,  normal 2^-14 ... 65504, subnormal step 2^-24
//   bf16:  s eeeeeeee mmmmmmm        bias 127, the top half of a float
//   float: s eeeeeeee mmmmmmmmmmmmmmmmmmmmmmm
#pragma once

#include <bit>
#include <cstdint>

namespace topocoll::runtime {

inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp_mant = h & 0x7fffu;
  const std::uint32_t exp = exp_mant & 0x7c00u;
  // Exponent and mantissa moved to float's positions; the exponent field then needs rebiasing.
  const std::uint32_t shifted = exp_mant << 13;
  const std::uint32_t normal = shifted + ((127u - 15u) << 23);
  // Inf / NaN: field 31 becomes 255 (31 + 224); the payload is kept.
  const std::uint32_t inf_nan = shifted + ((255u - 31u) << 23);
  // Zero / subnormal m * 2^-24: give it the exponent of 2^-14, which reads 2^-14 * (1 + m/1024),
  // then take 2^-14 away, exactly.
  const float min_normal = std::bit_cast<float>((127u - 14u) << 23);
  const std::uint32_t subnormal =
      std::bit_cast<std::uint32_t>(std::bit_cast<float>(shifted + ((127u - 14u) << 23)) - min_normal);
  const std::uint32_t magnitude = exp == 0x7c00u ? inf_nan : (exp == 0 ? subnormal : normal);
  return std::bit_cast<float>(sign | magnitude);
}

inline std::uint16_t float_to_half(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t a = x & 0x7fffffffu;
  // NaN: quiet, keeping the top 9 payload bits.
  const std::uint32_t nan = 0x7e00u | ((a >> 13) & 0x3ffu);
  // 65520 = 0x477ff000 is the midpoint between 65504 (the largest half) and 2^16: from there up,
  // round-to-nearest-even gives infinity.
  const std::uint32_t overflow = 0x7c00u;
  // Normal half range (|f| >= 2^-14): rebias, then round the 13 dropped bits to nearest even. A
  // carry out of the mantissa correctly bumps the exponent.
  const std::uint32_t rebiased = a - ((127u - 15u) << 23);
  const std::uint32_t normal = (rebiased + 0xfffu + ((rebiased >> 13) & 1u)) >> 13;
  // Below 2^-14: adding 0.5f puts the value's bits at the half-subnormal step (2^-24 is the ulp of
  // 0.5f), and the float adder rounds to nearest even for us; 0x400 (the smallest normal) is a
  // correct result too.
  const float half_magic = 0.5f;
  const std::uint32_t subnormal =
      std::bit_cast<std::uint32_t>(std::bit_cast<float>(a) + half_magic) - std::bit_cast<std::uint32_t>(half_magic);
  const std::uint32_t magnitude = a > 0x7f800000u    ? nan
                                  : a >= 0x477ff000u ? overflow
                                  : a >= 0x38800000u ? normal
                                                     : subnormal;
  return static_cast<std::uint16_t>(sign | magnitude);
}

inline float bfloat16_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

inline std::uint16_t float_to_bfloat16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  // Round the low 16 bits to nearest even; a carry runs into the exponent (up to infinity), which is
  // what rounding means. NaN must not round into infinity: make it quiet instead.
  const std::uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const std::uint32_t nan = (x >> 16) | 0x0040u;
  const bool is_nan = (x & 0x7fffffffu) > 0x7f800000u;
  return static_cast<std::uint16_t>(is_nan ? nan : rounded);
}

}  // namespace topocoll::runtime
