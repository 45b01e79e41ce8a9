#include "runtime/reducer.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <type_traits>

#include "common/errors.hpp"
#include "runtime/half.hpp"

namespace topocoll::runtime {
namespace {

using algo::DataType;
using algo::ReduceOp;

// The four combining functions. Avg combines as Sum. Integer Sum and Prod only ever see unsigned
// types (see reduce_as), where wrap-around is defined; the cast brings uint8 back from int.
struct SumOp {
  template <class T>
  static T apply(T a, T b) {
    return static_cast<T>(a + b);
  }
};
struct ProdOp {
  template <class T>
  static T apply(T a, T b) {
    return static_cast<T>(a * b);
  }
};
struct MinOp {
  template <class T>
  static T apply(T a, T b) {
    return b < a ? b : a;
  }
};
struct MaxOp {
  template <class T>
  static T apply(T a, T b) {
    return a < b ? b : a;
  }
};

// How a 16-bit float is widened to float and narrowed back.
struct HalfCodec {
  static float decode(std::uint16_t h) { return half_to_float(h); }
  static std::uint16_t encode(float f) { return float_to_half(f); }
};
struct BFloat16Codec {
  static float decode(std::uint16_t b) { return bfloat16_to_float(b); }
  static std::uint16_t encode(float f) { return float_to_bfloat16(f); }
};

// One pass over n elements in the type itself: with restrict pointers and a branch-free Op the
// compiler vectorises it (one vector load of each, the op, one store).
template <class Op, class T>
void reduce_loop(T* __restrict dst, const T* __restrict src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = Op::apply(dst[i], src[i]);
}

// The same pass for a 16-bit float: widen both operands to float, combine, round back. The codecs
// are branch-free, so this vectorises too.
template <class Op, class Codec>
void reduce_loop_16(std::uint16_t* __restrict dst, const std::uint16_t* __restrict src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = Codec::encode(Op::apply(Codec::decode(dst[i]), Codec::decode(src[i])));
}

// The three-operand passes of reduce_copy: dst = a (op) b, the operands disjoint.
template <class Op, class T>
void reduce_copy_loop(T* __restrict dst, const T* __restrict a, const T* __restrict b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = Op::apply(a[i], b[i]);
}
template <class Op, class Codec>
void reduce_copy_loop_16(std::uint16_t* __restrict dst, const std::uint16_t* __restrict a,
                         const std::uint16_t* __restrict b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = Codec::encode(Op::apply(Codec::decode(a[i]), Codec::decode(b[i])));
}

// Integer sum / prod of a signed type are computed on its unsigned twin (modulo 2^bits, no UB);
// min / max must compare as the signed type itself.
template <class Op, class T>
void reduce_integer(void* dst, const void* src, std::size_t n) {
  constexpr bool kWraps = std::is_same_v<Op, SumOp> || std::is_same_v<Op, ProdOp>;
  using Work = std::conditional_t<kWraps, std::make_unsigned_t<T>, T>;
  reduce_loop<Op>(static_cast<Work*>(dst), static_cast<const Work*>(src), n);
}

template <class Op, class T>
void reduce_copy_integer(void* dst, const void* a, const void* b, std::size_t n) {
  constexpr bool kWraps = std::is_same_v<Op, SumOp> || std::is_same_v<Op, ProdOp>;
  using Work = std::conditional_t<kWraps, std::make_unsigned_t<T>, T>;
  reduce_copy_loop<Op>(static_cast<Work*>(dst), static_cast<const Work*>(a), static_cast<const Work*>(b), n);
}

template <class Op>
void reduce_copy_as(DataType t, void* dst, const void* a, const void* b, std::size_t n) {
  using U16 = std::uint16_t;
  switch (t) {
    case DataType::Int8:
      return reduce_copy_integer<Op, std::int8_t>(dst, a, b, n);
    case DataType::Uint8:
      return reduce_copy_integer<Op, std::uint8_t>(dst, a, b, n);
    case DataType::Int32:
      return reduce_copy_integer<Op, std::int32_t>(dst, a, b, n);
    case DataType::Uint32:
      return reduce_copy_integer<Op, std::uint32_t>(dst, a, b, n);
    case DataType::Int64:
      return reduce_copy_integer<Op, std::int64_t>(dst, a, b, n);
    case DataType::Uint64:
      return reduce_copy_integer<Op, std::uint64_t>(dst, a, b, n);
    case DataType::Float16:
      return reduce_copy_loop_16<Op, HalfCodec>(static_cast<U16*>(dst), static_cast<const U16*>(a),
                                                static_cast<const U16*>(b), n);
    case DataType::BFloat16:
      return reduce_copy_loop_16<Op, BFloat16Codec>(static_cast<U16*>(dst), static_cast<const U16*>(a),
                                                    static_cast<const U16*>(b), n);
    case DataType::Float32:
      return reduce_copy_loop<Op>(static_cast<float*>(dst), static_cast<const float*>(a), static_cast<const float*>(b),
                                  n);
    case DataType::Float64:
      return reduce_copy_loop<Op>(static_cast<double*>(dst), static_cast<const double*>(a),
                                  static_cast<const double*>(b), n);
  }
  TOPOCOLL_ASSERT(false, fmt::format("unknown DataType {}", static_cast<int>(t)));
}

// One op, every dtype: the switch picks the storage type once per call, never per element.
template <class Op>
void reduce_as(DataType t, void* dst, const void* src, std::size_t n) {
  switch (t) {
    case DataType::Int8:
      return reduce_integer<Op, std::int8_t>(dst, src, n);
    case DataType::Uint8:
      return reduce_integer<Op, std::uint8_t>(dst, src, n);
    case DataType::Int32:
      return reduce_integer<Op, std::int32_t>(dst, src, n);
    case DataType::Uint32:
      return reduce_integer<Op, std::uint32_t>(dst, src, n);
    case DataType::Int64:
      return reduce_integer<Op, std::int64_t>(dst, src, n);
    case DataType::Uint64:
      return reduce_integer<Op, std::uint64_t>(dst, src, n);
    case DataType::Float16:
      return reduce_loop_16<Op, HalfCodec>(static_cast<std::uint16_t*>(dst), static_cast<const std::uint16_t*>(src), n);
    case DataType::BFloat16:
      return reduce_loop_16<Op, BFloat16Codec>(static_cast<std::uint16_t*>(dst), static_cast<const std::uint16_t*>(src),
                                               n);
    case DataType::Float32:
      return reduce_loop<Op>(static_cast<float*>(dst), static_cast<const float*>(src), n);
    case DataType::Float64:
      return reduce_loop<Op>(static_cast<double*>(dst), static_cast<const double*>(src), n);
  }
  TOPOCOLL_ASSERT(false, fmt::format("unknown DataType {}", static_cast<int>(t)));
}

// data[i] /= ranks (integer division for integers). The divisor is held in T's common type with
// int, so that 200 ranks over int8 data divide by 200, not by int8(200).
template <class T>
void divide_loop(T* __restrict data, std::size_t n, int ranks) {
  const auto divisor = static_cast<std::common_type_t<T, int>>(ranks);
  for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<T>(data[i] / divisor);
}

// data[i] /= ranks for a 16-bit float: in float, then rounded back (correctly rounded, as for +).
template <class Codec>
void divide_loop_16(std::uint16_t* __restrict data, std::size_t n, int ranks) {
  const float divisor = static_cast<float>(ranks);
  for (std::size_t i = 0; i < n; ++i) data[i] = Codec::encode(Codec::decode(data[i]) / divisor);
}

}  // namespace

void reduce(DataType t, ReduceOp op, void* dst, const void* src, std::size_t n) {
  if (n == 0) return;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      return reduce_as<SumOp>(t, dst, src, n);
    case ReduceOp::Prod:
      return reduce_as<ProdOp>(t, dst, src, n);
    case ReduceOp::Min:
      return reduce_as<MinOp>(t, dst, src, n);
    case ReduceOp::Max:
      return reduce_as<MaxOp>(t, dst, src, n);
  }
  TOPOCOLL_ASSERT(false, fmt::format("unknown ReduceOp {}", static_cast<int>(op)));
}

