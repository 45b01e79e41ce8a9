// The analytic engine's symmetric quotient (analytic.cpp, "Symmetry"): simulating one rank per
// orbit of a rank shift gives the full run's time to the bit, over the registry, every
// collective, on clusters with and without leaf boundaries, under every protocol.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "algorithms/registry.hpp"
#include "simulator/engine.hpp"
#include "simulator/nccl_model.hpp"
#include "simulator/sweep.hpp"
#include "simulator/testing.hpp"

using namespace topocoll;

TEST_CASE("symmetry: the quotient run equals the full run, over the registry") {
  struct Case {
    const char* preset;
    int nodes;
    topo::FabricKind fabric;
  };
  // (A cluster wider than one leaf: the next test case.)
  const Case cases[] = {{"pcie-8gpu", 1, topo::FabricKind::SingleSwitch},
                        {"dgx-a100", 2, topo::FabricKind::RailFatTree},
                        {"dgx-h100", 4, topo::FabricKind::RailFatTree},
                        {"dgx-h100", 4, topo::FabricKind::FatTree}};
  const std::unique_ptr<sim::Engine> engine = sim::make_engine("analytic");
  std::uint64_t compared = 0, reduced = 0, reduced_multi_node = 0, rotated = 0;
  sim::SimOptions full;
  full.symmetry = false;
  for (const Case& k : cases) {
    const topo::Topology t = sim::testing::load(k.preset, k.nodes, k.fabric);
    const algo::Layout layout = algo::layout_of(t);
    const sim::NcclGraphEstimate nccl = sim::estimate_nccl_graph(t, {});
    const sim::ProtocolSet protocols = sim::protocol_set(nccl, sim::base_calibration(), "auto", "--protocol");
    for (algo::Collective coll : algo::kAllCollectives) {
      if (coll == algo::Collective::AllToAllV) continue;  // a size matrix: no rank shift maps it onto itself in general
      for (const algo::Algorithm* alg : algo::select_algorithms("all", coll))
        for (int channels : {2, 8})
          for (std::uint64_t bytes : {std::uint64_t{4096}, std::uint64_t{3} << 20, (std::uint64_t{64} << 20) + 4}) {
            algo::Tuning tuning;
            tuning.channels = channels;
            tuning.slice_bytes = 512 * 1024;
            const algo::CollectiveArgs args =
                algo::nccl_tests_args(coll, bytes, algo::DataType::Float32, algo::ReduceOp::Sum, t.num_ranks());
            if (!alg->supports(layout, args, tuning).ok) continue;
            const algo::Schedule s = alg->generate(layout, args, tuning);
            for (const sim::Calibration& c : protocols.calibrations) {
              CAPTURE(fmt::format("{} x{} {} {} ch {} {} B", k.preset, k.nodes, alg->name, to_string(coll), channels,
                                  bytes));
              const sim::SimResult a = engine->run(t, s, c, {});
              const sim::SimResult b = engine->run(t, s, c, full);
              CHECK(a.time_s == b.time_s);  // bit for bit
              CHECK(a.transfers == b.transfers);
              CHECK(b.ranks_simulated == static_cast<std::uint32_t>(t.num_ranks()));
              ++compared;
              if (a.ranks_simulated < b.ranks_simulated) {
                ++reduced;
                if (k.nodes > 1) ++reduced_multi_node;
                // Fewer ranks than one node's run: the rotation's quotient (a shift moves whole nodes there).
                if (k.nodes > 1 && a.ranks_simulated < static_cast<std::uint32_t>(t.num_ranks() / k.nodes)) ++rotated;
              }
            }
            // run_fastest shares the quotient between protocols.
            std::vector<const sim::Calibration*> cs;
            for (const sim::Calibration& c : protocols.calibrations) cs.push_back(&c);
            std::size_t won_a = 0, won_b = 0;
            CHECK(engine->run_fastest(t, s, cs, {}, won_a).time_s == engine->run_fastest(t, s, cs, full, won_b).time_s);
            CHECK(won_a == won_b);
          }
    }
  }
  MESSAGE(fmt::format("{} runs compared, {} of them on a quotient ({} on more than one node, {} of those rotated)",
                      compared, reduced, reduced_multi_node, rotated));
  CHECK(compared > 300);
  // The quotient is taken, also across nodes (not only the trivial cases).
  CHECK(reduced > compared / 4);
  CHECK(reduced_multi_node > 20);
  CHECK(rotated > 10);
}

