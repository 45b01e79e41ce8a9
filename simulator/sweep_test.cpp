#include "simulator/sweep.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "algorithms/registry.hpp"
#include "common/errors.hpp"
#include "topologies/load.hpp"

using namespace topocoll;

namespace {

// `topocoll sim --topology pcie-8gpu --algorithm ring,dbt -b 8 -e 64M -f 64 --engine analytic`,
// the point ring at 2 MiB: simulator/testdata/golden/pcie8-ring-analytic.txt prints
//      2097152       524288    float    sum       264.95       7.92      13.85  Simple
// and Ring/Simple 332.87 us for stock NCCL's choice at that size.
struct Pcie8 {
  topo::Topology t = [] {
    topo::TopologyOptions o;
    o.topology = "pcie-8gpu";
    o.merge_nvswitch_planes = true;  // as `topocoll sim`
    return topo::load_topology(o);
  }();
  sim::Calibration calib = sim::base_calibration();
  // NCCL 2.22.3: the release the numbers below were worked for (the 2.28.9 record is checked after).
  sim::NcclGraphEstimate nccl = sim::estimate_nccl_graph(t, sim::NcclModelOptions{sim::NcclVersion::V2_22_3});
  records::Record base = sim::simulated_base(t, "analytic", "pcie-8gpu", algo::ReduceOp::Sum, 512 * 1024, calib.source);
};

}  // namespace

TEST_CASE("sweep: simulate_point gives the record `topocoll sim` prints for one point") {
  Pcie8 p;
  const std::unique_ptr<sim::Engine> engine = sim::make_engine("analytic");
  const sim::ProtocolSet protocols = sim::protocol_set(p.nccl, p.calib, "", "--protocol");
  REQUIRE(protocols.protocols.size() == protocols.calibrations.size());
  REQUIRE(protocols.protocols.size() == 2);  // the golden header: "protocols LL, Simple"
  algo::Tuning tuning;
  tuning.channels = 2;
  tuning.slice_bytes = 512 * 1024;
  const std::uint64_t bytes = 2097152;
  const algo::CollectiveArgs args =
      algo::CollectiveArgs::allreduce(bytes / 4, algo::DataType::Float32, algo::ReduceOp::Sum, p.t.num_ranks());
  const algo::Schedule sched = algo::find_algorithm("ring").generate(algo::layout_of(p.t), args, tuning);
  const sim::SimulatedPoint pt =
      sim::simulate_point(*engine, p.t, sched, protocols, p.base, "ring", bytes, args.count, algo::DataType::Float32);
  const records::Record& r = pt.record;
  CHECK(r.kind == "simulated");
  CHECK(r.engine == "analytic");
  CHECK(r.algorithm == "ring");
  CHECK(r.topology == "pcie-8gpu");
  CHECK(r.nodes == 1);
  CHECK(r.ranks == 8);
  CHECK(r.fabric == "");
  CHECK(r.size_bytes == bytes);
  CHECK(r.count == 524288);
  CHECK(r.dtype == "float");
  CHECK(r.op == "sum");
  CHECK(r.channels == 2);
  CHECK(r.slice_bytes == 524288);
  CHECK(r.calibration == "defaults");
  CHECK(fmt::format("{:.2f}", r.time_us) == "264.95");
  CHECK(fmt::format("{:.2f}", r.algbw_gbps) == "7.92");
  CHECK(fmt::format("{:.2f}", r.busbw_gbps) == "13.85");
  REQUIRE(r.protocol);
  CHECK(*r.protocol == "Simple");
  CHECK(pt.result.time_s * 1e6 == r.time_us);

  // The fastest of the protocols, each run on its own.
  double fastest = 0.0;
  for (std::size_t i = 0; i < protocols.calibrations.size(); ++i) {
    const double ti = engine->run(p.t, sched, protocols.calibrations[i], {}).time_s;
    if (i == 0 || ti < fastest) fastest = ti;
  }
  CHECK(pt.result.time_s == fastest);
}

