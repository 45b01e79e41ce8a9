// An installed topocoll used from outside: ring allreduce on 2 x DGX-H100, proven by the verifier
// and timed by the analytic engine.
#include <cstdio>

#include "algorithms/ir/layout.hpp"
#include "algorithms/registry.hpp"
#include "algorithms/verifier.hpp"
#include "simulator/calibration.hpp"
#include "simulator/engine.hpp"
#include "topologies/load.hpp"

int main() {
  using namespace topocoll;
  topo::TopologyOptions options;
  options.topology = "dgx-h100";
  options.nodes = 2;
  const topo::Topology t = topo::load_topology(options);
  const algo::Layout layout = algo::layout_of(t);
  const auto args =
      algo::CollectiveArgs::allreduce(1u << 20, algo::DataType::Float32, algo::ReduceOp::Sum, layout.ranks);
  const algo::Schedule s = algo::find_algorithm("ring").generate(layout, args, algo::Tuning{});
  const algo::VerifyResult v = algo::verify(s);
  const sim::SimResult r = sim::make_analytic_engine()->run(t, s, sim::default_calibration(), sim::SimOptions{});
  std::printf("ring on %d ranks: verify %s, analytic %.3f us\n", layout.ranks, v.ok() ? "OK" : v.message.c_str(),
              r.time_s * 1e6);
  return v.ok() && r.time_s > 0 ? 0 : 1;
}
