#include "topologies/presets.hpp"

#include <fmt/format.h>

#include "common/errors.hpp"
#include "topologies/local.hpp"

namespace topocoll::topo {

namespace {

std::string source_of(std::string_view name) {
  return fmt::format("topologies/presets/{}.yaml", name);
}

const EmbeddedPreset* find_embedded(std::string_view name) {
  for (const EmbeddedPreset& p : embedded_presets())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace

const std::vector<PresetInfo>& presets() {
  static const std::vector<PresetInfo> kPresets = [] {
    std::vector<PresetInfo> out;
    for (const EmbeddedPreset& p : embedded_presets())
      out.push_back({std::string(p.name), parse_node_spec(std::string(p.text), source_of(p.name)).description});
    out.push_back(
        {"local", "this machine, detected with hwloc (sockets, NUMA nodes, cores; GPUs and NICs when present)"});
    return out;
  }();
  return kPresets;
}

bool is_preset(std::string_view name) {
  return name == "local" || find_embedded(name) != nullptr;
}

std::string preset_names() {
  std::string known;
  for (const EmbeddedPreset& p : embedded_presets())
    known += std::string(known.empty() ? "" : ", ") + std::string(p.name);
  return known + (known.empty() ? "" : ", ") + "local";
}

std::optional<NodeSpec> preset_spec(std::string_view name) {
  const EmbeddedPreset* p = find_embedded(name);
  if (!p) return std::nullopt;
  return parse_node_spec(std::string(p->text), source_of(name));
}

NodeModel make_preset_node(std::string_view name) {
  if (name == "local") return detect_local_node();
  if (auto spec = preset_spec(name)) {
    if (spec->name.empty()) spec->name = std::string(name);
    return build_node(*spec);
  }
  throw InputError(fmt::format(
      "unknown topology preset '{}': expected one of {}, an NCCL topology .xml file, a node .yaml or a .yaml cluster "
      "spec",
      name, preset_names()));
}

}  // namespace topocoll::topo
