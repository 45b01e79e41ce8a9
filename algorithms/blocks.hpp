// Building blocks: the primitive patterns allreduce algorithms are composed from. Each appends
// one rank's operations for one channel to a program; pure functions of (group, position, data).
//
// A "group" is an ordered list of ranks; `pos` is this rank's index in it. Segments are the
// chunks the pattern moves, one per group position.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "algorithms/ir/schedule.hpp"
#include "algorithms/patterns/trees.hpp"

namespace topocoll::algo {

// The slices a chunk is cut into for pipelining: ceil(count / slice_elems) nearly equal pieces.
std::uint64_t slice_count(std::uint64_t count, std::uint64_t slice_elems);
Chunk slice(const Chunk& c, std::uint64_t slices, std::uint64_t k);

// The tuning's slice in elements of the call's data type (at least 1).
std::uint64_t slice_elems(const CollectiveArgs& a, const Tuning& t);
// Trees pipeline only with many slices: cut a chunk of `count` elements into at least
// kTreeMinSlices slices (no smaller than kTreeMinSliceBytes, no larger than the tuning's slice),
// as NCCL's tree chunk size adapts to the message.
inline constexpr std::uint64_t kTreeMinSlices = 32;
inline constexpr std::uint64_t kTreeMinSliceBytes = 4096;
std::uint64_t tree_slice_elems(const CollectiveArgs& a, const Tuning& t, std::uint64_t count);

// Ring reduce-scatter. Before: every position holds its own contribution in all segments.
// After: position i holds segment[i] reduced over the group. n-1 steps; at step s position i
// sends segment[i-s-1] to i+1 and reduces segment[i-s-2] received from i-1 into its own.
//
//    pos0 ──> pos1 ──> pos2 ──> ... ──> pos(n-1) ──┐
//      ^───────────────────────────────────────────┘
// Within a step, sends run `window` slices ahead of receives (slices in flight per channel, the
// runtime's pipeline depth), so a slice's latency hides behind the next ones.
// `own` (one chunk per segment, of its size): where the position's contribution is when not in
// `segment` already (out of place: the input). Step 0 sends from it and every receive reduces
// from it into its segment (recv_reduce_copy, NCCL's recvReduceCopy), so nothing copies the
// input first; segment[pos-1] is left unwritten (an allgather overwrites it). A ring of one
// copies own into segment.
void ring_reduce_scatter(ProgramBuilder& b, std::span<const int> ring, int pos, const std::vector<Chunk>& segment,
                         int channel, std::uint64_t slice_elems, int window = 1,
                         const std::vector<Chunk>* own = nullptr);

// Ring allgather. Before: position i holds segment[i]. After: every position holds all.
// n-1 steps; at step s position i sends segment[i-s] to i+1 and receives segment[i-s-1].
void ring_allgather(ProgramBuilder& b, std::span<const int> ring, int pos, const std::vector<Chunk>& segment,
                    int channel, std::uint64_t slice_elems, int window = 1);

// Pairwise exchange with one peer (a step of recursive doubling): send `data` to `peer` and
// receive the peer's `data` into it (reduced when `reduce`), slice by slice, the sends running
// `window` slices ahead of the receives. Both peers run the same step, so neither waits first.
// With `own` (reduce only): the rank's contribution is there, not in data yet; it is sent from
// there and reduced into data with the peer's (recv_reduce_copy).
void pairwise_exchange(ProgramBuilder& b, int peer, const Chunk& data, bool reduce, int channel,
                       std::uint64_t slice_elems, int window = 1, const Chunk* own = nullptr);

// Tree reduce, pipelined slice by slice: recv_reduce each child's slice, then send it up.
// `links` are ranks. After: the root's `data` holds the reduction over the tree.
// `own` (of data's count): where the rank's contribution is when not in `data` already (out of
// place: the input); the first child's part is then reduced from it (recv_reduce_copy) and a
// leaf sends it up from there, so nothing copies it into `data` first (a lone rank does).
void tree_reduce(ProgramBuilder& b, const TreeLinks& links, const Chunk& data, int channel, std::uint64_t slice_elems,
                 const Chunk* own = nullptr);
// Tree broadcast, pipelined: recv the slice from the parent, then send it to every child.
void tree_broadcast(ProgramBuilder& b, const TreeLinks& links, const Chunk& data, int channel,
                    std::uint64_t slice_elems);
// Tree allreduce: the pipelined reduce up, then the pipelined broadcast down, on one channel
// (NCCL's runTreeUpDown). Interleaving the two waves on one in-order channel does not overlap
// them: a rank's next up-slice would wait behind its down-receive, a round trip per slice.
// Overlapping them (NCCL's split tree, two warp groups) needs two channels ordered by data,
// which contract rule 6 does not allow yet.
void tree_allreduce(ProgramBuilder& b, const TreeLinks& links, const Chunk& data, int channel,
                    std::uint64_t slice_elems, const Chunk* own = nullptr);

}  // namespace topocoll::algo
