// Switch operations (NVLS, SHARP) in the analytic engine: the mechanism of switch_plan.hpp
// against closed forms (docs/simulator.md, "Switch operations"), and the groups a topology
// cannot run. The SimGrid engine meets the same closed forms in
// simulator/simgrid/engines_agree_test.cpp.
#include <doctest/doctest.h>

#include <string>

#include "algorithms/ir/layout.hpp"
#include "algorithms/registry.hpp"
#include "common/errors.hpp"
#include "simulator/calibration.hpp"
#include "simulator/engine.hpp"
#include "simulator/testing.hpp"

namespace topocoll::sim {
namespace {

constexpr std::uint64_t kS = 8ull << 30;  // 8 GiB
constexpr double kN = 8;

double analytic(const topo::Topology& t, const algo::Schedule& s, const Calibration& c) {
  return make_analytic_engine()->run(t, s, c, SimOptions{}).time_s;
}

algo::Schedule ring(const topo::Topology& t, std::uint64_t bytes, int channels) {
  algo::CollectiveArgs a;
  a.count = bytes / 4;
  a.ranks = t.num_ranks();
  algo::Tuning tuning;
  tuning.channels = channels;
  tuning.slice_bytes = 512 * 1024;
  return algo::find_algorithm("ring").generate(algo::layout_of(t), a, tuning);
}

// One DGX H100 (8 GPUs, each 18 NVLink4 links = 450 GB/s per direction into the merged NVSwitch).
// NVLS moves S (1 + 1/N) per GPU port and direction: T = S (1 + 1/N) / R. The hand-built schedule
// pipelines 256 chunks per channel on 4 channels; its fill (a chunk's reduce-scatter, its result
// down, its multicast up and down before the port is busy both ways) adds about 3 chunks' worth,
// 3 / 256 = 1.2 %: the tolerance is 2 %.
TEST_CASE("NVLS allreduce on one DGX H100 moves S(1+1/N) per port and direction") {
  const topo::Topology t = testing::load("dgx-h100", 1);
  const algo::Schedule s = testing::nvls_allreduce(8, kS / 4, 4, 256);
  const double ideal = kS * (1 + 1 / kN) / 450e9;
  const double T = analytic(t, s, ideal_calibration());
  CHECK(T >= ideal);
  CHECK(T == doctest::Approx(ideal).epsilon(0.02));
  // Defaults: NVLink at NCCL's 20.6 of 25 GB/s per link bounds it, not the switch's reduction
  // rate (0.85 x 450 GB/s, nvlsEfficiency); 12.5 us of switch latency per instance pipelines away.
  const double calibrated = kS * (1 + 1 / kN) / (450e9 * 20.6 / 25.0);
  const double Tc = analytic(t, s, default_calibration());
  CHECK(Tc >= calibrated);
  CHECK(Tc == doctest::Approx(calibrated).epsilon(0.02));
}

// 8 x H100 (H200: the same NVLink4 / NVSwitch gen3) at 8 GiB: ring moves 2 S (N-1)/N per port and
// direction, NVLS S (1 + 1/N): ring / NVLS -> 2 (N-1) / (N+1) = 14/9 = 1.556 when NVLink is the
// bound. The ratio comes from the two schedules' traffic, not from a constant: both run on the
// same links with the same calibration.
TEST_CASE("8 GiB on 8 x H100: NVLS ahead of ring by 2(N-1)/(N+1)") {
  const topo::Topology t = testing::load("dgx-h100", 1);
  const Calibration c = default_calibration();
  const double nvls = analytic(t, testing::nvls_allreduce(8, kS / 4, 4, 256), c);
  const double rg = analytic(t, ring(t, kS, 4), c);
  MESSAGE("analytic, 8 GiB: ring " << rg * 1e3 << " ms, NVLS " << nvls * 1e3 << " ms, ratio " << rg / nvls);
  CHECK(rg / nvls == doctest::Approx(2 * (kN - 1) / (kN + 1)).epsilon(0.02));
}

// What a topology cannot run is an InputError naming the group and what is missing.
TEST_CASE("switch groups a topology cannot run are input errors") {
  auto run_on = [](const topo::Topology& t, algo::Schedule s) { return analytic(t, s, ideal_calibration()); };
  const std::uint64_t count = 8 * 4 * 4;
  SUBCASE("NVLS on sm 80 (A100: NVSwitch without multicast)") {
    const topo::Topology t = testing::load("dgx-a100", 1);
    CHECK_THROWS_WITH_AS(run_on(t, testing::nvls_allreduce(8, count, 4, 1)),
                         doctest::Contains("switch group 0 (nvls, 8 contributors, 1 receivers): rank 0 is on an sm 80 "
                                           "GPU; NVLS needs sm 90 or later"),
                         InputError);
  }
  SUBCASE("NVLS on a node without NVSwitch") {
    const topo::Topology t = testing::load("pcie-8gpu", 1);
    CHECK_THROWS_AS(run_on(t, testing::nvls_allreduce(8, count, 4, 1)), InputError);
  }
  SUBCASE("NVLS across nodes") {
    const topo::Topology t = testing::load("dgx-h100", 2, topo::FabricKind::RailFatTree);
    algo::Schedule s = testing::nvls_allreduce(8, count, 4, 1);
    std::vector<algo::Program> programs(16);
    algo::ProgramBuilder(programs[0]).switch_send(0, algo::Chunk{algo::BufferId::Input, 0, 4}, 0);
    algo::ProgramBuilder(programs[8]).switch_send(0, algo::Chunk{algo::BufferId::Input, 0, 4}, 0);
    algo::ProgramBuilder(programs[8]).switch_recv(0, algo::Chunk{algo::BufferId::Output, 0, 4}, 0);
    algo::Schedule across = algo::Schedule::from_programs(
        "across", algo::CollectiveArgs::allreduce(4, algo::DataType::Float32, algo::ReduceOp::Sum, 16), 1, 0,
        std::move(programs));
    across.add_switch_group({algo::SwitchKind::Nvls, {0, 8}, {8}});
    CHECK_THROWS_WITH_AS(run_on(t, across), doctest::Contains("rank 8 is on another NVSwitch fabric than rank 0"),
                         InputError);
  }
  SUBCASE("a switch_send by a rank that is not a contributor breaks the contract") {
    const topo::Topology t = testing::load("dgx-h100", 1);
    std::vector<algo::Program> programs(8);
    algo::ProgramBuilder(programs[3]).switch_send(0, algo::Chunk{algo::BufferId::Input, 0, 4}, 0);
    algo::Schedule s = algo::Schedule::from_programs(
        "stranger", algo::CollectiveArgs::allreduce(4, algo::DataType::Float32, algo::ReduceOp::Sum, 8), 1, 0,
        std::move(programs));
    s.add_switch_group({algo::SwitchKind::Nvls, {0, 1}, {0}});
    CHECK_THROWS_WITH_AS(run_on(t, s), doctest::Contains("rank 3 is not a contributor of switch group 0"),
                         ScheduleError);
  }
  SUBCASE("SHARP on a fabric without sharp") {
    const topo::Topology t = testing::load("dgx-h100", 2, topo::FabricKind::RailFatTree);
    CHECK_THROWS_WITH_AS(run_on(t, testing::sharp_allreduce(16, 1024, 1, 1)),
                         doctest::Contains("switch group 0 (sharp, 16 contributors, 16 receivers): the fabric has no "
                                           "SHARP"),
                         InputError);
  }
}

// SHARP on 2 x DGX H100, fat tree: every GPU's part goes GPU -> PCIe -> NIC -> leaf, the leaves
// reduce (and, across leaves, send one reduced stream to a spine), the result comes down to every
// GPU. One instance of B bytes per channel, ideal calibration: the NIC link (50 GB/s) bounds both
// ways, T = 2 B / 50 GB/s plus the route latencies (under 20 us here).
TEST_CASE("SHARP allreduce on 2 x DGX H100: up and down through the NIC once") {
  topo::TopologyOptions o{"dgx-h100"};
  o.nodes = 2;
  o.fabric = topo::FabricKind::FatTree;
  o.sharp = true;
  o.merge_nvswitch_planes = true;
  const topo::Topology t = topo::load_topology(o);
  const std::uint64_t B = 64u << 20;
  const double T = analytic(t, testing::sharp_allreduce(16, B / 4, 1, 1), ideal_calibration());
  CHECK(T >= 2 * B / 50e9);
  CHECK(T <= 2 * B / 50e9 + 20e-6);
}

// SHARP across leaves: 8 x DGX H100 on a fat tree put their 64 NICs under 2 leaves; each leaf
// reduces its 32 parts and sends one stream up to the root spine, which sends one copy down to
// each leaf, which sends one to each GPU. An instance is store and forward at each level (up,
// leaf -> spine, spine -> leaf, down: 4 B / 50 GB/s for one instance); 32 instances a channel
// pipeline it to B / 50 GB/s (every link carries B once in each direction, up and down at the
// same time) plus the fill, 3 of the 32 instances' worth, and the route latencies.
TEST_CASE("SHARP across leaves: one stream per leaf up and down, NIC-bound when pipelined") {
  topo::TopologyOptions o{"dgx-h100"};
  o.nodes = 8;
  o.fabric = topo::FabricKind::FatTree;
  o.sharp = true;
  o.merge_nvswitch_planes = true;
  const topo::Topology t = topo::load_topology(o);
  const std::uint64_t B = 64u << 20;
  const double one = analytic(t, testing::sharp_allreduce(64, B / 4, 1, 1), ideal_calibration());
  CHECK(one == doctest::Approx(4 * B / 50e9).epsilon(0.01));
  const double piped = analytic(t, testing::sharp_allreduce(64, B / 4, 1, 32), ideal_calibration());
  CHECK(piped >= B / 50e9);
  CHECK(piped <= B / 50e9 * (1 + 4.0 / 32));
}

}  // namespace
}  // namespace topocoll::sim
