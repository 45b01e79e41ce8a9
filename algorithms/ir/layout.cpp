#include "algorithms/ir/layout.hpp"

#include <fmt/format.h>

#include "common/errors.hpp"
#include "topologies/paths.hpp"
#include "topologies/topology.hpp"

namespace topocoll::algo {

bool Layout::uniform() const {
  for (const auto& n : node_ranks)
    if (n.size() != node_ranks.front().size()) return false;
  return true;
}

bool Layout::nvls_everywhere() const {
  return !nvls.empty() && first_node_without_nvls() < 0;
}

int Layout::first_node_without_nvls() const {
  for (int n = 0; n < nodes; ++n)
    if (static_cast<std::size_t>(n) >= nvls.size() || !nvls[static_cast<std::size_t>(n)]) return n;
  return -1;
}

std::vector<int> Layout::domain_of_ranks() const {
  std::vector<int> out;
  out.reserve(node_of.size());
  for (int n : node_of) out.push_back(domain_of_node(n));
  return out;
}

bool Layout::one_nvlink_domain() const {
  for (int n = 0; n < nodes; ++n)
    if (domain_of_node(n) != domain_of_node(0)) return false;
  return true;
}

Layout uniform_layout(int nodes, int per_node, LayoutFeatures features) {
  if (nodes < 1 || per_node < 1)
    throw InputError(fmt::format("layout of {} nodes x {} ranks: expected at least 1 x 1", nodes, per_node));
  Layout l;
  l.nodes = nodes;
  l.ranks = nodes * per_node;
  l.rails = per_node;
  l.node_ranks.resize(static_cast<std::size_t>(nodes));
  for (int r = 0; r < l.ranks; ++r) {
    l.node_of.push_back(r / per_node);
    l.rail_of.push_back(r % per_node);
    l.node_ranks[static_cast<std::size_t>(r / per_node)].push_back(r);
  }
  l.nvls.assign(static_cast<std::size_t>(nodes), features.nvls);
  l.sharp = features.sharp;
  if (features.nodes_per_nvlink_domain > 1)
    for (int n = 0; n < nodes; ++n) l.nvlink_domain.push_back(n / features.nodes_per_nvlink_domain);
  return l;
}

namespace {

// NVLS in node n (layout.hpp): an NVSwitch, two GPUs or more, all of sm 90 or later.
bool node_has_nvls(const topo::Topology& t, int n) {
  const auto [first, last] = t.node_vertices(n);
  bool nvswitch = false;
  int gpus = 0;
  for (topo::Vertex v = first; v < last; ++v) {
    const topo::Device& d = t.graph()[v];
    if (d.kind == topo::DeviceKind::NvSwitch) nvswitch = true;
    if (d.kind != topo::DeviceKind::Gpu) continue;
    ++gpus;
    if (d.sm < 90) return false;
  }
  return nvswitch && gpus >= 2;
}

}  // namespace

Layout layout_of(const topo::Topology& t) {
  if (t.num_ranks() == 0)
    throw InputError(
        "the topology has no GPU: there are no ranks to run a collective on (a file that lists none: describe the "
        "node's GPUs in a YAML node description, docs/topologies.md \"The node language\")");
  Layout l;
  l.nodes = t.nodes();
  l.ranks = t.num_ranks();
  l.node_ranks.resize(static_cast<std::size_t>(l.nodes));
  std::vector<std::vector<int>> members(static_cast<std::size_t>(l.nodes));
  for (const topo::RankInfo& r : t.ranks()) {
    l.node_of.push_back(r.node);
    l.rail_of.push_back(r.rail);
    l.rails = std::max(l.rails, r.rail + 1);
    members[static_cast<std::size_t>(r.node)].push_back(r.rank);
  }
  // Nodes of one model share an order: compute it once per model (a 2048-node cluster costs
  // one node's path searches).
  std::vector<std::pair<std::string, std::vector<int>>> order_by_model;  // local indices
  for (int n = 0; n < l.nodes; ++n) {
    const auto& ranks = members[static_cast<std::size_t>(n)];
    const std::string& model = t.node_model_name(n);
    const std::vector<int>* order = nullptr;
    for (const auto& [m, o] : order_by_model)
      if (m == model && o.size() == ranks.size()) order = &o;
    if (!order) {
      // Greedy widest-neighbour walk from local GPU 0.
      std::vector<int> walk;
      std::vector<char> used(ranks.size(), 0);
      int cur = 0;
      for (std::size_t k = 0; k < ranks.size(); ++k) {
        walk.push_back(cur);
        used[static_cast<std::size_t>(cur)] = 1;
        int best = -1;
        double best_bw = -1.0;
        for (std::size_t j = 0; j < ranks.size(); ++j) {
          if (used[j]) continue;
          const double bw =
              topo::find_path(t, t.rank(ranks[static_cast<std::size_t>(cur)]).gpu, t.rank(ranks[j]).gpu).bw_gbps;
          if (bw > best_bw + 1e-9) {
            best_bw = bw;
            best = static_cast<int>(j);
          }
        }
        if (best < 0) break;
        cur = best;
      }
      order_by_model.emplace_back(model, walk);
      order = &order_by_model.back().second;
    }
    for (int local : *order)
      l.node_ranks[static_cast<std::size_t>(n)].push_back(ranks[static_cast<std::size_t>(local)]);
  }
  for (int n = 0; n < l.nodes; ++n) l.nvls.push_back(node_has_nvls(t, n));
  l.sharp = t.fabric() && t.fabric()->sharp;
  return l;
}

}  // namespace topocoll::algo
