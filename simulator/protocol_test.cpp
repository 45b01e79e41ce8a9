// Protocols as derived calibrations (simulator/calibration.hpp): the derivation follows NCCL's
// tables (simulator/nccl_model.cpp), and the protocols trade latency for bandwidth as NCCL's do.
#include <doctest/doctest.h>

#include "algorithms/registry.hpp"
#include "common/errors.hpp"
#include "simulator/calibration.hpp"
#include "simulator/engine.hpp"
#include "simulator/nccl_model.hpp"
#include "simulator/routes.hpp"
#include "simulator/testing.hpp"
#include "topologies/load.hpp"

using namespace topocoll;

namespace {

using sim::testing::load;

double ring_time(const topo::Topology& t, std::uint64_t bytes, const sim::Calibration& c, sim::Engine& engine) {
  algo::CollectiveArgs a;
  a.ranks = t.num_ranks();
  a.count = bytes / 4;
  algo::Tuning tune;
  tune.channels = 2;
  tune.slice_bytes = 512 << 10;
  const algo::Schedule s = algo::find_algorithm("ring").generate(algo::layout_of(t), a, tune);
  return engine.run(t, s, c, {}).time_s;
}

constexpr int kRing = static_cast<int>(sim::NcclAlgo::Ring);

}  // namespace

TEST_CASE("protocol: a derived calibration is what NCCL's tables say") {
  const sim::NcclTuningTables& tb = sim::nccl_tuning_tables();
  const sim::Calibration base = sim::base_calibration();
  CHECK(base.step_overhead_us == 0);
  CHECK(base.launch_overhead_us == 0);
  CHECK(!base.protocol);
  struct Expect {
    sim::Protocol p;
    sim::NcclProto np;
    double nvlink, pci, net, launch, payload;  // NCCL 2.22.3 tuning.cc, by hand
  };
  for (const Expect& e :
       {Expect{sim::Protocol::LL, sim::NcclProto::LL, 0.0, 0.0, 0.0, 6.6, 0.5},
        Expect{sim::Protocol::LL128, sim::NcclProto::LL128, 1.9 - 0.6, 2.5 - 1.0, 4.0 - 2.7, 14.0, 120.0 / 128},
        Expect{sim::Protocol::Simple, sim::NcclProto::Simple, 3.4 - 0.6, 5.7 - 1.0, 14.0 - 2.7, 8.4, 1.0}}) {
    CAPTURE(sim::to_string(e.p));
    const sim::Calibration c = sim::protocol_calibration(base, e.p);
    REQUIRE(c.protocol);
    CHECK(*c.protocol == e.p);
    const int p = static_cast<int>(e.np), ll = static_cast<int>(sim::NcclProto::LL);
    // hwLat[hw][Ring][p] - hwLat[hw][Ring][LL], baseLat[Ring][p]: the tables themselves...
    for (int hw : {sim::kNcclHwNvlink, sim::kNcclHwPci, sim::kNcclHwNet})
      CHECK(c.step_overhead_hw_us[static_cast<std::size_t>(hw)] ==
            doctest::Approx(tb.hw_lat_us[hw][kRing][p] - tb.hw_lat_us[hw][kRing][ll]));
    CHECK(c.launch_overhead_us == doctest::Approx(tb.base_lat_us[kRing][p]));
    // ... and the numbers printed in NCCL 2.22.3's tuning.cc.
    CHECK(c.step_overhead_hw_us[0] == doctest::Approx(e.nvlink));
    CHECK(c.step_overhead_hw_us[1] == doctest::Approx(e.pci));
    CHECK(c.step_overhead_hw_us[2] == doctest::Approx(e.net));
    CHECK(c.launch_overhead_us == doctest::Approx(e.launch));
    CHECK(c.payload_efficiency == doctest::Approx(e.payload));
    // Link rates carry the payload efficiency; hardware efficiencies are the base's.
    const topo::Topology t = load("dgx-h100", 1);
    const auto& g = t.graph();
    for (auto [it, end] = boost::edges(g); it != end; ++it)
      CHECK(c.rate_bytes_per_s(g, *it) == doctest::Approx(base.rate_bytes_per_s(g, *it) * e.payload));
  }
  // The defaults are the Simple protocol's: 2.8 us per NVLink hop as before, 8.4 us per call.
  const sim::Calibration d = sim::default_calibration();
  CHECK(d.step_overhead_us == doctest::Approx(2.8));
  CHECK(d.launch_overhead_us == doctest::Approx(8.4));
  REQUIRE(d.protocol);
  CHECK(*d.protocol == sim::Protocol::Simple);
}