TEST_CASE("symmetry: a ring's quotient across leaves shifts by the ranks under one leaf") {
  // 64 x DGX-H100 on a rail fat tree, 32 nodes under each leaf. The ring's programs shift onto
  // themselves by one node (8 ranks), but its flows do not: the hops from the last node of a
  // leaf to the first of the next cross a spine and take longer. The smallest shift whose flows
  // are equal is one leaf's 256 ranks, half of the 512.
  const topo::Topology t = sim::testing::load("dgx-h100", 64, topo::FabricKind::RailFatTree);
  algo::Tuning tuning;
  tuning.channels = 2;
  tuning.slice_bytes = 512 * 1024;
  const algo::CollectiveArgs args = algo::nccl_tests_args(algo::Collective::AllReduce, std::uint64_t{1} << 20,
                                                          algo::DataType::Float32, algo::ReduceOp::Sum, t.num_ranks());
  const algo::Schedule s = algo::find_algorithm("ring").generate(algo::layout_of(t), args, tuning);
  const std::unique_ptr<sim::Engine> engine = sim::make_engine("analytic");
  sim::SimOptions full;
  full.symmetry = false;
  const sim::SimResult a = engine->run(t, s, sim::base_calibration(), {});
  const sim::SimResult b = engine->run(t, s, sim::base_calibration(), full);
  CHECK(a.time_s == b.time_s);
  CHECK(a.ranks_simulated == 256);
  CHECK(b.ranks_simulated == 512);
}

TEST_CASE("symmetry: with 16 channels a ring's quotient across leaves also rotates the GPUs of each node") {
  // The same cluster and ring on 16 channels: channel c enters every node at its GPU c mod 8, so
  // moving every rank one GPU on along its node maps channel c onto channel c + 1 (7 onto 0, 15
  // onto 8). With the shift by one leaf, one rank per node of the first leaf runs: 32 of 512.
  const topo::Topology t = sim::testing::load("dgx-h100", 64, topo::FabricKind::RailFatTree);
  algo::Tuning tuning;
  tuning.channels = 16;
  tuning.slice_bytes = 512 * 1024;
  const algo::CollectiveArgs args = algo::nccl_tests_args(algo::Collective::AllReduce, std::uint64_t{4} << 20,
                                                          algo::DataType::Float32, algo::ReduceOp::Sum, t.num_ranks());
  const algo::Schedule s = algo::find_algorithm("ring").generate(algo::layout_of(t), args, tuning);
  const std::unique_ptr<sim::Engine> engine = sim::make_engine("analytic");
  sim::SimOptions full;
  full.symmetry = false;
  const sim::ProtocolSet protocols =
      sim::protocol_set(sim::estimate_nccl_graph(t, {}), sim::base_calibration(), "Simple", "--protocol");
  REQUIRE(protocols.calibrations.size() == 1);
  for (const sim::Calibration& c : protocols.calibrations) {
    const sim::SimResult a = engine->run(t, s, c, {});
    const sim::SimResult b = engine->run(t, s, c, full);
    CHECK(a.time_s == b.time_s);
    CHECK(a.transfers == b.transfers);
    CHECK(a.ranks_simulated == 32);
    CHECK(b.ranks_simulated == 512);
  }
}

TEST_CASE("symmetry: a trace on the quotient is the full run's trace") {
  // Each traced rank's events are its representative's, shifted: the same events as a full run
  // records, rank for rank (compared sorted, as the trace writer sorts them).
  const topo::Topology t = sim::testing::load("dgx-h100", 4, topo::FabricKind::RailFatTree);
  const std::unique_ptr<sim::Engine> engine = sim::make_engine("analytic");
  std::uint64_t reduced = 0;
  for (const algo::Algorithm* alg : algo::select_algorithms("all", algo::Collective::AllReduce))
    for (int channels : {2, 8}) {
      algo::Tuning tuning;
      tuning.channels = channels;
      tuning.slice_bytes = 512 * 1024;
      const algo::CollectiveArgs args = algo::nccl_tests_args(algo::Collective::AllReduce, std::uint64_t{4} << 20,
                                                              algo::DataType::Float32, algo::ReduceOp::Sum, 32);
      if (!alg->supports(algo::layout_of(t), args, tuning).ok) continue;
      const algo::Schedule s = alg->generate(algo::layout_of(t), args, tuning);
      CAPTURE(fmt::format("{} ch {}", alg->name, channels));
      sim::SimOptions o;
      o.trace = true;
      o.trace_ranks = {{0, 2}, {13, 13}, {29, 31}};
      sim::SimOptions full = o;
      full.symmetry = false;
      sim::SimResult a = engine->run(t, s, sim::base_calibration(), o);
      sim::SimResult b = engine->run(t, s, sim::base_calibration(), full);
      CHECK(a.time_s == b.time_s);
      auto key = [](const sim::TraceEvent& e) {
        return std::tuple(e.rank, e.channel, e.start_s, e.end_s, static_cast<int>(e.kind), e.peer, e.bytes);
      };
      auto by_key = [&](const sim::TraceEvent& x, const sim::TraceEvent& y) { return key(x) < key(y); };
      std::sort(a.trace.begin(), a.trace.end(), by_key);
      std::sort(b.trace.begin(), b.trace.end(), by_key);
      REQUIRE(a.trace.size() == b.trace.size());
      CHECK(!a.trace.empty());
      bool same = true;
      for (std::size_t i = 0; i < a.trace.size(); ++i) same = same && key(a.trace[i]) == key(b.trace[i]);
      CHECK(same);
      if (a.ranks_simulated < b.ranks_simulated) ++reduced;
    }
  CHECK(reduced >= 2);  // ring and hierarchical at least
}
