// Shared by the generator translation units; not part of the public API.
#pragma once

#include <vector>

#include "algorithms/blocks.hpp"
#include "algorithms/registry.hpp"

namespace topocoll::algo {

std::uint64_t slice_elems(const CollectiveArgs& a, const Tuning& t);
// Trees pipeline only with many slices: cut a chunk of `count` elements into at least
// kTreeMinSlices slices (no smaller than kTreeMinSliceBytes, no larger than the tuning's slice),
// as NCCL's tree chunk size adapts to the message.
inline constexpr std::uint64_t kTreeMinSlices = 32;
inline constexpr std::uint64_t kTreeMinSliceBytes = 4096;
std::uint64_t tree_slice_elems(const CollectiveArgs& a, const Tuning& t, std::uint64_t count);
Range channel_range(std::uint64_t count, int channels, int c);
std::vector<int> rotate(const std::vector<int>& v, int by);
std::vector<int> flat_ring(const Layout& l, int c);
std::vector<int> positions(const std::vector<int>& ring, int ranks);
std::vector<Chunk> segments(BufferId b, Range whole, int parts);
TreeLinks dbt_links(const Layout& l, int c, int rank);

void register_allreduce(std::vector<Algorithm>& out);
void register_blocks(std::vector<Algorithm>& out);

}  // namespace topocoll::algo