TEST_CASE("protocol: the hop class picks the step overhead") {
  const topo::Topology t = load("dgx-h100", 2);
  const sim::Calibration c = sim::default_calibration();
  sim::Router router(t);
  const auto& g = t.graph();
  CHECK(sim::hop_class(g, router.route(0, 1).links) == sim::HopClass::NvLink);
  CHECK(c.step_overhead_for(g, router.route(0, 1).links) == doctest::Approx(2.8));
  CHECK(sim::hop_class(g, router.route(0, 8).links) == sim::HopClass::Net);
  CHECK(c.step_overhead_for(g, router.route(0, 8).links) == doctest::Approx(14.0 - 2.7));
  const topo::Topology pcie = load("pcie-8gpu", 1);
  sim::Router prouter(pcie);
  CHECK(sim::hop_class(pcie.graph(), prouter.route(0, 1).links) == sim::HopClass::Pci);
}

TEST_CASE("protocol: a calibration file keeps its overheads under every protocol, and may pick the protocol") {
  const sim::Calibration f =
      sim::parse_calibration(R"({"step_overhead_us": 1.5, "launch_overhead_us": 3, "protocol": "ll128"})", "f.json");
  REQUIRE(f.only_protocol);
  CHECK(*f.only_protocol == sim::Protocol::LL128);
  for (sim::Protocol p : {sim::Protocol::LL, sim::Protocol::LL128, sim::Protocol::Simple}) {
    const sim::Calibration c = sim::protocol_calibration(f, p);
    CHECK(c.step_overhead_us == 1.5);
    CHECK(c.step_overhead_hw_us[2] < 0);  // not derived: step_overhead_us holds for every hop
    CHECK(c.launch_overhead_us == 3);
  }
  CHECK(!sim::parse_calibration(R"({"protocol": "auto"})", "f.json").only_protocol);
  CHECK_THROWS_WITH_AS(sim::parse_calibration(R"({"protocol": "LL64"})", "f.json"),
                       doctest::Contains("expected auto, LL, LL128 or Simple"), InputError);
  CHECK_THROWS_AS(sim::parse_calibration(R"({"protocol": 3})", "f.json"), InputError);
}

TEST_CASE("protocol: LL beats Simple on a ring at 8 B, Simple beats LL at 1 GiB") {
  const topo::Topology t = load("dgx-h100", 1);
  const sim::Calibration base = sim::base_calibration();
  const sim::Calibration ll = sim::protocol_calibration(base, sim::Protocol::LL);
  const sim::Calibration simple = sim::protocol_calibration(base, sim::Protocol::Simple);
  auto engine = sim::make_analytic_engine();
  const double ll8 = ring_time(t, 8, ll, *engine), simple8 = ring_time(t, 8, simple, *engine);
  const double ll1g = ring_time(t, std::uint64_t{1} << 30, ll, *engine),
               simple1g = ring_time(t, std::uint64_t{1} << 30, simple, *engine);
  CHECK(ll8 < simple8);
  CHECK(simple1g < ll1g);
  // At 8 B both are latency: 6.6 + 14 x 0.6 us (LL) against 8.4 + 14 x 3.4 us (Simple).
  CHECK(ll8 == doctest::Approx((6.6 + 14 * 0.6) * 1e-6).epsilon(0.01));
  CHECK(simple8 == doctest::Approx((8.4 + 14 * 3.4) * 1e-6).epsilon(0.01));
  // At 1 GiB both are bandwidth: LL moves twice the bytes for the same payload.
  CHECK(ll1g / simple1g == doctest::Approx(2.0).epsilon(0.02));
}
