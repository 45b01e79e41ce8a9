// The CUDA reducer's kernels (contract in reducer.hpp). One kernel template serves every dtype x
// op: an Elem policy says how a storage element combines (in its own type, in its unsigned twin,
// or widened to float for fp16 / bf16), an Op the combining function.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "runtime/cuda/reducer.hpp"

namespace topocoll::runtime::cuda {
namespace {

using algo::DataType;
using algo::ReduceOp;

// The four combining functions, as in runtime/reducer.cpp. Avg combines as Sum.
struct SumOp {
  template <class T>
  __device__ static T apply(T a, T b) {
    return static_cast<T>(a + b);
  }
};
struct ProdOp {
  template <class T>
  __device__ static T apply(T a, T b) {
    return static_cast<T>(a * b);
  }
};
struct MinOp {
  template <class T>
  __device__ static T apply(T a, T b) {
    return b < a ? b : a;
  }
};
struct MaxOp {
  template <class T>
  __device__ static T apply(T a, T b) {
    return a < b ? b : a;
  }
};

// Storage type T combined in T itself (integers pass their unsigned twin for sum / prod).
template <class Op, class T>
struct Plain {
  using Storage = T;
  __device__ static T combine(T a, T b) { return Op::apply(a, b); }
};

// fp16 / bf16: widen both to float (exact), combine in float, round to nearest even.
struct HalfCodec {
  __device__ static float decode(std::uint16_t h) { return __half2float(__ushort_as_half(h)); }
  __device__ static std::uint16_t encode(float f) { return __half_as_ushort(__float2half_rn(f)); }
};
struct BFloat16Codec {
  __device__ static float decode(std::uint16_t b) { return __bfloat162float(__ushort_as_bfloat16(b)); }
  __device__ static std::uint16_t encode(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }
};
template <class Op, class Codec>
struct Widened {
  using Storage = std::uint16_t;
  __device__ static std::uint16_t combine(std::uint16_t a, std::uint16_t b) {
    return Codec::encode(Op::apply(Codec::decode(a), Codec::decode(b)));
  }
};

// 16 bytes of elements, loaded and stored as one uint4.
template <class T>
union Pack {
  static constexpr int kLanes = 16 / static_cast<int>(sizeof(T));
  uint4 raw;
  T lane[kLanes];
};

// How the n elements split (computed on the host, design note of the kernel):
//
//   dst: | head (to the first 16 B boundary) | vectors x 16 B ............ | tail |
//          element by element                  Pack loads, 2 per loop turn   element by element
//
// When dst and src are not equally aligned modulo 16, head = n and there are no vectors.
struct Split {
  std::size_t n = 0;              // elements in all
  std::size_t head = 0;           // elements before the body
  std::size_t vectors = 0;        // 16 B vectors in the body
  std::size_t body_elements = 0;  // vectors x lanes
};

template <class Elem>
// dst = a (op) b; reduce is the case a == dst. No __restrict__: dst == a is allowed (x op= y, and
// x op= x). Each element is read and then written by one thread only, and each loop turn issues
// its four loads before its stores, so restrict would buy nothing here.
__global__ void __launch_bounds__(1024) reduce_kernel(typename Elem::Storage* dst, const typename Elem::Storage* a,
                                                      const typename Elem::Storage* b, Split split) {
  using T = typename Elem::Storage;
  using P = Pack<T>;
  const std::size_t thread = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;

  // The body: vectors [0, split.vectors) of 16 B from dst + head; two independent vectors per turn
  // so that each thread has four loads in flight.
  uint4* dv = reinterpret_cast<uint4*>(dst + split.head);
  const uint4* av = reinterpret_cast<const uint4*>(a + split.head);
  const uint4* bv = reinterpret_cast<const uint4*>(b + split.head);
  for (std::size_t v = thread; v < split.vectors; v += 2 * stride) {
    const std::size_t v2 = v + stride;
    const bool second = v2 < split.vectors;
    P a0, b0, a1, b1;
    a0.raw = av[v];
    b0.raw = bv[v];
    if (second) {
      a1.raw = av[v2];
      b1.raw = bv[v2];
    }
#pragma unroll
    for (int k = 0; k < P::kLanes; ++k) a0.lane[k] = Elem::combine(a0.lane[k], b0.lane[k]);
    dv[v] = a0.raw;
    if (second) {
#pragma unroll
      for (int k = 0; k < P::kLanes; ++k) a1.lane[k] = Elem::combine(a1.lane[k], b1.lane[k]);
      dv[v2] = a1.raw;
    }
  }
  // The head and the tail, numbered 0 ... scalars-1 over both.
  const std::size_t body_end = split.head + split.body_elements;
  const std::size_t scalars = split.head + (split.n - body_end);
  for (std::size_t i = thread; i < scalars; i += stride) {
    const std::size_t e = i < split.head ? i : body_end + (i - split.head);
    dst[e] = Elem::combine(a[e], b[e]);
  }
}

// data[i] /= ranks, element by element (once per collective, not the hot path). The divisor is in
// T's common type with int, as on the CPU.
template <class T>
__global__ void __launch_bounds__(1024) divide_kernel(T* data, std::size_t n, int ranks) {
  const auto divisor = static_cast<std::common_type_t<T, int>>(ranks);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    data[i] = static_cast<T>(data[i] / divisor);
}
template <class Codec>
__global__ void __launch_bounds__(1024) divide_kernel_16(std::uint16_t* data, std::size_t n, int ranks) {
  const float divisor = static_cast<float>(ranks);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    data[i] = Codec::encode(Codec::decode(data[i]) / divisor);
}

// Streaming multiprocessors of the current device, looked up once per device and thread.
Status sm_count(int* out) {
  thread_local int cached_device = -1, cached_sms = 0;
  int device = 0;
  if (auto e = cudaGetDevice(&device); e != cudaSuccess) return {static_cast<int>(e), "cudaGetDevice"};
  if (device != cached_device) {
    if (auto e = cudaDeviceGetAttribute(&cached_sms, cudaDevAttrMultiProcessorCount, device); e != cudaSuccess)
      return {static_cast<int>(e), "cudaDeviceGetAttribute(MultiProcessorCount)"};
    cached_device = device;
  }
  *out = cached_sms;
  return {};
}

Status grid_for(std::size_t items, const ReducePolicy& p, unsigned* blocks) {
  if (p.threads_per_block < 32 || p.threads_per_block > 1024 || p.blocks_per_sm < 1)
    return {static_cast<int>(cudaErrorInvalidConfiguration),
            "cuda::ReducePolicy (threads 32..1024, blocks_per_sm >= 1)"};
  int sms = 0;
  if (auto s = sm_count(&sms); !s.ok()) return s;
  const std::size_t threads = static_cast<std::size_t>(p.threads_per_block);
  const std::size_t needed = std::max<std::size_t>(1, (items + threads - 1) / threads);
  *blocks = static_cast<unsigned>(std::min<std::size_t>(needed, static_cast<std::size_t>(sms) * p.blocks_per_sm));
  return {};
}

Status launched(const char* where) {
  if (auto e = cudaGetLastError(); e != cudaSuccess) return {static_cast<int>(e), where};
  return {};
}

// dst = a (op) b (reduce: a == dst). Vectors when all three share their offset modulo 16.
template <class Elem>
Status launch_reduce(void* dst, const void* a, const void* b, std::size_t n, Stream stream, const ReducePolicy& p) {
  using T = typename Elem::Storage;
  constexpr std::size_t kLanes = 16 / sizeof(T);
  const auto d = reinterpret_cast<std::uintptr_t>(dst), x = reinterpret_cast<std::uintptr_t>(a),
             s = reinterpret_cast<std::uintptr_t>(b);
  if (d % sizeof(T) != 0 || x % sizeof(T) != 0 || s % sizeof(T) != 0)
    return {static_cast<int>(cudaErrorMisalignedAddress),
            "cuda::reduce (dst and its operands must be aligned to the element size)"};
  Split split;
  split.n = n;
  if (d % 16 == s % 16 && d % 16 == x % 16) {
    split.head = std::min(n, ((16 - d % 16) % 16) / sizeof(T));
    split.vectors = (n - split.head) / kLanes;
  } else {
    split.head = n;
  }
  split.body_elements = split.vectors * kLanes;
  const std::size_t scalars = n - split.body_elements;
  unsigned blocks = 0;
  if (auto st = grid_for(std::max((split.vectors + 1) / 2, scalars), p, &blocks); !st.ok()) return st;
  reduce_kernel<Elem><<<blocks, static_cast<unsigned>(p.threads_per_block), 0, stream>>>(
      static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), split);
  return launched("cuda::reduce kernel launch");
}

// Integer sum / prod on the unsigned twin (modulo 2^bits); min / max in the type itself.
template <class Op, class T>
Status launch_integer(void* dst, const void* a, const void* b, std::size_t n, Stream stream, const ReducePolicy& p) {
  constexpr bool kWraps = std::is_same_v<Op, SumOp> || std::is_same_v<Op, ProdOp>;
  using Work = std::conditional_t<kWraps, std::make_unsigned_t<T>, T>;
  return launch_reduce<Plain<Op, Work>>(dst, a, b, n, stream, p);
}

template <class Op>
Status reduce_as(DataType t, void* dst, const void* a, const void* b, std::size_t n, Stream stream,
                 const ReducePolicy& p) {
  switch (t) {
    case DataType::Int8:
      return launch_integer<Op, std::int8_t>(dst, a, b, n, stream, p);
    case DataType::Uint8:
      return launch_integer<Op, std::uint8_t>(dst, a, b, n, stream, p);
    case DataType::Int32:
      return launch_integer<Op, std::int32_t>(dst, a, b, n, stream, p);
    case DataType::Uint32:
      return launch_integer<Op, std::uint32_t>(dst, a, b, n, stream, p);
    case DataType::Int64:
      return launch_integer<Op, std::int64_t>(dst, a, b, n, stream, p);
    case DataType::Uint64:
      return launch_integer<Op, std::uint64_t>(dst, a, b, n, stream, p);
    case DataType::Float16:
      return launch_reduce<Widened<Op, HalfCodec>>(dst, a, b, n, stream, p);
    case DataType::BFloat16:
      return launch_reduce<Widened<Op, BFloat16Codec>>(dst, a, b, n, stream, p);
    case DataType::Float32:
      return launch_reduce<Plain<Op, float>>(dst, a, b, n, stream, p);
    case DataType::Float64:
      return launch_reduce<Plain<Op, double>>(dst, a, b, n, stream, p);
  }
  return {static_cast<int>(cudaErrorInvalidValue), "cuda::reduce (unknown DataType)"};
}

template <class T>
Status launch_divide(void* data, std::size_t n, int ranks, Stream stream, const ReducePolicy& p) {
  unsigned blocks = 0;
  if (auto s = grid_for(n, p, &blocks); !s.ok()) return s;
  divide_kernel<T><<<blocks, static_cast<unsigned>(p.threads_per_block), 0, stream>>>(static_cast<T*>(data), n, ranks);
  return launched("cuda::finish_avg kernel launch");
}
template <class Codec>
Status launch_divide_16(void* data, std::size_t n, int ranks, Stream stream, const ReducePolicy& p) {
  unsigned blocks = 0;
  if (auto s = grid_for(n, p, &blocks); !s.ok()) return s;
  divide_kernel_16<Codec>
      <<<blocks, static_cast<unsigned>(p.threads_per_block), 0, stream>>>(static_cast<std::uint16_t*>(data), n, ranks);
  return launched("cuda::finish_avg kernel launch");
}

}  // namespace

