#include "runtime/test_data.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/errors.hpp"
#include "runtime/half.hpp"

// How the inputs are built. p = ranks, r = rank, g = global element index. Each rank plays a
// "slot" k = (r + g) mod p (mod M for min / max), so which rank holds which part of a pattern
// rotates from element to element and every order of reduction meets every pattern. Per-element
// parameters (v, j, m, e, c) come from a hash of g.
//
// Integers (int8 ... uint64, arithmetic modulo 2^bits, hence exact in any order whatever the
// values; the patterns only make the answer informative):
//   sum   x = v + m * t_k            v any value, m odd, t_k in {+1, -1, +2, -2, ...} (sum 0)
//                                    expected p * v (mod 2^bits)
//   avg   the same with v in [min/p, max/p], so that p * v does not wrap; expected v
//   prod  x_0 = +-2 * odd, x_k = +-(2k + 1) for k >= 1 (sign - where k mod 3 == c), never 0 mod
//         2^bits; expected x_0 * prod(2k + 1) * (-1)^#negatives (mod 2^bits)
//   min / max  x = min_value + j + k * s with s = (max - min) / M, M = min(p, 2^(bits-1)),
//         0 <= j < s: spread over the whole range (both signs); expected j + 0 or j + (M-1) s
// Floating point (U = 2^significand bits: every integer in [-U, U] is exact; e in [-4, 4]):
//   sum / avg  x = (v + t_k) * 2^e with B = U / p, D = min(p/2, B/2), |t_k| <= D, |v| <= B - D:
//         every partial sum, in any order, is an integer multiple of 2^e of magnitude <= p * B <= U,
//         hence exact. Expected p * v * 2^e (sum), v * 2^e (avg: the sum divides exactly by p).
//         Ranges at p = 64: fp16 v in [-16, 16], t in [-16, 16]; bf16 v in [-2, 2], t in [-2, 2];
//         fp32 v in [-262112, 262112], t in [-32, 32]; fp64 v in [-(2^47 - 32), 2^47 - 32].
//         At p > U (fp16 2048, bf16 256 ranks) only U slots contribute (B = 1, x = v + t or 0) and
//         avg's v is 0: still exact, less varied.
//   prod  x_0 = +-m with m in [1, 2) carrying a random full mantissa; x_k = +-2 for odd k, +-0.5 for
//         even k, for 1 <= k <= N = min(p - 1, 2 E); +-1 beyond. Every partial product is m or 1
//         times 2^a with |a| <= E (fp16 E = 14, bf16 / fp32 E = 126, fp64 E = 1022): a normal
//         number, exact. Expected +-m * 2^(N mod 2).
//   min / max  x = (j + k * s - L) * 2^e with L = U / 2, M = min(p, 2L), s = 2L / M, 0 <= j < s:
//         distinct integers in [-L, L) (fp16 [-1024, 1024), bf16 [-128, 128)), both signs; 0 is +0.
// Values are distinct per rank wherever the range allows it. Up to p = 64 (tested): every integer
// case, float min / max, float sum / avg for fp32 / fp64; fp16 sum / avg up to p = 33 (at p = 64
// 33 distinct values), bf16 up to p = 5. Float prod draws from {m, +-2, +-0.5, +-1}.

