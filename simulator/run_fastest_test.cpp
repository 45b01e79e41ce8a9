// Engine::run_fastest: the analytic engine's shared preparation and skipped walks give what
// run() under each protocol and keeping the fastest gives, to the bit.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "algorithms/registry.hpp"
#include "simulator/engine.hpp"
#include "simulator/nccl_model.hpp"
#include "simulator/sweep.hpp"
#include "simulator/testing.hpp"

using namespace topocoll;

namespace {

// `alg`'s float sum allreduce of `bytes` on `channels` channels and 512 KiB slices; none where
// the algorithm does not support it.
std::optional<algo::Schedule> allreduce(const algo::Algorithm& alg, const algo::Layout& layout, int channels,
                                        std::uint64_t bytes) {
  algo::Tuning tuning;
  tuning.channels = channels;
  tuning.slice_bytes = 512 * 1024;
  const algo::CollectiveArgs args = algo::nccl_tests_args(algo::Collective::AllReduce, bytes, algo::DataType::Float32,
                                                          algo::ReduceOp::Sum, layout.ranks);
  if (!alg.supports(layout, args, tuning).ok) return std::nullopt;
  return alg.generate(layout, args, tuning);
}

}  // namespace

TEST_CASE("run_fastest: the analytic engine's reused path equals run() per protocol, over the registry") {
  struct Case {
    const char* preset;
    int nodes;
    topo::FabricKind fabric;
  };
  const Case cases[] = {{"pcie-8gpu", 1, topo::FabricKind::SingleSwitch},
                        {"dgx-a100", 2, topo::FabricKind::RailFatTree},
                        {"dgx-h100", 4, topo::FabricKind::RailFatTree}};
  const std::unique_ptr<sim::Engine> engine = sim::make_engine("analytic");
  std::uint64_t compared = 0, skipped = 0, none_left = 0;
  for (const Case& k : cases) {
    const topo::Topology t = sim::testing::load(k.preset, k.nodes, k.fabric);
    const algo::Layout layout = algo::layout_of(t);
    const sim::NcclGraphEstimate nccl = sim::estimate_nccl_graph(t, {});
    const sim::ProtocolSet protocols = sim::protocol_set(nccl, sim::base_calibration(), "auto", "--protocol");
    REQUIRE(protocols.calibrations.size() >= 2);
    std::vector<const sim::Calibration*> cs;
    for (const sim::Calibration& c : protocols.calibrations) cs.push_back(&c);
    for (const algo::Algorithm* alg : algo::select_algorithms("all", algo::Collective::AllReduce))
      for (int channels : {2, 8})
        for (std::uint64_t bytes :
             {std::uint64_t{8}, std::uint64_t{32} << 10, std::uint64_t{2} << 20, std::uint64_t{64} << 20}) {
          const std::optional<algo::Schedule> made = allreduce(*alg, layout, channels, bytes);
          if (!made) continue;
          const algo::Schedule& s = *made;
          CAPTURE(fmt::format("{} x{} {} ch {} {} B", k.preset, k.nodes, alg->name, channels, bytes));
          // The plain answer: every protocol run alone, the fastest kept (the first on a tie).
          std::size_t plain_won = 0;
          sim::SimResult plain;
          for (std::size_t i = 0; i < cs.size(); ++i) {
            sim::SimResult r = engine->run(t, s, *cs[i], {});
            if (i == 0 || r.time_s < plain.time_s) plain = std::move(r), plain_won = i;
          }
          std::size_t won = cs.size();
          const sim::SimResult fast = engine->run_fastest(t, s, cs, {}, won);
          CHECK(won == plain_won);
          CHECK(fast.time_s == plain.time_s);  // bit for bit
          CHECK(fast.transfers == plain.transfers);
          ++compared;
          skipped += fast.runs_skipped;
          // Told the fastest's own time (another run's exact time, SimOptions::faster_than_s):
          // the same answer. Told half of it: never an answer below the true one; runs that
          // needed the walk may be left, and when none is left the time is infinite.
          sim::SimOptions told;
          told.faster_than_s = plain.time_s;
          std::size_t won_told = cs.size();
          CHECK(engine->run_fastest(t, s, cs, told, won_told).time_s == plain.time_s);
          CHECK(won_told == plain_won);
          told.faster_than_s = plain.time_s * 0.5;
          const sim::SimResult half = engine->run_fastest(t, s, cs, told, won_told);
          CHECK(half.time_s >= plain.time_s);
          if (!std::isfinite(half.time_s)) ++none_left;
        }
  }
  CHECK(compared > 50);
  // The cases include runs that need the walk and cannot win: the skipping path is exercised.
  CHECK(skipped > 0);
  CHECK(none_left > 0);
}