void reduce_copy(DataType t, ReduceOp op, void* dst, const void* a, const void* b, std::size_t n) {
  if (n == 0) return;
  if (dst == a) return reduce(t, op, dst, b, n);
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      return reduce_copy_as<SumOp>(t, dst, a, b, n);
    case ReduceOp::Prod:
      return reduce_copy_as<ProdOp>(t, dst, a, b, n);
    case ReduceOp::Min:
      return reduce_copy_as<MinOp>(t, dst, a, b, n);
    case ReduceOp::Max:
      return reduce_copy_as<MaxOp>(t, dst, a, b, n);
  }
  TOPOCOLL_ASSERT(false, fmt::format("unknown ReduceOp {}", static_cast<int>(op)));
}

void finish_avg(DataType t, void* data, std::size_t n, int ranks) {
  TOPOCOLL_ASSERT(ranks >= 1, fmt::format("finish_avg over {} ranks", ranks));
  if (n == 0) return;
  switch (t) {
    case DataType::Int8:
      return divide_loop(static_cast<std::int8_t*>(data), n, ranks);
    case DataType::Uint8:
      return divide_loop(static_cast<std::uint8_t*>(data), n, ranks);
    case DataType::Int32:
      return divide_loop(static_cast<std::int32_t*>(data), n, ranks);
    case DataType::Uint32:
      return divide_loop(static_cast<std::uint32_t*>(data), n, ranks);
    case DataType::Int64:
      return divide_loop(static_cast<std::int64_t*>(data), n, ranks);
    case DataType::Uint64:
      return divide_loop(static_cast<std::uint64_t*>(data), n, ranks);
    case DataType::Float16:
      return divide_loop_16<HalfCodec>(static_cast<std::uint16_t*>(data), n, ranks);
    case DataType::BFloat16:
      return divide_loop_16<BFloat16Codec>(static_cast<std::uint16_t*>(data), n, ranks);
    case DataType::Float32:
      return divide_loop(static_cast<float*>(data), n, ranks);
    case DataType::Float64:
      return divide_loop(static_cast<double*>(data), n, ranks);
  }
  TOPOCOLL_ASSERT(false, fmt::format("unknown DataType {}", static_cast<int>(t)));
}

}  // namespace topocoll::runtime