namespace topocoll::runtime {
namespace {

using algo::DataType;
using algo::ReduceOp;

// What the generators need to know of a dtype.
struct TypeInfo {
  bool is_float = false;
  int bits = 0;              // integers: width
  bool is_signed = false;    // integers
  int significand_bits = 0;  // floats, with the implicit bit: fp16 11, bf16 8, fp32 24, fp64 53
  int max_exponent = 0;      // floats: largest E with 2^E * [1, 2) and 2^-E both normal
};

TypeInfo type_info(DataType t) {
  switch (t) {
    case DataType::Int8:
      return {false, 8, true, 0, 0};
    case DataType::Uint8:
      return {false, 8, false, 0, 0};
    case DataType::Int32:
      return {false, 32, true, 0, 0};
    case DataType::Uint32:
      return {false, 32, false, 0, 0};
    case DataType::Int64:
      return {false, 64, true, 0, 0};
    case DataType::Uint64:
      return {false, 64, false, 0, 0};
    case DataType::Float16:
      return {true, 16, true, 11, 14};
    case DataType::BFloat16:
      return {true, 16, true, 8, 126};
    case DataType::Float32:
      return {true, 32, true, 24, 126};
    case DataType::Float64:
      return {true, 64, true, 53, 1022};
  }
  TOPOCOLL_ASSERT(false, fmt::format("unknown DataType {}", static_cast<int>(t)));
}

// splitmix64's finaliser: a bijection of 64 bits that mixes well.
std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// Independent per-element parameters: one stream per salt.
enum Salt : std::uint64_t { kValue = 1, kMultiplier = 2, kScale = 3, kSign = 4 };
std::uint64_t hash_of(std::uint64_t g, Salt salt) {
  return mix(mix(g + 0x9e3779b97f4a7c15ull * salt) ^ salt);
}

// The pattern entry of slot k for sum / avg: +1, -1, +2, -2, ... (0 for the last slot of an odd
// count), magnitudes wrapping after `limit` (limit 0: all 0). Pairs cancel, so sum over k is 0.
std::int64_t zero_sum_offset(std::uint64_t k, std::uint64_t slots, std::uint64_t limit) {
  if (limit == 0 || (slots % 2 == 1 && k == slots - 1)) return 0;
  const auto magnitude = static_cast<std::int64_t>((k / 2) % limit + 1);
  return k % 2 == 0 ? magnitude : -magnitude;
}

// Number of k in [0, slots) with k mod 3 == c.
std::uint64_t count_residue3(std::uint64_t slots, std::uint64_t c) {
  return slots / 3 + (c < slots % 3 ? 1 : 0);
}

// ----- integers: values as bit patterns modulo 2^64, truncated to the dtype's width on store.
class IntegerValues {
 public:
  IntegerValues(TypeInfo info, ReduceOp op, int ranks) : op_(op), p_(static_cast<std::uint64_t>(ranks)) {
    mask_ = info.bits == 64 ? ~0ull : (1ull << info.bits) - 1;
    // Bit pattern of the dtype's smallest value; in "biased" space u in [0, mask] the value is
    // min_bits_ + u (mod 2^bits), and u's order is the value's order.
    min_bits_ = info.is_signed ? 1ull << (info.bits - 1) : 0;
    // avg: v in [min / p, max / p] (division truncating towards zero), so that p * v fits.
    if (info.is_signed) {
      const std::int64_t min = info.bits == 64 ? INT64_MIN : -(std::int64_t{1} << (info.bits - 1));
      const std::int64_t max = info.bits == 64 ? INT64_MAX : (std::int64_t{1} << (info.bits - 1)) - 1;
      avg_lo_ = static_cast<std::uint64_t>(min / ranks);
      avg_width_ = static_cast<std::uint64_t>(max / ranks) - avg_lo_;
    } else {
      avg_lo_ = 0;
      avg_width_ = mask_ / p_;
    }
    // min / max: M slots spaced s apart across the whole range.
    slots_ = std::min<std::uint64_t>(p_, std::uint64_t{1} << (info.bits - 1));
    stride_ = mask_ / slots_;
    // prod: 3 * 5 * ... * (2p - 1), modulo 2^64.
    odd_product_ = 1;
    for (std::uint64_t k = 1; k < p_; ++k) odd_product_ *= 2 * k + 1;
  }

  std::uint64_t input(std::uint64_t g, int rank) const {
    switch (op_) {
      case ReduceOp::Sum:
      case ReduceOp::Avg: {
        const std::uint64_t k = slot(g, rank, p_);
        const std::uint64_t multiplier = hash_of(g, kMultiplier) | 1;
        return center(g) + multiplier * static_cast<std::uint64_t>(zero_sum_offset(k, p_, p_));
      }
      case ReduceOp::Prod: {
        const std::uint64_t k = slot(g, rank, p_);
        const std::uint64_t magnitude = k == 0 ? first_factor(g) : 2 * k + 1;
        return k % 3 == hash_of(g, kSign) % 3 ? 0 - magnitude : magnitude;
      }
      case ReduceOp::Min:
      case ReduceOp::Max:
        return min_bits_ + base(g) + slot(g, rank, slots_) * stride_;
    }
    TOPOCOLL_ASSERT(false, fmt::format("unknown ReduceOp {}", static_cast<int>(op_)));
  }

