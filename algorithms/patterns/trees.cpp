#include "algorithms/patterns/trees.hpp"

#include <algorithm>

#include "algorithms/patterns/ring.hpp"

namespace topocoll::algo {

namespace {
int wrap(int i, int n) {
  return ((i % n) + n) % n;
}
}  // namespace

TreeLinks btree(int n, int r) {
  TreeLinks t;
  int bit = 1;
  while (bit < n && !(bit & r)) bit <<= 1;
  if (r == 0) {
    if (n > 1) t.children.push_back(bit >> 1);
    return t;
  }
  int up = (r ^ bit) | (bit << 1);
  if (up >= n) up = r ^ bit;
  t.parent = up;
  int low = bit >> 1;
  if (low == 0) return t;
  t.children.push_back(r - low);
  // The right child halves its offset while it is out of range.
  while (low > 0 && r + low >= n) low >>= 1;
  if (low > 0) t.children.push_back(r + low);
  return t;
}

TreeLinks btree_mirror(int n, int r) {
  TreeLinks t;
  if (n % 2 == 1) {  // shift: position x plays btree's x-1
    const TreeLinks base = btree(n, wrap(r - 1, n));
    t.parent = base.parent < 0 ? -1 : wrap(base.parent + 1, n);
    for (int c : base.children) t.children.push_back(wrap(c + 1, n));
  } else {  // mirror: position x plays btree's n-1-x
    const TreeLinks base = btree(n, n - 1 - r);
    t.parent = base.parent < 0 ? -1 : n - 1 - base.parent;
    for (int c : base.children) t.children.push_back(n - 1 - c);
  }
  return t;
}

TreeLinks node_tree(int n, int pos, int tree) {
  return tree == 0 ? btree(n, pos) : btree_mirror(n, pos);
}

TreeLinks dbt_links(const Layout& l, int c, int rank) {
  const int n = l.node_of[static_cast<std::size_t>(rank)];
  const auto& node = l.node_ranks[static_cast<std::size_t>(n)];
  const int g = static_cast<int>(node.size());
  const std::vector<int> chain = rotate(node, (c / 2) % g);
  const int k = static_cast<int>(std::find(chain.begin(), chain.end(), rank) - chain.begin());
  TreeLinks links;
  if (k + 1 < g) links.children.push_back(chain[static_cast<std::size_t>(k + 1)]);
  if (k > 0) {
    links.parent = chain[static_cast<std::size_t>(k - 1)];
    return links;
  }
  // A head: its node's links in tree c % 2, laid onto the other nodes' heads.
  const TreeLinks between = tree_over_group(node_tree(l.nodes, n, c % 2), [&](int m) {
    const auto& other = l.node_ranks[static_cast<std::size_t>(m)];
    return other[static_cast<std::size_t>((c / 2) % static_cast<int>(other.size()))];
  });
  links.parent = between.parent;
  links.children.insert(links.children.end(), between.children.begin(), between.children.end());
  return links;
}

}  // namespace topocoll::algo
