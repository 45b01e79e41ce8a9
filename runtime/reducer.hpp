// The CPU reducer: element-wise reduction of one buffer into another, for every DataType and
// ReduceOp of algorithms/ir/types.hpp. The runtime's recv_reduce and reduce operations call it.
//
// Semantics, per dtype:
//  - integers: sum and prod wrap modulo 2^bits (signed types too: computed in the unsigned type,
//    so there is no undefined overflow); min / max compare as the signed or unsigned type.
//  - float, double: IEEE arithmetic in the type itself.
//  - fp16, bf16 (stored as std::uint16_t bit patterns): each element is widened to float, combined,
//    and rounded back to nearest even. For + and * this is the correctly rounded fp16 / bf16 result
//    (float has more than 2p+2 significand bits for both), i.e. what a native fp16 adder gives.
//  - avg: reduce() accumulates avg exactly as sum; finish_avg() divides once by the rank count at
//    the end (integers: integer division, truncating towards zero).
//  - min / max of NaN: unspecified which operand is kept (none of the test inputs makes NaN).
#pragma once

#include <cstddef>

#include "algorithms/ir/types.hpp"

namespace topocoll::runtime {

// dst[i] = dst[i] (op) src[i] for n elements of dtype t. dst and src must not overlap, unless they
// are the same pointer.
void reduce(algo::DataType t, algo::ReduceOp op, void* dst, const void* src, std::size_t n);

// dst[i] = a[i] (op) b[i] for n elements of dtype t: what copy(dst, a) then reduce(dst, b) gives,
// bit for bit, in one pass. b must not overlap dst; a is dst itself or does not overlap it.
void reduce_copy(algo::DataType t, algo::ReduceOp op, void* dst, const void* a, const void* b, std::size_t n);

// data[i] /= ranks for n elements of dtype t (integers: integer division). ranks >= 1.
void finish_avg(algo::DataType t, void* data, std::size_t n, int ranks);

}  // namespace topocoll::runtime