  std::uint64_t expected(std::uint64_t g) const {
    switch (op_) {
      case ReduceOp::Sum:
        return p_ * center(g);
      case ReduceOp::Avg:
        return center(g);
      case ReduceOp::Prod: {
        const std::uint64_t product = first_factor(g) * odd_product_;
        return count_residue3(p_, hash_of(g, kSign) % 3) % 2 == 1 ? 0 - product : product;
      }
      case ReduceOp::Min:
        return min_bits_ + base(g);
      case ReduceOp::Max:
        return min_bits_ + base(g) + (slots_ - 1) * stride_;
    }
    TOPOCOLL_ASSERT(false, fmt::format("unknown ReduceOp {}", static_cast<int>(op_)));
  }

 private:
  static std::uint64_t slot(std::uint64_t g, int rank, std::uint64_t slots) {
    return (static_cast<std::uint64_t>(rank) + g % slots) % slots;
  }
  // v: the per-element value every rank's input is centred on.
  std::uint64_t center(std::uint64_t g) const {
    const std::uint64_t h = hash_of(g, kValue);
    if (op_ != ReduceOp::Avg) return h;
    return avg_lo_ + (avg_width_ == ~0ull ? h : h % (avg_width_ + 1));
  }
  // prod's x_0: 2 * odd, never equal to another slot's odd factor, never 0 modulo 2^bits.
  static std::uint64_t first_factor(std::uint64_t g) { return 2 * (hash_of(g, kValue) | 1); }
  // min / max: the offset j in [0, stride) of the lowest slot.
  std::uint64_t base(std::uint64_t g) const { return hash_of(g, kValue) % stride_; }

  ReduceOp op_;
  std::uint64_t p_;
  std::uint64_t mask_ = 0;
  std::uint64_t min_bits_ = 0;
  std::uint64_t avg_lo_ = 0;
  std::uint64_t avg_width_ = 0;
  std::uint64_t slots_ = 1;
  std::uint64_t stride_ = 1;
  std::uint64_t odd_product_ = 1;
};

// ----- floating point: values as doubles, exactly representable in the dtype.
class FloatValues {
 public:
  FloatValues(TypeInfo info, ReduceOp op, int ranks) : op_(op), p_(static_cast<std::uint64_t>(ranks)) {
    const std::uint64_t exact = std::uint64_t{1} << info.significand_bits;  // U
    // sum / avg: C contributing slots, per-slot bound B, offsets up to D, centres up to B - D.
    // Beyond U ranks only U slots contribute (the rest give 0), and avg's centre is 0 (C v / p
    // would not be exact).
    contributors_ = std::min(p_, exact);
    const std::uint64_t bound = exact / contributors_;
    offset_limit_ = std::min(contributors_ / 2, bound / 2);
    center_limit_ = op == ReduceOp::Avg && contributors_ < p_ ? 0 : bound - offset_limit_;
    // prod: the number of slots contributing 2 or 0.5.
    scaled_slots_ = std::min<std::uint64_t>(p_ - 1, 2 * static_cast<std::uint64_t>(info.max_exponent));
    mantissa_bits_ = info.significand_bits - 1;
    // min / max: grid of 2L integers, M slots s apart.
    half_range_ = exact / 2;
    slots_ = std::min(p_, 2 * half_range_);
    stride_ = 2 * half_range_ / slots_;
  }

  double input(std::uint64_t g, int rank) const {
    switch (op_) {
      case ReduceOp::Sum:
      case ReduceOp::Avg: {
        const std::uint64_t k = slot(g, rank, p_);
        if (k >= contributors_) return 0.0;
        return std::ldexp(static_cast<double>(center(g) + zero_sum_offset(k, contributors_, offset_limit_)), scale(g));
      }
      case ReduceOp::Prod: {
        const std::uint64_t k = slot(g, rank, p_);
        const double magnitude = k == 0 ? mantissa(g) : k > scaled_slots_ ? 1.0 : k % 2 == 1 ? 2.0 : 0.5;
        return k % 3 == hash_of(g, kSign) % 3 ? -magnitude : magnitude;
      }
      case ReduceOp::Min:
      case ReduceOp::Max:
        return grid_value(g, base(g) + slot(g, rank, slots_) * stride_);
    }
    TOPOCOLL_ASSERT(false, fmt::format("unknown ReduceOp {}", static_cast<int>(op_)));
  }

