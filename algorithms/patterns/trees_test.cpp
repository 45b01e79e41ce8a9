// NCCL's trees, pinned to NCCL's own rules (src/graph/trees.cc: ncclGetBtree, ncclGetDtree,
// ncclGetDtreeRoots). The tables are worked by hand from those rules: for position r with lowest
// set bit b, parent (r ^ b) | (b << 1), or r ^ b when that is >= n; children r - b/2 and
// r + b/2, the second's offset halving while out of range; position 0 the root with child b/2
// (b the smallest power of two >= n). The second tree is the mirror x -> n-1-x (n even) or the
// shift x -> x+1 mod n (n odd) of the first. n = 12, 13 and 14 are the trees trees.cc draws.
#include "algorithms/patterns/trees.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>

using namespace topocoll::algo;

namespace {

using Table = std::vector<TreeLinks>;  // [position]: {parent, {children}}

// btree (tree 0) and btree_mirror (tree 1) for each n.
const std::map<int, std::pair<Table, Table>>& nccl_tables() {
  static const std::map<int, std::pair<Table, Table>> kTables = {
      {1, {{{-1, {}}}, {{-1, {}}}}},
      {2, {{{-1, {1}}, {0, {}}}, {{1, {}}, {-1, {0}}}}},
      {3, {{{-1, {2}}, {2, {}}, {0, {1}}}, {{1, {2}}, {-1, {0}}, {0, {}}}}},
      {5,
       {{{-1, {4}}, {2, {}}, {4, {1, 3}}, {2, {}}, {0, {2}}},  //
        {{1, {3}}, {-1, {0}}, {3, {}}, {0, {2, 4}}, {3, {}}}}},
      {8,
       {{{-1, {4}}, {2, {}}, {4, {1, 3}}, {2, {}}, {0, {2, 6}}, {6, {}}, {4, {5, 7}}, {6, {}}},
        {{1, {}}, {3, {2, 0}}, {1, {}}, {7, {5, 1}}, {5, {}}, {3, {6, 4}}, {5, {}}, {-1, {3}}}}},
      // trees.cc's mirror drawing: 0..11, roots 0 and 11.
      {12,
       {{{-1, {8}},
         {2, {}},
         {4, {1, 3}},
         {2, {}},
         {8, {2, 6}},
         {6, {}},
         {4, {5, 7}},
         {6, {}},
         {0, {4, 10}},
         {10, {}},
         {8, {9, 11}},
         {10, {}}},
        {{1, {}},
         {3, {2, 0}},
         {1, {}},
         {11, {7, 1}},
         {5, {}},
         {7, {6, 4}},
         {5, {}},
         {3, {9, 5}},
         {9, {}},
         {7, {10, 8}},
         {9, {}},
         {-1, {3}}}}},
      // trees.cc's shift drawing: 0..12, roots 0 and 1.
      {13,
       {{{-1, {8}},
         {2, {}},
         {4, {1, 3}},
         {2, {}},
         {8, {2, 6}},
         {6, {}},
         {4, {5, 7}},
         {6, {}},
         {0, {4, 12}},
         {10, {}},
         {12, {9, 11}},
         {10, {}},
         {8, {10}}},
        {{9, {11}},
         {-1, {9}},
         {3, {}},
         {5, {2, 4}},
         {3, {}},
         {9, {3, 7}},
         {7, {}},
         {5, {6, 8}},
         {7, {}},
         {1, {5, 0}},
         {11, {}},
         {0, {10, 12}},
         {11, {}}}}},
      // trees.cc's first drawing: 0..13, where 12's right child is 13 (offset halved) and 13's
      // parent is 12 (14 out of range).
      {14,
       {{{-1, {8}},
         {2, {}},
         {4, {1, 3}},
         {2, {}},
         {8, {2, 6}},
         {6, {}},
         {4, {5, 7}},
         {6, {}},
         {0, {4, 12}},
         {10, {}},
         {12, {9, 11}},
         {10, {}},
         {8, {10, 13}},
         {12, {}}},
        {{1, {}},
         {5, {3, 0}},
         {3, {}},
         {1, {4, 2}},
         {3, {}},
         {13, {9, 1}},
         {7, {}},
         {9, {8, 6}},
         {7, {}},
         {5, {11, 7}},
         {11, {}},
         {9, {12, 10}},
         {11, {}},
         {-1, {5}}}}},
      {16,
       {{{-1, {8}},
         {2, {}},
         {4, {1, 3}},
         {2, {}},
         {8, {2, 6}},
         {6, {}},
         {4, {5, 7}},
         {6, {}},
         {0, {4, 12}},
         {10, {}},
         {12, {9, 11}},
         {10, {}},
         {8, {10, 14}},
         {14, {}},
         {12, {13, 15}},
         {14, {}}},
        {{1, {}},
         {3, {2, 0}},
         {1, {}},
         {7, {5, 1}},
         {5, {}},
         {3, {6, 4}},
         {5, {}},
         {15, {11, 3}},
         {9, {}},
         {11, {10, 8}},
         {9, {}},
         {7, {13, 9}},
         {13, {}},
         {11, {14, 12}},
         {13, {}},
         {-1, {7}}}}},
  };
  return kTables;
}

// A tree over n positions given as links: one root, every child's parent is its parent, every
// position reachable from the root. Returns the depth.
int check_tree(int n, const std::function<TreeLinks(int)>& links, int want_root) {
  int roots = 0;
  for (int x = 0; x < n; ++x) {
    const TreeLinks t = links(x);
    if (t.parent < 0) {
      ++roots;
      CHECK(x == want_root);
    } else {
      REQUIRE(t.parent < n);
      const TreeLinks up = links(t.parent);
      CHECK(std::count(up.children.begin(), up.children.end(), x) == 1);
    }
    CHECK(t.children.size() <= 2);
    for (int c : t.children) CHECK(links(c).parent == x);
  }
  CHECK(roots == 1);
  int depth = 0;
  for (int x = 0; x < n; ++x) {
    int d = 0;
    for (int y = x; links(y).parent >= 0 && d <= n; y = links(y).parent) ++d;
    CHECK(d < n + (n == 1 ? 1 : 0));  // no cycle
    depth = std::max(depth, d);
  }
  return depth;
}

}  // namespace

