// Where the measured bench puts a rank's input and output in its two buffers (host or device),
// as nccl-tests does: out of place the input at the start of the first, the output at the start
// of the second; in place both in the first, aliased as NCCL's in-place calls
// (runtime/executor.hpp):
//   allreduce, broadcast, reduce, alltoall   input == output
//   reduce_scatter                           output == input + rank * count elements
//   allgather                                input == output + rank * count elements
// Both buffers hold max(input, output) elements of the largest size (nccl_tests_bytes).
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/ir/types.hpp"

namespace topocoll::runtime {

// Element offsets of a rank's input and output; `output_in_first`: the output lies in the first
// buffer (in place), else in the second.
struct Placement {
  std::uint64_t input = 0, output = 0;
  bool output_in_first = false;
};

inline Placement bench_placement(const algo::CollectiveArgs& a, int rank, bool in_place) {
  if (!in_place) return {};
  const std::uint64_t own = static_cast<std::uint64_t>(rank) * a.count;
  switch (a.collective) {
    case algo::Collective::ReduceScatter:
      return {0, own, true};
    case algo::Collective::AllGather:
      return {own, 0, true};
    default:
      return {0, 0, true};
  }
}

// The pointers of a placement into `first` and `second`, `elem` bytes per element.
struct PlacedBuffers {
  std::byte* input = nullptr;
  std::byte* output = nullptr;
};
inline PlacedBuffers place(const Placement& p, std::byte* first, std::byte* second, std::size_t elem) {
  return {first + p.input * elem, (p.output_in_first ? first : second) + p.output * elem};
}

}  // namespace topocoll::runtime
