// The fabrics in simulated time: hashed ECMP collisions against ideal spreading, dragonfly
// global-link contention, oversubscription, transports' efficiency, channels spread over a GPU's
// NICs, and PXN's route.
#include <doctest/doctest.h>

#include <numeric>
#include <set>

#include "algorithms/ir/schedule.hpp"
#include "common/errors.hpp"
#include "simulator/calibration.hpp"
#include "simulator/engine.hpp"
#include "simulator/routes.hpp"
#include "topologies/presets.hpp"
#include "topologies/transform.hpp"
#include "topologies/transports.hpp"

using namespace topocoll;

namespace {

// One GPU and one NIC of `gbps` behind a PCIe switch (fast PCIe: the NIC is the bottleneck).
topo::NodeModel one_gpu_node(double gbps = 50.0) {
  topo::NodeModel m;
  m.name = "one-gpu";
  const auto cpu = m.add_device(topo::DeviceKind::Cpu, 0);
  const auto sw = m.add_device(topo::DeviceKind::PcieSwitch, 0);
  const auto gpu = m.add_gpu(0, 90);
  const auto nic = m.add_nic(0, gbps);
  m.add_link(cpu, sw, topo::LinkKind::Pcie, 500.0, 0.5, 16);
  m.add_link(sw, gpu, topo::LinkKind::Pcie, 500.0, 0.5, 16);
  m.add_link(sw, nic, topo::LinkKind::Pcie, 500.0, 0.5, 16);
  return m;
}

// Every listed (source, destination) pair moves `bytes` at once, split over `channels` channels;
// ranks in no pair idle. The time of the slowest, in seconds (analytic engine).
double transfers(const topo::Topology& t, const std::vector<std::pair<int, int>>& pairs, std::uint64_t bytes,
                 const sim::Calibration& c = sim::ideal_calibration(), int channels = 1) {
  const int p = t.num_ranks();
  const std::uint64_t count = bytes / 4;
  std::vector<algo::Program> programs(static_cast<std::size_t>(p));
  const std::uint64_t per = count / static_cast<std::uint64_t>(channels);
  // Every send first (non-blocking), then the receives: no transfer waits for another.
  for (bool send : {true, false})
    for (const auto& [a, b] : pairs)
      for (int ch = 0; ch < channels; ++ch) {
        const std::uint64_t off = per * static_cast<std::uint64_t>(ch);
        if (send)
          algo::ProgramBuilder(programs[static_cast<std::size_t>(a)]).send(b, {algo::BufferId::Input, off, per}, ch);
        else
          algo::ProgramBuilder(programs[static_cast<std::size_t>(b)]).recv(a, {algo::BufferId::Output, off, per}, ch);
      }
  const algo::Schedule s = algo::Schedule::from_programs(
      "transfers", algo::CollectiveArgs::allreduce(count, algo::DataType::Float32, algo::ReduceOp::Sum, p), channels, 0,
      std::move(programs));
  return sim::make_analytic_engine()->run(t, s, c, {}).time_s;
}

topo::FabricSpec spec(topo::FabricKind kind, int radix = 64) {
  topo::FabricSpec f;
  f.kind = kind;
  f.switch_radix = radix;
  return f;
}

// The spine a route crosses; nullopt when none.
std::optional<topo::Vertex> spine_of(const topo::Topology& t, const sim::Route& r) {
  for (topo::Edge e : r.links)
    for (topo::Vertex v : {boost::source(e, t.graph()), boost::target(e, t.graph())})
      if (t.graph()[v].kind == topo::DeviceKind::SpineSwitch) return v;
  return std::nullopt;
}

constexpr std::uint64_t kBytes = std::uint64_t{256} << 20;

}  // namespace