TEST_CASE("trees: btree and btree_mirror give NCCL's tables") {
  for (const auto& [n, trees] : nccl_tables()) {
    REQUIRE(trees.first.size() == static_cast<std::size_t>(n));
    REQUIRE(trees.second.size() == static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
      CAPTURE(n);
      CAPTURE(r);
      CHECK(btree(n, r) == trees.first[static_cast<std::size_t>(r)]);
      CHECK(btree_mirror(n, r) == trees.second[static_cast<std::size_t>(r)]);
      CHECK(node_tree(n, r, 0) == btree(n, r));
      CHECK(node_tree(n, r, 1) == btree_mirror(n, r));
    }
  }
}

TEST_CASE("trees: n = 1..64, both trees are trees with NCCL's roots; even n: every position a leaf once") {
  for (int n = 1; n <= 64; ++n) {
    CAPTURE(n);
    // ncclGetDtreeRoots: tree 0's root is 0; tree 1's is 1 when n is odd (and > 1), else n-1.
    const int depth0 = check_tree(
        n, [n](int x) { return btree(n, x); }, 0);
    const int depth1 = check_tree(
        n, [n](int x) { return btree_mirror(n, x); }, n % 2 == 1 && n > 1 ? 1 : n - 1);
    // Depth: the root's single child heads a tree over the rest, ceil(log2 n) at most.
    int log2n = 0;
    while ((1 << log2n) < n) ++log2n;
    CHECK(depth0 <= log2n);
    CHECK(depth1 <= log2n + 1);
    if (n % 2 == 0)
      for (int x = 0; x < n; ++x) CHECK((btree(n, x).children.empty() || btree_mirror(n, x).children.empty()));
  }
}

TEST_CASE("trees: tree_over_group lays positions onto ranks") {
  const std::vector<int> group = {5, 9, 3};
  CHECK(tree_over_group(TreeLinks{-1, {1, 2}}, group) == TreeLinks{-1, {9, 3}});
  CHECK(tree_over_group(TreeLinks{0, {}}, group) == TreeLinks{5, {}});
  CHECK(tree_over_group(TreeLinks{2, {0}}, [](int i) { return 100 + i; }) == TreeLinks{102, {100}});
}

TEST_CASE("trees: dbt_links over 3 nodes of 2, channels 0, 1, 2") {
  // Nodes [0 1] [2 3] [4 5]. Channels 0 and 1 have chain heads 0, 2, 4; channel 2 rotates the
  // chains by one (heads 1, 3, 5). Tree 0 over 3 nodes: 0 -> 2 -> 1; tree 1 (shift): 1 -> 0 -> 2.
  const Layout l = uniform_layout(3, 2);
  const std::vector<Table> want = {
      {{-1, {1, 4}}, {0, {}}, {4, {3}}, {2, {}}, {0, {5, 2}}, {4, {}}},  // channel 0: tree 0
      {{2, {1, 4}}, {0, {}}, {-1, {3, 0}}, {2, {}}, {0, {5}}, {4, {}}},  // channel 1: tree 1
      {{1, {}}, {-1, {0, 5}}, {3, {}}, {5, {2}}, {5, {}}, {1, {4, 3}}},  // channel 2: tree 0
  };
  for (int c = 0; c < 3; ++c)
    for (int r = 0; r < l.ranks; ++r) {
      CAPTURE(c);
      CAPTURE(r);
      CHECK(dbt_links(l, c, r) == want[static_cast<std::size_t>(c)][static_cast<std::size_t>(r)]);
    }
}

TEST_CASE("trees: dbt_links is a spanning tree of the ranks on every channel") {
  for (auto [nodes, g] : std::vector<std::pair<int, int>>{{1, 1}, {1, 8}, {2, 1}, {2, 8}, {3, 3}, {5, 4}, {16, 2}}) {
    const Layout l = uniform_layout(nodes, g);
    for (int c = 0; c < 6; ++c) {
      CAPTURE(nodes);
      CAPTURE(g);
      CAPTURE(c);
      int roots = 0;
      for (int r = 0; r < l.ranks; ++r) {
        const TreeLinks t = dbt_links(l, c, r);
        if (t.parent < 0) ++roots;
        for (int child : t.children) CHECK(dbt_links(l, c, child).parent == r);
        int d = 0;
        for (int y = r; dbt_links(l, c, y).parent >= 0 && d <= l.ranks; y = dbt_links(l, c, y).parent) ++d;
        CHECK(d < l.ranks + (l.ranks == 1 ? 1 : 0));
      }
      CHECK(roots == 1);
    }
  }
}
