#include "topologies/load.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "common/errors.hpp"
#include "common/json_input.hpp"
#include "common/log.hpp"
#include "topologies/nccl_xml.hpp"
#include "topologies/presets.hpp"
#include "topologies/transform.hpp"
#include "topologies/transports.hpp"

namespace topocoll::topo {

namespace fs = std::filesystem;

namespace {

// What a cluster spec may give (InputError beyond, naming the limit): rates and latencies that
// keep every sum of link rates (paths, max-flow bounds) far from overflowing.
constexpr double kMaxSpecGbps = 1e5;       // nic_gbps, fabric link_gbps: 100 TB/s
constexpr double kMaxSpecLatencyUs = 1e6;  // fabric latency_us: a second
constexpr double kMaxOversubscription = 1e3;
constexpr int kMaxSwitchRadix = 65536;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read the file (does it exist?)", path));
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// Reads a YAML scalar as T; a wrong type names the file, line and expectation.
template <typename T>
T scalar(const YAML::Node& n, const std::string& source, const std::string& key, const char* expected) {
  try {
    if (!n.IsScalar()) throw YAML::BadConversion(n.Mark());
    return n.as<T>();
  } catch (const YAML::Exception&) {
    throw InputError(fmt::format("{}:{}: '{}' must be {}", source, n.Mark().line + 1, key, expected));
  }
}

void reject_unknown_keys(const YAML::Node& map, const std::string& source,
                         std::initializer_list<std::string_view> known, const std::string& where) {
  for (const auto& kv : map) {
    if (!kv.first.IsScalar())
      throw InputError(fmt::format("{}:{}: a key of {} is not a name", source, kv.first.Mark().line + 1, where));
    const std::string key = kv.first.as<std::string>();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    throw InputError(fmt::format("{}:{}: unknown key '{}' in {}: expected one of {}", source, kv.first.Mark().line + 1,
                                 json_input::escaped(key), where, list));
  }
}

double positive(double v, const YAML::Node& n, const std::string& source, const std::string& key, double max,
                const char* limit) {
  if (!(v > 0.0))
    throw InputError(fmt::format("{}:{}: '{}' must be a positive number, got {}", source, n.Mark().line + 1, key, v));
  if (!(v <= max))
    throw InputError(
        fmt::format("{}:{}: '{}' {} is more than {:g} (the limit {})", source, n.Mark().line + 1, key, v, max, limit));
  return v;
}

FabricSpec parse_fabric_node(const YAML::Node& n, const std::string& source) {
  FabricSpec f;
  auto kind = [&](const YAML::Node& k) {
    try {
      return parse_fabric(scalar<std::string>(k, source, "fabric", "a fabric name"));
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}:{}: {}", source, k.Mark().line + 1, e.what()));
    }
  };
  if (n.IsScalar()) {
    f.kind = kind(n);
    return f;
  }
  if (!n.IsMap()) throw InputError(fmt::format("{}:{}: 'fabric' must be a name or a map", source, n.Mark().line + 1));
  reject_unknown_keys(n, source,
                      {"kind", "oversubscription", "switch_radix", "link_gbps", "latency_us", "transport", "ecmp",
                       "pxn", "sharp", "group_switches", "nics_per_switch", "global_links"},
                      "fabric");
  auto named = [&](const char* key, auto parse) {
    const YAML::Node k = n[key];
    const std::string value = scalar<std::string>(k, source, key, "a name");
    try {
      return parse(value);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}:{}: {}", source, k.Mark().line + 1, e.what()));
    }
  };
  if (n["transport"])
    f.transport = named("transport", [](const std::string& v) { return std::string(find_transport(v).name); });
  if (n["ecmp"]) f.ecmp = named("ecmp", [](const std::string& v) { return parse_ecmp(v); });
  if (n["pxn"]) f.pxn = scalar<bool>(n["pxn"], source, "pxn", "true or false");
  if (n["sharp"]) f.sharp = scalar<bool>(n["sharp"], source, "sharp", "true or false");
  auto count = [&](const char* key, int lo, int hi) {
    const int v = scalar<int>(n[key], source, key, "an integer");
    if (v < lo || v > hi)
      throw InputError(fmt::format("{}:{}: '{}' must be an integer from {} to {}, got {}", source,
                                   n[key].Mark().line + 1, key, lo, hi, v));
    return v;
  };
  if (n["group_switches"]) f.group_switches = count("group_switches", 1, kMaxSwitchRadix);
  if (n["nics_per_switch"]) f.nics_per_switch = count("nics_per_switch", 1, kMaxSwitchRadix);
  if (n["global_links"]) f.global_links = count("global_links", 1, kMaxSwitchRadix);
  if (n["kind"]) f.kind = kind(n["kind"]);
  if (n["oversubscription"]) {
    f.oversubscription = scalar<double>(n["oversubscription"], source, "oversubscription", "a number >= 1");
    if (!(f.oversubscription >= 1.0))
      throw InputError(fmt::format("{}:{}: 'oversubscription' must be a number >= 1, got {}", source,
                                   n["oversubscription"].Mark().line + 1, f.oversubscription));
    if (!(f.oversubscription <= kMaxOversubscription))
      throw InputError(fmt::format("{}:{}: 'oversubscription' {} is more than {:g} (the limit kMaxOversubscription)",
                                   source, n["oversubscription"].Mark().line + 1, f.oversubscription,
                                   kMaxOversubscription));
  }
  if (n["switch_radix"]) {
    f.switch_radix = scalar<int>(n["switch_radix"], source, "switch_radix", "an integer >= 2");
    if (f.switch_radix < 2)
      throw InputError(fmt::format("{}:{}: 'switch_radix' must be an integer >= 2, got {}", source,
                                   n["switch_radix"].Mark().line + 1, f.switch_radix));
    if (f.switch_radix > kMaxSwitchRadix)
      throw InputError(fmt::format("{}:{}: 'switch_radix' {} is more than {} (the limit kMaxSwitchRadix)", source,
                                   n["switch_radix"].Mark().line + 1, f.switch_radix, kMaxSwitchRadix));
  }
  if (n["link_gbps"])
    f.link_gbps = positive(scalar<double>(n["link_gbps"], source, "link_gbps", "a number (GB/s)"), n["link_gbps"],
                           source, "link_gbps", kMaxSpecGbps, "kMaxSpecGbps");
  if (n["latency_us"])
    f.latency_us = positive(scalar<double>(n["latency_us"], source, "latency_us", "a number (us)"), n["latency_us"],
                            source, "latency_us", kMaxSpecLatencyUs, "kMaxSpecLatencyUs");
  return f;
}

}  // namespace

