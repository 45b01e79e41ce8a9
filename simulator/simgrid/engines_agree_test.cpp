// One model, two engines: the analytic engine (analytic.cpp) and the SimGrid engine must give the
// same time (within 1 %) for rings and hierarchical schedules at every channel count (and dbt where
// its connected sets are small enough to be islands), and both must meet the
// closed forms of docs/simulator.md ("Closed forms the engines must meet").
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "algorithms/ir/layout.hpp"
#include "algorithms/registry.hpp"
#include "common/errors.hpp"
#include "simulator/calibration.hpp"
#include "simulator/engine.hpp"
#include "simulator/simgrid/simgrid_engine.hpp"
#include "simulator/testing.hpp"

namespace topocoll::sim {
namespace {

algo::Schedule generate(const std::string& name, const topo::Topology& t, std::uint64_t bytes, int channels) {
  algo::CollectiveArgs a;
  a.count = bytes / 4;  // float32
  a.ranks = t.num_ranks();
  algo::Tuning tuning;
  tuning.channels = channels;
  tuning.slice_bytes = 512 * 1024;  // topocoll sim's default
  return algo::find_algorithm(name).generate(algo::layout_of(t), a, tuning);
}

struct Both {
  double analytic, simgrid;
};
// The SimGrid engine's own walk: with its default options it answers a schedule whose every
// transfer is on an island with the analytic engine's island result (sim::run_on_islands), and
// the comparison would hold by construction. (Its island closed forms against SimGrid's own
// max-min, --simgrid-plain: simgrid_engine_test.cpp, every case.)
Both run_both(const topo::Topology& t, const algo::Schedule& s, const Calibration& c) {
  SimOptions own_walk;
  own_walk.simgrid_answer_islands_analytically = false;
  return {make_analytic_engine()->run(t, s, c, SimOptions{}).time_s,
          make_simgrid_engine()->run(t, s, c, own_walk).time_s};
}

struct Case {
  const char* preset;
  int nodes;
  topo::FabricKind fabric;
  std::vector<int> channels;  // the channel counts swept on it
};

// What a sweep compares, and how closely: the analytic engine with the SimGrid engine's own walk
// (run_both) at `tolerance`, or, with `plain`, with SimGrid as shipped (every transfer a SimGrid
// comm), each schedule first checked to be all on islands.
struct Sweep {
  std::vector<Case> cases;
  std::vector<std::uint64_t> sizes;
  bool plain = false;
  double tolerance = 0.01;
};

// The size and protocol cycle with the channel count so that small (latency-bound), middle (one
// message per ring step: transfers on and off) and large (pipelined) sizes all meet every
// fabric. Returns the points compared.
int sweep(const std::vector<std::string>& algorithms, const Sweep& w) {
  const Calibration simple = protocol_calibration(base_calibration(), Protocol::Simple);
  const Calibration ll = protocol_calibration(base_calibration(), Protocol::LL);
  SimOptions plain;
  plain.simgrid_fast_paths = false;
  int points = 0;
  for (const Case& k : w.cases) {
    const topo::Topology t = testing::load(k.preset, k.nodes, k.fabric);
    for (const std::string& name : algorithms)
      for (int channels : k.channels) {
        const std::uint64_t bytes = w.sizes[static_cast<std::size_t>(channels) % w.sizes.size()];
        const Calibration& c = channels % 2 ? simple : ll;
        CAPTURE(fmt::format("{} x{} {} {} B channels {} {}", k.preset, k.nodes, name, bytes, channels,
                            channels % 2 ? "Simple" : "LL"));
        const algo::Schedule s = generate(name, t, bytes, channels);
        Both r;
        if (w.plain) {
          REQUIRE(run_on_islands(t, s, c, SimOptions{}).has_value());  // every set an island
          r = {make_analytic_engine()->run(t, s, c, SimOptions{}).time_s,
               make_simgrid_engine()->run(t, s, c, plain).time_s};
        } else {
          r = run_both(t, s, c);
        }
        CHECK(std::abs(r.analytic - r.simgrid) / r.simgrid <= w.tolerance);
        ++points;
      }
  }
  return points;
}

std::vector<int> one_to(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i + 1;
  return v;
}

// Channels 1..32 on multi-node clusters. Before the engines shared links the same way, the
// middle sizes parted by up to 40 % at 8 channels and more (dgx-h100 x4, ring, Simple).
const Sweep kEveryChannelCount{{{"dgx-h100", 4, topo::FabricKind::RailFatTree, one_to(32)},
                                {"dgx-a100", 2, topo::FabricKind::RailFatTree, one_to(32)},
                                {"dgx-a100", 4, topo::FabricKind::FatTree, one_to(32)}},
                               {64 * 1024, 2u << 20, 32u << 20}};

TEST_CASE("engines agree on ring at every channel count 1..32") {
  CHECK(sweep({"ring"}, kEveryChannelCount) == 96);
}

TEST_CASE("engines agree on hierarchical at every channel count 1..32") {
  CHECK(sweep({"hierarchical"}, kEveryChannelCount) == 96);
}

// Trees: dbt's chains inside a node and its trees across nodes share NVLink ports and NIC links
// between routes (a GPU's port carries its hops to both neighbours), so they are general islands
// (islands.hpp: max-min by progressive filling) where the connected sets are small, as up to 16
// nodes here; the analytic engine then walks them exactly and must give SimGrid's own max-min,
// which this compares with SimGrid as shipped (--simgrid-plain: every transfer a SimGrid comm,
// no island computed by the engine). Larger clusters' network sets take pass 2 (a static
// estimate) and are not covered.
TEST_CASE("engines agree on dbt and hierarchical-dbt on general islands, against plain SimGrid") {
  const std::vector<int> counts = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32};
  const Sweep trees{{{"dgx-h100", 4, topo::FabricKind::RailFatTree, counts},
                     {"dgx-a100", 2, topo::FabricKind::RailFatTree, counts},
                     {"dgx-h100", 16, topo::FabricKind::RailFatTree, {8}}},
                    {64 * 1024, 2u << 20, 8u << 20},
                    /*plain=*/true,
                    /*tolerance=*/1e-6};
  CHECK(sweep({"dbt", "hierarchical-dbt"}, trees) == 42);
}

// dgx-h100 x16, rail fat tree, ring, 256 MiB, Simple (docs/simulator.md, "Closed forms the
// engines must meet"). p = 128, S = 2^28 B; channel c enters each node at GPU c on NIC c and
// leaves through GPU c's NIC too (PXN from GPU c-1), so channels 0..7 use eight different rails.
//   launch 8.4 us (Simple baseLat); a network hop: links 3.8 us + step overhead 11.3 us = 15.1 us;
//   NIC 50 GB/s x 0.95 = 47.5 GB/s; an NVLink port 450 GB/s x 20.6/25 = 370.8 GB/s.
// C <= 4: each rail's NIC is the one bottleneck and never idle:
//   T = 8.4 us + 2 (p-1)/p (S/C) / 47.5 GB/s + 15.1 us.
// C >= 8: a GPU's NVLink port carries C flows and each ring step is one message m = S/(C p)
// (< one 512 KiB slice): store and forward. The time lies between every transfer alone and
// every transfer at 1/C of the port all the time; on the 254-hop critical path 32 hops are
// network hops and 222 NVLink hops:
//   upper = 8.4 + 32 (S/(p 370.8 GB/s) + 15.1) + 222 (S/(p 370.8 GB/s) + 3.4)       (any C >= 8)
//   lower = 8.4 + 32 (m / 47.5 GB/s + 15.1) + 222 (m / 370.8 GB/s + 3.4)
// and C = 8, 16, 32 give the same time (channels c and c + 8 run side by side, identically).
TEST_CASE("closed forms: dgx-h100 x16 ring 256 MiB Simple, channels 1..32") {
  const topo::Topology t = testing::load("dgx-h100", 16, topo::FabricKind::RailFatTree);
  const Calibration c = protocol_calibration(base_calibration(), Protocol::Simple);
  const double p = 128, S = 268435456.0, launch = 8.4e-6, net_alpha = 15.1e-6, nvl_alpha = 3.4e-6;
  const double nic = 50e9 * 0.95, port = 450e9 * 20.6 / 25.0;
  for (int C : {1, 2, 4}) {
    CAPTURE(C);
    const double closed = launch + 2 * (p - 1) / p * (S / C) / nic + net_alpha;
    const Both r = run_both(t, generate("ring", t, static_cast<std::uint64_t>(S), C), c);
    CHECK(r.analytic == doctest::Approx(closed).epsilon(0.01));
    CHECK(r.simgrid == doctest::Approx(closed).epsilon(0.01));
  }
  const double upper = launch + 32 * (S / (p * port) + net_alpha) + 222 * (S / (p * port) + nvl_alpha);
  const double m8 = S / (8 * p);
  const double lower = launch + 32 * (m8 / nic + net_alpha) + 222 * (m8 / port + nvl_alpha);
  double at8 = 0;
  for (int C : {8, 16, 32}) {
    CAPTURE(C);
    const Both r = run_both(t, generate("ring", t, static_cast<std::uint64_t>(S), C), c);
    CHECK(r.analytic == doctest::Approx(r.simgrid).epsilon(0.01));
    CHECK(r.simgrid > lower);
    CHECK(r.simgrid < upper);
    if (C == 8) at8 = r.simgrid;
    CHECK(r.simgrid == doctest::Approx(at8).epsilon(1e-9));
  }
  // The static sharing (every flow at 1/C of the port all the time) would be the upper bound
  // itself: 2682.96 us, where the engines give 1856.41 us.
  CHECK(at8 < 0.75 * upper);
}

// Switch schedules (simulator/switch_plan.hpp): NVLS on one DGX H100 and SHARP on two, hand-built
// (simulator/testing.hpp). Pipelined NVLS (256 chunks a channel) keeps every port busy both ways,
// so the analytic engine's static sharing meets SimGrid's dynamic one; the SHARP cases run 4 and
// 16 instances a channel on 2 channels (several flows per NIC at once), on one leaf (2 nodes) and
// across two leaves through a spine (8 nodes).
TEST_CASE("engines agree on switch schedules (NVLS, SHARP)") {
  const topo::Topology h100 = testing::load("dgx-h100", 1);
  for (const Calibration& c : {ideal_calibration(), default_calibration()}) {
    CAPTURE(c.source);
    const Both r = run_both(h100, testing::nvls_allreduce(8, (1u << 30) / 4, 4, 256), c);
    CHECK(std::abs(r.analytic - r.simgrid) / r.simgrid <= 0.01);
  }
  topo::TopologyOptions o{"dgx-h100"};
  o.nodes = 2;
  o.fabric = topo::FabricKind::FatTree;
  o.sharp = true;
  o.merge_nvswitch_planes = true;
  const topo::Topology two = topo::load_topology(o);
  for (const Calibration& c : {ideal_calibration(), default_calibration()}) {
    CAPTURE(c.source);
    const Both r = run_both(two, testing::sharp_allreduce(16, (64u << 20) / 4, 2, 4), c);
    CHECK(std::abs(r.analytic - r.simgrid) / r.simgrid <= 0.01);
  }
  o.nodes = 8;  // 64 NICs under 2 leaves: the aggregation tree through a spine
  const topo::Topology eight = topo::load_topology(o);
  for (const Calibration& c : {ideal_calibration(), default_calibration()}) {
    CAPTURE(c.source);
    const Both r = run_both(eight, testing::sharp_allreduce(64, (64u << 20) / 4, 2, 16), c);
    CHECK(std::abs(r.analytic - r.simgrid) / r.simgrid <= 0.01);
  }
}

// SimGrid as shipped (no fast paths) times switch flows the same way (they never take islands),
// and a trace holds every switch operation of both engines, each ending after it started.
TEST_CASE("switch schedules: SimGrid with and without fast paths, traces of every switch op") {
  const topo::Topology t = testing::load("dgx-h100", 1);
  const algo::Schedule s = testing::nvls_allreduce(8, 8 * 2 * 4 * 1024, 2, 4);
  const Calibration c = default_calibration();
  SimOptions plain;
  plain.simgrid_fast_paths = false;
  const double fast = make_simgrid_engine()->run(t, s, c, SimOptions{}).time_s;
  CHECK(make_simgrid_engine()->run(t, s, c, plain).time_s == doctest::Approx(fast).epsilon(1e-9));
  SimOptions traced;
  traced.trace = true;
  // Per rank and channel: 4 x 8 reduce-scatter sends, 4 receives and 4 multicast sends, 4 x 8 receives.
  const std::size_t ops = 8 * 2 * (4 * 8 + 4 + 4 + 4 * 8);
  for (const SimResult& r :
       {make_analytic_engine()->run(t, s, c, traced), make_simgrid_engine()->run(t, s, c, traced)}) {
    CAPTURE(r.engine);
    CHECK(r.trace.size() == ops);
    std::size_t sends = 0, recvs = 0;
    for (const TraceEvent& e : r.trace) {
      CHECK(e.end_s >= e.start_s);
      CHECK(e.end_s <= r.time_s);
      sends += e.kind == algo::OpKind::SwitchSend;
      recvs += e.kind == algo::OpKind::SwitchRecv;
    }
    CHECK(sends == 8 * 2 * (4 * 8 + 4));
    CHECK(recvs == 8 * 2 * (4 + 4 * 8));
  }
}

// Switch flows share links with point-to-point transfers: channel 0 reduces every GPU's part to
// rank 0 through the NVSwitch (16 instances), channel 1 runs a ring of sends on the same NVLink
// ports at once. Both engines share the ports max-min between the two kinds of flow; the
// analytic engine statically (pass 2: flows off islands), SimGrid dynamically. Every GPU's port
// sends 512 MiB (its parts and its ring sends): 1193 us at 450 GB/s (ideal); SimGrid 1231 us,
// analytic 1268 us, 3 % apart, as point-to-point schedules off islands can be (above): the
// bound here is 5 %.
TEST_CASE("switch schedules: switch flows and sends share the NVLink ports alike in both engines") {
  const topo::Topology t = testing::load("dgx-h100", 1);
  const std::uint64_t part = (16u << 20) / 4;
  std::vector<algo::Program> programs(8);
  for (int r = 0; r < 8; ++r) {
    algo::ProgramBuilder b(programs[static_cast<std::size_t>(r)]);
    for (int m = 0; m < 16; ++m) b.switch_send(0, algo::Chunk{algo::BufferId::Input, m * part, part}, 0);
    if (r == 0)
      for (int m = 0; m < 16; ++m) b.switch_recv(0, algo::Chunk{algo::BufferId::Output, m * part, part}, 0);
    for (int m = 0; m < 16; ++m) {
      b.send((r + 1) % 8, algo::Chunk{algo::BufferId::Input, m * part, part}, 1);
      b.recv((r + 7) % 8, algo::Chunk{algo::BufferId::Scratch, m * part, part}, 1);
    }
  }
  algo::Schedule s = algo::Schedule::from_programs(
      "mixed", algo::CollectiveArgs::allreduce(16 * part, algo::DataType::Float32, algo::ReduceOp::Sum, 8), 2,
      16 * part, std::move(programs));
  s.add_switch_group({algo::SwitchKind::Nvls, {0, 1, 2, 3, 4, 5, 6, 7}, {0}});
  for (const Calibration& c : {ideal_calibration(), default_calibration()}) {
    CAPTURE(c.source);
    const Both r = run_both(t, s, c);
    MESSAGE(
        fmt::format("mixed, {}: analytic {:.1f} us, simgrid {:.1f} us", c.source, r.analytic * 1e6, r.simgrid * 1e6));
    CHECK(std::abs(r.analytic - r.simgrid) / r.simgrid <= 0.05);
  }
}

// A switch_recv whose instance never gets its parts waits forever: both engines say so.
TEST_CASE("switch schedules: a receive without its parts does not complete, in both engines") {
  const topo::Topology t = testing::load("dgx-h100", 1);
  std::vector<algo::Program> programs(8);
  algo::ProgramBuilder(programs[0]).switch_send(0, algo::Chunk{algo::BufferId::Input, 0, 4}, 0);
  algo::ProgramBuilder(programs[1]).switch_recv(0, algo::Chunk{algo::BufferId::Output, 0, 4}, 0);
  algo::Schedule s = algo::Schedule::from_programs(
      "half", algo::CollectiveArgs::allreduce(4, algo::DataType::Float32, algo::ReduceOp::Sum, 8), 1, 0,
      std::move(programs));
  s.add_switch_group({algo::SwitchKind::Nvls, {0, 2}, {1}});  // rank 2 never gives its part
  const Calibration c = default_calibration();
  CHECK_THROWS_WITH_AS(make_analytic_engine()->run(t, s, c, SimOptions{}),
                       doctest::Contains("rank 1 channel 0 waits forever"), ScheduleError);
  CHECK_THROWS_WITH_AS(make_simgrid_engine()->run(t, s, c, SimOptions{}),
                       doctest::Contains("rank 1 channel 0 at switch_recv (operation 0 of the channel)"),
                       ScheduleError);
}

// 8 x H100 (NVLink4, NVSwitch gen3: what an HGX H200 has) at 8 GiB, defaults (docs/simulator.md,
// "Switch operations"): per GPU port and direction ring moves 2 S (N-1)/N and NVLS S (1 + 1/N),
// both at R = 450 GB/s x 20.6/25 = 370.8 GB/s:
//   ring = 2 S (N-1) / (N R) = 40.54 ms,  NVLS = S (1 + 1/N) / R = 26.06 ms,  ratio 14/9 = 1.556;
// NVLS's pipeline fill (~3 of 256 chunks) and ring's per-step latencies are the rest (2 %).
TEST_CASE("closed forms: 8 GiB on 8 x H100, NVLS ahead of ring by the traffic, both engines") {
  const topo::Topology t = testing::load("dgx-h100", 1);
  const Calibration c = default_calibration();
  const double S = 8.0 * (1u << 30), N = 8, R = 450e9 * 20.6 / 25.0;
  const Both nvls = run_both(t, testing::nvls_allreduce(8, (8ull << 30) / 4, 4, 256), c);
  const Both ring = run_both(t, generate("ring", t, 8ull << 30, 4), c);
  MESSAGE(
      fmt::format("8 GiB, 8 x H100: ring {:.3f} / {:.3f} ms, NVLS {:.3f} / {:.3f} ms (analytic / simgrid), "
                  "ratio {:.3f} / {:.3f}",
                  ring.analytic * 1e3, ring.simgrid * 1e3, nvls.analytic * 1e3, nvls.simgrid * 1e3,
                  ring.analytic / nvls.analytic, ring.simgrid / nvls.simgrid));
  for (double x : {nvls.analytic, nvls.simgrid}) CHECK(x == doctest::Approx(S * (1 + 1 / N) / R).epsilon(0.02));
  for (double x : {ring.analytic, ring.simgrid}) CHECK(x == doctest::Approx(2 * S * (N - 1) / (N * R)).epsilon(0.02));
  CHECK(ring.simgrid / nvls.simgrid == doctest::Approx(2 * (N - 1) / (N + 1)).epsilon(0.02));
  CHECK(ring.analytic / nvls.analytic == doctest::Approx(2 * (N - 1) / (N + 1)).epsilon(0.02));
}

}  // namespace
}  // namespace topocoll::sim
