// The rooted blocks as collectives of their own: broadcast and reduce over a pipelined chain or
// NCCL's binary tree, laid over the flat ring order of channel c re-indexed so the root is
// position 0 (patterns/ring.hpp, patterns/trees.hpp; tree_broadcast / tree_reduce in blocks.hpp).
//
//   flat ring of channel c, rotated to the root:  [root a b c d ...]
//   chain:  root -> a -> b -> c -> ...          tree:  btree(p) over those positions
//
// Cost sheets in docs/algorithms.md: p ranks, K channels, S bytes of the buffer.
#include <algorithm>
#include <cmath>
#include <memory>

#include "algorithms/blocks.hpp"
#include "algorithms/generators/generators.hpp"
#include "algorithms/patterns/ring.hpp"
#include "algorithms/patterns/trees.hpp"

namespace topocoll::algo {

namespace {

enum class Shape { Chain, Tree };

// The tree of each channel, as ranks: [channel][rank].
std::vector<std::vector<TreeLinks>> rooted_links(const Layout& l, int K, int root, Shape shape) {
  std::vector<std::vector<TreeLinks>> links(static_cast<std::size_t>(K));
  for (int c = 0; c < K; ++c) {
    std::vector<int> ring = flat_ring(l, c);
    const auto it = std::find(ring.begin(), ring.end(), root);
    std::rotate(ring.begin(), it, ring.end());  // ring[0] = root
    const int p = static_cast<int>(ring.size());
    auto& out = links[static_cast<std::size_t>(c)];
    out.resize(static_cast<std::size_t>(p));
    for (int i = 0; i < p; ++i) {
      TreeLinks pos_links;
      if (shape == Shape::Chain) {
        pos_links.parent = i == 0 ? -1 : i - 1;
        if (i + 1 < p) pos_links.children.push_back(i + 1);
      } else {
        pos_links = btree(p, i);
      }
      out[static_cast<std::size_t>(ring[static_cast<std::size_t>(i)])] = tree_over_group(pos_links, ring);
    }
  }
  return links;
}

// broadcast: the root copies its input out and the tree forwards it down.
// reduce: every rank copies its input to its output (non-roots use it as scratch) and the tree
// reduces towards the root, whose output is the result.
Schedule make_rooted(const Layout& l, const CollectiveArgs& a, const Tuning& t, Shape shape) {
  const int K = std::max(1, t.channels);
  const bool broadcast = a.collective == Collective::Broadcast;
  auto links = std::make_shared<std::vector<std::vector<TreeLinks>>>(rooted_links(l, K, a.root, shape));
  const std::string name =
      std::string(broadcast ? "broadcast" : "reduce") + (shape == Shape::Chain ? "-chain" : "-tree");
  return Schedule(name, a, K, 0, [links, a, K, t, broadcast](int rank, Program& out) {
    ProgramBuilder b(out);
    for (int c = 0; c < K; ++c) {
      const Range part = channel_range(a.count, K, c);
      const Chunk data = as_chunk(BufferId::Output, part);
      const TreeLinks& me = (*links)[static_cast<std::size_t>(c)][static_cast<std::size_t>(rank)];
      if (!broadcast || rank == a.root) b.copy(as_chunk(BufferId::Input, part), data, c);
      if (broadcast)
        tree_broadcast(b, me, data, c, tree_slice_elems(a, t, data.count));
      else
        tree_reduce(b, me, data, c, tree_slice_elems(a, t, data.count));
    }
  });
}

Support root_in_range(const Layout& l, const CollectiveArgs& a, const Tuning&) {
  if (a.root < 0 || a.root >= l.ranks) return Support::no("the root must be a rank of the job");
  return Support::yes();
}

// Broadcast: a rank sends S to each child. Reduce: a non-root sends S to its parent. Steps: the
// depth of the deepest channel's tree.
CostSheet cost_rooted(const Layout& l, const CollectiveArgs& a, const Tuning& t, Shape shape) {
  CostSheet c;
  c.busbw_factor = busbw_factor(a.collective, l.ranks);
  if (l.ranks == 1 || a.count == 0) return c;
  const int K = std::max(1, t.channels);
  const auto links = rooted_links(l, K, a.root, shape);
  std::uint64_t worst = 0, worst_inter = 0;
  int depth = 0;
  for (int r = 0; r < l.ranks; ++r) {
    std::uint64_t sent = 0, inter = 0;
    auto on_other_node = [&](int peer) {
      return l.node_of[static_cast<std::size_t>(peer)] != l.node_of[static_cast<std::size_t>(r)];
    };
    for (int ch = 0; ch < K; ++ch) {
      const TreeLinks& x = links[static_cast<std::size_t>(ch)][static_cast<std::size_t>(r)];
      const std::uint64_t part = channel_range(a.count, K, ch).count * size_of(a.dtype);
      if (a.collective == Collective::Broadcast) {
        for (int child : x.children) {
          sent += part;
          if (on_other_node(child)) inter += part;
        }
      } else if (x.parent >= 0) {
        sent += part;
        if (on_other_node(x.parent)) inter += part;
      }
      int d = 0;
      for (int y = r; links[static_cast<std::size_t>(ch)][static_cast<std::size_t>(y)].parent >= 0;
           y = links[static_cast<std::size_t>(ch)][static_cast<std::size_t>(y)].parent)
        ++d;
      depth = std::max(depth, d);
    }
    worst = std::max(worst, sent);
    worst_inter = std::max(worst_inter, inter);
  }
  c.steps = static_cast<std::uint64_t>(depth);
  c.bytes_sent = worst;
  c.inter_bytes_sent = worst_inter;
  return c;
}

Algorithm rooted(std::string name, std::string description, Collective collective, Shape shape) {
  return {std::move(name),
          std::move(description),
          collective,
          root_in_range,
          [shape](const Layout& l, const CollectiveArgs& a, const Tuning& t) { return cost_rooted(l, a, t, shape); },
          [shape](const Layout& l, const CollectiveArgs& a, const Tuning& t) { return make_rooted(l, a, t, shape); }};
}

}  // namespace

Algorithm broadcast_chain() {
  return rooted("broadcast-chain", "pipelined chain from the root along the ring order", Collective::Broadcast,
                Shape::Chain);
}

Algorithm broadcast_tree() {
  return rooted("broadcast-tree", "pipelined binary tree (NCCL's btree) rooted at the root", Collective::Broadcast,
                Shape::Tree);
}

Algorithm reduce_chain() {
  return rooted("reduce-chain", "pipelined chain towards the root along the ring order", Collective::Reduce,
                Shape::Chain);
}

Algorithm reduce_tree() {
  return rooted("reduce-tree", "pipelined binary tree (NCCL's btree) towards the root", Collective::Reduce,
                Shape::Tree);
}

}  // namespace topocoll::algo
