// Checked unsigned 64-bit arithmetic for sizes, offsets and byte counts (docs/schedule.md: every
// size the verifier and the executors compute is exact or refused). Each helper returns
// std::nullopt when the exact result does not fit in 64 bits; callers turn that into an error
// naming the field, its value and the limit.
#pragma once

#include <cstdint>
#include <optional>

namespace topocoll {

inline std::optional<std::uint64_t> checked_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

}  // namespace topocoll
