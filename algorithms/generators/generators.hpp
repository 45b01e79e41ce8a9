// The generators, one per file in this folder; registry.cpp lists them, one line each.
// Not part of the public API: registry.hpp is.
#pragma once

#include <string>

#include "algorithms/group.hpp"
#include "algorithms/registry.hpp"

namespace topocoll::algo {

// Allreduce.
Algorithm ring_allreduce();                // ring.cpp
Algorithm dbt_allreduce();                 // dbt.cpp
Algorithm recursive_doubling_allreduce();  // recursive_doubling.cpp
// Reduce-scatter in each node, `inner` across nodes, allgather in each node (hierarchical.cpp).
// Named hierarchical-<inner.name> unless `name` is given.
Algorithm hierarchical(const GroupAllreduce& inner, std::string name = {});

// The blocks as collectives of their own.
Algorithm reduce_scatter_ring();  // ring_blocks.cpp
Algorithm allgather_ring();       // ring_blocks.cpp
Algorithm broadcast_chain();      // rooted.cpp
Algorithm broadcast_tree();       // rooted.cpp
Algorithm reduce_chain();         // rooted.cpp
Algorithm reduce_tree();          // rooted.cpp

// Shared by the generators.
inline Chunk as_chunk(BufferId b, Range r) {
  return Chunk{b, r.offset, r.count};
}
inline Support always(const Layout&, const CollectiveArgs&, const Tuning&) {
  return Support::yes();
}

}  // namespace topocoll::algo
