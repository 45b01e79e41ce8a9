#include "topologies/transform.hpp"

#include <fmt/format.h>

#include <map>

#include "common/errors.hpp"

namespace topocoll::topo {

NodeModel merge_nvswitch_planes(const NodeModel& m) {
  const Graph& g = m.graph;
  NodeModel out;
  out.name = m.name;
  out.description = m.description;
  out.labels = m.labels;
  out.notes = m.notes;
  out.cpu_vendor = m.cpu_vendor;
  out.cores = m.cores;
  // Copy every device but the NVSwitches, remembering the new vertex of each old one.
  std::map<Vertex, Vertex> renumber;
  bool any_nvswitch = false;
  for (auto v : boost::make_iterator_range(boost::vertices(g))) {
    if (g[v].kind == DeviceKind::NvSwitch) {
      any_nvswitch = true;
      continue;
    }
    renumber[v] = boost::add_vertex(g[v], out.graph);
  }
  if (!any_nvswitch) return m;
  Device merged;
  merged.kind = DeviceKind::NvSwitch;
  merged.node = 0;
  merged.local_index = 0;
  const Vertex nvs = boost::add_vertex(merged, out.graph);
  // Sum each GPU's bundles to the planes; copy all other links.
  std::map<Vertex, Link> bundles;
  for (auto e : boost::make_iterator_range(boost::edges(g))) {
    Vertex a = boost::source(e, g), b = boost::target(e, g);
    const bool a_nvs = g[a].kind == DeviceKind::NvSwitch, b_nvs = g[b].kind == DeviceKind::NvSwitch;
    if (a_nvs && b_nvs) continue;  // switch-to-switch trunks vanish inside the merged switch
    if (a_nvs || b_nvs) {
      const Vertex other = a_nvs ? b : a;
      Link& l = bundles[other];
      if (l.lanes == 0 && l.bw_gbps == 0.0)
        l = g[e];
      else {
        l.bw_gbps += g[e].bw_gbps;
        l.lanes += g[e].lanes;
      }
      continue;
    }
    boost::add_edge(renumber[a], renumber[b], g[e], out.graph);
  }
  for (const auto& [v, l] : bundles) boost::add_edge(renumber[v], nvs, l, out.graph);
  return out;
}

NodeModel multiply_nics(const NodeModel& m, int copies) {
  if (copies < 1 || copies > 16)
    throw InputError(fmt::format("--nics-per-gpu {}: expected 1 to 16 NICs for each NIC of the node", copies));
  NodeModel out = m;
  if (copies == 1) return out;
  std::vector<Vertex> nics;
  for (auto v : boost::make_iterator_range(boost::vertices(m.graph)))
    if (m.graph[v].kind == DeviceKind::Nic) nics.push_back(v);
  for (int c = 1; c < copies; ++c)
    for (Vertex nic : nics) {
      const Device& d = m.graph[nic];
      const Vertex copy = out.add_nic(d.numa, d.port_gbps, d.model);
      for (auto e : boost::make_iterator_range(boost::out_edges(nic, m.graph))) {
        const Link& l = m.graph[e];
        out.add_link(boost::target(e, m.graph), copy, l.kind, l.bw_gbps, l.latency_us, l.lanes);
      }
    }
  out.notes.push_back(fmt::format("each NIC made {} NICs (--nics-per-gpu)", copies));
  return out;
}

}  // namespace topocoll::topo
