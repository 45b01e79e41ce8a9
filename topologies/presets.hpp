// Node presets: DGX A100, DGX H100, an 8-GPU PCIe box across two NUMA sockets, and `local`.
// Every number comes from topologies/constants.hpp (sources there and in docs/topologies.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topologies/topology.hpp"

namespace topocoll::topo {

struct PresetInfo {
  std::string name;
  std::string description;
};

// The presets, in a stable order (`local` last).
const std::vector<PresetInfo>& presets();
bool is_preset(std::string_view name);
// The node model of a preset; `local` runs hwloc detection. Throws InputError for an unknown
// name, listing the known ones.
NodeModel make_preset_node(std::string_view name);

NodeModel make_dgx_a100_node();
NodeModel make_dgx_h100_node();
NodeModel make_pcie_8gpu_node();

}  // namespace topocoll::topo
