// The contract's static half in the analytic engine (algorithms/ir/program_index.hpp): a malformed
// schedule is the ScheduleError every executor gives, never undefined behaviour. The SimGrid
// engine's case is in simgrid_engine_test.cpp (a binary of its own).
#include <doctest/doctest.h>

#include "algorithms/malformed_schedules.hpp"
#include "common/errors.hpp"
#include "simulator/engine.hpp"
#include "topologies/presets.hpp"

namespace topocoll::sim {
namespace {

topo::Topology two_gpus() {
  topo::NodeModel m;
  m.name = "two-gpus";
  const auto a = m.add_gpu(0, 90), b = m.add_gpu(0, 90);
  m.add_link(a, b, topo::LinkKind::NvLink, 100.0, 1.0);
  return topo::Topology::build(m, 1, topo::FabricSpec{});
}

TEST_CASE("analytic: a malformed schedule is the ScheduleError every executor gives") {
  const topo::Topology t = two_gpus();
  for (const algo::testing::MalformedCase& c : algo::testing::malformed_schedules()) {
    INFO(c.name);
    CHECK_THROWS_WITH_AS(make_analytic_engine()->run(t, c.schedule, ideal_calibration(), SimOptions{}),
                         c.message.c_str(), ScheduleError);
  }
}

TEST_CASE("analytic: a schedule that does not complete is a ScheduleError") {
  std::vector<algo::Program> programs(2);
  algo::ProgramBuilder(programs[1]).recv(0, {algo::BufferId::Output, 0, 4}, 0);
  const algo::Schedule s = algo::Schedule::from_programs(
      "lonely-recv", algo::CollectiveArgs::allreduce(4, algo::DataType::Float32, algo::ReduceOp::Sum, 2), 1, 0,
      std::move(programs));
  CHECK_THROWS_WITH_AS(make_analytic_engine()->run(two_gpus(), s, ideal_calibration(), SimOptions{}),
                       "the schedule does not complete: rank 1 channel 0 waits forever (run `topocoll verify`)",
                       ScheduleError);
}

}  // namespace
}  // namespace topocoll::sim
