#include "simulator/simgrid/platform_layout.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/errors.hpp"

namespace topocoll::sim::sg {

using topo::Edge;
using topo::Vertex;

LinkCatalog::LinkCatalog(const topo::Topology& t) : g_(t.graph()) {
  std::unordered_map<std::string, int> uses;
  for (auto e : boost::make_iterator_range(boost::edges(g_))) {
    const Vertex a = boost::source(e, g_);
    std::string id = fmt::format("{}--{}", t.device_name(a), t.device_name(boost::target(e, g_)));
    if (const int n = ++uses[id]; n > 1) id += fmt::format("#{}", n);
    entries_.emplace(&g_[e], Entry{std::move(id), a});
  }
}

const LinkCatalog::Entry& LinkCatalog::entry(Edge e) const {
  auto it = entries_.find(&g_[e]);
  TOPOCOLL_ASSERT(it != entries_.end(), "a route link is not an edge of the topology");
  return it->second;
}

std::vector<Step> steps_of(const topo::Topology& t, const LinkCatalog& catalog, int src, const Route& r) {
  const topo::Graph& g = t.graph();
  std::vector<Step> steps;
  steps.reserve(r.links.size());
  Vertex at = t.rank(src).gpu;
  for (Edge e : r.links) {
    const Vertex a = boost::source(e, g), b = boost::target(e, g);
    TOPOCOLL_ASSERT(a == at || b == at, fmt::format("the route from rank {} is not a walk", src));
    const Vertex next = a == at ? b : a;
    steps.push_back({e, at, next, catalog.up(e, at)});
    at = next;
  }
  return steps;
}

CrossNodeParts split_cross_node(const topo::Graph& g, const std::vector<Step>& steps, int node_a, int node_b) {
  CrossNodeParts parts;
  std::size_t k = 0;
  while (k < steps.size() && g[steps[k].to].node == node_a) parts.out.push_back(steps[k++]);
  std::size_t end = steps.size();
  while (end > k && g[steps[end - 1].from].node == node_b) --end;
  for (; k < end; ++k) parts.fabric.push_back(steps[k]);
  for (; k < steps.size(); ++k) parts.in.push_back(steps[k]);
  return parts;
}

bool same_links(const std::vector<Step>& a, const std::vector<Step>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const Step& x, const Step& y) { return x.edge == y.edge && x.from == y.from; });
}

}  // namespace topocoll::sim::sg
