// The CUDA reducer: the CPU reducer's contract (runtime/reducer.hpp) on device buffers, enqueued
// on a stream. Every DataType x ReduceOp of algorithms/ir/types.hpp; avg accumulates as sum and
// finish_avg divides once at the end.
//
// Same results as the CPU reducer, bit for bit, for every input that does not make a NaN: the same
// combining functions (integer sum / prod wrap in the unsigned type, min / max as `b < a ? b : a`
// and `a < b ? b : a`), fp16 / bf16 widened to float exactly, combined in float and rounded back
// to nearest even by the hardware conversion (which is what runtime/half.hpp computes by hand),
// IEEE float and double arithmetic without flush to zero, division correctly rounded. A NaN result
// is a NaN on both, but its payload may differ (GPU arithmetic returns the canonical NaN).
//
// Host-only header (style rule 7): no CUDA types. A stream is CUstream_st*, which is what
// cudaStream_t is, so a cudaStream_t converts to it without a cast.
#pragma once

#include <cstddef>

#include "algorithms/ir/types.hpp"
#include "runtime/cuda/status.hpp"

struct CUstream_st;

namespace topocoll::runtime::cuda {

using Stream = CUstream_st*;  // a cudaStream_t; nullptr is the default stream

// Launch shape (style rule 7: tuning is a policy, not literals in the kernel). Each thread moves 16
// bytes of each operand per vector, two vectors per loop turn, grid-stride beyond the grid.
struct ReducePolicy {
  int threads_per_block = 512;
  int blocks_per_sm = 4;  // grid = min(blocks the data needs, SMs x blocks_per_sm)
};

// dst[i] = dst[i] (op) src[i] for n elements of dtype t, enqueued on `stream`. dst and src are
// device pointers aligned to the element size, disjoint or identical. Vector loads of 16 B when
// dst and src have the same offset modulo 16 (the elements before the first 16 B boundary and
// after the last are done one by one); element loads otherwise. n == 0 enqueues nothing.
Status reduce(algo::DataType t, algo::ReduceOp op, void* dst, const void* src, std::size_t n, Stream stream,
              const ReducePolicy& policy = {});

// dst[i] = a[i] (op) b[i], as the CPU reduce_copy: one pass, 2 loads and 1 store per element (a
// receive-reduce-copy). b disjoint from dst; a identical to dst or disjoint from it. Vector loads
// when the three share their offset modulo 16. reduce(dst, src) is reduce_copy(dst, dst, src).
Status reduce_copy(algo::DataType t, algo::ReduceOp op, void* dst, const void* a, const void* b, std::size_t n,
                   Stream stream, const ReducePolicy& policy = {});

// data[i] /= ranks (integers: integer division, truncating), as the CPU finish_avg. ranks >= 1.
Status finish_avg(algo::DataType t, void* data, std::size_t n, int ranks, Stream stream,
                  const ReducePolicy& policy = {});

}  // namespace topocoll::runtime::cuda
