// Node presets: YAML files in topologies/presets/, written in the node description language
// (topologies/node_spec.hpp), their text embedded in the library at build time (CMake writes it
// into a generated .cpp) so the binary finds them without the source tree; the code parses them.
// `local` runs hwloc detection. docs/topologies.md lists every preset with its sources.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topologies/node_spec.hpp"
#include "topologies/topology.hpp"

namespace topocoll::topo {

struct PresetInfo {
  std::string name;
  std::string description;
};

// The presets, in a stable order (`local` last).
const std::vector<PresetInfo>& presets();
bool is_preset(std::string_view name);
// "dgx-a100, dgx-h100, ..., local": for messages that list the presets.
std::string preset_names();
// The node description of a YAML preset; nullopt for `local` or an unknown name.
std::optional<NodeSpec> preset_spec(std::string_view name);
// The node model of a preset; `local` runs hwloc detection. Throws InputError for an unknown
// name, listing the known ones.
NodeModel make_preset_node(std::string_view name);

// The embedded preset files: (name, YAML text), in the order of topologies/CMakeLists.txt.
// Generated at build time (topologies/embed_presets.cmake).
struct EmbeddedPreset {
  std::string_view name;
  std::string_view text;
};
const std::vector<EmbeddedPreset>& embedded_presets();

// Shorthands the test suites use.
inline NodeModel make_dgx_a100_node() {
  return make_preset_node("dgx-a100");
}
inline NodeModel make_dgx_h100_node() {
  return make_preset_node("dgx-h100");
}
inline NodeModel make_pcie_8gpu_node() {
  return make_preset_node("pcie-8gpu");
}

}  // namespace topocoll::topo