ClusterSpec parse_cluster_spec(const std::string& text, const std::string& source, const std::string& base_dir) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError(fmt::format("{}:{}: not valid YAML: {}", source, e.mark.line + 1, e.msg));
  }
  if (!root.IsMap()) throw InputError(fmt::format("{}: expected a YAML map with at least 'node' and 'nodes'", source));
  reject_unknown_keys(root, source, {"name", "description", "node", "nodes", "fabric", "overrides", "node_overrides"},
                      "the cluster spec");
  ClusterSpec spec;
  if (root["name"]) spec.name = scalar<std::string>(root["name"], source, "name", "a string");
  if (!root["node"])
    throw InputError(fmt::format("{}: missing 'node': expected a preset name or an NCCL topology XML file", source));
  spec.node = scalar<std::string>(root["node"], source, "node", "a preset name or an XML file");
  if (!is_preset(spec.node)) {
    if (!ends_with(spec.node, ".xml"))
      throw InputError(
          fmt::format("{}:{}: 'node: {}' is neither a preset (dgx-a100, dgx-h100, pcie-8gpu, local) nor an .xml file",
                      source, root["node"].Mark().line + 1, spec.node));
    fs::path p(spec.node);
    spec.node_path = p.is_absolute() ? p.string() : (fs::path(base_dir) / p).string();
  }
  if (root["nodes"]) {
    spec.nodes = scalar<int>(root["nodes"], source, "nodes", "an integer from 1 to 2048");
    if (spec.nodes < 1 || spec.nodes > Topology::kMaxNodes)
      throw InputError(fmt::format("{}:{}: 'nodes: {}' must be an integer from 1 to {}", source,
                                   root["nodes"].Mark().line + 1, spec.nodes, Topology::kMaxNodes));
  }
  if (root["fabric"]) spec.fabric = parse_fabric_node(root["fabric"], source);
  if (const YAML::Node o = root["overrides"]) {
    if (!o.IsMap()) throw InputError(fmt::format("{}:{}: 'overrides' must be a map", source, o.Mark().line + 1));
    reject_unknown_keys(o, source, {"nic_gbps", "nics_per_gpu"}, "overrides");
    if (o["nics_per_gpu"]) spec.nics_per_gpu = scalar<int>(o["nics_per_gpu"], source, "nics_per_gpu", "an integer");
    if (o["nic_gbps"])
      spec.nic_gbps = positive(scalar<double>(o["nic_gbps"], source, "nic_gbps", "a number (GB/s)"), o["nic_gbps"],
                               source, "nic_gbps", kMaxSpecGbps, "kMaxSpecGbps");
  }
  if (const YAML::Node list = root["node_overrides"]) {
    if (!list.IsSequence())
      throw InputError(fmt::format("{}:{}: 'node_overrides' must be a list", source, list.Mark().line + 1));
    if (list.size() > static_cast<std::size_t>(Topology::kMaxNodes))
      throw InputError(fmt::format("{}:{}: {} node overrides: expected at most one per node, {} (the limit kMaxNodes)",
                                   source, list.Mark().line + 1, list.size(), Topology::kMaxNodes));
    for (const YAML::Node& item : list) {
      if (!item.IsMap())
        throw InputError(fmt::format("{}:{}: each node override must be a map", source, item.Mark().line + 1));
      reject_unknown_keys(item, source, {"nodes", "nic_gbps"}, "a node override");
      ClusterSpec::NodeOverride ov;
      if (!item["nodes"] || !item["nodes"].IsSequence())
        throw InputError(
            fmt::format("{}:{}: a node override needs 'nodes: [i, j, ...]'", source, item.Mark().line + 1));
      for (const YAML::Node& i : item["nodes"]) {
        const int node = scalar<int>(i, source, "nodes", "node indices");
        if (node < 0 || node >= spec.nodes)
          throw InputError(
              fmt::format("{}:{}: node index {} is outside 0..{}", source, i.Mark().line + 1, node, spec.nodes - 1));
        ov.nodes.push_back(node);
      }
      if (item["nic_gbps"])
        ov.nic_gbps = positive(scalar<double>(item["nic_gbps"], source, "nic_gbps", "a number (GB/s)"),
                               item["nic_gbps"], source, "nic_gbps", kMaxSpecGbps, "kMaxSpecGbps");
      spec.node_overrides.push_back(ov);
    }
  }
  return spec;
}

