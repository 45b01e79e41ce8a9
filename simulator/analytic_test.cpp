#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "algorithms/registry.hpp"
#include "common/errors.hpp"
#include "common/records.hpp"
#include "simulator/engine.hpp"
#include "simulator/routes.hpp"
#include "simulator/testing.hpp"
#include "simulator/trace.hpp"
#include "topologies/load.hpp"

using namespace topocoll;

namespace {

using sim::testing::load;

double simulate(const topo::Topology& t, const std::string& alg, std::uint64_t bytes, int channels, std::uint64_t slice,
                const sim::Calibration& c = sim::ideal_calibration()) {
  algo::CollectiveArgs a;
  a.ranks = t.num_ranks();
  a.count = bytes / 4;
  algo::Tuning tune;
  tune.channels = channels;
  tune.slice_bytes = slice;
  const algo::Schedule s = algo::find_algorithm(alg).generate(algo::layout_of(t), a, tune);
  return sim::make_analytic_engine()->run(t, s, c, {}).time_s;
}

}  // namespace

TEST_CASE("analytic: ring on uniform links equals 2(p-1)/p S/B + 2(p-1) alpha") {
  // One DGX-H100 node, NVSwitch planes merged: every ring hop is GPU -> NVSwitch -> GPU, 450 GB/s
  // per direction and 2 x 0.3 us, and no link carries two flows.
  const topo::Topology t = load("dgx-h100", 1);
  const double p = 8, B = 450e9, alpha = 0.6e-6;
  for (std::uint64_t S : {std::uint64_t{8} << 10, std::uint64_t{1} << 20, std::uint64_t{256} << 20}) {
    const double expected = 2 * (p - 1) / p * static_cast<double>(S) / B + 2 * (p - 1) * alpha;
    CHECK(simulate(t, "ring", S, 1, std::uint64_t{1} << 40) == doctest::Approx(expected).epsilon(0.01));
  }
}

TEST_CASE("analytic: ring across nodes, one GPU each, bottlenecked by the NIC") {
  // A hand-made node: one GPU and one 50 GB/s NIC behind a PCIe Gen5 switch.
  topo::NodeModel m;
  m.name = "one-gpu";
  const auto cpu = m.add_device(topo::DeviceKind::Cpu, 0);
  const auto sw = m.add_device(topo::DeviceKind::PcieSwitch, 0);
  const auto gpu = m.add_gpu(0, 90);
  const auto nic = m.add_nic(0, 50.0);
  m.add_link(cpu, sw, topo::LinkKind::Pcie, 63.0, 0.5, 16);
  m.add_link(sw, gpu, topo::LinkKind::Pcie, 63.0, 0.5, 16);
  m.add_link(sw, nic, topo::LinkKind::Pcie, 63.0, 0.5, 16);
  for (int p : {2, 5, 16}) {
    const topo::Topology t = topo::Topology::build(m, p, topo::FabricSpec{topo::FabricKind::SingleSwitch});
    const double B = 50e9, alpha = (0.5 + 0.5 + 0.6 + 0.6 + 0.5 + 0.5) * 1e-6;
    const double S = 64 << 20;
    const double expected = 2.0 * (p - 1) / p * S / B + 2.0 * (p - 1) * alpha;
    CHECK(simulate(t, "ring", static_cast<std::uint64_t>(S), 1, std::uint64_t{1} << 40) ==
          doctest::Approx(expected).epsilon(0.01));
  }
}

TEST_CASE("analytic: hierarchical matches its cost sheet phase by phase") {
  // 4 DGX-H100 nodes on one switch, 1 channel, one slice per chunk: intra-node reduce-scatter
  // (g-1 hops of S/g at 450 GB/s, 0.6 us), a ring over nodes per rail (2(N-1) hops of S/(gN) at
  // the NIC's 50 GB/s, 3.2 us), intra-node allgather (as the reduce-scatter). No link is shared.
  const topo::Topology t = load("dgx-h100", 4);
  const double g = 8, N = 4, S = 256 << 20;
  const double intra = (g - 1) * (S / g / 450e9 + 0.6e-6);
  const double inter = 2 * (N - 1) * (S / g / N / 50e9 + 3.2e-6);
  CHECK(simulate(t, "hierarchical", static_cast<std::uint64_t>(S), 1, std::uint64_t{1} << 40) ==
        doctest::Approx(2 * intra + inter).epsilon(0.01));
}