TEST_CASE("sweep: per-call channels give each protocol NCCL's count for the call, the fastest kept") {
  // One DGX H100 (comm->nChannels 24): a 64 KiB ring runs LL on 2 channels (512 * 8 * 8 ranks
  // = 32 KiB per channel), LL128 on 12 (5 KiB), Simple on 2 (32 KiB); a dbt is a tree (LL on 16,
  // 4 KiB). Each run equals the schedule at that count simulated alone.
  topo::TopologyOptions o;
  o.topology = "dgx-h100";
  o.merge_nvswitch_planes = true;  // as `topocoll sim`
  const topo::Topology t = topo::load_topology(o);
  const sim::NcclGraphEstimate nccl = sim::estimate_nccl_graph(t);
  const sim::Calibration calib = sim::base_calibration();
  const sim::ProtocolSet protocols = sim::protocol_set(nccl, calib, "", "--protocol");
  REQUIRE(protocols.protocols.size() == 3);
  const records::Record base = sim::simulated_base(t, "analytic", "dgx-h100", algo::ReduceOp::Sum, 512 * 1024, "");
  const std::unique_ptr<sim::Engine> engine = sim::make_engine("analytic");
  const sim::ChannelRule rule{sim::nccl_channels(nccl), true};
  REQUIRE(rule.channels == 24);
  const std::uint64_t bytes = 64 * 1024;
  const algo::CollectiveArgs args =
      algo::CollectiveArgs::allreduce(bytes / 4, algo::DataType::Float32, algo::ReduceOp::Sum, t.num_ranks());
  for (const char* name : {"ring", "dbt"}) {
    CAPTURE(name);
    const algo::Algorithm& alg = algo::find_algorithm(name);
    int made = 0;
    const sim::ScheduleMaker make = [&](int channels) {
      ++made;
      algo::Tuning tuning;
      tuning.channels = channels;
      tuning.slice_bytes = 512 * 1024;
      return alg.generate(algo::layout_of(t), args, tuning);
    };
    const std::vector<int> channels = sim::protocol_channels(nccl, protocols, make(24), rule, bytes);
    const std::vector<int> expected =
        std::string(name) == "ring" ? std::vector<int>{2, 12, 2} : std::vector<int>{16, 12, 2};
    CHECK(channels == expected);
    made = 0;
    const sim::SimulatedPoint pt = sim::simulate_point(*engine, t, make, rule, nccl, protocols, base, name, bytes,
                                                       args.count, algo::DataType::Float32);
    CHECK(made == (std::string(name) == "ring" ? 3 : 4));  // 24 (for its pattern), then each count below
    double fastest = 0.0;
    int fastest_channels = 0;
    for (std::size_t i = 0; i < protocols.protocols.size(); ++i) {
      const double ti = engine->run(t, make(channels[i]), protocols.calibrations[i], {}).time_s;
      if (i == 0 || ti < fastest) {
        fastest = ti;
        fastest_channels = channels[i];
      }
    }
    CHECK(pt.result.time_s == fastest);
    CHECK(pt.record.channels == fastest_channels);
    // A fixed rule runs every protocol on the full width, as before.
    const sim::SimulatedPoint fixed =
        sim::simulate_point(*engine, t, make, sim::ChannelRule{24, false}, nccl, protocols, base, name, bytes,
                            args.count, algo::DataType::Float32);
    CHECK(fixed.record.channels == 24);
  }
}

TEST_CASE("sweep: nccl_model_point is stock NCCL's choice as a model record") {
  Pcie8 p;
  const records::Record r = sim::nccl_model_point(p.nccl, p.base, 2097152, algo::DataType::Float32);
  CHECK(r.kind == "model");
  CHECK(r.engine == "nccl-model");
  CHECK(r.algorithm == "nccl:Ring/Simple");
  CHECK(r.count == 524288);
  CHECK(r.dtype == "float");
  CHECK(r.channels == p.nccl.channels);
  CHECK(fmt::format("{:.2f}", r.time_us) == "332.87");
  REQUIRE(r.protocol);
  CHECK(*r.protocol == "Simple");
  CHECK(r.algbw_gbps == doctest::Approx(2097152 / (r.time_us * 1e-6) / 1e9));
  CHECK(r.busbw_gbps == doctest::Approx(r.algbw_gbps * 2 * 7 / 8.0));
}