ClusterSpec load_cluster_spec(const std::string& path) {
  return parse_cluster_spec(read_file(path), path, fs::path(path).parent_path().string());
}

namespace {

NodeModel node_model_of(const std::string& name_or_path) {
  if (is_preset(name_or_path)) return make_preset_node(name_or_path);
  return load_nccl_xml(name_or_path);
}

void set_nic_rate(NodeModel& m, double gbps) {
  for (auto v : boost::make_iterator_range(boost::vertices(m.graph)))
    if (m.graph[v].kind == DeviceKind::Nic) m.graph[v].port_gbps = gbps;
}

}  // namespace

Topology load_topology(const TopologyOptions& options) {
  const std::string& t = options.topology;
  if (t.empty())
    throw InputError(
        "--topology is required: a preset (dgx-a100, dgx-h100, pcie-8gpu, local), an .xml or a .yaml file");
  if (options.nodes && (*options.nodes < 1 || *options.nodes > Topology::kMaxNodes))
    throw InputError(
        fmt::format("--nodes {}: expected a node count from 1 to {}", *options.nodes, Topology::kMaxNodes));
  if (options.oversubscription &&
      !(*options.oversubscription >= 1.0 && *options.oversubscription <= kMaxOversubscription))
    throw InputError(
        fmt::format("--oversubscription {}: expected a ratio >= 1 (1 = non-blocking), at most {:g} (the "
                    "limit kMaxOversubscription)",
                    *options.oversubscription, kMaxOversubscription));

  const bool yaml = ends_with(t, ".yaml") || ends_with(t, ".yml");
  ClusterSpec spec;
  if (yaml) {
    spec = load_cluster_spec(t);
  } else {
    if (!is_preset(t) && !ends_with(t, ".xml")) make_preset_node(t);  // throws: unknown preset, lists the known
    spec.node = t;
    spec.node_path = is_preset(t) ? "" : t;
  }
  if (options.nodes) spec.nodes = *options.nodes;
  if (options.fabric) spec.fabric.kind = *options.fabric;
  if (options.oversubscription) spec.fabric.oversubscription = *options.oversubscription;
  if (options.transport) spec.fabric.transport = find_transport(*options.transport).name;
  if (options.ecmp) spec.fabric.ecmp = *options.ecmp;
  if (options.pxn) spec.fabric.pxn = *options.pxn;
  if (options.sharp) spec.fabric.sharp = *options.sharp;
  if (options.nics_per_gpu) spec.nics_per_gpu = *options.nics_per_gpu;

  NodeModel base = node_model_of(spec.node_path.empty() ? spec.node : spec.node_path);
  if (spec.nic_gbps) {
    set_nic_rate(base, *spec.nic_gbps);
    base.notes.push_back(fmt::format("NIC port rate set to {} GB/s by the cluster spec", *spec.nic_gbps));
  }
  if (spec.nics_per_gpu) base = multiply_nics(base, *spec.nics_per_gpu);
  if (!spec.name.empty()) base.description = spec.name + ": " + base.description;
  if (options.merge_nvswitch_planes) base = merge_nvswitch_planes(base);
  if (spec.node_overrides.empty()) return Topology::build(base, spec.nodes, spec.fabric);

  // Heterogeneous cluster: one derived model per override, applied to its nodes.
  std::vector<std::unique_ptr<NodeModel>> derived;
  std::vector<const NodeModel*> per_node(static_cast<std::size_t>(spec.nodes), &base);
  for (std::size_t i = 0; i < spec.node_overrides.size(); ++i) {
    const auto& ov = spec.node_overrides[i];
    auto m = std::make_unique<NodeModel>(base);
    m->name = fmt::format("{}+override{}", base.name, i);
    if (ov.nic_gbps) set_nic_rate(*m, *ov.nic_gbps);
    for (int node : ov.nodes) {
      if (node >= spec.nodes)
        throw InputError(
            fmt::format("{}: node override names node {}, but the cluster has {} nodes", t, node, spec.nodes));
      per_node[static_cast<std::size_t>(node)] = m.get();
    }
    derived.push_back(std::move(m));
  }
  return Topology::build(per_node, spec.fabric);
}

}  // namespace topocoll::topo
