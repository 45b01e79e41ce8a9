// The ring patterns. NCCL has no closed-form table for rings (its rings come from a graph
// search, src/graph/search.cc); these pin the rotation and channel rules docs/algorithms.md
// states for `ring`.
#include "algorithms/patterns/ring.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>

using namespace topocoll::algo;

TEST_CASE("ring: channel_range cuts 0..count into nearly equal parts, the larger first") {
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> want = {{0, 4}, {4, 3}, {7, 3}};
  for (int c = 0; c < 3; ++c) {
    const Range r = channel_range(10, 3, c);
    CHECK(r.offset == want[static_cast<std::size_t>(c)].first);
    CHECK(r.count == want[static_cast<std::size_t>(c)].second);
  }
  for (std::uint64_t count : {0, 1, 7, 64, 1009})
    for (int K : {1, 2, 3, 8}) {
      std::uint64_t next = 0;
      for (int c = 0; c < K; ++c) {
        const Range r = channel_range(count, K, c);
        CHECK(r.offset == next);
        CHECK(r.count <= count / static_cast<std::uint64_t>(K) + 1);
        next = r.end();
      }
      CHECK(next == count);
    }
}

TEST_CASE("ring: rotate moves the first `by` elements to the back") {
  const std::vector<int> v = {10, 11, 12, 13};
  CHECK(rotate(v, 0) == v);
  CHECK(rotate(v, 1) == std::vector<int>{11, 12, 13, 10});
  CHECK(rotate(v, 3) == std::vector<int>{13, 10, 11, 12});
  CHECK(rotate(v, 4) == v);
  CHECK(rotate(std::vector<int>{7}, 0) == std::vector<int>{7});
}

TEST_CASE("ring: flat_ring is node-major and rotates each node's order by the channel") {
  const Layout l = uniform_layout(2, 4);
  CHECK(flat_ring(l, 0) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(flat_ring(l, 1) == std::vector<int>{1, 2, 3, 0, 5, 6, 7, 4});
  CHECK(flat_ring(l, 3) == std::vector<int>{3, 0, 1, 2, 7, 4, 5, 6});
  CHECK(flat_ring(l, 4) == flat_ring(l, 0));

  // Every channel visits every rank once, node by node; channels 0..g-1 leave each node through
  // g different GPUs (so g different rails).
  for (auto [nodes, g] : std::vector<std::pair<int, int>>{{1, 1}, {1, 8}, {3, 2}, {4, 8}, {5, 3}}) {
    const Layout lay = uniform_layout(nodes, g);
    for (int n = 0; n < nodes; ++n) {
      std::set<int> leaving;
      for (int c = 0; c < g; ++c) {
        const std::vector<int> ring = flat_ring(lay, c);
        REQUIRE(ring.size() == static_cast<std::size_t>(lay.ranks));
        CHECK(std::set<int>(ring.begin(), ring.end()).size() == ring.size());
        for (int i = 0; i < lay.ranks; ++i)
          CHECK(lay.node_of[static_cast<std::size_t>(ring[static_cast<std::size_t>(i)])] == i / g);
        leaving.insert(ring[static_cast<std::size_t>(n * g + g - 1)]);
      }
      CHECK(leaving.size() == static_cast<std::size_t>(g));
    }
  }
}

TEST_CASE("ring: flat_ring follows a node's own ring order and its size") {
  Layout l;
  l.ranks = 5;
  l.nodes = 2;
  l.node_of = {0, 0, 0, 1, 1};
  l.node_ranks = {{2, 0, 1}, {4, 3}};
  CHECK(flat_ring(l, 0) == std::vector<int>{2, 0, 1, 4, 3});
  CHECK(flat_ring(l, 1) == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(flat_ring(l, 2) == std::vector<int>{1, 2, 0, 4, 3});
}

TEST_CASE("ring: positions inverts a ring; segments cover the range in order") {
  const std::vector<int> ring = {3, 1, 4, 0};
  CHECK(positions(ring, 6) == std::vector<int>{3, 1, -1, 0, 2, -1});
  const std::vector<Chunk> seg = segments(BufferId::Scratch, Range{100, 10}, 4);
  REQUIRE(seg.size() == 4);
  CHECK(seg[0] == Chunk{BufferId::Scratch, 100, 3});
  CHECK(seg[1] == Chunk{BufferId::Scratch, 103, 3});
  CHECK(seg[2] == Chunk{BufferId::Scratch, 106, 2});
  CHECK(seg[3] == Chunk{BufferId::Scratch, 108, 2});
}

TEST_CASE("ring: RingPlan::flat holds each channel's flat ring and its inverse") {
  const Layout l = uniform_layout(3, 4);
  const RingPlan plan = RingPlan::flat(l, 5);
  REQUIRE(plan.ring.size() == 5);
  for (int c = 0; c < 5; ++c) {
    CHECK(plan.ring_of(c) == flat_ring(l, c));
    for (int r = 0; r < l.ranks; ++r) CHECK(plan.ring_of(c)[static_cast<std::size_t>(plan.position(c, r))] == r);
  }
}
