// dbt: NCCL's double binary tree. Between nodes, tree 0 (btree) on even channels and tree 1
// (mirror / shift) on odd channels; inside a node a chain whose head talks to the network
// (dbt_links in patterns/trees.hpp draws it). On each channel the reduction up is pipelined
// slice by slice, then the broadcast down (tree_allreduce in blocks.hpp).
// The same two trees over any group, one member per tree position, are the dbt stage
// hierarchical composes (dbt_group).
// Cost sheets in docs/algorithms.md use the names below: p ranks, N nodes, g ranks per node,
// K channels, S bytes.
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

#include "algorithms/blocks.hpp"
#include "algorithms/generators/generators.hpp"
#include "algorithms/patterns/ring.hpp"
#include "algorithms/patterns/trees.hpp"

namespace topocoll::algo {

namespace {

// One tree per channel parity: K rounded up to an even number >= 2.
int dbt_channels(const Tuning& t) {
  return std::max(2, t.channels + t.channels % 2);
}

// The group's tree of this channel's parity over its positions, laid onto its ranks.
void dbt_emit(ProgramBuilder& b, std::span<const int> group, int pos, const Chunk& data, int channel,
              const CollectiveArgs& a, const Tuning& t) {
  const TreeLinks links = tree_over_group(node_tree(static_cast<int>(group.size()), pos, channel % 2), group);
  tree_allreduce(b, links, data, channel, tree_slice_elems(a, t, data.count));
}

// Each member sends its part up once and down to each child (<= 2 children in a binary tree);
// the cost is the busiest member over both trees, the steps twice the deeper tree's depth.
GroupCost dbt_cost(int members, double bytes, const Tuning& t) {
  const int K = dbt_channels(t);
  std::vector<double> sent(static_cast<std::size_t>(members), 0.0);
  int depth = 0;
  for (int c = 0; c < K; ++c)
    for (int m = 0; m < members; ++m) {
      const TreeLinks nt = node_tree(members, m, c % 2);
      sent[static_cast<std::size_t>(m)] +=
          (bytes / K) * ((nt.parent >= 0 ? 1 : 0) + static_cast<double>(nt.children.size()));
      int d = 0;
      for (int x = m; node_tree(members, x, c % 2).parent >= 0; x = node_tree(members, x, c % 2).parent) ++d;
      depth = std::max(depth, d);
    }
  return {static_cast<std::uint64_t>(2 * depth), *std::max_element(sent.begin(), sent.end())};
}

// Rank-level depth of the tree of channel c (edges from the root to the deepest rank).
int dbt_depth(const Layout& l, int c) {
  int depth = 0;
  for (int r = 0; r < l.ranks; ++r) {
    int d = 0;
    for (int x = r; dbt_links(l, c, x).parent >= 0; x = dbt_links(l, c, x).parent) ++d;
    depth = std::max(depth, d);
  }
  return depth;
}

// dbt's symmetry (ProgramSymmetry) where it holds exactly: on nodes alike (patterns/ring.hpp)
// with equal channels and K a multiple of 2g, channel c's chain is each node's ring order rotated
// by (c / 2) mod g over tree c mod 2, so one GPU on along every node maps channel c onto channel
// c + 2 (c + 2 - 2g at the end of a block): the rotation. The trees differ from node to node:
// no shift.
std::optional<ProgramSymmetry> dbt_symmetry(const Layout& l, const CollectiveArgs& a, int K) {
  if (l.ranks < 2 || !nodes_alike(l)) return std::nullopt;
  const int g = l.ranks_per_node();
  if (g < 2 || K % (2 * g) != 0 || a.count % static_cast<std::uint64_t>(K) != 0) return std::nullopt;
  std::vector<int> pi(static_cast<std::size_t>(K));
  for (int c = 0; c < K; ++c) pi[static_cast<std::size_t>(c)] = (c / 2) % g == g - 1 ? c + 2 - 2 * g : c + 2;
  return ProgramSymmetry::rotation(l.ranks, l.ranks, l.node_ranks, std::move(pi));
}

Schedule make_dbt(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  const int K = dbt_channels(t);
  auto links = std::make_shared<std::vector<std::vector<TreeLinks>>>();  // [channel][rank]
  for (int c = 0; c < K; ++c) {
    std::vector<TreeLinks> per_rank;
    for (int r = 0; r < l.ranks; ++r) per_rank.push_back(dbt_links(l, c, r));
    links->push_back(std::move(per_rank));
  }
  Schedule s("dbt", a, K, 0, [links, a, K, t](int rank, Program& out) {
    ProgramBuilder b(out);
    for (int c = 0; c < K; ++c) {
      const Range mine = channel_range(a.count, K, c);
      // The input is read where it is (recv_reduce_copy, a leaf's sends), not copied first.
      const Chunk input = as_chunk(BufferId::Input, mine);
      tree_allreduce(b, (*links)[static_cast<std::size_t>(c)][static_cast<std::size_t>(rank)],
                     as_chunk(BufferId::Output, mine), c, tree_slice_elems(a, t, mine.count), &input);
    }
  });
  // Every channel runs NCCL's tree kernel (the simulator's tree block cap, sim::Calibration).
  for (int c = 0; c < K; ++c) s.set_pattern(c, ChannelPattern::Tree);
  if (std::optional<ProgramSymmetry> sym = dbt_symmetry(l, a, K)) s.set_symmetry(std::move(*sym));
  return s;
}

CostSheet cost_dbt(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  const int K = dbt_channels(t);
  CostSheet cs;
  cs.busbw_factor = busbw_factor(a.collective, l.ranks);
  if (l.ranks == 1 || a.count == 0) return cs;
  const double per_channel = static_cast<double>(a.count * size_of(a.dtype)) / K;
  std::vector<double> sent(static_cast<std::size_t>(l.ranks), 0.0), inter(static_cast<std::size_t>(l.ranks), 0.0);
  int depth = 0;
  for (int c = 0; c < K; ++c) {
    depth = std::max(depth, dbt_depth(l, c));
    // Each rank sends its partial sum up once and the result down to each child.
    for (int r = 0; r < l.ranks; ++r) {
      const TreeLinks links = dbt_links(l, c, r);
      const int me = l.node_of[static_cast<std::size_t>(r)];
      auto add = [&](int peer) {
        sent[static_cast<std::size_t>(r)] += per_channel;
        if (l.node_of[static_cast<std::size_t>(peer)] != me) inter[static_cast<std::size_t>(r)] += per_channel;
      };
      if (links.parent >= 0) add(links.parent);
      for (int child : links.children) add(child);
    }
  }
  cs.steps = static_cast<std::uint64_t>(2 * depth);
  cs.bytes_sent = static_cast<std::uint64_t>(std::llround(*std::max_element(sent.begin(), sent.end())));
  cs.inter_bytes_sent = static_cast<std::uint64_t>(std::llround(*std::max_element(inter.begin(), inter.end())));
  return cs;
}

}  // namespace

const GroupAllreduce& dbt_group() {
  static const GroupAllreduce kDbt{"dbt", "double-binary-tree",
                                   [](const CollectiveArgs&, const Tuning& t) { return dbt_channels(t); }, dbt_emit,
                                   dbt_cost};
  return kDbt;
}

Algorithm dbt_allreduce() {
  return {"dbt",
          "NCCL's double binary tree between nodes, chains inside nodes; reduce up and broadcast down, pipelined",
          Collective::AllReduce,
          always,
          cost_dbt,
          make_dbt};
}

}  // namespace topocoll::algo
