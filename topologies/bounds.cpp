#include "topologies/bounds.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/graph/push_relabel_max_flow.hpp>
#include <cmath>
#include <limits>
#include <map>

#include "common/errors.hpp"

namespace topocoll::topo {

namespace {

// Capacities are integers in MB/s (1e-3 GB/s) so push-relabel runs in exact arithmetic.
using Capacity = long long;
constexpr double kUnitsPerGbps = 1000.0;
// The largest link bandwidth the max-flow takes (GB/s): 10^15 GB/s, far above any real link, and
// small enough that its capacity in MB/s is an exact integer in a Capacity.
constexpr double kMaxLinkGbps = 1e15;

using FlowTraits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using FlowGraph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<boost::edge_capacity_t, Capacity,
                    boost::property<boost::edge_residual_capacity_t, Capacity,
                                    boost::property<boost::edge_reverse_t, FlowTraits::edge_descriptor>>>>;

// Adds arc u->v of capacity c and its zero-capacity reverse, as push-relabel requires.
void add_arc(FlowGraph& f, std::size_t u, std::size_t v, Capacity c) {
  auto cap = boost::get(boost::edge_capacity, f);
  auto rev = boost::get(boost::edge_reverse, f);
  auto e1 = boost::add_edge(u, v, f).first;
  auto e2 = boost::add_edge(v, u, f).first;
  cap[e1] = c;
  cap[e2] = 0;
  rev[e1] = e2;
  rev[e2] = e1;
}

}  // namespace

double max_flow_gbps(const Topology& t, const std::vector<Vertex>& sources, const std::vector<Vertex>& sinks) {
  if (sources.empty() || sinks.empty()) return 0.0;
  // A device on both sides is its own sink: no cut separates the sets, the flow is unbounded.
  for (Vertex s : sources)
    if (std::find(sinks.begin(), sinks.end(), s) != sinks.end()) return std::numeric_limits<double>::infinity();
  const Graph& g = t.graph();
  const std::size_t n = boost::num_vertices(g);
  const std::size_t source = n, sink = n + 1;
  FlowGraph f(n + 2);
  // Every undirected link is two independent directions of bw_gbps each. `total` sums the
  // capacities of every arc, in 128 bits so that the check below cannot wrap.
  __int128 total = 0;
  for (auto e : boost::make_iterator_range(boost::edges(g))) {
    const double bw = g[e].bw_gbps;
    if (!(bw >= 0.0 && bw <= kMaxLinkGbps))
      throw InputError(fmt::format("link {} - {}: bandwidth {} GB/s; the max-flow takes 0 to {:g} GB/s per link",
                                   t.device_name(boost::source(e, g)), t.device_name(boost::target(e, g)), bw,
                                   kMaxLinkGbps));
    const Capacity c = static_cast<Capacity>(std::llround(bw * kUnitsPerGbps));
    add_arc(f, boost::source(e, g), boost::target(e, g), c);
    add_arc(f, boost::target(e, g), boost::source(e, g), c);
    total += 2 * static_cast<__int128>(c);
  }
  // The source and sink arcs stand for "unbounded": one more than every link together is enough,
  // since the cut around the sources (all links leaving them) is at most `total`, so no minimum
  // cut holds one of these arcs and the flow is the one of the links alone. Push-relabel sums
  // capacities (the source's excess is the sum of its arcs), so the sum of every arc, these
  // included, must fit in a Capacity: real clusters are many orders of magnitude below, and a
  // topology above is refused with the limit rather than computed with wrapped arithmetic.
  const __int128 unbounded = total + 1;
  const __int128 all_arcs = total + unbounded * static_cast<__int128>(sources.size() + sinks.size());
  if (all_arcs > std::numeric_limits<Capacity>::max())
    throw InputError(
        fmt::format("max-flow: {:.0f} GB/s of links x ({} sources and sinks + 1) exceeds the limit of exact "
                    "arithmetic, {:.0f} GB/s",
                    static_cast<double>(total) / kUnitsPerGbps, sources.size() + sinks.size(),
                    static_cast<double>(std::numeric_limits<Capacity>::max()) / kUnitsPerGbps));
  const auto infinite = static_cast<Capacity>(unbounded);
  for (Vertex s : sources) add_arc(f, source, s, infinite);
  for (Vertex s : sinks) add_arc(f, s, sink, infinite);
  const Capacity flow = boost::push_relabel_max_flow(f, source, sink);
  return static_cast<double>(flow) / kUnitsPerGbps;
}

namespace {

std::vector<Vertex> gpus_of_nodes(const Topology& t, int first_node, int last_node) {
  std::vector<Vertex> out;
  for (const RankInfo& r : t.ranks())
    if (r.node >= first_node && r.node < last_node) out.push_back(r.gpu);
  return out;
}

// Node indices that start a new node model (heterogeneous clusters): node 0 and every node
// whose model name differs from all earlier ones.
std::vector<int> representative_nodes(const Topology& t) {
  std::vector<int> reps;
  std::vector<std::string> seen;
  for (int n = 0; n < t.nodes(); ++n) {
    const std::string& name = t.node_model_name(n);
    if (std::find(seen.begin(), seen.end(), name) == seen.end() && t.gpus_per_node(n) > 0) {
      seen.push_back(name);
      reps.push_back(n);
    }
  }
  return reps;
}

}  // namespace

AllreduceBound allreduce_bound(const Topology& t) {
  const int p = t.num_ranks();
  const int n = t.nodes();
  if (p < 2) throw InputError(fmt::format("allreduce bound needs at least 2 GPUs; the topology has {}", p));
  AllreduceBound b;
  const std::vector<Vertex> all_gpus = gpus_of_nodes(t, 0, n);

  // GPU injection: from each GPU of each representative node to every other GPU.
  b.gpu_injection_gbps = std::numeric_limits<double>::infinity();
  for (int node : representative_nodes(t)) {
    for (const RankInfo& r : t.ranks()) {
      if (r.node != node) continue;
      std::vector<Vertex> others;
      others.reserve(all_gpus.size());
      for (Vertex v : all_gpus)
        if (v != r.gpu) others.push_back(v);
      b.gpu_injection_gbps = std::min(b.gpu_injection_gbps, max_flow_gbps(t, {r.gpu}, others));
    }
  }
  const double pp = static_cast<double>(p);
  double bound = b.gpu_injection_gbps;
  b.limited_by = "gpu injection";

  if (n >= 2) {
    // Node injection: one node's GPUs to all other nodes' GPUs.
    b.node_injection_gbps = std::numeric_limits<double>::infinity();
    for (int node : representative_nodes(t)) {
      std::vector<Vertex> mine = gpus_of_nodes(t, node, node + 1), others;
      for (Vertex v : all_gpus)
        if (std::find(mine.begin(), mine.end(), v) == mine.end()) others.push_back(v);
      b.node_injection_gbps = std::min(b.node_injection_gbps, max_flow_gbps(t, mine, others));
    }
    const double nn = static_cast<double>(n);
    const double node_bound = b.node_injection_gbps * nn * (pp - 1.0) / (pp * (nn - 1.0));
    if (node_bound < bound) {
      bound = node_bound;
      b.limited_by = "node injection";
    }
    b.bisection_gbps = max_flow_gbps(t, gpus_of_nodes(t, 0, n / 2), gpus_of_nodes(t, n / 2, n));
  } else {
    // One node: halves by local GPU index (the two sockets in the presets).
    std::vector<Vertex> lower(all_gpus.begin(), all_gpus.begin() + p / 2),
        upper(all_gpus.begin() + p / 2, all_gpus.end());
    b.bisection_gbps = max_flow_gbps(t, lower, upper);
  }
  const double bisection_bound = b.bisection_gbps * 2.0 * (pp - 1.0) / pp;
  if (bisection_bound < bound) {
    bound = bisection_bound;
    b.limited_by = "bisection";
  }
  b.busbw_gbps = bound;
  return b;
}

}  // namespace topocoll::topo
