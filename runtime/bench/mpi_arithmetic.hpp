// What the MPI library's MPI_SUM computes on an integer type when a sum leaves the type's range,
// and #wrong of the mpi baseline against that arithmetic.
//
// nccl-tests' inputs (and test_data's) overflow 8-bit sums on purpose and expect them to wrap, as
// NCCL and topocoll's reducers do. Open MPI 4.1.4's op/avx component does not: its vectorised loop
// adds 8-bit integers with saturation (_mm*_adds_epi8 / _epu8: 100 + 100 = 127 for MPI_INT8_T and
// MPI_SIGNED_CHAR, 200 + 100 = 255 for MPI_UINT8_T), its scalar loop over the last count % 16
// elements wraps (100 + 100 = -56), and products wrap in both (16 * 16 = 0). Measured with
// MPI_Reduce_local and MPI_Allreduce on 2 ranks, counts 1 ... 4096 (docs/runtime.md). The bench
// does not assume any of this: probe_mpi_sum asks the library with MPI_Reduce_local, the function
// MPI applies inside its collectives, once on a long vector (the vectorised loop) and once on one
// element (the scalar loop).
//
// Where MPI saturates, a sum of p values depends on the order MPI adds them in, which its
// algorithm chooses. saturating_sum_range gives the least and the greatest result of any order
// and association (sat(x + y) is monotone in x and y, so both are reached by one chain: the
// greatest adds the negatives first, where saturation drops the most below the range, then the
// positives; the least the other way round). For 2 ranks, or inputs of one sign, the two are the
// same: the check is exact; for more ranks with mixed signs an element counts as right anywhere in
// the range.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <span>
#include <string>

#include "algorithms/ir/types.hpp"

namespace topocoll::runtime {

// How MPI_SUM treats an overflowing sum of one integer type, as probed.
struct MpiSumArithmetic {
  bool vector_saturates = false;                      // a long vector (4096 elements): MPI's vectorised loop
  bool scalar_saturates = false;                      // one element: its scalar loop
  std::int64_t vector_result = 0, scalar_result = 0;  // max + max as each loop returned it
  bool saturates() const { return vector_saturates || scalar_saturates; }
};

// MPI_Reduce_local(MPI_SUM) of the type's largest value with itself, on a long vector and on one
// element. MPI must be initialised; `type` is the MPI type the mpi baseline uses for `t` (an
// integer dtype; for others the result says: wraps).
MpiSumArithmetic probe_mpi_sum(algo::DataType t, MPI_Datatype type);

// The output's line about it ("mpi: ..."); empty when MPI wraps like nccl-tests' inputs expect.
std::string describe_mpi_sum(const MpiSumArithmetic& m, algo::DataType t, const std::string& library);

// The least and greatest result of adding `values` in any order and association with saturation
// to [lo_limit, hi_limit] (lo_limit <= 0 <= hi_limit; every value inside).
struct SumRange {
  std::int64_t least = 0, greatest = 0;
};
SumRange saturating_sum_range(std::span<const std::int64_t> values, std::int64_t lo_limit, std::int64_t hi_limit);

// The elements of rank `rank`'s output (a reduction of test_data's inputs with Sum: allreduce,
// reduce at the root, reduce_scatter) that are wrong under `m`: neither the wrapping sum (unless
// both loops saturate) nor, when a loop saturates, inside saturating_sum_range of the ranks'
// inputs. Integer dtypes of up to 32 bits; anything else: count_wrong_output's answer.
std::uint64_t count_wrong_mpi_sum(const algo::CollectiveArgs& a, int rank, const void* output,
                                  const MpiSumArithmetic& m);

}  // namespace topocoll::runtime
