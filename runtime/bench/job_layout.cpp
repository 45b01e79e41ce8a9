#include "runtime/bench/job_layout.hpp"

#include <fmt/format.h>

#include "common/errors.hpp"
#include "topologies/load.hpp"
#include "topologies/topology.hpp"

namespace topocoll::runtime {

namespace {

std::string shape(int ranks, int nodes, int per_node) {
  if (per_node < 0) return fmt::format("{} ranks on {} nodes with different ranks per node", ranks, nodes);
  return fmt::format("{} rank{} ({} per node on {} node{})", ranks, ranks == 1 ? "" : "s", per_node, nodes,
                     nodes == 1 ? "" : "s");
}

}  // namespace

JobLayout job_layout(const BenchTopology& given, const JobShape& job) {
  JobLayout out;
  if (given.topology.empty()) {
    if (job.per_node < 0)
      throw InputError(
          fmt::format("the job has {}: expected the same number of ranks on every node (or pass --topology)",
                      shape(job.ranks, job.nodes, job.per_node)));
    out.layout = algo::uniform_layout(job.nodes, job.per_node);
    out.name = "detected";
    out.description = fmt::format("detected from MPI: {}", shape(job.ranks, job.nodes, job.per_node));
    return out;
  }
  topo::TopologyOptions o;
  o.topology = given.topology;
  o.nodes = given.nodes;
  if (!given.fabric.empty()) o.fabric = topo::parse_fabric(given.fabric);
  const topo::Topology t = topo::load_topology(o);
  const algo::Layout l = algo::layout_of(t);
  const int per_node = l.uniform() ? l.ranks_per_node() : -1;
  if (l.ranks != job.ranks || l.nodes != job.nodes || per_node != job.per_node)
    throw InputError(
        fmt::format("--topology {}{}: {}, but the job has {}: expected mpirun to start one rank per GPU, "
                    "node by node",
                    given.topology, given.nodes ? fmt::format(" --nodes {}", *given.nodes) : std::string(),
                    shape(l.ranks, l.nodes, per_node), shape(job.ranks, job.nodes, job.per_node)));
  out.layout = l;
  out.name = given.topology;
  out.description = fmt::format("--topology {}: {}", given.topology, shape(l.ranks, l.nodes, per_node));
  return out;
}

}  // namespace topocoll::runtime
