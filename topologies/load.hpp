// One entry point from what a user types to a Topology: a preset name, an NCCL topology XML
// file or a YAML cluster spec, plus the command-line knobs.
#pragma once

#include <optional>
#include <string>

#include "topologies/topology.hpp"

namespace topocoll::topo {

// The typed configuration of a topology request. Unset fields take the spec's value (YAML), then
// the defaults: 1 node, rail-fat-tree, oversubscription 1.
struct TopologyOptions {
  std::string topology;  // preset | FILE.xml | FILE.yaml / FILE.yml
  std::optional<int> nodes;
  std::optional<FabricKind> fabric;
  std::optional<double> oversubscription;
  std::optional<std::string> transport;  // topologies/transports.hpp
  std::optional<EcmpMode> ecmp;
  std::optional<bool> pxn;
  std::optional<bool> sharp;           // FabricSpec::sharp (the fabric key 'sharp', `--sharp`)
  std::optional<int> nics_per_gpu;     // transform.hpp multiply_nics
  bool merge_nvswitch_planes = false;  // see transform.hpp (the simulator's view)
};

// YAML cluster spec, documented in docs/topologies.md:
//   name: my-cluster              # optional
//   node: dgx-h100                # a preset or an NCCL XML file (relative to the spec)
//   nodes: 16
//   fabric: rail-fat-tree         # or {kind, oversubscription, switch_radix, link_gbps, latency_us,
//                                 #     transport, ecmp, pxn, group_switches, nics_per_switch,
//                                 #     global_links}
//   overrides: {nic_gbps: 50, nics_per_gpu: 2}   # applied to every node
//   node_overrides:               # applied to some nodes (a degraded node, a slower NIC)
//     - {nodes: [3], nic_gbps: 25}
struct ClusterSpec {
  std::string name;
  std::string node;       // as written
  std::string node_path;  // resolved path when `node` is a file
  int nodes = 1;
  FabricSpec fabric;
  std::optional<double> nic_gbps;
  std::optional<int> nics_per_gpu;
  struct NodeOverride {
    std::vector<int> nodes;
    std::optional<double> nic_gbps;
  };
  std::vector<NodeOverride> node_overrides;
};

ClusterSpec parse_cluster_spec(const std::string& text, const std::string& source_name, const std::string& base_dir);
ClusterSpec load_cluster_spec(const std::string& path);

Topology load_topology(const TopologyOptions& options);

}  // namespace topocoll::topo
