#include "topologies/diagnostics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "topologies/paths.hpp"

namespace topocoll::topo {

namespace {

// The first node of each node model: per-node checks run on these only.
std::vector<int> first_node_of_each_model(const Topology& t) {
  std::vector<int> reps;
  std::vector<std::string> seen;
  for (int n = 0; n < t.nodes(); ++n)
    if (std::find(seen.begin(), seen.end(), t.node_model_name(n)) == seen.end()) {
      seen.push_back(t.node_model_name(n));
      reps.push_back(n);
    }
  return reps;
}

std::string node_scope(const Topology& t, int node) {
  if (t.nodes() == 1) return "";
  return fmt::format(" (node model '{}', shown for node {}; the same on every node of that model)",
                     t.node_model_name(node), node);
}

void check_nic_numa(const Topology& t, int node, std::vector<Finding>& out) {
  const Graph& g = t.graph();
  for (const RankInfo& r : t.ranks()) {
    if (r.node != node || r.rail < 0) continue;
    const int gpu_numa = g[r.gpu].numa, nic_numa = g[r.nic].numa;
    if (gpu_numa >= 0 && nic_numa >= 0 && gpu_numa != nic_numa)
      out.push_back({Severity::Warning, "nic-numa",
                     fmt::format("{} (NUMA {}) uses {} on NUMA {}: its network traffic crosses the inter-socket link{}",
                                 t.device_name(r.gpu), gpu_numa, t.device_name(r.nic), nic_numa, node_scope(t, node))});
  }
}

void check_p2p(const Topology& t, int node, std::vector<Finding>& out) {
  const Graph& g = t.graph();
  std::vector<const RankInfo*> gpus;
  for (const RankInfo& r : t.ranks())
    if (r.node == node) gpus.push_back(&r);
  std::vector<std::string> cross_numa, through_cpu;
  for (std::size_t i = 0; i < gpus.size(); ++i)
    for (std::size_t j = i + 1; j < gpus.size(); ++j) {
      const Path p = find_path(t, gpus[i]->gpu, gpus[j]->gpu);
      if (!p.found) {
        out.push_back({Severity::Warning, "no-p2p",
                       fmt::format("{} and {} are not connected at all", t.device_name(gpus[i]->gpu),
                                   t.device_name(gpus[j]->gpu))});
        continue;
      }
      if (p2p_possible(p.type)) continue;
      const std::string pair = fmt::format("{}-{}", gpus[i]->local, gpus[j]->local);
      (p.type == PathType::SYS ? cross_numa : through_cpu).push_back(pair);
    }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
    return s;
  };
  (void)g;
  if (!cross_numa.empty())
    out.push_back(
        {Severity::Warning, "no-p2p",
         fmt::format("{} GPU pairs cross NUMA nodes (SYS: through both CPUs and the inter-socket link, no P2P): {}{}",
                     cross_numa.size(), join(cross_numa), node_scope(t, node))});
  if (!through_cpu.empty())
    out.push_back(
        {Severity::Warning, "no-p2p",
         fmt::format("{} GPU pairs meet only at a CPU host bridge (PHB: no P2P at NCCL's default level on Intel): {}{}",
                     through_cpu.size(), join(through_cpu), node_scope(t, node))});
}

// A node's signature: its device kinds and its links (kind, endpoints' kinds, bandwidth), in
// graph order. Two nodes with equal signatures are built alike.
std::string node_signature(const Topology& t, int node) {
  const Graph& g = t.graph();
  auto [first, last] = t.node_vertices(node);
  std::string sig;
  for (Vertex v = first; v < last; ++v) {
    sig += fmt::format("{}:", to_string(g[v].kind));
    for (auto e : boost::make_iterator_range(boost::out_edges(v, g))) {
      const Vertex w = boost::target(e, g);
      if (g[w].node != node) continue;
      sig += fmt::format("{}-{}@{:.3f},", w - first, to_string(g[e].kind), g[e].bw_gbps);
    }
    if (g[v].kind == DeviceKind::Nic) sig += fmt::format("port{:.3f}", g[v].port_gbps);
    sig += ';';
  }
  return sig;
}

void check_nodes_differ(const Topology& t, std::vector<Finding>& out) {
  if (t.nodes() < 2) return;
  std::map<std::string, std::vector<int>> groups;
  for (int n = 0; n < t.nodes(); ++n) groups[node_signature(t, n)].push_back(n);
  if (groups.size() == 1) return;
  // The largest group is "normal"; every other group is reported.
  auto majority = std::max_element(groups.begin(), groups.end(),
                                   [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  for (const auto& [sig, nodes] : groups) {
    if (sig == majority->first) continue;
    std::string list;
    for (std::size_t i = 0; i < nodes.size() && i < 16; ++i)
      list += (list.empty() ? "" : ",") + std::to_string(nodes[i]);
    if (nodes.size() > 16) list += fmt::format(",… ({} nodes)", nodes.size());
    out.push_back({Severity::Warning, "node-differs",
                   fmt::format("nodes {} differ from the {} others (model '{}' vs '{}')", list, majority->second.size(),
                               t.node_model_name(nodes.front()), t.node_model_name(majority->second.front()))});
  }
}

// Links are peers when they have the same kind and the same kinds of endpoints. A link below
// 90% of its peers' best rate is reported, per node model (and once for the fabric).
void check_slow_links(const Topology& t, const std::vector<int>& nodes, std::vector<Finding>& out) {
  const Graph& g = t.graph();
  using Key = std::tuple<LinkKind, DeviceKind, DeviceKind>;
  std::map<Key, double> best;
  std::map<Key, std::vector<Edge>> members;
  auto in_scope = [&](Vertex v) {
    const int node = g[v].node;
    return node < 0 || std::find(nodes.begin(), nodes.end(), node) != nodes.end();
  };
  for (auto e : boost::make_iterator_range(boost::edges(g))) {
    Vertex a = boost::source(e, g), b = boost::target(e, g);
    // Node-internal links: representative nodes only. Network links: all of them (one slow
    // NIC port among 16,384 is exactly what this check is for).
    const bool network = g[a].node < 0 || g[b].node < 0;
    if (!network && (!in_scope(a) || !in_scope(b))) continue;
    DeviceKind ka = g[a].kind, kb = g[b].kind;
    if (kb < ka) std::swap(ka, kb);
    const Key key{g[e].kind, ka, kb};
    // NVLink bundles differ by design (5 vs 4 links to different NVSwitches): compare per link.
    const double rate = g[e].kind == LinkKind::NvLink && g[e].lanes > 0 ? g[e].bw_gbps / g[e].lanes : g[e].bw_gbps;
    best[key] = std::max(best[key], rate);
    members[key].push_back(e);
  }
  for (const auto& [key, edges] : members) {
    std::size_t slow = 0;
    std::string example;
    double example_rate = 0.0;
    for (const Edge& e : edges) {
      const double rate = g[e].kind == LinkKind::NvLink && g[e].lanes > 0 ? g[e].bw_gbps / g[e].lanes : g[e].bw_gbps;
      if (rate < 0.9 * best[key]) {
        if (slow++ == 0) {
          example = fmt::format("{} - {}", t.device_name(boost::source(e, g)), t.device_name(boost::target(e, g)));
          example_rate = rate;
        }
      }
    }
    if (slow == 0) continue;
    out.push_back({Severity::Warning, "slow-link",
                   fmt::format("{} of {} {} links {}-{} run below their peers' {:.1f} GB/s (e.g. {} at {:.2f} GB/s)",
                               slow, edges.size(), to_string(std::get<0>(key)), to_string(std::get<1>(key)),
                               to_string(std::get<2>(key)), best.at(key), example, example_rate)});
  }
}

// A PCIe link far slower than the links below it starves every device behind it (a switch
// uplink trained at x1, a virtualised bus reporting 2.5 GT/s): report links under 1/8 of the
// fastest link on the same PCIe switch.
void check_starved_switches(const Topology& t, const std::vector<int>& nodes, std::vector<Finding>& out) {
  const Graph& g = t.graph();
  for (int node : nodes) {
    auto [first, last] = t.node_vertices(node);
    std::vector<std::string> starved;
    double slowest = 0.0, fastest_below = 0.0;
    for (Vertex v = first; v < last; ++v) {
      if (g[v].kind != DeviceKind::PcieSwitch) continue;
      double fastest = 0.0;
      for (auto e : boost::make_iterator_range(boost::out_edges(v, g))) fastest = std::max(fastest, g[e].bw_gbps);
      for (auto e : boost::make_iterator_range(boost::out_edges(v, g))) {
        const Vertex w = boost::target(e, g);
        if (g[w].kind != DeviceKind::Cpu && g[w].kind != DeviceKind::PcieSwitch) continue;
        if (g[e].bw_gbps * 8.0 >= fastest) continue;
        starved.push_back(fmt::format("{}-{}", t.device_name(v), t.device_name(w)));
        slowest = starved.size() == 1 ? g[e].bw_gbps : std::min(slowest, g[e].bw_gbps);
        fastest_below = std::max(fastest_below, fastest);
      }
    }
    if (starved.empty()) continue;
    std::string list;
    for (const auto& s : starved) list += (list.empty() ? "" : " ") + s;
    out.push_back(
        {Severity::Warning, "slow-link",
         fmt::format("{} PCIe uplink(s) run at {:.2f} GB/s under devices of up to {:.1f} GB/s, starving traffic "
                     "through the CPU: {}{}",
                     starved.size(), slowest, fastest_below, list, node_scope(t, node))});
  }
}

std::string join_words(const std::vector<std::string>& v, std::string_view separator = " ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : std::string(separator)) + x;
  return s;
}

// A GPU on a slot behind the wrong root port: it reaches its NIC through the CPU (PHB, on its own
// NUMA node) while other GPUs of the node share a PCIe switch with theirs (PIX or PXB).
void check_root_ports(const Topology& t, int node, std::vector<Finding>& out) {
  const Graph& g = t.graph();
  std::vector<std::string> through_cpu;
  int switched = 0;
  for (const RankInfo& r : t.ranks()) {
    if (r.node != node || r.rail < 0) continue;
    if (g[r.gpu].numa >= 0 && g[r.nic].numa >= 0 && g[r.gpu].numa != g[r.nic].numa) continue;  // nic-numa's
    const Path p = find_path(t, r.gpu, r.nic);
    if (!p.found) continue;
    if (p.type == PathType::PIX || p.type == PathType::PXB)
      ++switched;
    else if (p.type == PathType::PHB)
      through_cpu.push_back(fmt::format("{}-{}", t.device_name(r.gpu), t.device_name(r.nic)));
  }
  if (through_cpu.empty() || switched == 0) return;
  out.push_back(
      {Severity::Warning, "root-port",
       fmt::format("{} GPU(s) reach their NIC through the CPU (PHB: different root ports of one socket) "
                   "while {} GPU(s) share a PCIe switch with theirs (PIX/PXB): a card in the wrong slot? {}{}",
                   through_cpu.size(), switched, join_words(through_cpu), node_scope(t, node))});
}

// Fewer NICs than GPUs: the GPUs sharing each NIC split its port rate.
void check_shared_nics(const Topology& t, int node, std::vector<Finding>& out) {
  const Graph& g = t.graph();
  auto [first, last] = t.node_vertices(node);
  int gpus = 0, nics = 0;
  for (Vertex v = first; v < last; ++v) {
    gpus += g[v].kind == DeviceKind::Gpu ? 1 : 0;
    nics += g[v].kind == DeviceKind::Nic ? 1 : 0;
  }
  if (nics == 0 || nics >= gpus) return;
  std::map<Vertex, std::vector<std::string>> users;
  for (const RankInfo& r : t.ranks())
    if (r.node == node && r.rail >= 0) users[r.nic].push_back(std::to_string(r.local));
  std::vector<std::string> parts;
  std::size_t most = 0;
  for (const auto& [nic, locals] : users) {
    parts.push_back(fmt::format("{} by {} GPUs ({})", t.device_name(nic), locals.size(), join_words(locals, ",")));
    most = std::max(most, locals.size());
  }
  out.push_back({Severity::Warning, "nic-shared",
                 fmt::format("{} GPUs share {} NICs (up to {} GPUs on one NIC, each getting a share of its port): "
                             "{}{}",
                             gpus, nics, most, join_words(parts, "; "), node_scope(t, node))});
}

// A PCIe link trained below what its device and slot support (a x16 card at x8, Gen5 at Gen4):
// the importer gives the link's maximum (Link::max_bw_gbps) when the source has it.
void check_trained_below_rate(const Topology& t, const std::vector<int>& nodes, std::vector<Finding>& out) {
  const Graph& g = t.graph();
  for (int node : nodes) {
    auto [first, last] = t.node_vertices(node);
    std::vector<std::string> degraded;
    for (auto e : boost::make_iterator_range(boost::edges(g))) {
      const Vertex a = boost::source(e, g), b = boost::target(e, g);
      if (a < first || a >= last || b < first || b >= last) continue;
      const Link& l = g[e];
      if (l.kind != LinkKind::Pcie || l.max_bw_gbps <= 0.0 || l.bw_gbps >= 0.99 * l.max_bw_gbps) continue;
      degraded.push_back(
          fmt::format("{}-{} at {:.2f} of {:.2f} GB/s", t.device_name(a), t.device_name(b), l.bw_gbps, l.max_bw_gbps));
    }
    if (degraded.empty()) continue;
    out.push_back({Severity::Warning, "link-degraded",
                   fmt::format("{} PCIe link(s) trained below their maximum width or speed (reseat the card, check the "
                               "slot and its BIOS setting): {}{}",
                               degraded.size(), join_words(degraded, ", "), node_scope(t, node))});
  }
}

}  // namespace

std::vector<Finding> diagnose(const Topology& t) {
  std::vector<Finding> out;
  for (const std::string& note : t.notes()) out.push_back({Severity::Info, "import", note});
  if (t.num_ranks() == 0)
    out.push_back({Severity::Warning, "import", "the topology describes no GPU: there is nothing to place ranks on"});
  const std::vector<int> reps = first_node_of_each_model(t);
  for (int node : reps) {
    check_nic_numa(t, node, out);
    check_root_ports(t, node, out);
    check_p2p(t, node, out);
    check_shared_nics(t, node, out);
  }
  check_trained_below_rate(t, reps, out);
  check_nodes_differ(t, out);
  check_slow_links(t, reps, out);
  check_starved_switches(t, reps, out);
  return out;
}

}  // namespace topocoll::topo
