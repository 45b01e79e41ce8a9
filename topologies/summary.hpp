// What `topocoll topo show` reports, as data: counts, per-GPU link rates, node-0 path matrix,
// and the allreduce bound. Text and JSON are two renderings of this one struct.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "topologies/bounds.hpp"
#include "topologies/paths.hpp"
#include "topologies/topology.hpp"

namespace topocoll::topo {

struct Summary {
  int nodes = 0;
  std::size_t gpus = 0, cpus = 0, nvswitches = 0, pcie_switches = 0, nics = 0, leaf_switches = 0, spine_switches = 0;
  std::map<std::string, std::size_t> links;  // by LinkKind name
  std::vector<std::string> node_models;      // distinct, in node order
  std::string description;                   // of node 0's model
  std::optional<FabricSpec> fabric;
  int gpus_per_node = 0;                          // of node 0
  double gpu_nvlink_gbps = 0.0;                   // node 0, GPU 0: sum of its NVLink links
  double gpu_pcie_gbps = 0.0;                     // its PCIe link
  double nic_gbps = 0.0;                          // its NIC's port rate
  std::vector<std::vector<PathType>> path_types;  // node 0: GPU x GPU
  std::vector<std::vector<double>> path_gbps;     // node 0: single-path bottleneck
  std::vector<int> rails;                         // node 0: NIC rail of each local GPU
  std::optional<AllreduceBound> bound;
  std::vector<std::string> notes;
};

Summary summarize(const Topology& t, bool with_bound);
nlohmann::json to_json(const Summary& s);
void write_text(const Summary& s, std::ostream& out);

}  // namespace topocoll::topo