  double expected(std::uint64_t g) const {
    switch (op_) {
      case ReduceOp::Sum:
        return std::ldexp(static_cast<double>(static_cast<std::int64_t>(contributors_) * center(g)), scale(g));
      case ReduceOp::Avg:
        return std::ldexp(static_cast<double>(center(g)), scale(g));
      case ReduceOp::Prod: {
        const double product = std::ldexp(mantissa(g), static_cast<int>(scaled_slots_ % 2));
        return count_residue3(p_, hash_of(g, kSign) % 3) % 2 == 1 ? -product : product;
      }
      case ReduceOp::Min:
        return grid_value(g, base(g));
      case ReduceOp::Max:
        return grid_value(g, base(g) + (slots_ - 1) * stride_);
    }
    TOPOCOLL_ASSERT(false, fmt::format("unknown ReduceOp {}", static_cast<int>(op_)));
  }

 private:
  static std::uint64_t slot(std::uint64_t g, int rank, std::uint64_t slots) {
    return (static_cast<std::uint64_t>(rank) + g % slots) % slots;
  }
  // 2^e, e in [-4, 4]: exercises exponents without leaving the exact range (fp16: 2048 * 16 < 65504).
  static int scale(std::uint64_t g) { return static_cast<int>(hash_of(g, kScale) % 9) - 4; }
  // sum / avg centre v in [-(B - D), B - D].
  std::int64_t center(std::uint64_t g) const {
    return static_cast<std::int64_t>(hash_of(g, kValue) % (2 * center_limit_ + 1)) -
           static_cast<std::int64_t>(center_limit_);
  }
  // prod's x_0: 1 + f / 2^(significand bits - 1), a random full mantissa in [1, 2).
  double mantissa(std::uint64_t g) const {
    const std::uint64_t fraction = hash_of(g, kValue) & ((std::uint64_t{1} << mantissa_bits_) - 1);
    return 1.0 + std::ldexp(static_cast<double>(fraction), -mantissa_bits_);
  }
  std::uint64_t base(std::uint64_t g) const { return hash_of(g, kValue) % stride_; }
  // min / max: grid point u in [0, 2L) as the value (u - L) * 2^e.
  double grid_value(std::uint64_t g, std::uint64_t u) const {
    return std::ldexp(static_cast<double>(static_cast<std::int64_t>(u) - static_cast<std::int64_t>(half_range_)),
                      scale(g));
  }

