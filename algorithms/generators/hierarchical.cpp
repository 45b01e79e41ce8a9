// hierarchical-<inner>: reduce-scatter inside each node, allreduce across nodes among the GPUs
// that hold the same segment (same local position: one rail) with any group allreduce stage
// (group.hpp), allgather inside each node. `hierarchical` is the one over the ring stage.
//
//   node 0: [g0 g1 g2 g3] --RS--> g_i holds segment i --inner AR over nodes--> --AG--> all
//   node 1: [g0 g1 g2 g3]                 |  (g_i of every node, one rail)
//
// Cost sheets in docs/algorithms.md use the names below: p ranks, N nodes, g ranks per node,
// K channels, S bytes.
#include <algorithm>
#include <cmath>
#include <memory>

#include "algorithms/blocks.hpp"
#include "algorithms/generators/generators.hpp"
#include "algorithms/patterns/ring.hpp"

namespace topocoll::algo {

namespace {

struct HierPlan {
  // [channel][node]: intra-node ring; [channel][rank]: position in it.
  std::vector<std::vector<std::vector<int>>> intra;
  std::vector<std::vector<int>> pos;
  std::vector<int> node_of;  // per rank
};

Schedule make_hierarchical(const Layout& l, const CollectiveArgs& a, const Tuning& t, const GroupAllreduce& inner,
                           const std::string& name) {
  const int K = inner.channels(a, t);
  const int g = l.ranks_per_node(), N = l.nodes;
  auto plan = std::make_shared<HierPlan>();
  for (int c = 0; c < K; ++c) {
    std::vector<std::vector<int>> rings;
    std::vector<int> pos(static_cast<std::size_t>(l.ranks), -1);
    for (const auto& node : l.node_ranks) {
      rings.push_back(rotate(node, c % g));
      for (int i = 0; i < g; ++i) pos[static_cast<std::size_t>(rings.back()[static_cast<std::size_t>(i)])] = i;
    }
    plan->intra.push_back(std::move(rings));
    plan->pos.push_back(std::move(pos));
  }
  plan->node_of = l.node_of;
  const std::uint64_t se = slice_elems(a, t);
  const int depth = std::max(1, t.pipeline_depth);
  return Schedule(name, a, K, 0, [plan, a, K, g, N, se, depth, inner, t](int rank, Program& out) {
    ProgramBuilder b(out);
    const int n = plan->node_of[static_cast<std::size_t>(rank)];
    for (int c = 0; c < K; ++c) {
      const Range mine = channel_range(a.count, K, c);
      const auto& intra = plan->intra[static_cast<std::size_t>(c)];
      const auto& ring = intra[static_cast<std::size_t>(n)];
      const int i = plan->pos[static_cast<std::size_t>(c)][static_cast<std::size_t>(rank)];
      const std::vector<Chunk> seg = segments(BufferId::Output, mine, g);
      b.copy(as_chunk(BufferId::Input, mine), as_chunk(BufferId::Output, mine), c);
      // 1. Inside the node: position i ends with segment i reduced over the node.
      ring_reduce_scatter(b, ring, i, seg, c, se, depth);
      // 2. Across nodes: the position-i GPUs of every node allreduce segment i (node n is
      //    position n of the group).
      std::vector<int> group;
      for (int m = 0; m < N; ++m) group.push_back(intra[static_cast<std::size_t>(m)][static_cast<std::size_t>(i)]);
      inner.emit(b, group, n, seg[static_cast<std::size_t>(i)], c, a, t);
      // 3. Inside the node: everyone gets every segment.
      ring_allgather(b, ring, i, seg, c, se, depth);
    }
  });
}

Support supports_hierarchical(const Layout& l, const CollectiveArgs&, const Tuning&) {
  if (!l.uniform()) return Support::no("needs the same number of GPUs on every node");
  return Support::yes();
}

// The two ring stages inside the nodes, plus the inner stage over N members of S/g bytes each;
// every inner byte goes to another node.
CostSheet cost_hierarchical(const Layout& l, const CollectiveArgs& a, const Tuning& t, const GroupAllreduce& inner) {
  CostSheet cs;
  cs.busbw_factor = busbw_factor(a.collective, l.ranks);
  if (l.ranks == 1 || a.count == 0) return cs;
  const double g = l.ranks_per_node(), S = static_cast<double>(a.count * size_of(a.dtype));
  const double intra = 2 * (g - 1) / g * S;
  GroupCost across;
  if (l.nodes > 1) across = inner.cost(l.nodes, S / g, t);
  cs.steps = static_cast<std::uint64_t>(2 * (l.ranks_per_node() - 1)) + across.steps;
  cs.bytes_sent = static_cast<std::uint64_t>(std::llround(intra + across.bytes));
  cs.inter_bytes_sent = static_cast<std::uint64_t>(std::llround(across.bytes));
  return cs;
}

}  // namespace

Algorithm hierarchical(const GroupAllreduce& inner, std::string name) {
  if (name.empty()) name = "hierarchical-" + inner.name;
  return {
      name,
      "reduce-scatter in each node, " + inner.phrase + " allreduce across nodes per rail, allgather in each node",
      Collective::AllReduce,
      supports_hierarchical,
      [inner](const Layout& l, const CollectiveArgs& a, const Tuning& t) { return cost_hierarchical(l, a, t, inner); },
      [inner, name](const Layout& l, const CollectiveArgs& a, const Tuning& t) {
        return make_hierarchical(l, a, t, inner, name);
      }};
}

}  // namespace topocoll::algo
