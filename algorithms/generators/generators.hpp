// The generators, one per file in this folder; registry.cpp lists them, one line each.
// Not part of the public API: registry.hpp is.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "algorithms/group.hpp"
#include "algorithms/registry.hpp"

namespace topocoll::algo {

// Allreduce.
Algorithm ring_allreduce();                // ring.cpp
Algorithm nvls_allreduce();                // nvls.cpp
Algorithm dbt_allreduce();                 // dbt.cpp
Algorithm recursive_doubling_allreduce();  // recursive_doubling.cpp
Algorithm two_shot_allreduce();            // two_shot.cpp
// Reduce-scatter in each node, `inner` across nodes, allgather in each node (hierarchical.cpp).
// Named hierarchical-<inner.name> unless `name` is given.
Algorithm hierarchical(const GroupAllreduce& inner, std::string name = {});
// The stages of a hierarchical allreduce: inside the nodes rings or NVLS (the NVSwitch reduces
// and multicasts), across nodes a group allreduce stage or SHARP (one switch group per local
// GPU index, the fabric reduces: NCCL's CollNet).
struct HierarchicalStages {
  std::string name;
  std::string description;
  bool nvls_intra = false;
  const GroupAllreduce* inner = nullptr;  // nullptr: SHARP across nodes
  ChannelPattern pattern = ChannelPattern::Pipeline;
};
Algorithm hierarchical(HierarchicalStages stages);

// The NVLS stage (nvls.cpp): switch groups over the ranks of one NVLink domain, `members` in
// their order: group rs + j has every member contribute and member j receive (a reduce-scatter
// piece, multimem.ld_reduce); group ag + j has member j contribute and every member receive (a
// multicast store).
struct NvlsGroups {
  int members = 0, rs = 0, ag = 0;
};
NvlsGroups add_nvls_groups(Schedule& s, std::span<const int> members);
// Piece k of `pieces` of each segment: segment j goes to group rs + local_of[j] (local_of[j]:
// the member the position-j segment belongs to).
void nvls_reduce_scatter_send(ProgramBuilder& b, const NvlsGroups& g, std::span<const int> local_of,
                              const std::vector<Chunk>& src, std::uint64_t pieces, std::uint64_t k, int channel);
// Position pos receives piece k of its segment reduced over the members.
void nvls_reduce_scatter_recv(ProgramBuilder& b, const NvlsGroups& g, std::span<const int> local_of, int pos,
                              const std::vector<Chunk>& dst, std::uint64_t pieces, std::uint64_t k, int channel);
// Position pos multicasts piece k of its segment (send) and receives piece k of every segment
// (recv). Callers issue the receives of piece k only after the sends of later pieces (nvls.cpp,
// hierarchical.cpp), so the multicasts of several pieces are in flight at once, as NCCL's NVLS
// kernel overlaps its scatter, reduce and gather warps.
void nvls_allgather_send(ProgramBuilder& b, const NvlsGroups& g, std::span<const int> local_of, int pos,
                         const std::vector<Chunk>& seg, std::uint64_t pieces, std::uint64_t k, int channel);
void nvls_allgather_recv(ProgramBuilder& b, const NvlsGroups& g, std::span<const int> local_of,
                         const std::vector<Chunk>& seg, std::uint64_t pieces, std::uint64_t k, int channel);

// The blocks as collectives of their own.
Algorithm reduce_scatter_ring();    // ring_blocks.cpp
Algorithm allgather_ring();         // ring_blocks.cpp
Algorithm broadcast_chain();        // rooted.cpp
Algorithm broadcast_tree();         // rooted.cpp
Algorithm reduce_chain();           // rooted.cpp
Algorithm reduce_tree();            // rooted.cpp
Algorithm alltoall_pairwise();      // alltoall.cpp
Algorithm alltoall_hierarchical();  // alltoall.cpp
Algorithm alltoallv_pairwise();     // alltoall.cpp

// Shared by the generators.
inline Chunk as_chunk(BufferId b, Range r) {
  return Chunk{b, r.offset, r.count};
}
inline Support always(const Layout&, const CollectiveArgs&, const Tuning&) {
  return Support::yes();
}

}  // namespace topocoll::algo
