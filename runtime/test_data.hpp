// Inputs whose reduction is exact in any order and association, and the exact expected result,
// for bit-exact verification of collectives (the approach of nccl-tests' verifiable inputs:
// integers where the arithmetic is exact, powers of two for products, one closed-form answer).
//
// Every value is a function of (dtype, op, ranks, rank, global element index g), where
// g = element_offset + i: a caller filling a slice of a larger buffer (a rank's part of an
// allgather or reduce_scatter) passes the slice's offset and gets the same values as if it had
// filled the whole buffer. The expected result is computed in closed form, O(1) per element.
//
// Exact for any rank count and element index (tested: ranks 1 ... 64 for every dtype and op, up to
// 2100 for fp16 / bf16 sums); values are most varied up to 64 ranks (the ranges per dtype are in
// test_data.cpp). With the CPU reducer, finish_avg included, any order of reduction gives
// fill_expected bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/ir/types.hpp"

namespace topocoll::runtime {

// Fills rank `rank`'s input of n elements (global indices element_offset ... element_offset+n-1)
// so that reducing the inputs of all `ranks` ranks with `op` is exact in any order. Values are
// distinct per rank and vary per element where the type has room for it. Throws InputError unless
// 1 <= ranks and 0 <= rank < ranks.
void fill_input(algo::DataType t, algo::ReduceOp op, int rank, int ranks, std::uint64_t element_offset, void* data,
                std::size_t n);

// The exact result of reducing every rank's fill_input, element by element (for Avg: after
// finish_avg, i.e. the sum divided by ranks).
void fill_expected(algo::DataType t, algo::ReduceOp op, int ranks, std::uint64_t element_offset, void* data,
                   std::size_t n);

// The same values as a collective moves them, for rank `rank`: its input elements
// [begin, begin + n) of a.input_count(), and its expected output elements [begin, begin + n) of
// a.output_count() (count = a.count, p = a.ranks, g = the element index):
//   allreduce, reduce  input g                 output: the reduction at g (reduce: root only)
//   reduce_scatter     input g (count * p)     output: the reduction at rank * count + g
//   allgather          input rank * count + g  output block j: rank j's input
//   broadcast          input g                 output: the root's input
//   alltoall           input g (count * p)     output block j: block `rank` of rank j's input
//   alltoallv          input g (sent(rank))    output block from i: rank i's block for `rank`
//                                              (at send_displ(i, rank) of its input)
// fill_collective_expected writes nothing and returns false where the output is not defined (a
// reduce on a rank other than the root; an all-to-allv from received(rank) on, the padding up to
// the largest rank's output: a range that starts below it fills only the defined part). Both
// throw InputError for a range outside the buffer.
void fill_collective_input(const algo::CollectiveArgs& a, int rank, std::uint64_t begin, void* data, std::size_t n);
bool fill_collective_expected(const algo::CollectiveArgs& a, int rank, std::uint64_t begin, void* data, std::size_t n);
// The elements of rank `rank`'s output (a.output_count() elements at `output`) that differ bit for
// bit from fill_collective_expected, compared in slices of bounded size, over the elements the call
// defines (CollectiveArgs::defined_output_count); 0 where the output is not defined.
std::uint64_t count_wrong_output(const algo::CollectiveArgs& a, int rank, const void* output);

// The number of elements that differ bit for bit. For floating-point types two NaNs compare equal
// whatever their payloads (no input of ours makes one); +0 and -0 differ.
std::size_t count_wrong(algo::DataType t, const void* got, const void* expected, std::size_t n);

}  // namespace topocoll::runtime
