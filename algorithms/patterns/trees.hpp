// Tree patterns: NCCL's binary tree and its second tree over positions 0..n-1, the double binary
// tree of a layout (trees between nodes, chains inside), and the one map that lays a tree over
// positions onto the ranks of a group. Pure functions; tree_reduce / tree_broadcast in
// blocks.hpp emit the operations.
#pragma once

#include <concepts>
#include <span>
#include <vector>

#include "algorithms/ir/layout.hpp"

namespace topocoll::algo {

// A place in a rooted tree: the parent (-1 at the root) and the children, as positions or as
// ranks depending on the tree (tree_over_group turns the first into the second).
struct TreeLinks {
  int parent = -1;
  std::vector<int> children;
  bool operator==(const TreeLinks&) const = default;
};

// NCCL's binary tree over positions 0..n-1 (src/graph/trees.cc, ncclGetBtree): for position r
// with lowest set bit b, parent = (r ^ b) | (b << 1), or r ^ b when that is >= n; children
// r - b/2 and r + b/2 (the right child's offset halving while out of range). Position 0 is the
// root with the single child b/2 where b is the smallest power of two >= n.
//
//   n = 8:            0
//                     |
//                     4
//                  /     \
//                 2       6
//                / \     / \
//               1   3   5   7
TreeLinks btree(int n, int r);
// NCCL's second tree: the mirror x -> n-1-x when n is even, the shift x -> (x+1) mod n when n
// is odd (ncclGetDtree). Every position is a leaf in one of the two trees when n is even.
//
//   n = 8 (mirror):   7            n = 5 (shift):   1
//                     |                             |
//                     3                             0
//                  /     \                          |
//                 5       1                         3
//                / \     / \                       / \
//               6   4   2   0                     2   4
TreeLinks btree_mirror(int n, int r);
// Tree `tree` (0: btree, 1: btree_mirror) of the double binary tree over n positions.
TreeLinks node_tree(int n, int pos, int tree);

// A tree over group positions laid onto ranks: position i is rank group[i] (or rank_of(i), for
// a group too large to list, as the heads of every node are).
//
//   positions:  0 -> {1, 2}    group = [5 9 3]    ranks:  5 -> {9, 3}
template <class RankOf>
requires std::invocable<const RankOf&, int> TreeLinks tree_over_group(const TreeLinks& positions,
                                                                      const RankOf& rank_of) {
  TreeLinks ranks;
  ranks.parent = positions.parent < 0 ? -1 : rank_of(positions.parent);
  for (int child : positions.children) ranks.children.push_back(rank_of(child));
  return ranks;
}
inline TreeLinks tree_over_group(const TreeLinks& positions, std::span<const int> group) {
  return tree_over_group(positions, [group](int i) { return group[static_cast<std::size_t>(i)]; });
}

// The double binary tree of channel c, as ranks: between nodes tree c % 2 (node_tree over node
// indices) links the nodes' heads; inside a node a chain whose head talks to the network.
//
//   channel c, node n:  chain(n) = node n's ring order rotated by c/2; head(n) = chain(n)[0]
//   head(n).parent = head(tree parent of n); head(n).children = chain[1] + heads of child nodes
//   chain[k].parent = chain[k-1]; chain[k].children = chain[k+1]
//
//        head(0) ─────────── tree c % 2 over nodes ─────────── head(m)
//          |                                                     |
//        chain[1] -> chain[2] -> ... (node 0)                  chain[1] -> ... (node m)
TreeLinks dbt_links(const Layout& l, int c, int rank);

}  // namespace topocoll::algo