TEST_CASE("ecmp: two flows hashed onto one spine take twice as long; ideal spreading does not collide") {
  // Radix 4, 1:1: 2 NIC ports a leaf, 2 spines of one port's rate. 8 one-NIC nodes, 4 leaves.
  topo::FabricSpec f = spec(topo::FabricKind::FatTree, 4);
  const topo::Topology hashed = topo::Topology::build(one_gpu_node(), 8, f);
  // Find two flows leaving leaf 0 (nodes 0 and 1) for other leaves that the hash puts on one spine.
  sim::Router router(hashed);
  std::optional<std::pair<int, int>> pair;
  for (int b0 = 2; b0 < 8 && !pair; ++b0)
    for (int b1 = 2; b1 < 8 && !pair; ++b1)
      if (b0 != b1 && spine_of(hashed, router.route(0, b0)) == spine_of(hashed, router.route(1, b1))) pair = {b0, b1};
  REQUIRE(pair.has_value());  // with 6 x 5 choices over 2 spines, the hash collides somewhere
  const std::vector<std::pair<int, int>> flows = {{0, pair->first}, {1, pair->second}};
  f.ecmp = topo::EcmpMode::Ideal;
  const topo::Topology ideal = topo::Topology::build(one_gpu_node(), 8, f);
  const double t_hash = transfers(hashed, flows, kBytes), t_ideal = transfers(ideal, flows, kBytes);
  const double wire = static_cast<double>(kBytes) / 50e9;
  CHECK(t_ideal == doctest::Approx(wire).epsilon(0.01));     // each flow at its NIC's rate
  CHECK(t_hash == doctest::Approx(2 * wire).epsilon(0.01));  // two flows on one 50 GB/s uplink
}

TEST_CASE("ecmp: at hundreds of nodes hashed collisions slow a shift permutation that ideal ECMP does not") {
  // 256 one-NIC nodes on radix-64 fat-tree leaves (32 NICs, 32 spines each); every node sends to
  // the node 32 ahead (its peer on the next leaf): every flow crosses the spines.
  topo::FabricSpec f = spec(topo::FabricKind::FatTree);
  std::vector<std::pair<int, int>> flows;
  for (int a = 0; a < 256; ++a) flows.emplace_back(a, (a + 32) % 256);
  const topo::Topology hashed = topo::Topology::build(one_gpu_node(), 256, f);
  f.ecmp = topo::EcmpMode::Ideal;
  const topo::Topology ideal = topo::Topology::build(one_gpu_node(), 256, f);
  const std::uint64_t bytes = std::uint64_t{64} << 20;
  const double wire = static_cast<double>(bytes) / 50e9;
  const double t_hash = transfers(hashed, flows, bytes), t_ideal = transfers(ideal, flows, bytes);
  CHECK(t_ideal == doctest::Approx(wire).epsilon(0.01));
  CHECK(t_hash >= 1.9 * wire);  // at least one uplink carries two flows
}

TEST_CASE("dragonfly: a ring across groups shares the global link; inside a group every hop has its own") {
  topo::FabricSpec f = spec(topo::FabricKind::Dragonfly);
  f.nics_per_switch = 1;
  // The ring 0 -> 2 -> 1 -> 3 -> 0.
  const std::vector<std::pair<int, int>> ring = {{0, 2}, {2, 1}, {1, 3}, {3, 0}};
  const double wire = static_cast<double>(kBytes) / 50e9;
  f.group_switches = 4;  // one group of 4 switches, all-to-all
  const double t_group = transfers(topo::Topology::build(one_gpu_node(), 4, f), ring, kBytes);
  f.group_switches = 2;  // groups {0, 1} and {2, 3}: 0 -> 2 and 1 -> 3 share the one global link
  const double t_across = transfers(topo::Topology::build(one_gpu_node(), 4, f), ring, kBytes);
  f.global_links = 2;  // two global links, spread ideally: no contention again
  f.ecmp = topo::EcmpMode::Ideal;
  const double t_two = transfers(topo::Topology::build(one_gpu_node(), 4, f), ring, kBytes);
  CHECK(t_group == doctest::Approx(wire).epsilon(0.01));
  CHECK(t_across == doctest::Approx(2 * wire).epsilon(0.01));
  CHECK(t_two == doctest::Approx(wire).epsilon(0.01));
  // Minimal routing: NIC, switch, [local,] global, [local,] switch, NIC.
  const topo::Topology t = topo::Topology::build(one_gpu_node(), 4, f);
  sim::Router router(t);
  int global = 0;
  for (topo::Edge e : router.route(0, 2).links) {
    const auto& g = t.graph();
    const auto &u = g[boost::source(e, g)], &v = g[boost::target(e, g)];
    if (u.kind == topo::DeviceKind::LeafSwitch && v.kind == topo::DeviceKind::LeafSwitch && u.group != v.group)
      ++global;
  }
  CHECK(global == 1);
}

