// ring: NCCL's flat ring. Per channel: reduce-scatter then allgather, 2(p-1) steps. The same two
// blocks over any group are the ring stage hierarchical composes (ring_group).
// Cost sheets in docs/algorithms.md use the names below: p ranks, N nodes, g ranks per node,
// K channels, S bytes.
#include "algorithms/patterns/ring.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

#include "algorithms/blocks.hpp"
#include "algorithms/generators/generators.hpp"

namespace topocoll::algo {

namespace {

int ring_channels(const CollectiveArgs&, const Tuning& t) {
  return std::max(1, t.channels);
}

// The group's ring in its own order: member i reduce-scatters into segment i of n, then
// allgathers.
//
//    pos0 ──> pos1 ──> ... ──> pos(n-1) ──┐      RS: n-1 steps, AG: n-1 steps
//      ^──────────────────────────────────┘
void ring_emit_from(ProgramBuilder& b, std::span<const int> group, int pos, const Chunk& data, int channel,
                    const CollectiveArgs& a, const Tuning& t, const Chunk* own) {
  const std::uint64_t se = slice_elems(a, t);
  const int depth = std::max(1, t.pipeline_depth);
  const int n = static_cast<int>(group.size());
  const std::vector<Chunk> seg = segments(data.buffer, Range{data.offset, data.count}, n);
  if (own == nullptr) {
    ring_reduce_scatter(b, group, pos, seg, channel, se, depth);
  } else {
    const std::vector<Chunk> from = segments(own->buffer, Range{own->offset, own->count}, n);
    ring_reduce_scatter(b, group, pos, seg, channel, se, depth, &from);
  }
  ring_allgather(b, group, pos, seg, channel, se, depth);
}

// The group stage: `data` holds the member's contribution already.
void ring_emit(ProgramBuilder& b, std::span<const int> group, int pos, const Chunk& data, int channel,
               const CollectiveArgs& a, const Tuning& t) {
  ring_emit_from(b, group, pos, data, channel, a, t, nullptr);
}

// n members, B bytes each: 2(n-1) steps; every member sends 2(n-1)/n · B.
GroupCost ring_cost(int members, double bytes, const Tuning&) {
  const double n = members;
  return {static_cast<std::uint64_t>(2 * (members - 1)), 2 * (n - 1) / n * bytes};
}

// The flat ring's symmetry (ProgramSymmetry), where it holds exactly: nodes of G ranks numbered
// node by node, each node's ring order its predecessor's shifted by G, and every channel's
// segments of one size (each channel's count a multiple of p), so that a rank's steps depend on
// its place in the ring only through its peers. Then one node on is one G ranks on (the shift);
// and with equal channels, K a multiple of G, channel c's ring (each node rotated by c) moved one
// GPU on along every node is channel c + 1's (c + 1 - G at the end of a block of G: the rotation).
// On one node in identity order the shift is one rank.
// Where a channel's segments differ by one element (its count not a multiple of p) but none is
// empty and each is cut into as many slices as the others, the same moves hold for everything
// but the sizes (ProgramSymmetry::shape_only); the rotation then needs one slice count on every
// channel instead of equal channels.
std::optional<ProgramSymmetry> ring_symmetry(const Layout& l, const CollectiveArgs& a, const Tuning& t, int K) {
  const int p = l.ranks;
  if (p < 2 || !nodes_alike(l)) return std::nullopt;
  const int G = l.ranks_per_node();
  const auto P = static_cast<std::uint64_t>(p);
  const std::uint64_t se = slice_elems(a, t);
  bool exact = true, shaped = true, one_slice_count = true;
  std::optional<std::uint64_t> slices;
  for (int c = 0; c < K; ++c) {
    const std::uint64_t count = channel_range(a.count, K, c).count, q = count / P;
    exact = exact && count % P == 0;
    // Segments of q and q + 1 elements: as many slices unless q + 1 starts another.
    shaped = shaped && q > 0 && (count % P == 0 || q % se != 0);
    one_slice_count = one_slice_count && (!slices || *slices == slice_count(q, se));
    slices = slice_count(q, se);
  }
  if (!exact && !shaped) return std::nullopt;
  std::optional<ProgramSymmetry> sym;
  const bool equal_channels = exact ? a.count % static_cast<std::uint64_t>(K) == 0 : one_slice_count;
  if (G >= 2 && K % G == 0 && equal_channels) {
    sym = ProgramSymmetry::rotation(p, G, l.node_ranks, rotation_channels(K, G));
  } else if (l.nodes > 1) {
    sym = ProgramSymmetry::shift(p, G);
  } else {
    for (int i = 0; i < G; ++i)
      if (l.node_ranks[0][static_cast<std::size_t>(i)] != i) return std::nullopt;
    sym = ProgramSymmetry::shift(p, 1);
  }
  if (!exact) return std::move(*sym).shape_only();
  return sym;
}

Schedule make_ring(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  const int K = ring_channels(a, t);
  auto plan = std::make_shared<const RingPlan>(RingPlan::flat(l, K));
  Schedule s("ring", a, K, 0, [plan, a, K, t](int rank, Program& out) {
    ProgramBuilder b(out);
    for (int c = 0; c < K; ++c) {
      const Range mine = channel_range(a.count, K, c);
      // The input is read where it is (recv_reduce_copy), not copied to the output first.
      const Chunk input = as_chunk(BufferId::Input, mine);
      ring_emit_from(b, plan->ring_of(c), plan->position(c, rank), as_chunk(BufferId::Output, mine), c, a, t, &input);
    }
  });
  if (std::optional<ProgramSymmetry> sym = ring_symmetry(l, a, t, K)) s.set_symmetry(std::move(*sym));
  return s;
}

CostSheet cost_ring(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  const int K = ring_channels(a, t);
  const double p = l.ranks, S = static_cast<double>(a.count * size_of(a.dtype));
  CostSheet c;
  c.busbw_factor = busbw_factor(a.collective, l.ranks);
  if (l.ranks == 1 || a.count == 0) return c;
  const GroupCost flat = ring_cost(l.ranks, S, t);
  c.steps = flat.steps;
  c.bytes_sent = static_cast<std::uint64_t>(std::llround(flat.bytes));
  if (l.nodes > 1) {
    // The GPU that closes a node's ring in channel c sends that channel's traffic off-node;
    // rotation by c makes each GPU do so for ceil(K / g) channels at most.
    const int g = l.ranks_per_node();
    const int boundary_channels = (K + g - 1) / g;
    c.inter_bytes_sent = static_cast<std::uint64_t>(std::llround(2 * (p - 1) / p * S / K * boundary_channels));
  }
  return c;
}

}  // namespace

const GroupAllreduce& ring_group() {
  static const GroupAllreduce kRing{"ring", "ring", ring_channels, ring_emit, ring_cost};
  return kRing;
}

Algorithm ring_allreduce() {
  return {"ring",
          "NCCL's flat ring: reduce-scatter then allgather, 2(p-1) steps, each channel leaving nodes on its own rail",
          Collective::AllReduce,
          always,
          cost_ring,
          make_ring};
}

}  // namespace topocoll::algo
