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

// How a storage element combines: in its own type (Plain; integer sum / prod get the unsigned
// twin, see run_as), or widened to float and rounded back (Widened, fp16 / bf16). Branch-free, so
// the passes below vectorise (one vector load of each operand, the op, one store).
template <class Op, class T>
struct Plain {
  using Storage = T;
  static T combine(T a, T b) { return Op::apply(a, b); }
};
template <class Op, class Codec>
struct Widened {
  using Storage = std::uint16_t;
  static std::uint16_t combine(std::uint16_t a, std::uint16_t b) {
    return Codec::encode(Op::apply(Codec::decode(a), Codec::decode(b)));
  }
};

// dst = a (op) b over n elements: in place (dst == a) as dst (op)= b, else over three disjoint
// buffers; restrict pointers either way.
template <class Elem>
void reduce_in_place(typename Elem::Storage* __restrict dst, const typename Elem::Storage* __restrict b,
                     std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = Elem::combine(dst[i], b[i]);
}
template <class Elem>
void reduce_apart(typename Elem::Storage* __restrict dst, const typename Elem::Storage* __restrict a,
                  const typename Elem::Storage* __restrict b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = Elem::combine(a[i], b[i]);
}
template <class Elem>
void pass(void* dst, const void* a, const void* b, std::size_t n) {
  using T = typename Elem::Storage;
  if (dst == a)
    reduce_in_place<Elem>(static_cast<T*>(dst), static_cast<const T*>(b), n);
  else
    reduce_apart<Elem>(static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), n);
}

// Integer sum / prod of a signed type are computed on its unsigned twin (modulo 2^bits, no UB);
// min / max must compare as the signed type itself.
template <class Op, class T>
void pass_integer(void* dst, const void* a, const void* b, std::size_t n) {
  constexpr bool kWraps = std::is_same_v<Op, SumOp> || std::is_same_v<Op, ProdOp>;
  pass<Plain<Op, std::conditional_t<kWraps, std::make_unsigned_t<T>, T>>>(dst, a, b, n);
}

// One op, every dtype: the switch picks the storage type once per call, never per element.
template <class Op>
void run_as(DataType t, void* dst, const void* a, const void* b, std::size_t n) {
  switch (t) {
    case DataType::Int8:
      return pass_integer<Op, std::int8_t>(dst, a, b, n);
    case DataType::Uint8:
      return pass_integer<Op, std::uint8_t>(dst, a, b, n);
    case DataType::Int32:
      return pass_integer<Op, std::int32_t>(dst, a, b, n);
    case DataType::Uint32:
      return pass_integer<Op, std::uint32_t>(dst, a, b, n);
    case DataType::Int64:
      return pass_integer<Op, std::int64_t>(dst, a, b, n);
    case DataType::Uint64:
      return pass_integer<Op, std::uint64_t>(dst, a, b, n);
    case DataType::Float16:
      return pass<Widened<Op, HalfCodec>>(dst, a, b, n);
    case DataType::BFloat16:
      return pass<Widened<Op, BFloat16Codec>>(dst, a, b, n);
    case DataType::Float32:
      return pass<Plain<Op, float>>(dst, a, b, n);
    case DataType::Float64:
      return pass<Plain<Op, double>>(dst, a, b, n);
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
  reduce_copy(t, op, dst, dst, src, n);
}

void reduce_copy(DataType t, ReduceOp op, void* dst, const void* a, const void* b, std::size_t n) {
  if (n == 0) return;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      return run_as<SumOp>(t, dst, a, b, n);
    case ReduceOp::Prod:
      return run_as<ProdOp>(t, dst, a, b, n);
    case ReduceOp::Min:
      return run_as<MinOp>(t, dst, a, b, n);
    case ReduceOp::Max:
      return run_as<MaxOp>(t, dst, a, b, n);
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
