// One conformance test iterates the registry: every algorithm, every awkward rank count and
// element count, several node shapes, in place and out of place, proven by the verifier; cost
// sheets checked against the bytes the verifier counted.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdlib>
#include <set>

#include "algorithms/group.hpp"
#include "algorithms/registry.hpp"
#include "algorithms/testing.hpp"
#include "algorithms/verifier.hpp"
#include "common/errors.hpp"

using namespace topocoll::algo;

namespace {

// Node shapes for p ranks: one node, one rank per node, and every proper factorisation with
// at most 8 ranks per node.
std::vector<std::pair<int, int>> shapes(int p) {
  std::vector<std::pair<int, int>> out = {{1, p}};
  if (p > 1) out.push_back({p, 1});
  for (int g = 2; g <= 8 && g < p; ++g)
    if (p % g == 0) out.push_back({p / g, g});
  return out;
}

std::vector<std::uint64_t> counts(int p) {
  return topocoll::algo::testing::awkward_counts(p);
}

// The call an algorithm's collective makes at `n` (testing::conformance_args).
CollectiveArgs args_for(const Algorithm& alg, int p, std::uint64_t n, int root, bool in_place = false) {
  return topocoll::algo::testing::conformance_args(alg.collective, p, n, root, in_place);
}

}  // namespace

namespace {

// Every registered algorithm at each of `rank_counts`, every node shape and awkward count, proven by
// the verifier; returns how many schedules were proven.
std::size_t prove_registry(const std::vector<int>& rank_counts) {
  std::size_t proven = 0, unsupported = 0, combination = 0;
  const std::size_t sample = testing::conformance_sample();
  for (const Algorithm& alg : registry()) {
    for (int p : rank_counts) {
      for (auto [nodes, per_node] : shapes(p)) {
        // NVLS in every node and SHARP in the fabric, so the in-network algorithms run too.
        const Layout layout = uniform_layout(nodes, per_node, {.nvls = true, .sharp = true});
        const std::vector<std::uint64_t> ns = counts(p);
        ++combination;
        for (std::size_t ni = 0; ni < ns.size(); ++ni) {
          if ((ni + combination) % sample != 0) continue;
          const std::uint64_t n = ns[ni];
          // Channels and in-place alternate across the counts (deterministically), so every
          // (algorithm, p, shape) is proven with 1 and 3 channels, in place and out of place,
          // at a quarter of the cost of the full product.
          Tuning t;
          t.channels = ni % 2 == 0 ? 1 : 3;
          t.slice_bytes = 8;  // small slices: pipelining (many slices per chunk) is proven too
          const bool in_place = (ni / 2) % 2 == 1;
          const int root = p > 2 ? p / 2 : 0;
          const CollectiveArgs a = args_for(alg, p, n, root, in_place);
          const Support s = alg.supports(layout, a, t);
          if (!s.ok) {
            CHECK_MESSAGE(!s.reason.empty(), alg.name);
            ++unsupported;
            continue;
          }
          const Schedule sched = alg.generate(layout, a, t);
          VerifyOptions o;
          o.in_place = in_place;
          o.node_of = layout.node_of;
          o.domain_of = layout.domain_of_ranks();
          const VerifyResult r = verify(sched, o);
          INFO(fmt::format("{} p={} shape={}x{} count={} channels={} in_place={}", alg.name, p, nodes, per_node, n,
                           t.channels, in_place));
          CHECK_MESSAGE(r.ok(), r.message);
          ++proven;
        }
      }
    }
  }
  MESSAGE(fmt::format("{} schedules proven, {} combinations unsupported (with a reason){}", proven, unsupported,
                      sample > 1 ? fmt::format("; one count in {} (TOPOCOLL_CONFORMANCE_SAMPLE)", sample) : ""));
  return proven;
}

}  // namespace

// The rank counts 1..17, 24, 32 and 64 in two halves of about equal cost (CTest runs them side by
// side: algorithms/CMakeLists.txt).
TEST_CASE("conformance: every registered algorithm is proven correct on awkward sizes at 64 and 1 to 8 ranks") {
  CHECK(prove_registry({1, 2, 3, 4, 5, 6, 7, 8, 64}) > 2300 / testing::conformance_sample());  // 2577 when written
}

TEST_CASE("conformance: every registered algorithm is proven correct on awkward sizes at 9 to 17 and 24 and 32 ranks") {
  CHECK(prove_registry({9, 10, 11, 12, 13, 14, 15, 16, 17, 24, 32}) >
        4200 / testing::conformance_sample());  // 4686 when written
}

