// MSCCL XML round trip in simulated time: every registered algorithm MSCCL XML can express,
// exported and imported, simulates to the same time as the schedule it came from (analytic
// engine, one node and two nodes).
#include <doctest/doctest.h>

#include <sstream>

#include "algorithms/ir/msccl_xml.hpp"
#include "algorithms/registry.hpp"
#include "algorithms/testing.hpp"
#include "simulator/calibration.hpp"
#include "simulator/engine.hpp"
#include "simulator/testing.hpp"

using namespace topocoll;

TEST_CASE("msccl xml round trip: the imported schedule simulates to the exported one's time") {
  std::size_t compared = 0;
  for (int nodes : {1, 2}) {
    const topo::Topology t = sim::testing::load("dgx-h100", nodes);
    const algo::Layout layout = algo::layout_of(t);
    const int p = t.num_ranks();
    for (const algo::Algorithm& alg : algo::registry()) {
      if (alg.collective == algo::Collective::AllToAllV) continue;
      for (std::uint64_t n : {std::uint64_t{4096}, std::uint64_t{1} << 20}) {
        algo::Tuning tune;
        tune.channels = 2;
        tune.slice_bytes = 64 * 1024;
        const algo::CollectiveArgs a = algo::testing::conformance_args(alg.collective, p, n, 1, false);
        if (!alg.supports(layout, a, tune).ok) continue;
        const algo::Schedule s = alg.generate(layout, a, tune);
        if (s.uses_switch()) continue;
        std::ostringstream xml;
        algo::write_msccl_xml(s, xml);
        const algo::Schedule back = algo::instantiate(algo::parse_msccl_xml(xml.str(), alg.name + ".xml"), a);
        const double t1 = sim::make_analytic_engine()->run(t, s, sim::default_calibration(), {}).time_s;
        const double t2 = sim::make_analytic_engine()->run(t, back, sim::default_calibration(), {}).time_s;
        INFO(alg.name, " nodes=", nodes, " n=", n);
        CHECK(t1 > 0);
        CHECK(t2 == t1);
        ++compared;
      }
    }
  }
  MESSAGE(compared, " schedules compared");
  CHECK(compared > 20);
}