  ReduceOp op_;
  std::uint64_t p_;
  std::uint64_t contributors_ = 1;
  std::uint64_t offset_limit_ = 0;
  std::uint64_t center_limit_ = 0;
  std::uint64_t scaled_slots_ = 0;
  int mantissa_bits_ = 0;
  std::uint64_t half_range_ = 1;
  std::uint64_t slots_ = 1;
  std::uint64_t stride_ = 1;
};

// Stores value_of(element_offset + i) for i < n as integers of dtype t (truncated modulo 2^bits).
template <class ValueOf>
void store_integers(DataType t, void* data, std::size_t n, std::uint64_t element_offset, const ValueOf& value_of) {
  const auto fill = [&]<class T>(T* out) {
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<T>(value_of(element_offset + i));
  };
  switch (t) {
    case DataType::Int8:
      return fill(static_cast<std::int8_t*>(data));
    case DataType::Uint8:
      return fill(static_cast<std::uint8_t*>(data));
    case DataType::Int32:
      return fill(static_cast<std::int32_t*>(data));
    case DataType::Uint32:
      return fill(static_cast<std::uint32_t*>(data));
    case DataType::Int64:
      return fill(static_cast<std::int64_t*>(data));
    case DataType::Uint64:
      return fill(static_cast<std::uint64_t*>(data));
    default:
      TOPOCOLL_ASSERT(false, fmt::format("{} is not an integer type", algo::to_string(t)));
  }
}

// Stores value_of(element_offset + i) for i < n as floats of dtype t (each value is exactly
// representable there, so the conversions do not round).
template <class ValueOf>
void store_floats(DataType t, void* data, std::size_t n, std::uint64_t element_offset, const ValueOf& value_of) {
  const auto fill = [&](auto* out, auto convert) {
    for (std::size_t i = 0; i < n; ++i) out[i] = convert(value_of(element_offset + i));
  };
  switch (t) {
    case DataType::Float16:
      return fill(static_cast<std::uint16_t*>(data), [](double d) { return float_to_half(static_cast<float>(d)); });
    case DataType::BFloat16:
      return fill(static_cast<std::uint16_t*>(data), [](double d) { return float_to_bfloat16(static_cast<float>(d)); });
    case DataType::Float32:
      return fill(static_cast<float*>(data), [](double d) { return static_cast<float>(d); });
    case DataType::Float64:
      return fill(static_cast<double*>(data), [](double d) { return d; });
    default:
      TOPOCOLL_ASSERT(false, fmt::format("{} is not a floating-point type", algo::to_string(t)));
  }
}

void check_ranks(int ranks) {
  if (ranks < 1) throw InputError(fmt::format("test data for {} ranks: expected at least 1 rank", ranks));
}

// Elements of `got` and `expected` whose bits differ, NaNs of any payload being equal.
template <class Bits, class IsNan>
std::size_t count_differences(const void* got, const void* expected, std::size_t n, IsNan is_nan) {
  const auto* a = static_cast<const Bits*>(got);
  const auto* b = static_cast<const Bits*>(expected);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += a[i] != b[i] && !(is_nan(a[i]) && is_nan(b[i]));
  return wrong;
}

void check_slice(const char* what, std::uint64_t size, std::uint64_t begin, std::size_t n) {
  if (begin > size || n > size - begin)
    throw InputError(fmt::format("test data: {} elements [{}, {} + {}) outside the {} of {} elements", what, begin,
                                 begin, n, what, size));
}

// Elements [begin, begin + n) of a buffer of p blocks of `count`, block by block: fill(j, i, out, len)
// writes elements i .. i + len - 1 of block j at `out`.
template <class FillBlock>
void fill_blocks(std::uint64_t count, std::size_t elem, std::uint64_t begin, void* data, std::size_t n,
                 const FillBlock& fill) {
  auto* out = static_cast<std::byte*>(data);
  for (std::uint64_t g = begin, end = begin + n; g < end;) {
    const std::uint64_t j = g / count, i = g % count, len = std::min(count - i, end - g);
    fill(static_cast<int>(j), i, out + (g - begin) * elem, static_cast<std::size_t>(len));
    g += len;
  }
}

}  // namespace

void fill_input(DataType t, ReduceOp op, int rank, int ranks, std::uint64_t element_offset, void* data, std::size_t n) {
  check_ranks(ranks);
  if (rank < 0 || rank >= ranks)
    throw InputError(fmt::format("test data for rank {}: expected a rank in [0, {})", rank, ranks));
  const TypeInfo info = type_info(t);
  if (info.is_float) {
    const FloatValues values(info, op, ranks);
    store_floats(t, data, n, element_offset, [&](std::uint64_t g) { return values.input(g, rank); });
  } else {
    const IntegerValues values(info, op, ranks);
    store_integers(t, data, n, element_offset, [&](std::uint64_t g) { return values.input(g, rank); });
  }
}

void fill_expected(DataType t, ReduceOp op, int ranks, std::uint64_t element_offset, void* data, std::size_t n) {
  check_ranks(ranks);
  const TypeInfo info = type_info(t);
  if (info.is_float) {
    const FloatValues values(info, op, ranks);
    store_floats(t, data, n, element_offset, [&](std::uint64_t g) { return values.expected(g); });
  } else {
    const IntegerValues values(info, op, ranks);
    store_integers(t, data, n, element_offset, [&](std::uint64_t g) { return values.expected(g); });
  }
}

void fill_collective_input(const algo::CollectiveArgs& a, int rank, std::uint64_t begin, void* data, std::size_t n) {
  check_slice("input", a.input_count(), begin, n);
  const std::uint64_t first =
      a.collective == algo::Collective::AllGather ? static_cast<std::uint64_t>(rank) * a.count : 0;
  fill_input(a.dtype, a.op, rank, a.ranks, first + begin, data, n);
}

bool fill_collective_expected(const algo::CollectiveArgs& a, int rank, std::uint64_t begin, void* data, std::size_t n) {
  check_slice("output", a.output_count(), begin, n);
  const std::uint64_t own = static_cast<std::uint64_t>(rank) * a.count;
  switch (a.collective) {
    case algo::Collective::Reduce:
      if (rank != a.root) return false;
      [[fallthrough]];
    case algo::Collective::AllReduce:
      fill_expected(a.dtype, a.op, a.ranks, begin, data, n);
      return true;
    case algo::Collective::ReduceScatter:
      fill_expected(a.dtype, a.op, a.ranks, own + begin, data, n);
      return true;
    case algo::Collective::Broadcast:
      fill_input(a.dtype, a.op, a.root, a.ranks, begin, data, n);
      return true;
    case algo::Collective::AllGather:  // block j is rank j's input, numbered from j * count
      fill_blocks(a.count, size_of(a.dtype), begin, data, n, [&](int j, std::uint64_t i, void* out, std::size_t len) {
        fill_input(a.dtype, a.op, j, a.ranks, static_cast<std::uint64_t>(j) * a.count + i, out, len);
      });
      return true;
    case algo::Collective::AllToAll:  // block j is block `rank` of rank j's input
      fill_blocks(a.count, size_of(a.dtype), begin, data, n, [&](int j, std::uint64_t i, void* out, std::size_t len) {
        fill_input(a.dtype, a.op, j, a.ranks, own + i, out, len);
      });
      return true;
    case algo::Collective::AllToAllV: {  // the block from rank i is rank i's block for `rank`
      const algo::AllToAllVSizes& m = *a.sizes;
      const std::uint64_t defined = m.received(rank);
      if (begin >= defined) return false;
      auto* out = static_cast<std::byte*>(data);
      const std::size_t elem = size_of(a.dtype);
      for (std::uint64_t g = begin, end = std::min(begin + n, defined); g < end;) {
        const int i = m.source_at(rank, g);
        const std::uint64_t at = g - m.recv_displ(rank, i);
        const std::uint64_t len = std::min(m.count(i, rank) - at, end - g);
        fill_input(a.dtype, a.op, i, a.ranks, m.send_displ(i, rank) + at, out + (g - begin) * elem,
                   static_cast<std::size_t>(len));
        g += len;
      }
      return true;
    }
  }
  TOPOCOLL_ASSERT(false, fmt::format("unknown Collective {}", static_cast<int>(a.collective)));
}

std::uint64_t count_wrong_output(const algo::CollectiveArgs& a, int rank, const void* output) {
  constexpr std::uint64_t kSliceElems = std::uint64_t{1} << 16;
  const std::size_t elem = size_of(a.dtype);
  const std::uint64_t total = a.defined_output_count(rank);
  std::vector<std::byte> expected(static_cast<std::size_t>(std::min(total, kSliceElems)) * elem);
  std::uint64_t wrong = 0;
  for (std::uint64_t off = 0; off < total; off += kSliceElems) {
    const std::size_t n = static_cast<std::size_t>(std::min(kSliceElems, total - off));
    if (!fill_collective_expected(a, rank, off, expected.data(), n)) return 0;
    wrong += count_wrong(a.dtype, static_cast<const std::byte*>(output) + off * elem, expected.data(), n);
  }
  return wrong;
}

std::size_t count_wrong(DataType t, const void* got, const void* expected, std::size_t n) {
  const auto never = [](auto) { return false; };
  switch (t) {
    case DataType::Int8:
    case DataType::Uint8:
      return count_differences<std::uint8_t>(got, expected, n, never);
    case DataType::Int32:
    case DataType::Uint32:
      return count_differences<std::uint32_t>(got, expected, n, never);
    case DataType::Int64:
    case DataType::Uint64:
      return count_differences<std::uint64_t>(got, expected, n, never);
    case DataType::Float16:
      return count_differences<std::uint16_t>(got, expected, n,
                                              [](std::uint16_t x) { return (x & 0x7fffu) > 0x7c00u; });
    case DataType::BFloat16:
      return count_differences<std::uint16_t>(got, expected, n,
                                              [](std::uint16_t x) { return (x & 0x7fffu) > 0x7f80u; });
    case DataType::Float32:
      return count_differences<std::uint32_t>(got, expected, n,
                                              [](std::uint32_t x) { return (x & 0x7fffffffu) > 0x7f800000u; });
    case DataType::Float64:
      return count_differences<std::uint64_t>(
          got, expected, n, [](std::uint64_t x) { return (x & 0x7fffffffffffffffull) > 0x7ff0000000000000ull; });
  }
  TOPOCOLL_ASSERT(false, fmt::format("unknown DataType {}", static_cast<int>(t)));
}

}  // namespace topocoll::runtime