TEST_CASE("oversubscription: a leaf's NICs all sending off-leaf get 1/R of their rate at 2:1 and 3:1") {
  for (double r : {1.0, 2.0, 3.0}) {
    CAPTURE(r);
    topo::FabricSpec f = spec(topo::FabricKind::FatTree, 8);  // down = floor(8R/(R+1)): 4, 5, 6
    f.oversubscription = r;
    f.ecmp = topo::EcmpMode::Ideal;  // the aggregate uplink: no hash luck in the figure
    const int down = r == 1.0 ? 4 : r == 2.0 ? 5 : 6;
    const topo::Topology t = topo::Topology::build(one_gpu_node(), 2 * down, f);
    std::vector<std::pair<int, int>> flows;
    for (int a = 0; a < down; ++a) flows.emplace_back(a, a + down);
    const double wire = static_cast<double>(kBytes) / 50e9;
    CHECK(transfers(t, flows, kBytes) == doctest::Approx(r * wire).epsilon(0.01));
  }
}

TEST_CASE("transports: ndr is today's default exactly; hdr halves a DGX H100's NIC rate; efficiency applies") {
  const sim::Calibration c = sim::default_calibration();
  const std::vector<std::pair<int, int>> flows = {{0, 8}};
  const double none = transfers(
      topo::Topology::build(topo::make_dgx_h100_node(), 2, spec(topo::FabricKind::RailFatTree)), flows, kBytes, c);
  topo::FabricSpec f = spec(topo::FabricKind::RailFatTree);
  f.transport = "ndr";
  const double ndr = transfers(topo::Topology::build(topo::make_dgx_h100_node(), 2, f), flows, kBytes, c);
  f.transport = "hdr";
  const double hdr = transfers(topo::Topology::build(topo::make_dgx_h100_node(), 2, f), flows, kBytes, c);
  CHECK(ndr == none);
  CHECK(hdr == doctest::Approx(2 * none).epsilon(0.01));
  // The link's own efficiency wins over the calibration's for its kind.
  topo::Topology t = topo::Topology::build(one_gpu_node(), 2, spec(topo::FabricKind::SingleSwitch));
  for (auto e : boost::make_iterator_range(boost::edges(t.graph())))
    if (t.graph()[e].kind == topo::LinkKind::Network) {
      CHECK(c.rate_bytes_per_s(t.graph(), e) == doctest::Approx(50e9 * 0.95));
      t.mutable_graph()[e].efficiency = 0.5;
      CHECK(c.rate_bytes_per_s(t.graph(), e) == doctest::Approx(50e9 * 0.5));
    }
}

