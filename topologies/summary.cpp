#include "topologies/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>

namespace topocoll::topo {

Summary summarize(const Topology& t, bool with_bound) {
  Summary s;
  const Graph& g = t.graph();
  s.nodes = t.nodes();
  for (auto v : boost::make_iterator_range(boost::vertices(g))) {
    switch (g[v].kind) {
      case DeviceKind::Gpu:
        ++s.gpus;
        break;
      case DeviceKind::Cpu:
        ++s.cpus;
        break;
      case DeviceKind::NvSwitch:
        ++s.nvswitches;
        break;
      case DeviceKind::PcieSwitch:
        ++s.pcie_switches;
        break;
      case DeviceKind::Nic:
        ++s.nics;
        break;
      case DeviceKind::LeafSwitch:
        ++s.leaf_switches;
        break;
      case DeviceKind::SpineSwitch:
        ++s.spine_switches;
        break;
    }
  }
  for (LinkKind k : {LinkKind::NvLink, LinkKind::Pcie, LinkKind::C2C, LinkKind::InterSocket, LinkKind::Network})
    s.links[std::string(to_string(k))] = 0;
  for (auto e : boost::make_iterator_range(boost::edges(g))) ++s.links[std::string(to_string(g[e].kind))];
  for (int n = 0; n < t.nodes(); ++n)
    if (std::find(s.node_models.begin(), s.node_models.end(), t.node_model_name(n)) == s.node_models.end())
      s.node_models.push_back(t.node_model_name(n));
  s.fabric = t.fabric();
  s.notes = t.notes();
  s.gpus_per_node = t.gpus_per_node(0);

  // Node 0's GPUs: link rates of GPU 0 and the path matrix.
  std::vector<const RankInfo*> local;
  for (const RankInfo& r : t.ranks())
    if (r.node == 0) local.push_back(&r);
  if (!local.empty()) {
    const RankInfo& r0 = *local.front();
    for (auto e : boost::make_iterator_range(boost::out_edges(r0.gpu, g))) {
      if (g[e].kind == LinkKind::NvLink) s.gpu_nvlink_gbps += g[e].bw_gbps;
      if (g[e].kind == LinkKind::Pcie) s.gpu_pcie_gbps = std::max(s.gpu_pcie_gbps, g[e].bw_gbps);
    }
    if (r0.rail >= 0) s.nic_gbps = g[r0.nic].port_gbps;
  }
  for (const RankInfo* a : local) {
    s.rails.push_back(a->rail);
    std::vector<PathType> types;
    std::vector<double> gbps;
    for (const RankInfo* b : local) {
      const Path p = find_path(t, a->gpu, b->gpu);
      types.push_back(p.type);
      gbps.push_back(p.bw_gbps);
    }
    s.path_types.push_back(types);
    s.path_gbps.push_back(gbps);
  }
  if (with_bound && t.num_ranks() >= 2) s.bound = allreduce_bound(t);
  return s;
}

nlohmann::json to_json(const Summary& s) {
  nlohmann::json j;
  j["nodes"] = s.nodes;
  j["gpus"] = s.gpus;
  j["cpus"] = s.cpus;
  j["nvswitches"] = s.nvswitches;
  j["pcie_switches"] = s.pcie_switches;
  j["nics"] = s.nics;
  j["network_switches"] = s.leaf_switches + s.spine_switches;
  j["leaf_switches"] = s.leaf_switches;
  j["spine_switches"] = s.spine_switches;
  j["links"] = s.links;
  j["node_models"] = s.node_models;
  j["gpus_per_node"] = s.gpus_per_node;
  j["gpu_nvlink_gbps"] = s.gpu_nvlink_gbps;
  j["gpu_pcie_gbps"] = s.gpu_pcie_gbps;
  j["nic_gbps"] = s.nic_gbps;
  if (s.fabric)
    j["fabric"] = {{"kind", std::string(to_string(s.fabric->kind))},
                   {"oversubscription", s.fabric->oversubscription},
                   {"switch_radix", s.fabric->switch_radix}};
  // Only when set, so outputs without them stay as they were.
  if (s.fabric && !s.fabric->transport.empty()) j["fabric"]["transport"] = s.fabric->transport;
  if (s.fabric && s.fabric->ecmp != EcmpMode::Hash) j["fabric"]["ecmp"] = std::string(to_string(s.fabric->ecmp));
  if (s.fabric && !s.fabric->pxn) j["fabric"]["pxn"] = false;
  if (!s.fabric) j["fabric"] = nullptr;
  nlohmann::json matrix = nlohmann::json::array();
  for (const auto& row : s.path_types) {
    nlohmann::json r = nlohmann::json::array();
    for (PathType p : row) r.push_back(std::string(to_string(p)));
    matrix.push_back(r);
  }
  j["node0_path_types"] = matrix;
  j["node0_rails"] = s.rails;
  if (s.bound)
    j["allreduce_bound"] = {{"gpu_injection_gbps", s.bound->gpu_injection_gbps},
                            {"node_injection_gbps", s.bound->node_injection_gbps},
                            {"bisection_gbps", s.bound->bisection_gbps},
                            {"busbw_gbps", s.bound->busbw_gbps},
                            {"limited_by", s.bound->limited_by}};
  j["notes"] = s.notes;
  return j;
}

void write_text(const Summary& s, std::ostream& out) {
  std::string models;
  for (const auto& m : s.node_models) models += (models.empty() ? "" : ", ") + m;
  out << fmt::format("nodes        {} (node model: {})\n", s.nodes, models);
  if (s.fabric)
    out << fmt::format("fabric       {} (oversubscription {:g}:1, switch radix {}{}{}{})\n", to_string(s.fabric->kind),
                       s.fabric->oversubscription, s.fabric->switch_radix,
                       s.fabric->transport.empty() ? "" : ", transport " + s.fabric->transport,
                       s.fabric->ecmp == EcmpMode::Hash ? "" : ", ECMP ideal", s.fabric->pxn ? "" : ", PXN off");
  else
    out << "fabric       none (one node)\n";
  out << fmt::format("gpus         {} ({} per node; rank r = node * {} + local GPU index)\n", s.gpus, s.gpus_per_node,
                     s.gpus_per_node);
  out << fmt::format(
      "devices      cpus {}  nvswitches {}  pcie_switches {}  nics {}  network_switches {} (leaf {}, spine {})\n",
      s.cpus, s.nvswitches, s.pcie_switches, s.nics, s.leaf_switches + s.spine_switches, s.leaf_switches,
      s.spine_switches);
  out << "links       ";
  for (const auto& [kind, n] : s.links) out << fmt::format(" {} {}", kind, n);
  out << "\n";
  if (s.gpus_per_node > 0)
    out << fmt::format("per GPU      nvlink {:.1f} GB/s  pcie {:.1f} GB/s  nic {:.1f} GB/s (per direction)\n",
                       s.gpu_nvlink_gbps, s.gpu_pcie_gbps, s.nic_gbps);
  if (!s.path_types.empty()) {
    out << "node 0 paths (type, single-path GB/s)\n      ";
    for (std::size_t j = 0; j < s.path_types.size(); ++j) out << fmt::format(" {:>10}", fmt::format("gpu{}", j));
    out << "   rail\n";
    for (std::size_t i = 0; i < s.path_types.size(); ++i) {
      out << fmt::format("  gpu{:<2}", i);
      for (std::size_t j = 0; j < s.path_types[i].size(); ++j)
        out << fmt::format(" {:>10}", i == j
                                          ? std::string("X")
                                          : fmt::format("{} {:.0f}", to_string(s.path_types[i][j]), s.path_gbps[i][j]));
      out << fmt::format("   {}\n", s.rails[i] < 0 ? std::string("-") : fmt::format("nic{}", s.rails[i]));
    }
  }
  if (s.bound)
    out << fmt::format(
        "allreduce    busbw <= {:.1f} GB/s, limited by {} (GPU injection {:.1f}, node injection {:.1f}, bisection "
        "{:.1f} GB/s; "
        "max-flow bounds, no in-network reduction)\n",
        s.bound->busbw_gbps, s.bound->limited_by, s.bound->gpu_injection_gbps, s.bound->node_injection_gbps,
        s.bound->bisection_gbps);
  for (const auto& note : s.notes) out << "note         " << note << "\n";
  if (s.gpus == 0) out << "note         the topology describes no GPU: ranks would map to CPU cores\n";
}

}  // namespace topocoll::topo