TEST_CASE("conformance: cost sheets match the bytes and steps the verifier counts") {
  for (const Algorithm& alg : registry()) {
    for (auto [nodes, per_node] : std::vector<std::pair<int, int>>{{1, 8}, {4, 8}, {5, 4}, {16, 1}, {3, 3}}) {
      const Layout layout = uniform_layout(nodes, per_node, {.nvls = true, .sharp = true});
      const int p = layout.ranks;
      for (int channels : {1, 2, 4}) {
        Tuning t;
        t.channels = channels;
        t.slice_bytes = std::uint64_t{1} << 40;  // one slice: steps are the algorithm's own
        // A count divisible by p, channels and p again (the sheets are exact there).
        const std::uint64_t n = static_cast<std::uint64_t>(p) * static_cast<std::uint64_t>(p) * 8 * 3 * 5 * 7;
        const CollectiveArgs a = args_for(alg, p, n, 0);
        if (!alg.supports(layout, a, t).ok) continue;
        VerifyOptions o;
        o.node_of = layout.node_of;
        const VerifyResult r = verify(alg.generate(layout, a, t), o);
        REQUIRE_MESSAGE(r.ok(), r.message);
        const CostSheet c = alg.cost(layout, a, t);
        INFO(fmt::format("{} {}x{} channels={}", alg.name, nodes, per_node, channels));
        CHECK(c.bytes_sent == r.max_bytes_sent);
        CHECK(c.inter_bytes_sent == r.max_inter_bytes_sent);
        CHECK(c.steps == r.steps);
        CHECK(c.busbw_factor == doctest::Approx(busbw_factor(alg.collective, p)));
      }
    }
  }
}

TEST_CASE("registry: names, descriptions, lookup") {
  std::set<std::string> names;
  std::size_t allreduces = 0;
  for (const Algorithm& a : registry()) {
    CHECK_FALSE(a.name.empty());
    CHECK(a.description.size() > 20);
    CHECK_MESSAGE(names.insert(a.name).second, "registered twice: ", a.name);
    CHECK(&find_algorithm(a.name) == &a);
    if (a.collective == Collective::AllReduce) ++allreduces;
  }
  // Every collective has an algorithm.
  for (Collective c : kAllCollectives) CHECK_FALSE(select_algorithms("all", c).empty());
  CHECK(find_algorithm("ring").collective == Collective::AllReduce);
  CHECK_THROWS_WITH_AS(find_algorithm("rign"), doctest::Contains("unknown algorithm 'rign': expected one of ring, dbt"),
                       topocoll::InputError);
  CHECK(select_algorithms("all", std::nullopt).size() == registry().size());
  CHECK(select_algorithms("all", Collective::AllReduce).size() == allreduces);
  CHECK(select_algorithms("ring,dbt", std::nullopt).size() == 2);
  CHECK_THROWS_AS(select_algorithms("ring,,dbt", std::nullopt), topocoll::InputError);
  // With a collective, a listed algorithm must be one of its own.
  CHECK(select_algorithms("ring,dbt", Collective::AllReduce).size() == 2);
  CHECK(select_algorithms("allgather-ring", Collective::AllGather).front() == &find_algorithm("allgather-ring"));
  CHECK_THROWS_WITH_AS(select_algorithms("allgather-ring,ring", Collective::AllGather),
                       doctest::Contains("ring is an algorithm for allreduce, not allgather; the allgather algorithms "
                                         "are allgather-ring"),
                       topocoll::InputError);
}

TEST_CASE("registry: hierarchical says why it cannot run on nodes of different sizes") {
  Layout l;
  l.ranks = 5;
  l.nodes = 2;
  l.node_of = {0, 0, 0, 1, 1};
  l.node_ranks = {{0, 1, 2}, {3, 4}};
  l.rail_of = {0, 1, 2, 0, 1};
  l.rails = 3;
  CollectiveArgs a;
  a.ranks = 5;
  a.count = 100;
  std::size_t hierarchical = 0;
  for (const Algorithm& alg : registry()) {
    if (!alg.name.starts_with("hierarchical") || alg.name == "hierarchical-nvls") continue;
    ++hierarchical;
    CAPTURE(alg.name);
    const Support s = alg.supports(l, a, Tuning{});
    CHECK_FALSE(s.ok);
    CHECK(s.reason == "needs the same number of GPUs on every node");
  }
  CHECK(hierarchical == group_allreduces().size());  // one per inner stage
  // The flat algorithms run on it, proven.
  for (const char* name : {"ring", "dbt"}) {
    VerifyOptions o;
    o.node_of = l.node_of;
    CHECK(verify(find_algorithm(name).generate(l, a, Tuning{}), o).ok());
  }
}