TEST_CASE("run_fastest: the latency bound of a shape-only symmetry skips what cannot win, never what can") {
  // Counts that do not split evenly over the ranks and channels: the ring and hierarchical then
  // declare their symmetry shape only (algo::ProgramSymmetry), and a run told another's exact
  // time is first bounded by its latency alone, on the representatives' programs.
  const std::unique_ptr<sim::Engine> engine = sim::make_engine("analytic");
  std::uint64_t shape_only = 0;
  // Rail fat trees (every flow on an island) and a fat tree that is not rail-aligned and a PCIe
  // box (flows that share links beyond islands: the passes' max-min path).
  struct Case {
    const char* preset;
    int nodes;
    topo::FabricKind fabric;
  };
  for (const auto& [preset, nodes, fabric] :
       {Case{"dgx-h100", 4, topo::FabricKind::RailFatTree}, Case{"dgx-a100", 2, topo::FabricKind::RailFatTree},
        Case{"dgx-h100", 4, topo::FabricKind::FatTree}, Case{"pcie-8gpu", 1, topo::FabricKind::SingleSwitch}}) {
    const topo::Topology t = sim::testing::load(preset, nodes, fabric);
    const algo::Layout layout = algo::layout_of(t);
    const sim::NcclGraphEstimate nccl = sim::estimate_nccl_graph(t, {});
    const sim::ProtocolSet protocols = sim::protocol_set(nccl, sim::base_calibration(), "auto", "--protocol");
    for (const algo::Algorithm* alg : algo::select_algorithms("all", algo::Collective::AllReduce))
      for (int channels : {3, 8, 12})
        for (std::uint64_t bytes : {std::uint64_t{32} << 10, (std::uint64_t{1} << 20) + 12}) {
          const std::optional<algo::Schedule> made = allreduce(*alg, layout, channels, bytes);
          if (!made) continue;
          const algo::Schedule& s = *made;
          if (s.symmetry() == nullptr || s.symmetry()->sizes_equal()) continue;
          ++shape_only;
          CAPTURE(fmt::format("{} x{} {} {} ch {} {} B", preset, nodes, topo::to_string(fabric), alg->name, channels,
                              bytes));
          for (const sim::Calibration& c : protocols.calibrations) {
            const double exact = engine->run(t, s, c, {}).time_s;
            std::size_t won = 1;
            sim::SimOptions told;
            // Told its own exact time: the bound lies at or below it, so the run is not skipped.
            told.faster_than_s = exact;
            CHECK(engine->run_fastest(t, s, {&c}, told, won).time_s == exact);
            CHECK(won == 0);
            // Told a time below its latency alone (launch and hops take more than a picosecond):
            // skipped, before any other pass.
            told.faster_than_s = 1e-12;
            const sim::SimResult none = engine->run_fastest(t, s, {&c}, told, won);
            CHECK_FALSE(std::isfinite(none.time_s));
            CHECK(none.runs_skipped == 1);
          }
        }
  }
  MESSAGE(fmt::format("{} shape-only schedules", shape_only));
  CHECK(shape_only >= 12);
}
