#include "topologies/load.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "common/errors.hpp"
#include "common/files.hpp"
#include "common/json_input.hpp"
#include "common/log.hpp"
#include "topologies/constants.hpp"
#include "topologies/node_file.hpp"
#include "topologies/presets.hpp"
#include "topologies/transform.hpp"
#include "topologies/transports.hpp"
#include "topologies/yaml_input.hpp"

namespace topocoll::topo {

namespace fs = std::filesystem;
using yaml_input::positive;
using yaml_input::reject_unknown_keys;
using yaml_input::scalar;

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
  return read_input_file(path, "a YAML cluster spec or node description");
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

// The node fields of `overrides:` (nic, gpu, nvlink_gbps, nvlink, p2p).
void parse_node_overrides(const YAML::Node& o, const std::string& source, ClusterSpec& spec) {
  if (const YAML::Node g = o["gpu"]) {
    if (g.IsScalar()) {
      spec.gpu_model = scalar<std::string>(g, source, "gpu", "a GPU model name or {model, sm}");
    } else if (g.IsMap()) {
      reject_unknown_keys(g, source, {"model", "sm"}, "overrides.gpu");
      if (g["model"]) spec.gpu_model = scalar<std::string>(g["model"], source, "model", "a GPU model name");
      if (g["sm"]) spec.gpu_sm = yaml_input::integer(g["sm"], source, "sm", 10, 199);
    } else {
      throw InputError(
          fmt::format("{}:{}: 'gpu' must be a GPU model name or {{model, sm}}", source, yaml_input::line_of(g)));
    }
  }
  if (o["nvlink_gbps"])
    spec.nvlink_gbps =
        positive(scalar<double>(o["nvlink_gbps"], source, "nvlink_gbps", "a number (GB/s per GPU per direction)"),
                 o["nvlink_gbps"], source, "nvlink_gbps", kMaxSpecGbps, "kMaxSpecGbps");
  if (o["p2p"]) spec.p2p = scalar<bool>(o["p2p"], source, "p2p", "true or false");
  if (const YAML::Node n = o["nic"]) {
    if (!n.IsMap())
      throw InputError(fmt::format("{}:{}: 'nic' must be a map like {{speed: 200 Gb/s, model: ConnectX-6-HDR}}", source,
                                   yaml_input::line_of(n)));
    reject_unknown_keys(n, source, {"speed", "model"}, "overrides.nic");
    if (n["speed"]) {
      if (o["nic_gbps"])
        throw InputError(fmt::format("{}:{}: 'nic.speed' and 'nic_gbps' both set the NIC rate: give one", source,
                                     yaml_input::line_of(n["speed"])));
      spec.nic_gbps = constants::gbit_to_gbps(yaml_input::gbit(n["speed"], source, "speed"));
    }
    if (n["model"]) spec.nic_model = scalar<std::string>(n["model"], source, "model", "a NIC model name");
  }
  if (const YAML::Node n = o["nvlink"]) {
    if (!n.IsMap())
      throw InputError(fmt::format("{}:{}: 'nvlink' must be a map like {{generation: 4, switches: [5, 4, 4, 5]}}",
                                   source, yaml_input::line_of(n)));
    reject_unknown_keys(n, source, {"generation", "gbps_per_link", "switches"}, "overrides.nvlink");
    if (n["generation"])
      spec.nvswitch_gbps_per_link =
          *constants::nvlink_generation_gbps_per_link(yaml_input::integer(n["generation"], source, "generation", 1, 5));
    if (n["gbps_per_link"])
      spec.nvswitch_gbps_per_link =
          positive(scalar<double>(n["gbps_per_link"], source, "gbps_per_link", "a number (GB/s per direction)"),
                   n["gbps_per_link"], source, "gbps_per_link", kMaxSpecGbps, "kMaxSpecGbps");
    const YAML::Node s = n["switches"];
    if (!s || !s.IsSequence() || s.size() == 0)
      throw InputError(
          fmt::format("{}:{}: 'overrides.nvlink' needs 'switches: [...]', the links from each GPU to each NVSwitch",
                      source, yaml_input::line_of(n)));
    for (const YAML::Node& k : s) spec.nvswitch_links.push_back(yaml_input::integer(k, source, "switches", 1, 64));
    if (spec.nvswitch_gbps_per_link == 0.0)
      throw InputError(fmt::format("{}:{}: 'overrides.nvlink' needs 'generation' or 'gbps_per_link'", source,
                                   yaml_input::line_of(n)));
  }
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
    throw InputError(fmt::format(
        "{}: missing 'node': expected a preset name, a node file (.xml, .txt, .yaml) or a node map", source));
  if (root["node"].IsMap()) {
    spec.inline_node = yaml_input::parse_node_map(root["node"], source);
    if (spec.inline_node->name.empty()) spec.inline_node->name = source + ":node";
    spec.node = spec.inline_node->name;
  } else {
    spec.node = scalar<std::string>(root["node"], source, "node", "a preset name, a file or a node map");
  }
  if (!spec.inline_node && !is_preset(spec.node)) {
    if (!is_node_file_name(spec.node) && !ends_with(spec.node, ".yaml") && !ends_with(spec.node, ".yml"))
      throw InputError(
          fmt::format("{}:{}: 'node: {}' is neither a preset ({}) nor a node file (.xml, .txt, .yaml), nor a node map",
                      source, root["node"].Mark().line + 1, spec.node, preset_names()));
    fs::path p(spec.node);
    spec.node_path = p.is_absolute() ? p.string() : (fs::path(base_dir) / p).string();
  }
  if (root["nodes"]) {
    spec.nodes = scalar<int>(root["nodes"], source, "nodes", "an integer from 1 to 16384");  // Topology::kMaxNodes
    if (spec.nodes < 1 || spec.nodes > Topology::kMaxNodes)
      throw InputError(fmt::format("{}:{}: 'nodes: {}' must be an integer from 1 to {}", source,
                                   root["nodes"].Mark().line + 1, spec.nodes, Topology::kMaxNodes));
  }
  if (root["fabric"]) spec.fabric = parse_fabric_node(root["fabric"], source);
  if (const YAML::Node o = root["overrides"]) {
    if (!o.IsMap()) throw InputError(fmt::format("{}:{}: 'overrides' must be a map", source, o.Mark().line + 1));
    reject_unknown_keys(o, source, {"nic_gbps", "nics_per_gpu", "nic", "gpu", "nvlink_gbps", "nvlink", "p2p"},
                        "overrides");
    parse_node_overrides(o, source, spec);
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

// A preset, or the node(s) a file describes: a node .yaml (node_spec.hpp), or what node_file.hpp
// reads by content (NCCL XML, hwloc XML, nvidia-smi topo -m); several for an NCCL dump of several
// hosts.
std::vector<NodeModel> node_models_of(const std::string& name_or_path) {
  std::vector<NodeModel> one;
  if (is_preset(name_or_path)) {
    one.push_back(make_preset_node(name_or_path));
    return one;
  }
  if (ends_with(name_or_path, ".yaml") || ends_with(name_or_path, ".yml")) {
    one.push_back(build_node(load_node_spec(name_or_path)));
    return one;
  }
  return load_node_file(name_or_path);
}

// The node fields of the spec's `overrides:`, applied to any node source.
void apply_node_overrides(const ClusterSpec& spec, NodeModel& m) {
  if (spec.nic_model) {
    const int label = m.label(*spec.nic_model);
    for (auto v : boost::make_iterator_range(boost::vertices(m.graph)))
      if (m.graph[v].kind == DeviceKind::Nic) m.graph[v].model = label;
  }
  if (spec.gpu_model || spec.gpu_sm) {
    set_gpu_model(m, spec.gpu_model, spec.gpu_sm);
    m.notes.push_back(fmt::format("GPU set to {}{} by the cluster spec", spec.gpu_model.value_or("its model"),
                                  spec.gpu_sm ? fmt::format(" (sm{})", *spec.gpu_sm) : ""));
  }
  if (!spec.nvswitch_links.empty()) {
    add_nvswitches(m, spec.nvswitch_links, spec.nvswitch_gbps_per_link);
    m.notes.push_back(fmt::format("{} NVLink switches added by the cluster spec", spec.nvswitch_links.size()));
  }
  if (spec.nvlink_gbps) set_nvlink_gbps(m, *spec.nvlink_gbps);
  if (spec.p2p && !*spec.p2p) {
    disable_p2p(m);
    m.notes.push_back("P2P off by the cluster spec (as NCCL_P2P_DISABLE=1): no NVLink");
  }
}

void set_nic_rate(NodeModel& m, double gbps) {
  for (auto v : boost::make_iterator_range(boost::vertices(m.graph)))
    if (m.graph[v].kind == DeviceKind::Nic) m.graph[v].port_gbps = gbps;
}

}  // namespace

Topology load_topology(const TopologyOptions& options) {
  const std::string& t = options.topology;
  if (t.empty())
    throw InputError(fmt::format("--topology is required: a preset ({}), an .xml or a .yaml file", preset_names()));
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
  if (yaml && !is_node_spec_text(read_file(t))) {
    spec = load_cluster_spec(t);
  } else if (yaml) {
    spec.node = t;
    spec.node_path = t;
  } else {
    if (!is_preset(t) && !is_node_file_name(t)) make_preset_node(t);  // throws: unknown preset, lists the known
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

  std::vector<NodeModel> hosts;
  if (spec.inline_node)
    hosts.push_back(build_node(*spec.inline_node));
  else
    hosts = node_models_of(spec.node_path.empty() ? spec.node : spec.node_path);
  for (NodeModel& host : hosts) {
    apply_node_overrides(spec, host);
    if (spec.nic_gbps) {
      set_nic_rate(host, *spec.nic_gbps);
      host.notes.push_back(fmt::format("NIC port rate set to {} GB/s by the cluster spec", *spec.nic_gbps));
    }
    if (spec.nics_per_gpu) host = multiply_nics(host, *spec.nics_per_gpu);
    if (!spec.name.empty()) host.description = spec.name + ": " + host.description;
    if (options.merge_nvswitch_planes) host = merge_nvswitch_planes(host);
  }
  NodeModel& base = hosts.front();
  if (hosts.size() > 1) {
    // A dump of several hosts: one node per host. A node count left at 1 takes the hosts'; any
    // other count cycles through them (node i is host i mod H), said in a note.
    if (spec.nodes == 1 && !options.nodes) spec.nodes = static_cast<int>(hosts.size());
    if (spec.nodes != static_cast<int>(hosts.size()))
      base.notes.push_back(fmt::format(
          "{}: {} nodes asked of a file of {} hosts: node i is host i mod {} ({})", hosts.front().name, spec.nodes,
          hosts.size(), hosts.size(),
          spec.nodes > static_cast<int>(hosts.size()) ? "the hosts repeat" : "the last hosts are left out"));
  }
  auto host_of = [&](int node) -> const NodeModel* { return &hosts[static_cast<std::size_t>(node) % hosts.size()]; };
  if (spec.node_overrides.empty() && hosts.size() == 1) return Topology::build(base, spec.nodes, spec.fabric);

  // Heterogeneous cluster: one derived model per override, applied to its nodes.
  std::vector<std::unique_ptr<NodeModel>> derived;
  std::vector<const NodeModel*> per_node(static_cast<std::size_t>(spec.nodes));
  for (int node = 0; node < spec.nodes; ++node) per_node[static_cast<std::size_t>(node)] = host_of(node);
  for (std::size_t i = 0; i < spec.node_overrides.size(); ++i) {
    const auto& ov = spec.node_overrides[i];
    // One derived model per host the override's nodes are (a one-host file: one).
    std::map<const NodeModel*, const NodeModel*> of_host;
    for (int node : ov.nodes) {
      if (node >= spec.nodes)
        throw InputError(
            fmt::format("{}: node override names node {}, but the cluster has {} nodes", t, node, spec.nodes));
      const NodeModel* host = host_of(node);
      if (!of_host.contains(host)) {
        auto m = std::make_unique<NodeModel>(*host);
        m->name = fmt::format("{}+override{}", host->name, i);
        if (ov.nic_gbps) set_nic_rate(*m, *ov.nic_gbps);
        of_host[host] = m.get();
        derived.push_back(std::move(m));
      }
      per_node[static_cast<std::size_t>(node)] = of_host[host];
    }
  }
  return Topology::build(per_node, spec.fabric);
}

}  // namespace topocoll::topo