TEST_CASE("analytic: trees sit between their cost sheet's lower bound and three times it") {
  // Lower bound from the cost sheet: the busiest rank's intra-node bytes at 450 GB/s and inter-node
  // bytes at the NIC's 50 GB/s (overlapping for dbt, whose waves stream through both; one after the
  // other for hierarchical-dbt, whose phases are sequential), plus steps x the 0.6 us hop latency.
  const topo::Topology t = load("dgx-h100", 8);
  const algo::Layout l = algo::layout_of(t);
  for (const std::string alg : {"dbt", "hierarchical-dbt"}) {
    algo::CollectiveArgs a;
    a.ranks = t.num_ranks();
    a.count = (std::uint64_t{64} << 20) / 4;
    algo::Tuning tune;
    tune.channels = 2;
    tune.slice_bytes = std::uint64_t{1} << 40;
    const algo::CostSheet c = algo::find_algorithm(alg).cost(l, a, tune);
    const double intra = static_cast<double>(c.bytes_sent - c.inter_bytes_sent) / 450e9;
    const double inter = static_cast<double>(c.inter_bytes_sent) / 50e9;
    const double lower =
        (alg == "dbt" ? std::max(intra, inter) : intra + inter) + static_cast<double>(c.steps) * 0.6e-6;
    // Pipelined (256 KiB slices): the tree streams, so the busiest links' bytes dominate.
    const double time = simulate(t, alg, a.count * 4, 2, 256 << 10);
    INFO(alg, " time ", time, " lower ", lower);
    CHECK(time >= lower * 0.99);
    CHECK(time <= lower * 3.0);
  }
}

TEST_CASE("analytic: a tree channel's block cap bounds dbt at K x cap / 2, a ring is not capped") {
  // Two DGX A100 nodes: with a tree block cap of 2 GB/s (far below every link's share), each of
  // the K channels reduces its S/K bytes up and then broadcasts them down, each at 2 GB/s:
  // time ~ 2 (S/K) / cap (+ pipeline fill). The ring (pipeline channels) is untouched.
  const topo::Topology t = load("dgx-a100", 2);
  sim::Calibration c = sim::ideal_calibration();
  c.block_cap_gbps[static_cast<int>(algo::ChannelPattern::Tree)] = 2.0;
  const std::uint64_t S = 256ull << 20;
  const int K = 4;
  const double closed = 2.0 * (static_cast<double>(S) / K) / 2e9;
  const double tree = simulate(t, "dbt", S, K, 512 << 10, c);
  CHECK(tree >= closed);
  CHECK(tree <= closed * 1.10);
  CHECK(simulate(t, "ring", S, K, 512 << 10, c) == doctest::Approx(simulate(t, "ring", S, K, 512 << 10)));
}

TEST_CASE("analytic: an engine that solved other runs answers bit for bit as a fresh one") {
  // The engine keeps pass 1's rates and islands of recent runs (SharingMemo in analytic.cpp),
  // keyed by the flows' links, the links' rates and the flows' caps. One engine runs a sequence
  // in which the same connections come back under other sizes, other rates (the network's
  // efficiency alone, an NVLink cap alone) and on another topology; every answer must equal a fresh
  // engine's, and the runs that differ only in a rate must differ.
  const topo::Topology a = load("dgx-h100", 4, topo::FabricKind::RailFatTree);
  const topo::Topology b = load("dgx-a100", 2, topo::FabricKind::RailFatTree);
  const sim::Calibration ideal = sim::ideal_calibration(), defaults = sim::default_calibration();
  sim::Calibration slow_net = sim::default_calibration();
  slow_net.links[static_cast<int>(topo::LinkKind::Network)].efficiency = 0.5;
  sim::Calibration capped = sim::default_calibration();
  capped.channel_cap_gbps[static_cast<int>(topo::LinkKind::NvLink)] = 5.0;
  const std::vector<const sim::Calibration*> cals = {&ideal, &defaults, &slow_net, &capped};
  std::unique_ptr<sim::Engine> shared = sim::make_analytic_engine();
  int runs = 0;
  for (const topo::Topology* t : {&a, &b, &a})
    for (const std::string alg : {"ring", "dbt", "hierarchical"})
      for (int channels : {2, 8})
        for (std::uint64_t bytes : {std::uint64_t{1} << 20, std::uint64_t{64} << 20}) {
          algo::CollectiveArgs args;
          args.ranks = t->num_ranks();
          args.count = bytes / 4;
          algo::Tuning tune;
          tune.channels = channels;
          tune.slice_bytes = 512 << 10;
          const algo::Schedule s = algo::find_algorithm(alg).generate(algo::layout_of(*t), args, tune);
          std::vector<double> times;
          for (const sim::Calibration* c : cals) {
            CAPTURE(alg);
            CAPTURE(channels);
            CAPTURE(bytes);
            const double fresh = sim::make_analytic_engine()->run(*t, s, *c, {}).time_s;
            times.push_back(shared->run(*t, s, *c, {}).time_s);
            CHECK(times.back() == fresh);
            ++runs;
          }
          // At 64 MiB the network's rate matters across nodes and the NVLink cap inside them:
          // the last two differ from the defaults in that one input each.
          if (bytes == std::uint64_t{64} << 20) {
            CHECK(times[2] != times[1]);
            CHECK(times[3] != times[1]);
          }
        }
  CHECK(runs == 144);
}