Status reduce_copy(DataType t, ReduceOp op, void* dst, const void* a, const void* b, std::size_t n, Stream stream,
                   const ReducePolicy& p) {
  if (n == 0) return {};
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      return reduce_as<SumOp>(t, dst, a, b, n, stream, p);
    case ReduceOp::Prod:
      return reduce_as<ProdOp>(t, dst, a, b, n, stream, p);
    case ReduceOp::Min:
      return reduce_as<MinOp>(t, dst, a, b, n, stream, p);
    case ReduceOp::Max:
      return reduce_as<MaxOp>(t, dst, a, b, n, stream, p);
  }
  return {static_cast<int>(cudaErrorInvalidValue), "cuda::reduce (unknown ReduceOp)"};
}

Status reduce(DataType t, ReduceOp op, void* dst, const void* src, std::size_t n, Stream stream,
              const ReducePolicy& p) {
  return reduce_copy(t, op, dst, dst, src, n, stream, p);
}

Status finish_avg(DataType t, void* data, std::size_t n, int ranks, Stream stream, const ReducePolicy& p) {
  if (ranks < 1) return {static_cast<int>(cudaErrorInvalidValue), "cuda::finish_avg (ranks must be >= 1)"};
  if (n == 0) return {};
  switch (t) {
    case DataType::Int8:
      return launch_divide<std::int8_t>(data, n, ranks, stream, p);
    case DataType::Uint8:
      return launch_divide<std::uint8_t>(data, n, ranks, stream, p);
    case DataType::Int32:
      return launch_divide<std::int32_t>(data, n, ranks, stream, p);
    case DataType::Uint32:
      return launch_divide<std::uint32_t>(data, n, ranks, stream, p);
    case DataType::Int64:
      return launch_divide<std::int64_t>(data, n, ranks, stream, p);
    case DataType::Uint64:
      return launch_divide<std::uint64_t>(data, n, ranks, stream, p);
    case DataType::Float16:
      return launch_divide_16<HalfCodec>(data, n, ranks, stream, p);
    case DataType::BFloat16:
      return launch_divide_16<BFloat16Codec>(data, n, ranks, stream, p);
    case DataType::Float32:
      return launch_divide<float>(data, n, ranks, stream, p);
    case DataType::Float64:
      return launch_divide<double>(data, n, ranks, stream, p);
  }
  return {static_cast<int>(cudaErrorInvalidValue), "cuda::finish_avg (unknown DataType)"};
}

}  // namespace topocoll::runtime::cuda
