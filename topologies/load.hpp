// One entry point from what a user types to a Topology: a preset name, an NCCL topology XML
// file or a YAML cluster spec, plus the command-line knobs.
#pragma once

#include <optional>
#include <string>

#include "topologies/node_spec.hpp"
#include "topologies/topology.hpp"

namespace topocoll::topo {

// The typed configuration of a topology request. Unset fields take the spec's value (YAML), then
// the defaults: 1 node, rail-fat-tree, oversubscription 1.
struct TopologyOptions {
  // preset | FILE.xml (NCCL or hwloc) | FILE.txt (nvidia-smi topo -m) | FILE.yaml / .yml (cluster
  // spec or node description)
  std::string topology;
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
//   node: dgx-h100                # a preset, a node file (relative to the spec): NCCL XML, hwloc
//                                 # XML, nvidia-smi topo -m text (node_file.hpp) or a node .yaml
//                                 # (topologies/node_spec.hpp), or an inline map in the node
//                                 # language; an NCCL dump of several hosts gives one node per host
//   nodes: 16
//   fabric: rail-fat-tree         # or {kind, oversubscription, switch_radix, link_gbps, latency_us,
//                                 #     transport, ecmp, pxn, group_switches, nics_per_switch,
//                                 #     global_links}
//   overrides: {nic_gbps: 50, nics_per_gpu: 2}   # applied to every node; also nic: {speed:
//                                 # 200 Gb/s, model}, gpu (a model name
//                                 # or {model, sm}), nvlink_gbps (per GPU per direction),
//                                 # nvlink: {generation | gbps_per_link, switches: [...]} (adds
//                                 # NVLink switches to a node without NVLink), p2p
//   node_overrides:               # applied to some nodes (a degraded node, a slower NIC)
//     - {nodes: [3], nic_gbps: 25}
struct ClusterSpec {
  std::string name;
  std::string node;                     // as written
  std::string node_path;                // resolved path when `node` is a file
  std::optional<NodeSpec> inline_node;  // `node:` given as a map in the node language
  int nodes = 1;
  FabricSpec fabric;
  std::optional<double> nic_gbps;
  std::optional<int> nics_per_gpu;
  std::optional<std::string> nic_model;  // overrides.nic.model (overrides.nic.speed sets nic_gbps)
  std::optional<std::string> gpu_model;
  std::optional<int> gpu_sm;
  std::optional<double> nvlink_gbps;  // per GPU per direction
  std::vector<int> nvswitch_links;    // overrides.nvlink.switches: NVLink switches to add
  double nvswitch_gbps_per_link = 0.0;
  std::optional<bool> p2p;
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
