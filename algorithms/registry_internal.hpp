// Shared by the generator translation units; not part of the public API.
#pragma once

#include <vector>

#include "algorithms/blocks.hpp"
#include "algorithms/registry.hpp"

namespace topocoll::algo {

std::uint64_t slice_elems(const CollectiveArgs& a, const Tuning& t);
Range channel_range(std::uint64_t count, int channels, int c);
std::vector<int> rotate(const std::vector<int>& v, int by);
std::vector<int> flat_ring(const Layout& l, int c);
std::vector<int> positions(const std::vector<int>& ring, int ranks);
std::vector<Chunk> segments(BufferId b, Range whole, int parts);
TreeLinks dbt_links(const Layout& l, int c, int rank);

void register_allreduce(std::vector<Algorithm>& out);
void register_blocks(std::vector<Algorithm>& out);

}  // namespace topocoll::algo