TEST_CASE("nics per gpu: channels spread over a GPU's NICs, G channels a NIC: 16 channels move twice as fast") {
  topo::NodeModel two = topo::merge_nvswitch_planes(topo::multiply_nics(topo::make_dgx_h100_node(), 2));
  topo::NodeModel one = topo::merge_nvswitch_planes(topo::make_dgx_h100_node());
  const topo::Topology t2 = topo::Topology::build(two, 2, spec(topo::FabricKind::RailFatTree));
  const topo::Topology t1 = topo::Topology::build(one, 2, spec(topo::FabricKind::RailFatTree));
  sim::Router router(t2);
  auto lands_on = [&](int channel) {
    const sim::Route& r = router.route(0, 8, channel);
    for (topo::Edge e : r.links)
      for (topo::Vertex v : {boost::source(e, t2.graph()), boost::target(e, t2.graph())})
        if (t2.graph()[v].kind == topo::DeviceKind::Nic && t2.graph()[v].node == 1) return v;
    return topo::Vertex(-1);
  };
  // 8 GPUs a node: channels 0-7 on the first NIC, 8-15 on the second, 16 on the first again.
  CHECK(lands_on(0) == t2.rank(8).nics[0]);
  CHECK(lands_on(7) == t2.rank(8).nics[0]);
  CHECK(lands_on(8) == t2.rank(8).nics[1]);
  CHECK(lands_on(16) == t2.rank(8).nics[0]);
  const std::vector<std::pair<int, int>> flows = {{0, 8}};
  const double wire = static_cast<double>(kBytes) / 50e9;
  CHECK(transfers(t1, flows, kBytes, sim::ideal_calibration(), 16) == doctest::Approx(wire).epsilon(0.01));
  CHECK(transfers(t2, flows, kBytes, sim::ideal_calibration(), 16) == doctest::Approx(wire / 2).epsilon(0.01));
  CHECK(transfers(t2, flows, kBytes, sim::ideal_calibration(), 8) == doctest::Approx(wire).epsilon(0.01));
}

TEST_CASE("pxn: on, a GPU reaches another rail over NVLink and the peer's NIC; off, its own NIC and the spines") {
  const topo::NodeModel m = topo::merge_nvswitch_planes(topo::make_dgx_h100_node());
  topo::FabricSpec f = spec(topo::FabricKind::RailFatTree);
  auto crosses = [](const topo::Topology& t, const sim::Route& r, topo::DeviceKind kind) {
    std::set<topo::Vertex> seen;
    for (topo::Edge e : r.links)
      for (topo::Vertex v : {boost::source(e, t.graph()), boost::target(e, t.graph())})
        if (t.graph()[v].kind == kind) seen.insert(v);
    return seen;
  };
  const topo::Topology on = topo::Topology::build(m, 2, f);
  sim::Router r_on(on);
  const sim::Route& a = r_on.route(0, 11);                                // n0/gpu0 -> n1/gpu3
  CHECK(crosses(on, a, topo::DeviceKind::Nic).contains(on.rank(3).nic));  // n0's rail-3 NIC
  CHECK(crosses(on, a, topo::DeviceKind::SpineSwitch).empty());
  CHECK(crosses(on, a, topo::DeviceKind::NvSwitch).size() == 1);
  f.pxn = false;
  const topo::Topology off = topo::Topology::build(m, 2, f);
  sim::Router r_off(off);
  const sim::Route& b = r_off.route(0, 11);
  CHECK(crosses(off, b, topo::DeviceKind::Nic).contains(off.rank(0).nic));
  CHECK(crosses(off, b, topo::DeviceKind::SpineSwitch).size() == 1);
  CHECK(crosses(off, b, topo::DeviceKind::NvSwitch).empty());
  SUBCASE("multi-plane without PXN: planes never meet, an InputError") {
    f.kind = topo::FabricKind::MultiPlane;
    const topo::Topology planes = topo::Topology::build(m, 2, f);
    sim::Router r(planes);
    CHECK_THROWS_WITH_AS(r.route(0, 11), doctest::Contains("planes never meet"), InputError);
    f.pxn = true;
    const topo::Topology planes_pxn = topo::Topology::build(m, 2, f);
    sim::Router rp(planes_pxn);
    CHECK(crosses(planes_pxn, rp.route(0, 11), topo::DeviceKind::Nic).contains(planes_pxn.rank(3).nic));
  }
}