TEST_CASE("registry: the in-network algorithms say what the layout lacks") {
  CollectiveArgs a;
  a.ranks = 16;
  a.count = 1000;
  auto reason = [&](const char* name, const Layout& l) { return find_algorithm(name).supports(l, a, Tuning{}).reason; };
  const Layout plain = uniform_layout(2, 8);
  CHECK(reason("nvls", uniform_layout(1, 16)) ==
        "needs NVLS (NVSwitch multicast on GPUs of sm 90 or later, NCCL's nvlsSupport); the node has none");
  CHECK(reason("nvls", uniform_layout(2, 8, {.nvls = true})) ==
        "needs one NVLink domain (one node); the layout has 2 nodes: across nodes use nvls-tree or hierarchical-nvls");
  for (const char* name : {"nvls-tree", "hierarchical-nvls"})
    CHECK(reason(name, plain) ==
          "needs NVLS (NVSwitch multicast on GPUs of sm 90 or later, NCCL's nvlsSupport) in every node; node 0 has "
          "none");
  CHECK(reason("nvls-tree", uniform_layout(1, 16, {.nvls = true})) ==
        "needs at least 2 nodes (it reduces across nodes); on one node use nvls");
  CHECK(reason("collnet", plain) ==
        "needs a fabric whose switches reduce (SHARP, NCCL's CollNet): the fabric's 'sharp' is off");
  CHECK(reason("collnet", uniform_layout(1, 16, {.sharp = true})) ==
        "needs at least 2 nodes (it reduces across nodes); on one node use ring");
  CHECK(find_algorithm("collnet").supports(uniform_layout(2, 8, {.sharp = true}), a, Tuning{}).ok);
  CHECK(find_algorithm("hierarchical-nvls").supports(uniform_layout(1, 16, {.nvls = true}), a, Tuning{}).ok);
  // Channel patterns: NVLSTree's channels run NCCL's tree kernel, NVLS's a pipeline.
  const Schedule tree = find_algorithm("nvls-tree").generate(uniform_layout(2, 8, {.nvls = true}), a, Tuning{});
  CHECK(tree.pattern(0) == ChannelPattern::Tree);
  CHECK(tree.switch_groups().size() == 2 * 2 * 8);  // per node: 8 reduce-scatter + 8 multicast groups
  const Schedule flat = find_algorithm("nvls").generate(uniform_layout(1, 16, {.nvls = true}), a, Tuning{});
  CHECK(flat.pattern(0) == ChannelPattern::Pipeline);
  CHECK(flat.switch_groups().front() ==
        SwitchGroup{SwitchKind::Nvls, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {0}});
  // The trays of one NVLink domain (an NVL72's 18 x 4) run nvls across their nodes, proven with
  // the domains known to the verifier.
  const Layout nvl = uniform_layout(18, 4, {.nvls = true, .nodes_per_nvlink_domain = 18});
  CollectiveArgs a72 = a;
  a72.ranks = 72;
  REQUIRE_MESSAGE(find_algorithm("nvls").supports(nvl, a72, Tuning{}).ok,
                  find_algorithm("nvls").supports(nvl, a72, Tuning{}).reason);
  VerifyOptions o72;
  o72.node_of = nvl.node_of;
  o72.domain_of = nvl.domain_of_ranks();
  const VerifyResult r72 = verify(find_algorithm("nvls").generate(nvl, a72, Tuning{}), o72);
  CHECK_MESSAGE(r72.ok(), r72.message);
  CHECK(reason("nvls", uniform_layout(4, 4, {.nvls = true, .nodes_per_nvlink_domain = 2})) ==
        "needs one NVLink domain (one node); the layout has 4 nodes: across nodes use nvls-tree or hierarchical-nvls");
  // Without the domains the verifier sees NVLS groups across nodes.
  o72.domain_of.clear();
  CHECK(verify(find_algorithm("nvls").generate(nvl, a72, Tuning{}), o72).failure == Failure::BadGroup);
  const Schedule sharp = find_algorithm("collnet").generate(uniform_layout(2, 8, {.sharp = true}), a, Tuning{});
  CHECK(sharp.switch_groups().size() == 8);
  CHECK(sharp.switch_groups()[3] == SwitchGroup{SwitchKind::Sharp, {3, 11}, {3, 11}});
}
