// The ring blocks as collectives of their own: reduce-scatter and allgather over the flat ring
// of each channel (patterns/ring.hpp), from the same functions in blocks.hpp the allreduces use.
// Cost sheets in docs/algorithms.md: p ranks, K channels, B = bytes of one rank's block.
#include <algorithm>
#include <cmath>
#include <memory>
#include <span>

#include "algorithms/blocks.hpp"
#include "algorithms/generators/generators.hpp"
#include "algorithms/patterns/ring.hpp"

namespace topocoll::algo {

namespace {

Chunk chunk(BufferId b, std::uint64_t offset, std::uint64_t count) {
  return Chunk{b, offset, count};
}

// A buffer of p blocks of `count` elements, block r belonging to rank r: `part` (a channel's
// range inside a block) of rank `owner`'s block, and of every block in ring order.
Chunk block_part(BufferId b, int owner, std::uint64_t count, Range part) {
  return chunk(b, static_cast<std::uint64_t>(owner) * count + part.offset, part.count);
}
std::vector<Chunk> block_parts(BufferId b, std::span<const int> ring, std::uint64_t count, Range part) {
  std::vector<Chunk> out;
  out.reserve(ring.size());
  for (int owner : ring) out.push_back(block_part(b, owner, count, part));
  return out;
}

// reduce_scatter: input holds p blocks of `count`; rank r ends with block r reduced. The input
// is copied to scratch (recv_reduce needs the own contribution in place), ring reduce-scatter
// runs there with ring position i collecting the block of the rank at position i, and the own
// block is copied out.
//
//   scratch of every rank: [block of ring[0] | block of ring[1] | ... ]  (channel c: its part of each)
//   after RS, position i holds block ring[i] reduced  ->  copied to output
Schedule make_reduce_scatter(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  const int K = std::max(1, t.channels);
  auto plan = std::make_shared<const RingPlan>(RingPlan::flat(l, K));
  const std::uint64_t se = slice_elems(a, t);
  const int depth = std::max(1, t.pipeline_depth);
  return Schedule("reduce_scatter-ring", a, K, a.count * static_cast<std::uint64_t>(a.ranks),
                  [plan, a, K, se, depth](int rank, Program& out) {
                    ProgramBuilder b(out);
                    for (int c = 0; c < K; ++c) {
                      const Range part = channel_range(a.count, K, c);
                      const auto& ring = plan->ring_of(c);
                      const std::vector<Chunk> seg = block_parts(BufferId::Scratch, ring, a.count, part);
                      for (const Chunk& s : seg) b.copy(chunk(BufferId::Input, s.offset, s.count), s, c);
                      ring_reduce_scatter(b, ring, plan->position(c, rank), seg, c, se, depth);
                      b.copy(block_part(BufferId::Scratch, rank, a.count, part),
                             chunk(BufferId::Output, part.offset, part.count), c);
                    }
                  });
}

// allgather: rank r's input becomes block r of everyone's output.
Schedule make_allgather(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  const int K = std::max(1, t.channels);
  auto plan = std::make_shared<const RingPlan>(RingPlan::flat(l, K));
  const std::uint64_t se = slice_elems(a, t);
  const int depth = std::max(1, t.pipeline_depth);
  return Schedule("allgather-ring", a, K, 0, [plan, a, K, se, depth](int rank, Program& out) {
    ProgramBuilder b(out);
    for (int c = 0; c < K; ++c) {
      const Range part = channel_range(a.count, K, c);
      const auto& ring = plan->ring_of(c);
      const std::vector<Chunk> seg = block_parts(BufferId::Output, ring, a.count, part);
      b.copy(chunk(BufferId::Input, part.offset, part.count), block_part(BufferId::Output, rank, a.count, part), c);
      ring_allgather(b, ring, plan->position(c, rank), seg, c, se, depth);
    }
  });
}

// Both: p-1 steps, (p-1) blocks sent per rank.
CostSheet cost_ring_block(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  CostSheet c;
  c.busbw_factor = busbw_factor(a.collective, l.ranks);
  if (l.ranks == 1 || a.count == 0) return c;
  const int K = std::max(1, t.channels);
  c.steps = static_cast<std::uint64_t>(l.ranks - 1);
  c.bytes_sent = static_cast<std::uint64_t>(l.ranks - 1) * a.count * size_of(a.dtype);  // (p-1) blocks
  // Off-node bytes: in each channel a rank sends p-1 pieces of its channel part to its ring
  // successor; count them when the successor is on another node.
  std::vector<std::uint64_t> inter(static_cast<std::size_t>(l.ranks), 0);
  for (int ch = 0; ch < K; ++ch) {
    const std::vector<int> ring = flat_ring(l, ch);
    const std::uint64_t part = channel_range(a.count, K, ch).count * size_of(a.dtype);
    for (std::size_t i = 0; i < ring.size(); ++i) {
      const int me = ring[i], next = ring[(i + 1) % ring.size()];
      if (l.node_of[static_cast<std::size_t>(me)] != l.node_of[static_cast<std::size_t>(next)])
        inter[static_cast<std::size_t>(me)] += static_cast<std::uint64_t>(l.ranks - 1) * part;
    }
  }
  c.inter_bytes_sent = *std::max_element(inter.begin(), inter.end());
  return c;
}

}  // namespace

Algorithm reduce_scatter_ring() {
  return {"reduce_scatter-ring",     "ring reduce-scatter: p-1 steps, (p-1)/p of the input sent per rank",
          Collective::ReduceScatter, always,
          cost_ring_block,           make_reduce_scatter};
}

Algorithm allgather_ring() {
  return {"allgather-ring",      "ring allgather: p-1 steps, (p-1)/p of the output sent per rank",
          Collective::AllGather, always,
          cost_ring_block,       make_allgather};
}

}  // namespace topocoll::algo
