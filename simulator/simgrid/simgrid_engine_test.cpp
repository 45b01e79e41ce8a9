// Tests of the SimGrid engine (simgrid_engine.cpp) and its platform (simgrid_adapter.hpp): closed
// forms on hand-made machines, the routes SimGrid follows against the Router's, and agreement
// with the analytic engine where both model the same thing.
#include "simulator/simgrid/simgrid_engine.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <array>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/malformed_schedules.hpp"
#include "algorithms/registry.hpp"
#include "common/errors.hpp"
#include "simulator/engine.hpp"
#include "simulator/routes.hpp"
#include "simulator/simgrid/simgrid_adapter.hpp"
#include "topologies/presets.hpp"
#include "topologies/transform.hpp"

namespace topocoll::sim {
namespace {

using algo::BufferId;
using algo::Chunk;
using algo::Op;
using algo::OpKind;
using algo::Program;
using topo::DeviceKind;
using topo::LinkKind;

constexpr std::uint64_t kMiB = 1 << 20;

// ---------------------------------------------------------------------------------------------
// Hand-made machines

// Two GPUs joined by one NVLink of 100 GB/s and 1 us.
//
//     gpu0 ══ 100 GB/s, 1 us ══ gpu1
topo::Topology two_gpus() {
  topo::NodeModel m;
  m.name = "two-gpus";
  const auto a = m.add_gpu(0, 90), b = m.add_gpu(0, 90);
  m.add_link(a, b, LinkKind::NvLink, 100.0, 1.0);
  return topo::Topology::build(m, 1, topo::FabricSpec{});
}

// Three GPUs on one PCIe switch, 1 us per link, 10 GB/s unless given: gpu0 -> gpu2 and
// gpu1 -> gpu2 share the switch's link down to gpu2.
//
//     gpu0   gpu1   gpu2
//        \    |    /
//         pcie switch
topo::Topology three_gpus_on_a_switch(std::array<double, 3> gbps = {10.0, 10.0, 10.0}) {
  topo::NodeModel m;
  m.name = "three-gpus";
  const auto sw = m.add_device(DeviceKind::PcieSwitch, 0);
  for (int i = 0; i < 3; ++i) m.add_link(sw, m.add_gpu(0, 90), LinkKind::Pcie, gbps[static_cast<std::size_t>(i)], 1.0);
  return topo::Topology::build(m, 1, topo::FabricSpec{});
}

// `nodes` nodes of one GPU and one NIC on a single switch: every hop of a ring is
//   gpu --PCIe 64 GB/s, 0.5 us-- nic --50 GB/s, 0.6 us-- switch --50 GB/s, 0.6 us-- nic --PCIe-- gpu
// so B = 50 GB/s and alpha = 0.5 + 0.6 + 0.6 + 0.5 = 2.2 us for every pair.
topo::Topology one_gpu_nodes(int nodes) {
  topo::NodeModel m;
  m.name = "one-gpu";
  const auto gpu = m.add_gpu(0, 90);
  const auto nic = m.add_nic(0, 50.0);
  m.add_link(gpu, nic, LinkKind::Pcie, 64.0, 0.5);
  topo::FabricSpec f;
  f.kind = topo::FabricKind::SingleSwitch;
  f.latency_us = 0.6;
  return topo::Topology::build(m, nodes, f);
}

algo::CollectiveArgs args_for(int ranks, std::uint64_t bytes) {
  algo::CollectiveArgs a;
  a.count = bytes / 4;  // float32
  a.ranks = ranks;
  return a;
}

Op op(OpKind kind, int peer, std::uint64_t count, int channel = 0) {
  Op o;
  o.kind = kind;
  o.peer = peer;
  o.channel = static_cast<std::uint16_t>(channel);
  const Chunk c{BufferId::Output, 0, count};
  if (kind == OpKind::Send || kind == OpKind::Copy || kind == OpKind::Reduce) o.src = c;
  if (kind != OpKind::Send) o.dst = c;
  return o;
}

algo::Schedule hand_made(int ranks, std::uint64_t count, std::vector<Program> programs, int channels = 1) {
  return algo::Schedule::from_programs("hand-made", args_for(ranks, count * 4), channels, 0, std::move(programs));
}

// gpu0 and gpu1 each send `count` floats to gpu2, on channels 0 and 1.
algo::Schedule two_into_one(std::uint64_t count) {
  return hand_made(3, count,
                   {{op(OpKind::Send, 2, count)},
                    {op(OpKind::Send, 2, count, 1)},
                    {op(OpKind::Recv, 0, count), op(OpKind::Recv, 1, count, 1)}},
                   2);
}

// Each (rank, channel)'s trace events in program order.
std::map<std::pair<int, int>, std::vector<TraceEvent>> by_channel(const std::vector<TraceEvent>& trace) {
  std::map<std::pair<int, int>, std::vector<TraceEvent>> out;
  for (const TraceEvent& e : trace) out[{e.rank, e.channel}].push_back(e);
  return out;
}

// Runs the SimGrid engine with its fast paths (the default) and as plain SimGrid (every
// transfer a SimGrid comm, SimGrid's list as shipped), checks that both simulate the same
// collective time and, when tracing, the same time for every operation, and returns the default
// run. Every test below therefore checks both.
//
// Tolerances. SimGrid computes completion dates to about a nanosecond (its surf/precision), and
// which flows share its max-min system changes its rounding, so a run with islands taken
// out differs from the plain run by nanoseconds per SimGrid transfer. In a pipeline those can
// change which of two nearly simultaneous events comes first and move single operations by up
// to a transfer time while the collective's time stays put, so per-operation equality is
// checked only on the hand-made machines (few flows), and the collective's time to 1e-6.
SimResult simulate(const topo::Topology& t, const algo::Schedule& s, const Calibration& c, bool trace = false) {
  SimOptions o;
  o.trace = trace;
  SimResult fast = make_simgrid_engine()->run(t, s, c, o);
  o.simgrid_fast_paths = false;
  const SimResult plain = make_simgrid_engine()->run(t, s, c, o);
  CHECK(plain.island_transfers == 0);
  CHECK(fast.transfers == plain.transfers);
  CHECK(fast.time_s == doctest::Approx(plain.time_s).epsilon(1e-6));
  if (trace) {
    const auto a = by_channel(fast.trace), b = by_channel(plain.trace);
    REQUIRE(a.size() == b.size());
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
      REQUIRE(ia->first == ib->first);
      REQUIRE(ia->second.size() == ib->second.size());
      for (std::size_t k = 0; k < ia->second.size(); ++k) {
        const TraceEvent &x = ia->second[k], &y = ib->second[k];
        CHECK(x.kind == y.kind);
        CHECK(x.bytes == y.bytes);
        CHECK(x.start_s == doctest::Approx(y.start_s).epsilon(1e-9));
        CHECK(x.end_s == doctest::Approx(y.end_s).epsilon(1e-9));
      }
    }
  }
  return fast;
}

algo::Schedule generate(const std::string& name, const topo::Topology& t, std::uint64_t bytes, int channels,
                        std::uint64_t slice_bytes) {
  algo::Tuning tuning;
  tuning.channels = channels;
  tuning.slice_bytes = slice_bytes;
  return algo::find_algorithm(name).generate(algo::layout_of(t), args_for(t.num_ranks(), bytes), tuning);
}

// ---------------------------------------------------------------------------------------------
// Closed forms

TEST_CASE("simgrid: a 2-rank schedule takes latency + bytes / bandwidth") {
  const topo::Topology t = two_gpus();
  const std::uint64_t count = 8 * kMiB / 4, bytes = count * 4;
  const algo::Schedule s = hand_made(2, count, {{op(OpKind::Send, 1, count)}, {op(OpKind::Recv, 0, count)}});
  const SimResult r = simulate(t, s, ideal_calibration());
  CHECK(r.engine == "simgrid");
  CHECK(r.transfers == 1);
  CHECK(r.time_s == doctest::Approx(1e-6 + static_cast<double>(bytes) / 100e9).epsilon(1e-9));
}

TEST_CASE("simgrid: calibration scales links and adds overheads") {
  const topo::Topology t = two_gpus();
  const std::uint64_t count = 8 * kMiB / 4;
  const double bytes = static_cast<double>(count * 4);
  const algo::Schedule s = hand_made(2, count, {{op(OpKind::Send, 1, count)}, {op(OpKind::Recv, 0, count)}});
  Calibration c = ideal_calibration();
  SUBCASE("efficiency and extra latency") {
    c.links[static_cast<std::size_t>(LinkKind::NvLink)] = {0.8, 0.5};
    CHECK(simulate(t, s, c).time_s == doctest::Approx(1.5e-6 + bytes / 80e9).epsilon(1e-9));
  }
  SUBCASE("per-channel cap") {
    c.channel_cap_gbps[static_cast<std::size_t>(LinkKind::NvLink)] = 20.0;
    CHECK(simulate(t, s, c).time_s == doctest::Approx(1e-6 + bytes / 20e9).epsilon(1e-9));
  }
  SUBCASE("launch and step overheads") {
    c.launch_overhead_us = 6.0;
    c.step_overhead_us = 3.0;
    CHECK(simulate(t, s, c).time_s == doctest::Approx(6e-6 + 1e-6 + bytes / 100e9 + 3e-6).epsilon(1e-9));
  }
  SUBCASE("local reductions run at reduce_gbps, one channel each") {
    c.reduce_gbps = 50.0;
    const algo::Schedule local =
        hand_made(2, count, {{op(OpKind::Reduce, -1, count, 0), op(OpKind::Copy, -1, count, 1)}, {}}, 2);
    CHECK(simulate(t, local, c).time_s == doctest::Approx(bytes / 50e9).epsilon(1e-9));
  }
}

TEST_CASE("simgrid: a connection keeps its messages in order and pays its latency once") {
  // Four messages on one connection: the link is busy for 4 B / bw, the last lands 1 us later.
  const topo::Topology t = two_gpus();
  const std::uint64_t count = kMiB / 4;
  const double bytes = static_cast<double>(count * 4);
  Program send, recv;
  for (int k = 0; k < 4; ++k) {
    send.push_back(op(OpKind::Send, 1, count));
    recv.push_back(op(OpKind::Recv, 0, count));
  }
  const SimResult r = simulate(t, hand_made(2, count, {send, recv}), ideal_calibration(), true);
  CHECK(r.transfers == 4);
  CHECK(r.time_s == doctest::Approx(1e-6 + 4 * bytes / 100e9).epsilon(1e-9));
  // Receive k ends when message k lands: 1 us + (k + 1) B / bw.
  std::vector<double> recv_ends;
  for (const TraceEvent& e : r.trace)
    if (e.kind == OpKind::Recv) recv_ends.push_back(e.end_s);
  REQUIRE(recv_ends.size() == 4);
  for (int k = 0; k < 4; ++k)
    CHECK(recv_ends[static_cast<std::size_t>(k)] == doctest::Approx(1e-6 + (k + 1) * bytes / 100e9).epsilon(1e-9));
}

TEST_CASE("simgrid: flows through one link share it fairly whatever their latency") {
  const topo::Topology t = three_gpus_on_a_switch();
  const std::uint64_t count = 4 * kMiB / 4;
  const double bytes = static_cast<double>(count * 4);
  const algo::Schedule s = two_into_one(count);
  // Both cross the switch -> gpu2 link: each gets 5 GB/s while both run.
  CHECK(simulate(t, s, ideal_calibration()).time_s == doctest::Approx(2e-6 + 2 * bytes / 10e9).epsilon(1e-9));
}

// Ring allreduce, one channel, no slicing: 2(p-1) steps, each moves one segment of S/p bytes
// over one hop and waits for it to land, and every hop has the same B and alpha, so
//   T = 2(p-1) * (S/p / B + alpha) = 2(p-1)/p * S/B + 2(p-1) * alpha.
TEST_CASE("simgrid: ring allreduce matches 2(p-1)/p S/B + 2(p-1) alpha") {
  for (int p : {2, 5, 8}) {
    CAPTURE(p);
    const topo::Topology t = one_gpu_nodes(p);
    const std::uint64_t S = 64 * kMiB;
    const SimResult r = simulate(t, generate("ring", t, S, 1, S), ideal_calibration());
    const double B = 50e9, alpha = 2.2e-6;
    const double expected = 2.0 * (p - 1) / p * static_cast<double>(S) / B + 2.0 * (p - 1) * alpha;
    CHECK(r.time_s == doctest::Approx(expected).epsilon(0.01));
    CHECK(r.transfers == static_cast<std::uint64_t>(2 * p * (p - 1)));
  }
}

TEST_CASE("simgrid: ring allreduce inside a DGX H100 matches the closed form") {
  // 8 GPUs on NVSwitch, one channel, no slicing: every hop GPU -> NVSwitch -> GPU over one
  // plane (the Router's widest path): B = that plane's links, alpha = two NVLink latencies.
  const topo::Topology t = topo::Topology::build(topo::make_dgx_h100_node(), 1, topo::FabricSpec{});
  Router router(t);
  const Route& hop = router.route(0, 1);
  const double B = hop.bottleneck_gbps * 1e9, alpha = hop.latency_us * 1e-6;
  const std::uint64_t S = 256 * kMiB;
  const SimResult r = simulate(t, generate("ring", t, S, 1, S), ideal_calibration());
  const int p = 8;
  CHECK(r.time_s ==
        doctest::Approx(2.0 * (p - 1) / p * static_cast<double>(S) / B + 2.0 * (p - 1) * alpha).epsilon(0.01));
}

// ---------------------------------------------------------------------------------------------
// Routes

TEST_CASE("simgrid: a schedule all on islands runs no SimGrid comm (the analytic engine's island walk); others do") {
  // 4 x DGX-H100, 64 MiB: the ring's connections are islands (a GPU pair's channels on a path of
  // their own); dbt's chains inside a node and its trees across nodes are general islands (small
  // connected sets, islands.hpp), so it runs no SimGrid comm either. On 32 nodes dbt's network
  // set has more than Island::kMaxGeneralGroups groups: SimGrid runs those transfers.
  const topo::Topology t = topo::Topology::build(topo::make_dgx_h100_node(), 4, topo::FabricSpec{});
  const topo::Topology t32 = topo::Topology::build(topo::make_dgx_h100_node(), 32, topo::FabricSpec{});
  const std::uint64_t S = 64 * kMiB;
  for (const Calibration& c : {ideal_calibration(), default_calibration()}) {
    CAPTURE(c.source);
    const algo::Schedule ring = generate("ring", t, S, 4, 512 * 1024);
    const SimResult r = simulate(t, ring, c);  // against --simgrid-plain, to 1e-6
    CHECK(r.engine == "simgrid");
    CHECK(r.transfers > 0);
    CHECK(r.island_transfers == r.transfers);
    const std::optional<SimResult> walk = run_on_islands(t, ring, c, SimOptions{});
    REQUIRE(walk.has_value());
    CHECK(walk->time_s == r.time_s);
    CHECK(walk->transfers == r.transfers);
    CHECK(walk->time_s == make_analytic_engine()->run(t, ring, c, SimOptions{}).time_s);

    const algo::Schedule dbt = generate("dbt", t, S, 2, 512 * 1024);
    const SimResult d = simulate(t, dbt, c);  // against --simgrid-plain, to 1e-6
    CHECK(d.island_transfers == d.transfers);
    const std::optional<SimResult> dwalk = run_on_islands(t, dbt, c, SimOptions{});
    REQUIRE(dwalk.has_value());
    CHECK(dwalk->time_s == d.time_s);
    CHECK(dwalk->time_s == make_analytic_engine()->run(t, dbt, c, SimOptions{}).time_s);

    const algo::Schedule dbt32 = generate("dbt", t32, 4 * kMiB, 2, 512 * 1024);
    CHECK_FALSE(run_on_islands(t32, dbt32, c, SimOptions{}).has_value());
    const SimResult d32 = simulate(t32, dbt32, c);
    CHECK(d32.island_transfers > 0);
    CHECK(d32.island_transfers < d32.transfers);  // SimGrid comms: the platform and SimGrid ran
  }
}

TEST_CASE("simgrid: hosts only where SimGrid simulates: routed connections' ends and computing endpoints") {
  const topo::Topology t = topo::Topology::build(topo::make_dgx_h100_node(), 2, topo::FabricSpec{});
  const Calibration c = ideal_calibration();
  struct Idle final : sg::Listener {
    void transfers_done(const std::vector<std::uint32_t>&) override {}
    void compute_done(std::uint32_t) override {}
    void wake() override {}
  };
  // Each case: how many hosts SimGrid holds, and whether a transfer on unrouted connection 1 was refused.
  auto hosts_for = [&](std::vector<sg::Connection> conns, std::vector<std::uint8_t> computes) {
    const std::string answer = sg::run_isolated([&](std::string& out) {
      Idle idle;
      sg::PlatformSpec spec;
      spec.topology = &t;
      spec.calibration = &c;
      spec.channels = 2;
      spec.connections = conns;
      spec.computes = computes;
      sg::Simulation sim(spec, idle);
      out += std::to_string(sim.host_count());
      if (conns.size() > 1 && !conns[1].routed) {
        try {
          sim.transfer(1, 1024);
          out += " accepted";
        } catch (const std::exception& e) {
          out += std::string(" refused: ") + e.what();
        }
      }
    });
    return answer;
  };
  const std::size_t endpoints = 16 * 2;
  // Every endpoint computes (computes empty): all 32 hosts, whatever is routed.
  CHECK(hosts_for({{0, 8, 1}}, {}) == "32");
  // Nothing computes: the two ends of each routed connection (shared ends counted once).
  CHECK(hosts_for({{0, 8, 1}, {8, 0, 1}, {3, 4, 0}}, std::vector<std::uint8_t>(endpoints, 0)) == "4");
  // An island (routed = false) adds no host, and a transfer on it is refused by name.
  const std::string island = hosts_for({{0, 8, 1}, {3, 4, 0, false}}, std::vector<std::uint8_t>(endpoints, 0));
  CHECK(island.starts_with("2 refused: "));
  CHECK(island.find("connection 1 (3 -> 4 channel 0), which has no route") != std::string::npos);
  // Only islands, and one endpoint computing (rank 5, channel 1): one host.
  std::vector<std::uint8_t> one(endpoints, 0);
  one[5 * 2 + 1] = 1;
  CHECK(hosts_for({{0, 8, 1, false}}, one) == "1");
}

TEST_CASE("simgrid: SimGrid's routes are the Router's, inside nodes, across rails and spines") {
  // Switches of 4 ports: two nodes per scalable unit, so node 2 is behind the spines.
  topo::FabricSpec fabric;
  fabric.switch_radix = 4;
  const topo::Topology t = topo::Topology::build(topo::make_dgx_h100_node(), 3, fabric);
  // Same node; same rail across nodes; other rails (PXN: over NVLink to the GPU on the
  // receiver's rail, then its NIC), several from one GPU on one channel; both ways.
  const std::vector<std::pair<int, int>> pairs = {{0, 5},  {5, 0},  {0, 8},  {8, 0},  {0, 17}, {0, 23}, {1, 19},
                                                  {19, 1}, {3, 12}, {12, 3}, {7, 16}, {16, 7}, {16, 1}, {23, 0}};
  const Calibration c = ideal_calibration();
  // SimGrid's own view, from a simulation process: one line per pair, "latency link link ...".
  const std::string answer = sg::run_isolated([&](std::string& out) {
    struct Idle final : sg::Listener {
      void transfers_done(const std::vector<std::uint32_t>&) override {}
      void compute_done(std::uint32_t) override {}
      void wake() override {}
    } idle;
    sg::PlatformSpec spec;
    spec.topology = &t;
    spec.calibration = &c;
    spec.channels = 2;
    for (auto [a, b] : pairs) spec.connections.push_back({a, b, 1});
    sg::Simulation sim(spec, idle);
    for (std::uint32_t i = 0; i < pairs.size(); ++i) {
      const sg::Simulation::RouteView v = sim.route(i);
      out += fmt::format("{:.17g}", v.latency_s);
      for (const std::string& l : v.links) out += " " + l;
      out += "\n";
    }
  });
  std::istringstream lines(answer);
  Router router(t);
  for (auto [a, b] : pairs) {
    CAPTURE(a);
    CAPTURE(b);
    std::string line;
    REQUIRE(std::getline(lines, line));
    std::istringstream words(line);
    double latency = 0;
    words >> latency;
    std::vector<std::string> links;
    for (std::string w; words >> w;) links.push_back(w);
    const Route& expected = router.route(a, b);
    CHECK(links == sg::link_names(t, a, expected));
    CHECK(latency == doctest::Approx(expected.latency_us * 1e-6).epsilon(1e-12));
    // Read on their own, the names walk from a's GPU to b's: "x--y_UP" goes x -> y.
    std::string at = t.device_name(t.rank(a).gpu);
    for (const std::string& l : links) {
      const bool up = l.ends_with("_UP");
      const std::string name = l.substr(0, l.rfind('_'));
      const std::string x = name.substr(0, name.find("--")),
                        y = name.substr(name.find("--") + 2, name.find('#') - name.find("--") - 2);
      CHECK(at == (up ? x : y));
      at = up ? y : x;
    }
    CHECK(at == t.device_name(t.rank(b).gpu));
  }
  // The cross-rail pair really crosses another GPU of its node (PXN), the same-rail one does not;
  // node 2 is reached through a spine.
  CHECK(router.route(0, 17).links.size() > router.route(0, 8).links.size());
  bool spine = false;
  for (const std::string& l : sg::link_names(t, 0, router.route(0, 17))) spine |= l.find("spine") != std::string::npos;
  CHECK(spine);
}

// ---------------------------------------------------------------------------------------------
// Agreement with the analytic engine

TEST_CASE("simgrid: hierarchical agrees with the analytic engine") {
  // Its phases never overlap on a link direction, so static and dynamic sharing coincide.
  for (const Calibration& c : {ideal_calibration(), default_calibration()}) {
    for (int which = 0; which < 2; ++which) {
      const topo::Topology t =
          which == 0 ? one_gpu_nodes(4) : topo::Topology::build(topo::make_dgx_h100_node(), 2, topo::FabricSpec{});
      for (std::uint64_t S : {kMiB, 64 * kMiB}) {
        CAPTURE(which);
        CAPTURE(S);
        const algo::Schedule s = generate("hierarchical", t, S, 2, kMiB);
        const double analytic = make_analytic_engine()->run(t, s, c, SimOptions{}).time_s;
        CHECK(simulate(t, s, c).time_s == doctest::Approx(analytic).epsilon(1e-6));
      }
    }
  }
}

TEST_CASE("simgrid: dbt agrees with the analytic engine where every flow runs at once") {
  // Two GPUs: both trees are the chain 1 -> 0 up and 0 -> 1 down, and each direction carries
  // the two channels' flows together, in both engines: T = 2 (2 (S/2) / B + alpha).
  const topo::Topology t = two_gpus();
  for (const Calibration& c : {ideal_calibration(), default_calibration()})
    for (std::uint64_t S : {kMiB, 64 * kMiB}) {
      CAPTURE(S);
      const algo::Schedule s = generate("dbt", t, S, 2, kMiB);
      const double analytic = make_analytic_engine()->run(t, s, c, SimOptions{}).time_s;
      CHECK(simulate(t, s, c).time_s == doctest::Approx(analytic).epsilon(1e-6));
    }
  const double S = static_cast<double>(kMiB);
  CHECK(simulate(t, generate("dbt", t, kMiB, 2, kMiB), ideal_calibration()).time_s ==
        doctest::Approx(2 * (S / 100e9 + 1e-6)).epsilon(1e-9));
}

TEST_CASE("simgrid: trees are never slower than the analytic engine's static sharing") {
  // The analytic engine gives each flow 1/k of a link direction that k flows of the schedule
  // ever cross; SimGrid shares among the flows active at the time, so it can only be faster.
  for (int which = 0; which < 2; ++which) {
    const topo::Topology t =
        which == 0 ? one_gpu_nodes(5) : topo::Topology::build(topo::make_dgx_h100_node(), 3, topo::FabricSpec{});
    for (const char* name : {"dbt", "hierarchical-dbt"}) {
      CAPTURE(which);
      CAPTURE(name);
      const algo::Schedule s = generate(name, t, 16 * kMiB, 2, kMiB);
      const double analytic = make_analytic_engine()->run(t, s, default_calibration(), SimOptions{}).time_s;
      CHECK(simulate(t, s, default_calibration()).time_s <= analytic * (1 + 1e-9));
    }
  }
}

// A tree by hand, one channel, one message of B bytes per hop, four one-GPU nodes (ideal
// machine: 50 GB/s per NIC link, alpha = 2.2 us a hop, t_B = B / 50 GB/s):
//
//        0            reduce up:   1 -> 2 and 3 -> 2 together share 2's NIC link in: 2 t_B + alpha
//        |                         2 -> 0 alone:                                      t_B + alpha
//        2            broadcast:   0 -> 2 alone:                                      t_B + alpha
//       / \                        2 -> 1 and 2 -> 3 share 2's NIC link out:         2 t_B + alpha
//      1   3          T = 6 t_B + 4 alpha
TEST_CASE("simgrid: a hand-made tree takes 6 t_B + 4 alpha") {
  const topo::Topology t = one_gpu_nodes(4);
  const std::uint64_t count = kMiB / 4;
  const std::vector<Program> programs = {
      {op(OpKind::RecvReduce, 2, count), op(OpKind::Send, 2, count)},
      {op(OpKind::Send, 2, count), op(OpKind::Recv, 2, count)},
      {op(OpKind::RecvReduce, 1, count), op(OpKind::RecvReduce, 3, count), op(OpKind::Send, 0, count),
       op(OpKind::Recv, 0, count), op(OpKind::Send, 1, count), op(OpKind::Send, 3, count)},
      {op(OpKind::Send, 2, count), op(OpKind::Recv, 2, count)},
  };
  const algo::Schedule s = hand_made(4, count, programs);
  const double t_B = static_cast<double>(kMiB) / 50e9, alpha = 2.2e-6;
  CHECK(simulate(t, s, ideal_calibration()).time_s == doctest::Approx(6 * t_B + 4 * alpha).epsilon(1e-9));
}

// ---------------------------------------------------------------------------------------------
// Fast paths: islands and the list workaround (simgrid_engine.cpp, "Speed")

// The transfers' public S4U path alone (TOPOCOLL_SIMGRID_LIST_WORKAROUND=0: SimGrid 3.32's
// list of detached comms as shipped, simgrid_adapter.hpp) and with the 3.32 fallback (the
// default; off by itself on any other SimGrid) start the same comms in the same order: the
// results are identical, operation by operation. dbt on 2 nodes without the fast paths: every
// transfer a SimGrid comm.
TEST_CASE("simgrid: the public path and SimGrid 3.32's list fallback give identical results") {
  const topo::Topology t = topo::Topology::build(topo::make_dgx_h100_node(), 2, [] {
    topo::FabricSpec f;
    f.kind = topo::FabricKind::RailFatTree;
    return f;
  }());
  const algo::Schedule s = generate("dbt", t, 8 * kMiB, 2, 512 * 1024);
  SimOptions o;
  o.trace = true;
  o.simgrid_fast_paths = false;
  const SimResult with_fallback = make_simgrid_engine()->run(t, s, default_calibration(), o);
  ::setenv("TOPOCOLL_SIMGRID_LIST_WORKAROUND", "0", 1);
  const SimResult public_only = make_simgrid_engine()->run(t, s, default_calibration(), o);
  ::unsetenv("TOPOCOLL_SIMGRID_LIST_WORKAROUND");
  CHECK(with_fallback.island_transfers == 0);
  CHECK(public_only.transfers == with_fallback.transfers);
  CHECK(public_only.time_s == with_fallback.time_s);
  REQUIRE(public_only.trace.size() == with_fallback.trace.size());
  std::size_t differ = 0;
  for (std::size_t k = 0; k < public_only.trace.size(); ++k)
    differ += public_only.trace[k].start_s != with_fallback.trace[k].start_s ||
              public_only.trace[k].end_s != with_fallback.trace[k].end_s;
  CHECK(differ == 0);
}

// An island of one group (a private route) with transfers that start at different times and
// have different sizes: one GPU pair, two channels. Channel 0 sends 2 MiB at once; channel 1 first copies 1 MiB (at
// 100 GB/s: t1 = 1 MiB / 100 GB/s) and then sends 2 MiB. The link (100 GB/s) carries channel 0
// alone until t1 (1 MiB pushed), both at 50 GB/s until channel 0 ends at 3 t1 (channel 1 has
// pushed 1 MiB), channel 1 alone until 4 t1; it lands 1 us later.
TEST_CASE("simgrid: an island of one route shares its links among the transfers in flight") {
  const topo::Topology t = two_gpus();
  const std::uint64_t count = 2 * kMiB / 4;
  Calibration c = ideal_calibration();
  c.reduce_gbps = 100.0;
  Op copy = op(OpKind::Copy, -1, count / 2, 1);
  const algo::Schedule s = hand_made(2, count,
                                     {{op(OpKind::Send, 1, count, 0), copy, op(OpKind::Send, 1, count, 1)},
                                      {op(OpKind::Recv, 0, count, 0), op(OpKind::Recv, 0, count, 1)}},
                                     2);
  const SimResult r = simulate(t, s, c, true);
  CHECK(r.island_transfers == 2);
  const double t1 = static_cast<double>(kMiB) / 100e9;
  CHECK(r.time_s == doctest::Approx(4 * t1 + 1e-6).epsilon(1e-9));
  for (const TraceEvent& e : r.trace)
    if (e.kind == OpKind::Send) CHECK(e.end_s == doctest::Approx(e.channel == 0 ? 3 * t1 : 4 * t1).epsilon(1e-9));
}

// An island of two groups with different bounds: gpu0 -> gpu2 and gpu1 -> gpu2 share the
// switch's link down to gpu2 (10 GB/s, the hub); gpu1's own link up is 2 GB/s. Max-min: the
// gpu1 flow takes its 2 GB/s, the gpu0 flow the 8 GB/s left; once gpu0's message is out, gpu1's
// stays at 2 GB/s.
//
//     gpu0 --10-- switch --10-- gpu2
//     gpu1 --2---/
TEST_CASE("simgrid: an island shares its hub by water-filling") {
  const topo::Topology t = three_gpus_on_a_switch({10.0, 2.0, 10.0});
  const std::uint64_t count = 4 * kMiB / 4;
  const double bytes = static_cast<double>(count * 4);
  const SimResult r = simulate(t, two_into_one(count), ideal_calibration(), true);
  CHECK(r.island_transfers == 2);
  for (const TraceEvent& e : r.trace)
    if (e.kind == OpKind::Send) CHECK(e.end_s == doctest::Approx(bytes / (e.rank == 0 ? 8e9 : 2e9)).epsilon(1e-9));
  CHECK(r.time_s == doctest::Approx(2e-6 + bytes / 2e9).epsilon(1e-9));
}

// Every registered algorithm on DGX H100 nodes with a rail-optimised fabric (PXN routes, NVLink
// paths shared or not), 1 and 3 channels, sliced: the fast paths change nothing (simulate()
// compares them with plain SimGrid), and islands are found (and not everywhere: dbt's chains
// share each GPU's NVLink port between two routes, each also sharing another port).
TEST_CASE("simgrid: fast paths give plain SimGrid's results for every algorithm") {
  topo::FabricSpec rail;
  rail.kind = topo::FabricKind::RailFatTree;
  // The NVSwitch planes merged, as `topocoll sim` builds it: NVLS groups (nvls-tree,
  // hierarchical-nvls) reduce in the one NVSwitch fabric.
  const topo::Topology t = topo::Topology::build(topo::merge_nvswitch_planes(topo::make_dgx_h100_node()), 3, rail);
  std::uint64_t private_transfers = 0, transfers = 0;
  for (const algo::Algorithm* alg : algo::select_algorithms("all", algo::Collective::AllReduce)) {
    for (int channels : {1, 3}) {
      CAPTURE(alg->name);
      CAPTURE(channels);
      algo::Tuning tuning;
      tuning.channels = channels;
      tuning.slice_bytes = 256 * 1024;
      const algo::CollectiveArgs args = args_for(t.num_ranks(), 3 * kMiB + 4);
      if (!alg->supports(algo::layout_of(t), args, tuning).ok) continue;
      const SimResult r = simulate(t, alg->generate(algo::layout_of(t), args, tuning), default_calibration());
      private_transfers += r.island_transfers;
      transfers += r.transfers;
    }
  }
  // And one where SimGrid's default time precision (1 ns) changed the result by 1.4 %: chunks
  // 4 bytes apart on 20 channels (simgrid_adapter.hpp, the network model).
  const topo::Topology one = topo::Topology::build(topo::make_dgx_h100_node(), 1, topo::FabricSpec{});
  const SimResult r20 = simulate(one, generate("ring", one, 2 * kMiB, 20, 512 * 1024), default_calibration());
  private_transfers += r20.island_transfers;
  transfers += r20.transfers;
  MESSAGE(fmt::format("{} of {} transfers on islands", private_transfers, transfers));
  CHECK(private_transfers > 0);
  CHECK(private_transfers < transfers);
}

// ---------------------------------------------------------------------------------------------
// Trace

TEST_CASE("simgrid: the trace has one event per operation, sends spanning their transfer") {
  const topo::Topology t = one_gpu_nodes(3);
  const algo::Schedule s = generate("ring", t, 3 * kMiB, 2, kMiB);
  Calibration c = default_calibration();
  const SimResult r = simulate(t, s, c, true);
  std::size_t ops = 0;
  for (int rank = 0; rank < 3; ++rank) ops += s.program(rank).size();
  CHECK(r.trace.size() == ops);
  double last = 0;
  for (const TraceEvent& e : r.trace) {
    CHECK(e.start_s >= c.launch_overhead_us * 1e-6 - 1e-15);
    CHECK(e.end_s >= e.start_s);
    last = std::max(last, e.end_s);
    // A send of B bytes over a 50 GB/s hop takes at least B / 50 GB/s.
    if (e.kind == OpKind::Send) CHECK(e.end_s - e.start_s >= static_cast<double>(e.bytes) / (50e9 * 0.95) * (1 - 1e-9));
  }
  CHECK(last == doctest::Approx(r.time_s));
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST_CASE("simgrid: bad schedules are schedule errors, a schedule that does not fit the topology an input error") {
  const topo::Topology t = two_gpus();
  SUBCASE("a receive that is never matched") {
    const algo::Schedule s = hand_made(2, 16, {{}, {op(OpKind::Recv, 0, 16)}});
    CHECK_THROWS_WITH_AS(simulate(t, s, ideal_calibration()), doctest::Contains("does not complete"), ScheduleError);
  }
  SUBCASE("a peer out of range") {
    const algo::Schedule s = hand_made(2, 16, {{op(OpKind::Send, 7, 16)}, {}});
    CHECK_THROWS_WITH_AS(simulate(t, s, ideal_calibration()), doctest::Contains("peer 7"), ScheduleError);
  }
  SUBCASE("every malformed schedule: the ScheduleError every executor gives") {
    for (const algo::testing::MalformedCase& c : algo::testing::malformed_schedules()) {
      INFO(c.name);
      CHECK_THROWS_WITH_AS(make_simgrid_engine()->run(t, c.schedule, ideal_calibration(), SimOptions{}),
                           c.message.c_str(), ScheduleError);
    }
  }
  SUBCASE("a schedule for another number of ranks") {
    const algo::Schedule s = hand_made(3, 16, {{}, {}, {}});
    CHECK_THROWS_WITH_AS(simulate(t, s, ideal_calibration()), doctest::Contains("3 ranks"), InputError);
  }
  SUBCASE("an operation over the engine's 256 GiB") {
    const std::uint64_t count = std::uint64_t{1} << 36;  // floats: 2^38 bytes, one byte too many
    const algo::Schedule s = hand_made(2, count, {{op(OpKind::Send, 1, count)}, {op(OpKind::Recv, 0, count)}});
    CHECK_THROWS_WITH_AS(simulate(t, s, ideal_calibration()), doctest::Contains("at most 274877906943"), InputError);
  }
}

}  // namespace

TEST_CASE("simgrid: protocols as calibrations: LL beats Simple on a ring at 8 B, Simple beats LL at 1 GiB") {
  const topo::Topology t = topo::Topology::build(topo::make_dgx_h100_node(), 1, topo::FabricSpec{});
  const Calibration ll = protocol_calibration(base_calibration(), Protocol::LL);
  const Calibration simple = protocol_calibration(base_calibration(), Protocol::Simple);
  const algo::Schedule small = generate("ring", t, 8, 2, 512 * 1024);
  const algo::Schedule large = generate("ring", t, std::uint64_t{1} << 30, 2, 512 * 1024);
  CHECK(simulate(t, small, ll).time_s < simulate(t, small, simple).time_s);
  const double ll1g = simulate(t, large, ll).time_s, simple1g = simulate(t, large, simple).time_s;
  CHECK(simple1g < ll1g);
  // The engines agree under every protocol.
  for (const Calibration& c : {ll, simple, protocol_calibration(base_calibration(), Protocol::LL128)})
    CHECK(simulate(t, large, c).time_s ==
          doctest::Approx(make_analytic_engine()->run(t, large, c, SimOptions{}).time_s).epsilon(1e-6));
}

// Every (source, destination) pair moves `bytes` at once, sends first (none waits for another).
algo::Schedule pair_transfers(int ranks, const std::vector<std::pair<int, int>>& pairs, std::uint64_t bytes) {
  const std::uint64_t count = bytes / 4;
  std::vector<Program> programs(static_cast<std::size_t>(ranks));
  for (const auto& [a, b] : pairs)
    algo::ProgramBuilder(programs[static_cast<std::size_t>(a)]).send(b, {BufferId::Input, 0, count}, 0);
  for (const auto& [a, b] : pairs)
    algo::ProgramBuilder(programs[static_cast<std::size_t>(b)]).recv(a, {BufferId::Output, 0, count}, 0);
  return algo::Schedule::from_programs(
      "pairs", algo::CollectiveArgs::allreduce(count, algo::DataType::Float32, algo::ReduceOp::Sum, ranks), 1, 0,
      std::move(programs));
}

TEST_CASE("simgrid: dragonfly global-link contention and hashed ECMP collisions, as the analytic engine sees them") {
  // One GPU and one 50 GB/s NIC per node behind a fast PCIe switch.
  topo::NodeModel m;
  m.name = "one-gpu";
  const auto cpu = m.add_device(DeviceKind::Cpu, 0);
  const auto sw = m.add_device(DeviceKind::PcieSwitch, 0);
  const auto gpu = m.add_gpu(0, 90);
  const auto nic = m.add_nic(0, 50.0);
  m.add_link(cpu, sw, LinkKind::Pcie, 500.0, 0.5, 16);
  m.add_link(sw, gpu, LinkKind::Pcie, 500.0, 0.5, 16);
  m.add_link(sw, nic, LinkKind::Pcie, 500.0, 0.5, 16);
  const std::uint64_t bytes = std::uint64_t{64} << 20;
  const double wire = static_cast<double>(bytes) / 50e9;
  const Calibration c = ideal_calibration();
  auto both = [&](const topo::Topology& t, const std::vector<std::pair<int, int>>& pairs) {
    const algo::Schedule s = pair_transfers(t.num_ranks(), pairs, bytes);
    const double sg = simulate(t, s, c).time_s;
    CHECK(sg == doctest::Approx(make_analytic_engine()->run(t, s, c, SimOptions{}).time_s).epsilon(1e-6));
    return sg;
  };
  topo::FabricSpec df;
  df.kind = topo::FabricKind::Dragonfly;
  df.nics_per_switch = 1;
  const std::vector<std::pair<int, int>> ring = {{0, 2}, {2, 1}, {1, 3}, {3, 0}};
  df.group_switches = 4;
  CHECK(both(topo::Topology::build(m, 4, df), ring) == doctest::Approx(wire).epsilon(0.01));
  df.group_switches = 2;  // two groups, one global link: 0 -> 2 and 1 -> 3 share it
  CHECK(both(topo::Topology::build(m, 4, df), ring) == doctest::Approx(2 * wire).epsilon(0.01));
  // 256 nodes on radix-64 fat-tree leaves, each sending to its peer on the next leaf: hashed
  // ECMP puts two flows on one uplink somewhere; ideal spreading does not.
  std::vector<std::pair<int, int>> shift;
  for (int a = 0; a < 256; ++a) shift.emplace_back(a, (a + 32) % 256);
  topo::FabricSpec ft;
  ft.kind = topo::FabricKind::FatTree;
  CHECK(both(topo::Topology::build(m, 256, ft), shift) >= 1.9 * wire);
  ft.ecmp = topo::EcmpMode::Ideal;
  CHECK(both(topo::Topology::build(m, 256, ft), shift) == doctest::Approx(wire).epsilon(0.01));
}

}  // namespace topocoll::sim