TEST_CASE("sweep: nccl_channels doubles the ring graph's channels, at most MAXCHANNELS (32, then 64)") {
  sim::NcclGraphEstimate g;
  g.options.version = sim::NcclVersion::V2_22_3;
  g.channels = 4;
  g.comm_channels = 0;
  CHECK(sim::nccl_channels(g) == 8);
  g.comm_channels = 12;
  CHECK(sim::nccl_channels(g) == 12);
  g.comm_channels = 40;
  CHECK(sim::nccl_channels(g) == 32);
  g.options.version = sim::NcclVersion::V2_28_9;  // MAXCHANNELS 64 (2.28 src/include/device.h)
  CHECK(sim::nccl_channels(g) == 40);
  g.comm_channels = 80;
  CHECK(sim::nccl_channels(g) == 64);
}

TEST_CASE("sweep: records carry the collective; sizes, counts and busbw are nccl-tests' for it") {
  Pcie8 p;
  const sim::NcclGraphEstimate nccl = sim::estimate_nccl_graph(p.t);  // 2.28.9: every collective but alltoall
  // all_gather_perf -b 1000 over 8 ranks of floats: 250 elements, 31 per rank, 992 bytes received.
  const records::Record m =
      sim::nccl_model_point(nccl, p.base, 1000, algo::DataType::Float32, algo::Collective::AllGather);
  CHECK(m.collective == "allgather");
  CHECK(m.count == 31);
  CHECK(m.size_bytes == 992);
  CHECK(m.time_us == doctest::Approx(sim::nccl_choice(nccl, 992, algo::Collective::AllGather).time_us));
  CHECK(m.algbw_gbps == doctest::Approx(992 / (m.time_us * 1e-6) / 1e9));
  CHECK(m.busbw_gbps == doctest::Approx(m.algbw_gbps * 7 / 8.0));
  const records::Record b =
      sim::nccl_model_point(nccl, p.base, 1000, algo::DataType::Float32, algo::Collective::Broadcast);
  CHECK(b.collective == "broadcast");
  CHECK(b.count == 250);
  CHECK(b.busbw_gbps == doctest::Approx(b.algbw_gbps));
  CHECK_THROWS_AS(sim::nccl_model_point(nccl, p.base, 1000, algo::DataType::Float32, algo::Collective::AllToAll),
                  topocoll::InputError);

  // A simulated allgather point: the schedule's collective, busbw * (p-1)/p.
  const std::unique_ptr<sim::Engine> engine = sim::make_engine("analytic");
  const sim::ProtocolSet protocols = sim::protocol_set(nccl, p.calib, "Simple", "--protocol");
  const algo::CollectiveArgs args = algo::nccl_tests_args(algo::Collective::AllGather, 8 * 1024 * 1024,
                                                          algo::DataType::Float32, algo::ReduceOp::Sum, 8);
  const algo::Schedule sched = algo::find_algorithm("allgather-ring").generate(algo::layout_of(p.t), args, {});
  const sim::SimulatedPoint pt = sim::simulate_point(*engine, p.t, sched, protocols, p.base, "allgather-ring",
                                                     algo::nccl_tests_bytes(args), args.count, algo::DataType::Float32);
  CHECK(pt.record.collective == "allgather");
  CHECK(pt.record.size_bytes == 8 * 1024 * 1024);
  CHECK(pt.record.count == 262144);
  CHECK(pt.record.busbw_gbps == doctest::Approx(pt.record.algbw_gbps * 7 / 8.0));
}