TEST_CASE("analytic: a run on two threads answers bit for bit as on one") {
  // SimOptions::threads (analytic.cpp, "Threads"): on 1024 GPUs the ring's walk is needed and
  // runs ahead on the second thread while its passes run; on 8192 GPUs the islands are found
  // beside max-min, hierarchical's walk is started and stopped (pass 1 is exact), and dbt on 8
  // channels takes pass 2. Each must equal the one-thread run to the bit, and must have used the
  // second thread.
  struct Case {
    int nodes;
    const char* alg;
    int channels;
  };
  const Case cases[] = {{128, "ring", 16}, {1024, "hierarchical", 16}, {1024, "dbt", 8}};
  const sim::Calibration simple = sim::default_calibration();  // NCCL's Simple protocol
  for (const Case& k : cases) {
    CAPTURE(k.nodes);
    CAPTURE(std::string(k.alg));
    const topo::Topology t = load("dgx-h100", k.nodes, topo::FabricKind::RailFatTree);
    algo::CollectiveArgs args;
    args.ranks = t.num_ranks();
    args.count = (std::uint64_t{64} << 20) / 4;
    algo::Tuning tune;
    tune.channels = k.channels;
    tune.slice_bytes = 512 << 10;
    const algo::Schedule s = algo::find_algorithm(k.alg).generate(algo::layout_of(t), args, tune);
    sim::SimOptions two;
    two.threads = 2;
    const sim::SimResult a = sim::make_analytic_engine()->run(t, s, simple, {});
    const sim::SimResult b = sim::make_analytic_engine()->run(t, s, simple, two);
    CHECK(a.threads_used == 1);
    CHECK(b.threads_used == 2);
    CHECK(a.time_s == b.time_s);
    CHECK(a.transfers == b.transfers);
    CHECK(a.ranks_simulated == b.ranks_simulated);
  }
}

TEST_CASE("analytic: calibration slows it down the way the defaults say") {
  const topo::Topology t = load("dgx-h100", 1);
  const double ideal = simulate(t, "ring", std::uint64_t{1} << 30, 2, 512 << 10);
  const double real = simulate(t, "ring", std::uint64_t{1} << 30, 2, 512 << 10, sim::default_calibration());
  // Large messages: NVLink efficiency 20.6/25 dominates.
  CHECK(real / ideal == doctest::Approx(25.0 / 20.6).epsilon(0.03));
}

TEST_CASE("analytic: the trace has one event per operation, in order per channel") {
  const topo::Topology t = load("dgx-h100", 1);
  algo::CollectiveArgs a;
  a.ranks = 8;
  a.count = 4096;
  algo::Tuning tune;
  tune.channels = 2;
  const algo::Schedule s = algo::find_algorithm("ring").generate(algo::layout_of(t), a, tune);
  sim::SimOptions o;
  o.trace = true;
  const sim::SimResult r = sim::make_analytic_engine()->run(t, s, sim::ideal_calibration(), o);
  std::size_t ops = 0;
  for (int rank = 0; rank < 8; ++rank) ops += s.program(rank).size();
  CHECK(r.trace.size() == ops);
  for (const auto& e : r.trace) CHECK(e.end_s >= e.start_s);
  std::ostringstream os;
  const sim::TraceStats st = sim::write_chrome_trace(r.trace, 8, 2, os);
  const nlohmann::json j = nlohmann::json::parse(os.str());
  std::size_t complete = 0, flow_starts = 0, flow_ends = 0, sends = 0;
  for (const auto& e : j["traceEvents"]) {
    complete += e["ph"] == "X";
    flow_starts += e["ph"] == "s";
    flow_ends += e["ph"] == "f";
  }
  for (const auto& e : r.trace) sends += e.kind == algo::OpKind::Send;
  CHECK(complete == ops);
  CHECK(st.events == ops);
  // A ring: every send is received, one arrow each.
  CHECK(st.flows == sends);
  CHECK(flow_starts == sends);
  CHECK(flow_ends == sends);
  // Two ranks only: their events, and the arrows between them.
  std::ostringstream two;
  sim::TraceOptions o2;
  o2.ranks = {{0, 1}};
  const sim::TraceStats st2 = sim::write_chrome_trace(r.trace, 8, 2, two, o2);
  std::size_t ops01 = s.program(0).size() + s.program(1).size();
  CHECK(st2.events == ops01);
  CHECK(st2.ranks == 2);
  CHECK(st2.flows < st.flows);
  CHECK(st2.flows > 0);
}

