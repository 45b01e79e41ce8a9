// Declared program symmetries (symmetry.hpp) hold at every rank, over the registry; a false
// declaration is found.
#include "algorithms/ir/symmetry.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "algorithms/registry.hpp"
#include "algorithms/testing.hpp"
#include "common/errors.hpp"

using namespace topocoll::algo;

namespace {

// Node by node with each node's ring order [0, 2, 1, 3, ...] moved (not the identity order).
Layout shuffled_layout(int nodes, int per_node) {
  Layout l = uniform_layout(nodes, per_node);
  for (auto& node : l.node_ranks)
    for (std::size_t i = 1; i + 1 < node.size(); i += 2) std::swap(node[i], node[i + 1]);
  return l;
}

}  // namespace

TEST_CASE("symmetry: every declared program symmetry holds at every rank, over the registry") {
  std::size_t declared = 0, rotated = 0, shape_only = 0, checked = 0;
  const std::vector<Layout> layouts = {uniform_layout(1, 8), uniform_layout(4, 8), uniform_layout(3, 4),
                                       uniform_layout(6, 1), uniform_layout(2, 2), shuffled_layout(3, 4),
                                       shuffled_layout(1, 6)};
  for (const Algorithm& alg : registry())
    for (const Layout& l : layouts)
      for (int channels : {1, 2, 3, 4, 8, 16})
        for (std::uint64_t n :
             {std::uint64_t{0}, std::uint64_t{7}, static_cast<std::uint64_t>(l.ranks * channels),
              static_cast<std::uint64_t>(l.ranks * channels * 5),
              static_cast<std::uint64_t>(l.ranks * channels * 5 + 1), static_cast<std::uint64_t>(l.ranks * 48 * 3),
              // Equal channels whose node segments do not split evenly over the nodes.
              static_cast<std::uint64_t>(channels * l.ranks_per_node() * 7)}) {
          Tuning t;
          t.channels = channels;
          t.slice_bytes = 8;
          const CollectiveArgs a = testing::conformance_args(alg.collective, l.ranks, n, 0, false);
          if (!alg.supports(l, a, t).ok) continue;
          const Schedule s = alg.generate(l, a, t);
          if (s.symmetry() == nullptr) continue;
          ++declared;
          if (s.symmetry()->rotates()) ++rotated;
          if (!s.symmetry()->sizes_equal()) ++shape_only;
          for (int r = 0; r < l.ranks; ++r) {
            const std::string why = symmetry_mismatch(s, r);
            CHECK_MESSAGE(why.empty(), fmt::format("{} {} ranks ({} nodes) ch {} n {}: {}", alg.name, l.ranks, l.nodes,
                                                   channels, n, why));
            ++checked;
          }
        }
  MESSAGE(fmt::format("{} schedules declare a symmetry ({} with the rotation, {} shape only); {} ranks checked",
                      declared, rotated, shape_only, checked));
  CHECK(declared > 50);
  CHECK(rotated > 10);
  CHECK(shape_only > 10);
}

TEST_CASE("symmetry: a declaration that does not hold is found") {
  // A ring on 4 x 8 ranks with a segment size that differs by rank: declared anyway, the shift
  // fails at the ranks whose steps carry other sizes.
  const Layout l = uniform_layout(4, 8);
  Tuning t;
  t.channels = 8;
  t.slice_bytes = 8;
  const CollectiveArgs a = testing::conformance_args(Collective::AllReduce, l.ranks, 32 * 8 * 3 + 5, 0, false);
  Schedule s = find_algorithm("ring").generate(l, a, t);
  // The ring declares it shape only (its segments of 3 and 4 elements are cut into 2 slices each).
  REQUIRE(s.symmetry() != nullptr);
  CHECK_FALSE(s.symmetry()->sizes_equal());
  for (int r = 0; r < l.ranks; ++r) CHECK(symmetry_mismatch(s, r).empty());
  s.set_symmetry(ProgramSymmetry::shift(l.ranks, 8));
  int wrong = 0;
  for (int r = 0; r < l.ranks; ++r) wrong += symmetry_mismatch(s, r).empty() ? 0 : 1;
  CHECK(wrong > 0);
  // Shape only, a shape that differs is found: segments of 4 and 5 elements are 2 and 3 slices
  // of 2, so the ring declares nothing, and a shift declared anyway fails.
  const CollectiveArgs b = testing::conformance_args(Collective::AllReduce, l.ranks, 32 * 8 * 4 + 5, 0, false);
  Schedule u = find_algorithm("ring").generate(l, b, t);
  CHECK(u.symmetry() == nullptr);
  u.set_symmetry(ProgramSymmetry::shift(l.ranks, 8).shape_only());
  wrong = 0;
  for (int r = 0; r < l.ranks; ++r) wrong += symmetry_mismatch(u, r).empty() ? 0 : 1;
  CHECK(wrong > 0);
  // Inconsistent declarations are refused.
  CHECK_THROWS_AS(ProgramSymmetry::shift(32, 5), topocoll::InternalError);
  std::vector<int> pi = {1, 2, 3, 4, 5, 6, 7, 0};  // an 8-cycle on 4-rank nodes: pi^4 is not the identity
  CHECK_THROWS_AS(ProgramSymmetry::rotation(16, 4, uniform_layout(4, 4).node_ranks, pi), topocoll::InternalError);
}