TEST_CASE("trace: rank ranges") {
  CHECK(sim::parse_rank_ranges("0-3,8,2-5", 16) == std::vector<std::pair<int, int>>{{0, 5}, {8, 8}});
  CHECK(sim::parse_rank_ranges("15", 16) == std::vector<std::pair<int, int>>{{15, 15}});
  for (const char* bad : {"", "0-", "-3", "3-1", "16", "a", "1,,2", "0-99"})
    CHECK_THROWS_AS(sim::parse_rank_ranges(bad, 16), InputError);
  CHECK_THROWS_WITH_AS(sim::parse_rank_ranges("0-99", 16), doctest::Contains("rank 99 is not one of the 16 ranks"),
                       InputError);
  CHECK(sim::default_trace_ranks(8) == std::vector<std::pair<int, int>>{{0, 7}});
  CHECK(sim::default_trace_ranks(1024) == std::vector<std::pair<int, int>>{{0, 3}, {1020, 1023}});
}

TEST_CASE("records: a record survives JSON, and bad records are rejected") {
  records::Record r;
  r.engine = "analytic";
  r.algorithm = "ring";
  r.topology = "dgx-h100";
  r.nodes = 2;
  r.ranks = 16;
  r.size_bytes = 1024;
  r.time_us = 12.5;
  r.wrong = 0;
  const records::Record back = records::record_from_json(records::to_json(r));
  CHECK(back.algorithm == "ring");
  CHECK(back.time_us == 12.5);
  CHECK(back.wrong == std::optional<std::uint64_t>(0));
  nlohmann::json bad = records::to_json(r);
  bad.erase("time_us");
  CHECK_THROWS_AS(records::record_from_json(bad), InputError);
  CHECK_THROWS_AS(records::record_from_json(nlohmann::json{{"schema", "other"}}), InputError);
}

TEST_CASE("calibration: files override defaults; bad files name the key") {
  const sim::Calibration c = sim::parse_calibration(
      R"({"links": {"network": {"efficiency": 0.9}}, "channel_cap_gbps": {"nvlink": 40}, "step_overhead_us": 1})",
      "c.json");
  CHECK(c.of(topo::LinkKind::Network).efficiency == 0.9);
  CHECK(c.of(topo::LinkKind::NvLink).efficiency == doctest::Approx(20.6 / 25));  // default kept
  CHECK(c.cap(topo::LinkKind::NvLink) == 40);
  CHECK(c.step_overhead_us == 1);
  CHECK_THROWS_WITH_AS(sim::parse_calibration("{\"links\": {\"nvlnk\": {}}}", "c.json"),
                       doctest::Contains("'links.nvlnk': unknown link kind"), InputError);
  CHECK_THROWS_WITH_AS(sim::parse_calibration("{\"links\": {\"pcie\": {\"efficiency\": 1.5}}}", "c.json"),
                       doctest::Contains("'links.pcie.efficiency' = 1.5 is outside [1e-06, 1]"), InputError);
  CHECK_THROWS_WITH_AS(sim::parse_calibration("{\"step\": 1}", "c.json"), doctest::Contains("unknown key 'step'"),
                       InputError);
  CHECK_THROWS_WITH_AS(sim::parse_calibration("{\n\"step_overhead_us\": }", "c.json"),
                       doctest::Contains("c.json:2: not valid JSON"), InputError);
  CHECK_THROWS_WITH_AS(sim::parse_calibration("{\"reduce_gbps\": \"fast\"}", "c.json"),
                       doctest::Contains("'reduce_gbps' must be a number"), InputError);
  CHECK_THROWS_WITH_AS(sim::make_engine("ns3"), doctest::Contains("unknown engine 'ns3': expected simgrid or analytic"),
                       InputError);
}
