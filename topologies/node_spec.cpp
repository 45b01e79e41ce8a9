#include "topologies/node_spec.hpp"

#include <fmt/format.h>

#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "common/errors.hpp"
#include "common/files.hpp"
#include "topologies/constants.hpp"
#include "topologies/yaml_input.hpp"

namespace topocoll::topo {

namespace c = constants;
using yaml_input::integer;
using yaml_input::line_of;
using yaml_input::reject_unknown_keys;
using yaml_input::scalar;

namespace {

// What a node description may give (InputError beyond): sizes that keep a node, and an NVLink
// domain of trays, within what the rest of the model handles.
constexpr int kMaxGpus = 1024;    // GPUs per node or tray
constexpr int kMaxDomain = 1024;  // GPUs in one NVLink domain (NVL72 is 72; NVL576 576)
constexpr int kMaxSockets = 64;   // per node or tray
constexpr int kMaxNics = 256;     // in one PCIe group
constexpr int kMaxLinks = 64;     // NVLink links in one bundle
constexpr double kMaxGbps = 1e5;  // any rate, GB/s
constexpr int kMaxCores = 1 << 20;

// Compute capability of a GPU model name, by its leading product name (CUDA GPUs list,
// developer.nvidia.com/cuda-gpus: V100 7.0, A100 8.0, A40/A10 8.6, L40S/L4/RTX 4090 8.9,
// H100/H200/GH200 9.0, B200/GB200 10.0).
std::optional<int> sm_of_model(std::string_view model) {
  struct Known {
    std::string_view prefix;
    int sm;
  };
  static constexpr Known kKnown[] = {{"V100", 70}, {"A100", 80},  {"A40", 86},      {"A10", 86},
                                     {"L40", 89},  {"L4", 89},    {"RTX-4090", 89}, {"H100", 90},
                                     {"H200", 90}, {"GH200", 90}, {"B200", 100},    {"GB200", 100}};
  std::string upper(model);
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  for (const Known& k : kKnown)
    if (upper.rfind(k.prefix, 0) == 0) return k.sm;
  return std::nullopt;
}

std::string read_text(const std::string& path) {
  return read_input_file(path, "a YAML node description");
}

// "400 Gb/s" (also "400Gb/s", "400 Gbps") -> 400.
double parse_gbit(const YAML::Node& n, const std::string& source, const std::string& key) {
  const std::string text = scalar<std::string>(n, source, key, "a rate like '400 Gb/s'");
  std::size_t pos = 0;
  double v = 0.0;
  try {
    v = std::stod(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  std::string unit = text.substr(pos);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  if (pos == 0 || (unit != "Gb/s" && unit != "Gbps"))
    throw InputError(fmt::format("{}:{}: '{}: {}' must be a rate in Gb/s as vendors write it, like '400 Gb/s'", source,
                                 line_of(n), key, json_input::escaped(text)));
  if (!(v > 0.0) || v / 8.0 > kMaxGbps)
    throw InputError(fmt::format("{}:{}: '{}: {}' must be a positive rate of at most {:g} Gb/s", source, line_of(n),
                                 key, json_input::escaped(text), kMaxGbps * 8.0));
  return v;
}

double gbps(const YAML::Node& n, const std::string& source, const std::string& key) {
  return yaml_input::positive(scalar<double>(n, source, key, "a number (GB/s per direction)"), n, source, key, kMaxGbps,
                              "kMaxGbps");
}

std::string name_of(const YAML::Node& n, const std::string& source, const std::string& key) {
  return scalar<std::string>(n, source, key, "a name");
}

struct Parser {
  const std::string& source;
  NodeSpec spec;
  int next_gpu = 0;  // GPUs placed so far in walk order

  PcieGroup group(const YAML::Node& n, bool is_switch, std::optional<int> socket) {
    const char* where = is_switch ? "a PCIe switch" : "a root-port group";
    if (!n.IsMap())
      throw InputError(
          fmt::format("{}:{}: {} must be a map like {{socket: 0, gpus: 2, nics: 1}}", source, line_of(n), where));
    if (is_switch)
      reject_unknown_keys(n, source, {"socket", "gpus", "nics", "width", "switches"}, where);
    else
      reject_unknown_keys(n, source, {"socket", "gpus", "nics", "width", "attach"}, where);
    PcieGroup g;
    g.line = line_of(n);
    if (n["socket"]) {
      g.socket = integer(n["socket"], source, "socket", 0, kMaxSockets - 1);
      if (socket && *socket != g.socket)
        throw InputError(fmt::format("{}:{}: a nested switch names socket {}, its parent switch is on socket {}",
                                     source, line_of(n["socket"]), g.socket, *socket));
    } else if (socket) {
      g.socket = *socket;
    } else {
      throw InputError(
          fmt::format("{}:{}: {} needs 'socket: N' (the CPU socket it hangs off)", source, line_of(n), where));
    }
    if (const YAML::Node k = n["gpus"]; k && k.IsSequence()) {
      // `gpus: [4, 5]`: the indices the walk gives (checked in validate).
      for (const YAML::Node& i : k) g.gpu_list.push_back(scalar<int>(i, source, "gpus", "GPU indices"));
      g.gpus = static_cast<int>(g.gpu_list.size());
    } else if (k) {
      g.gpus = integer(k, source, "gpus", 0, kMaxGpus);
    }
    if (n["nics"]) g.nics = integer(n["nics"], source, "nics", 0, kMaxNics);
    if (n["width"]) {
      g.width = integer(n["width"], source, "width", 1, 32);
      if (g.width != 1 && g.width != 2 && g.width != 4 && g.width != 8 && g.width != 16 && g.width != 32)
        throw InputError(fmt::format("{}:{}: 'width: {}' must be a PCIe link width: 1, 2, 4, 8, 16 or 32", source,
                                     line_of(n["width"]), g.width));
    }
    if (n["attach"]) {
      const std::string a = name_of(n["attach"], source, "attach");
      if (a == "c2c")
        g.attach = GpuAttach::C2C;
      else if (a != "pcie")
        throw InputError(fmt::format("{}:{}: 'attach: {}' must be pcie or c2c (how the GPUs reach the socket)", source,
                                     line_of(n["attach"]), json_input::escaped(a)));
    }
    if (n["switches"]) {
      if (!n["switches"].IsSequence())
        throw InputError(
            fmt::format("{}:{}: 'switches' must be a list of PCIe switches", source, line_of(n["switches"])));
      for (const YAML::Node& child : n["switches"]) g.switches.push_back(group(child, true, g.socket));
    }
    return g;
  }

  void parse(const YAML::Node& root);
  void parse_gpu(const YAML::Node& n);
  void parse_cpu(const YAML::Node& n);
  void parse_pcie(const YAML::Node& n);
  void parse_nvlink(const YAML::Node& n);
  void parse_nic(const YAML::Node& n);
  void validate(const YAML::Node& root);
};

void Parser::parse_gpu(const YAML::Node& n) {
  if (!n.IsMap())
    throw InputError(
        fmt::format("{}:{}: 'gpu' must be a map like {{model: H100-SXM5, sm: 90, count: 8}}", source, line_of(n)));
  reject_unknown_keys(n, source, {"model", "sm", "count"}, "gpu");
  if (n["model"]) spec.gpu_model = name_of(n["model"], source, "model");
  if (n["sm"]) {
    spec.sm = integer(n["sm"], source, "sm", 10, 199);
  } else if (auto sm = sm_of_model(spec.gpu_model)) {
    spec.sm = *sm;
  }
  if (!n["count"])
    throw InputError(
        fmt::format("{}:{}: 'gpu' needs 'count' (GPUs per node, or per tray with nvlink_domain)", source, line_of(n)));
  spec.gpus = integer(n["count"], source, "count", 1, kMaxGpus);
}

void Parser::parse_cpu(const YAML::Node& n) {
  if (!n.IsMap())
    throw InputError(fmt::format("{}:{}: 'cpu' must be a map like {{model: EPYC-7742, vendor: amd, sockets: 2}}",
                                 source, line_of(n)));
  reject_unknown_keys(n, source, {"model", "vendor", "sockets", "cores", "inter_socket_gbps"}, "cpu");
  if (n["model"]) spec.cpu_model = name_of(n["model"], source, "model");
  if (n["vendor"]) {
    spec.cpu_vendor = name_of(n["vendor"], source, "vendor");
    if (!c::inter_socket_gbps_of_vendor(spec.cpu_vendor))
      throw InputError(fmt::format("{}:{}: 'vendor: {}' must be intel, amd or arm", source, line_of(n["vendor"]),
                                   json_input::escaped(spec.cpu_vendor)));
  }
  if (n["sockets"]) spec.sockets = integer(n["sockets"], source, "sockets", 1, kMaxSockets);
  if (n["cores"]) spec.cores = integer(n["cores"], source, "cores", 1, kMaxCores);
  if (n["inter_socket_gbps"]) spec.inter_socket_gbps = gbps(n["inter_socket_gbps"], source, "inter_socket_gbps");
}

void Parser::parse_pcie(const YAML::Node& n) {
  if (!n.IsMap())
    throw InputError(fmt::format("{}:{}: 'pcie' must be a map like {{generation: 5, width: 16, switches: [...]}}",
                                 source, line_of(n)));
  reject_unknown_keys(n, source, {"generation", "width", "switches", "root_ports"}, "pcie");
  if (n["generation"]) spec.pcie_gts = *c::pcie_generation_gts(integer(n["generation"], source, "generation", 1, 6));
  if (n["width"]) {
    spec.pcie_width = integer(n["width"], source, "width", 1, 32);
    if (spec.pcie_width & (spec.pcie_width - 1))
      throw InputError(fmt::format("{}:{}: 'width: {}' must be a PCIe link width: 1, 2, 4, 8, 16 or 32", source,
                                   line_of(n["width"]), spec.pcie_width));
  }
  for (const char* key : {"switches", "root_ports"}) {
    const YAML::Node list = n[key];
    if (!list) continue;
    if (!list.IsSequence())
      throw InputError(fmt::format("{}:{}: 'pcie.{}' must be a list of maps like {{socket: 0, gpus: 2, nics: 1}}",
                                   source, line_of(list), key));
    const bool is_switch = std::string_view(key) == "switches";
    for (const YAML::Node& item : list)
      (is_switch ? spec.switches : spec.root_ports).push_back(group(item, is_switch, std::nullopt));
  }
}

void Parser::parse_nvlink(const YAML::Node& n) {
  if (n.IsScalar() && n.as<std::string>() == "none") {
    spec.nvlink = NodeSpec::Nvlink::None;
    return;
  }
  if (!n.IsMap())
    throw InputError(fmt::format("{}:{}: 'nvlink' must be none or a map like {{generation: 4, switches: [5, 4, 4, 5]}}",
                                 source, line_of(n)));
  reject_unknown_keys(n, source, {"generation", "gbps_per_link", "links_per_gpu", "switches", "bridges", "mesh"},
                      "nvlink");
  if (n["generation"])
    spec.nvlink_gbps_per_link =
        *c::nvlink_generation_gbps_per_link(integer(n["generation"], source, "generation", 1, 5));
  if (n["gbps_per_link"]) spec.nvlink_gbps_per_link = gbps(n["gbps_per_link"], source, "gbps_per_link");
  int shapes = 0;
  if (const YAML::Node s = n["switches"]) {
    ++shapes;
    spec.nvlink = NodeSpec::Nvlink::Switch;
    if (!s.IsSequence() || s.size() == 0)
      throw InputError(fmt::format(
          "{}:{}: 'nvlink.switches' must be a list of link counts, one per NVSwitch chip (DGX H100: [5, 4, 4, 5])",
          source, line_of(s)));
    for (const YAML::Node& k : s) spec.nvswitch_links.push_back(integer(k, source, "switches", 1, kMaxLinks));
  }
  if (const YAML::Node b = n["bridges"]) {
    ++shapes;
    spec.nvlink = NodeSpec::Nvlink::Bridges;
    if (!b.IsSequence() || b.size() == 0)
      throw InputError(
          fmt::format("{}:{}: 'nvlink.bridges' must be a list like [{{gpus: [0, 1], links: 12}}]", source, line_of(b)));
    for (const YAML::Node& item : b) {
      if (!item.IsMap())
        throw InputError(
            fmt::format("{}:{}: a bridge must be a map like {{gpus: [0, 1], links: 12}}", source, line_of(item)));
      reject_unknown_keys(item, source, {"gpus", "links"}, "a bridge");
      const YAML::Node g = item["gpus"];
      if (!g || !g.IsSequence() || g.size() != 2)
        throw InputError(
            fmt::format("{}:{}: a bridge needs 'gpus: [a, b]', the two GPUs it joins", source, line_of(item)));
      NvlinkBridge br;
      br.a = scalar<int>(g[0], source, "gpus", "GPU indices");
      br.b = scalar<int>(g[1], source, "gpus", "GPU indices");
      for (int idx : {br.a, br.b})
        if (idx < 0 || idx >= spec.gpus)
          throw InputError(fmt::format("{}:{}: bridge GPU index {} is outside 0..{} (gpu.count {})", source, line_of(g),
                                       idx, spec.gpus - 1, spec.gpus));
      if (br.a == br.b)
        throw InputError(fmt::format("{}:{}: a bridge joins GPU {} to itself: expected two different GPUs", source,
                                     line_of(g), br.a));
      if (item["links"]) br.links = integer(item["links"], source, "links", 1, kMaxLinks);
      spec.bridges.push_back(br);
    }
  }
  if (n["mesh"]) {
    ++shapes;
    spec.nvlink = NodeSpec::Nvlink::Mesh;
    spec.mesh_links = integer(n["mesh"], source, "mesh", 1, kMaxLinks);
  }
  if (shapes != 1)
    throw InputError(fmt::format(
        "{}:{}: 'nvlink' needs exactly one of switches (NVSwitch chips), bridges (GPU pairs) or mesh (every pair), "
        "got {}",
        source, line_of(n), shapes));
  if (spec.nvlink_gbps_per_link == 0.0) {
    if (spec.sm == 0)
      throw InputError(fmt::format("{}:{}: 'nvlink' needs 'generation' or 'gbps_per_link' when the GPU's sm is unknown",
                                   source, line_of(n)));
    spec.nvlink_gbps_per_link = c::nvlink_gbps_per_link(spec.sm);
  }
  if (n["links_per_gpu"]) {
    const int want = integer(n["links_per_gpu"], source, "links_per_gpu", 1, 1024);
    std::vector<int> per_gpu(static_cast<std::size_t>(spec.gpus), 0);
    int have = 0;
    if (spec.nvlink == NodeSpec::Nvlink::Switch)
      for (int k : spec.nvswitch_links) have += k;
    else if (spec.nvlink == NodeSpec::Nvlink::Mesh)
      have = spec.mesh_links * (spec.gpus - 1);
    else {
      for (const NvlinkBridge& br : spec.bridges) {
        per_gpu[static_cast<std::size_t>(br.a)] += br.links;
        per_gpu[static_cast<std::size_t>(br.b)] += br.links;
      }
      have = *std::max_element(per_gpu.begin(), per_gpu.end());
    }
    if (have != want)
      throw InputError(fmt::format("{}:{}: 'links_per_gpu: {}' but the {} give a GPU {} links", source,
                                   line_of(n["links_per_gpu"]), want,
                                   spec.nvlink == NodeSpec::Nvlink::Switch ? "switches"
                                   : spec.nvlink == NodeSpec::Nvlink::Mesh ? "mesh"
                                                                           : "bridges",
                                   have));
  }
}

void Parser::parse_nic(const YAML::Node& n) {
  if (!n.IsMap())
    throw InputError(
        fmt::format("{}:{}: 'nic' must be a map like {{model: ConnectX-7-NDR, speed: 400 Gb/s}}", source, line_of(n)));
  reject_unknown_keys(n, source, {"model", "speed", "count"}, "nic");
  if (n["model"]) spec.nic_model = name_of(n["model"], source, "model");
  if (n["speed"]) spec.nic_gbps = c::gbit_to_gbps(parse_gbit(n["speed"], source, "speed"));
}

// Sums over a group tree.
void count_group(const PcieGroup& g, int& gpus, int& nics) {
  gpus += g.gpus;
  nics += g.nics;
  for (const PcieGroup& s : g.switches) count_group(s, gpus, nics);
}

void Parser::validate(const YAML::Node& root) {
  int gpus = 0, nics = 0;
  bool c2c = false;
  auto check_socket = [&](const PcieGroup& g) {
    if (g.socket >= spec.sockets)
      throw InputError(fmt::format("{}:{}: 'socket: {}' names a socket the node does not have (cpu.sockets {}: 0..{})",
                                   source, g.line, g.socket, spec.sockets, spec.sockets - 1));
  };
  // GPUs are numbered in walk order: switches depth first (a switch's GPUs, then its nested
  // switches), then the root ports. A list of indices must be those numbers.
  int next = 0;
  auto number = [&](const PcieGroup& g) {
    for (int idx : g.gpu_list) {
      if (idx < 0 || idx >= spec.gpus)
        throw InputError(fmt::format("{}:{}: GPU index {} is outside 0..{} (gpu.count {})", source, g.line, idx,
                                     spec.gpus - 1, spec.gpus));
      if (idx != next)
        throw InputError(
            fmt::format("{}:{}: lists GPU {} where the walk places GPU {}: GPUs are numbered switch by "
                        "switch (depth first), then root ports; list them in that order",
                        source, g.line, idx, next));
      ++next;
    }
    if (g.gpu_list.empty()) next += g.gpus;
  };
  std::function<void(const PcieGroup&)> walk = [&](const PcieGroup& g) {
    check_socket(g);
    number(g);
    for (const PcieGroup& s : g.switches) walk(s);
  };
  for (const PcieGroup& g : spec.switches) {
    walk(g);
    count_group(g, gpus, nics);
  }
  for (const PcieGroup& g : spec.root_ports) {
    check_socket(g);
    number(g);
    count_group(g, gpus, nics);
    c2c = c2c || g.attach == GpuAttach::C2C;
  }
  if (gpus != spec.gpus)
    throw InputError(
        fmt::format("{}:{}: gpu.count is {} but the PCIe tree (pcie.switches, pcie.root_ports) places {} "
                    "GPUs: expected every GPU under a switch or a socket",
                    source, line_of(root["gpu"]), spec.gpus, gpus));
  if (nics > 0 && spec.nic_gbps == 0.0)
    throw InputError(
        fmt::format("{}:{}: the PCIe tree places {} NICs but 'nic.speed' is not given (e.g. 'nic: "
                    "{{speed: 400 Gb/s}}')",
                    source, line_of(root), nics));
  if (const YAML::Node n = root["nic"]; n && n["count"]) {
    const int want = integer(n["count"], source, "count", 0, kMaxNics * 64);
    if (want != nics)
      throw InputError(fmt::format("{}:{}: 'nic.count: {}' but the PCIe tree places {} NICs", source,
                                   line_of(n["count"]), want, nics));
  }
  if (c2c && spec.c2c_gbps == 0.0)
    throw InputError(fmt::format("{}:{}: GPUs attach by c2c but 'c2c_gbps' is not given", source, line_of(root)));
  if (spec.nvlink_domain > 0) {
    const YAML::Node d = root["nvlink_domain"];
    if (spec.nvlink_domain % spec.gpus != 0)
      throw InputError(fmt::format("{}:{}: 'nvlink_domain: {}' is not a multiple of the tray's {} GPUs (gpu.count)",
                                   source, line_of(d), spec.nvlink_domain, spec.gpus));
    if (spec.nvlink != NodeSpec::Nvlink::Switch)
      throw InputError(
          fmt::format("{}:{}: 'nvlink_domain' needs NVLink switches ('nvlink.switches'): the trays of "
                      "a domain meet only there",
                      source, line_of(d)));
  }
}

void Parser::parse(const YAML::Node& root) {
  if (!root.IsMap())
    throw InputError(fmt::format("{}: expected a YAML map describing a node (at least 'gpu' and 'pcie')", source));
  reject_unknown_keys(
      root, source, {"name", "description", "gpu", "cpu", "pcie", "nvlink", "nic", "c2c_gbps", "p2p", "nvlink_domain"},
      "the node description");
  if (root["name"]) spec.name = scalar<std::string>(root["name"], source, "name", "a string");
  if (root["description"])
    spec.description = scalar<std::string>(root["description"], source, "description", "a string");
  if (!root["gpu"])
    throw InputError(fmt::format("{}:{}: missing 'gpu': expected {{model, sm, count}}", source, line_of(root)));
  parse_gpu(root["gpu"]);
  if (root["cpu"]) parse_cpu(root["cpu"]);
  if (root["nic"]) parse_nic(root["nic"]);
  if (root["c2c_gbps"]) spec.c2c_gbps = gbps(root["c2c_gbps"], source, "c2c_gbps");
  if (root["p2p"]) spec.p2p = scalar<bool>(root["p2p"], source, "p2p", "true or false");
  if (root["nvlink_domain"])
    spec.nvlink_domain = integer(root["nvlink_domain"], source, "nvlink_domain", 1, kMaxDomain);
  if (!root["pcie"])
    throw InputError(
        fmt::format("{}:{}: missing 'pcie': expected {{generation, width, switches, root_ports}} placing "
                    "the GPUs and NICs",
                    source, line_of(root)));
  parse_pcie(root["pcie"]);
  if (root["nvlink"]) parse_nvlink(root["nvlink"]);
  validate(root);
}

// ---------------------------------------------------------------------------------------------
// Building.

struct Builder {
  const NodeSpec& spec;
  NodeModel m;
  int gpu_label = -1, cpu_label = -1, nic_label = -1;
  std::vector<Vertex> cpus;  // this tray's
  std::vector<Vertex> gpus;  // every tray's, in order
  std::vector<std::pair<Vertex, Vertex>> root_nics;

  double pcie(int width) const { return width * *c::pcie_gbps_per_lane(spec.pcie_gts); }
  int width_of(const PcieGroup& g, int parent) const { return g.width ? g.width : parent; }

  void place_gpus(const PcieGroup& g, Vertex parent, int numa, int width) {
    for (int k = 0; k < g.gpus; ++k) {
      const Vertex gpu = m.add_gpu(numa, spec.sm, gpu_label);
      if (g.attach == GpuAttach::C2C)
        m.add_link(parent, gpu, LinkKind::C2C, spec.c2c_gbps, c::kNvlinkLatencyUs);
      else
        m.add_link(parent, gpu, LinkKind::Pcie, pcie(width), c::kPcieLatencyUs, width);
      gpus.push_back(gpu);
    }
  }

  void place_nics(const PcieGroup& g, Vertex parent, int numa, int width) {
    for (int k = 0; k < g.nics; ++k) {
      const Vertex nic = m.add_nic(numa, spec.nic_gbps, nic_label);
      m.add_link(parent, nic, LinkKind::Pcie, pcie(width), c::kPcieLatencyUs, width);
    }
  }

  void add_switch(const PcieGroup& g, Vertex parent, int numa_base, int parent_width) {
    const int numa = numa_base + g.socket;
    const int width = width_of(g, parent_width);
    const Vertex sw = m.add_device(DeviceKind::PcieSwitch, numa);
    m.add_link(parent, sw, LinkKind::Pcie, pcie(width), c::kPcieLatencyUs, width);
    place_gpus(g, sw, numa, width);
    place_nics(g, sw, numa, width);
    for (const PcieGroup& child : g.switches) add_switch(child, sw, numa_base, width);
  }

  void add_tray(int tray) {
    const int numa_base = tray * spec.sockets;
    cpus.clear();
    for (int s = 0; s < spec.sockets; ++s) cpus.push_back(m.add_device(DeviceKind::Cpu, numa_base + s, cpu_label));
    const double socket_gbps = spec.inter_socket_gbps
                                   ? *spec.inter_socket_gbps
                                   : c::inter_socket_gbps_of_vendor(spec.cpu_vendor).value_or(c::kInterSocketAmdGbps);
    for (std::size_t i = 0; i < cpus.size(); ++i)
      for (std::size_t j = i + 1; j < cpus.size(); ++j)
        m.add_link(cpus[i], cpus[j], LinkKind::InterSocket, socket_gbps, c::kInterSocketLatencyUs);
    for (const PcieGroup& g : spec.switches)
      add_switch(g, cpus[static_cast<std::size_t>(g.socket)], numa_base, spec.pcie_width);
    for (const PcieGroup& g : spec.root_ports)
      place_gpus(g, cpus[static_cast<std::size_t>(g.socket)], numa_base + g.socket, width_of(g, spec.pcie_width));
    for (const PcieGroup& g : spec.root_ports)
      place_nics(g, cpus[static_cast<std::size_t>(g.socket)], numa_base + g.socket, width_of(g, spec.pcie_width));
  }

  void add_nvlink(int trays) {
    const double per_link = spec.nvlink_gbps_per_link;
    switch (spec.nvlink) {
      case NodeSpec::Nvlink::None:
        return;
      case NodeSpec::Nvlink::Switch:
        add_nvswitches(m, spec.nvswitch_links, per_link);
        return;
      case NodeSpec::Nvlink::Bridges:
        for (int t = 0; t < trays; ++t)
          for (const NvlinkBridge& br : spec.bridges)
            m.add_link(gpus[static_cast<std::size_t>(t * spec.gpus + br.a)],
                       gpus[static_cast<std::size_t>(t * spec.gpus + br.b)], LinkKind::NvLink, br.links * per_link,
                       c::kNvlinkLatencyUs, br.links);
        return;
      case NodeSpec::Nvlink::Mesh:
        for (int t = 0; t < trays; ++t)
          for (int a = 0; a < spec.gpus; ++a)
            for (int b = a + 1; b < spec.gpus; ++b)
              m.add_link(gpus[static_cast<std::size_t>(t * spec.gpus + a)],
                         gpus[static_cast<std::size_t>(t * spec.gpus + b)], LinkKind::NvLink,
                         spec.mesh_links * per_link, c::kNvlinkLatencyUs, spec.mesh_links);
        return;
    }
  }
};

}  // namespace

namespace yaml_input {

double gbit(const YAML::Node& n, const std::string& source, const std::string& key) {
  return parse_gbit(n, source, key);
}

NodeSpec parse_node_map(const YAML::Node& root, const std::string& source) {
  Parser p{source, {}};
  p.spec.source = source;
  p.parse(root);
  return p.spec;
}

}  // namespace yaml_input

NodeSpec parse_node_spec(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError(fmt::format("{}:{}: not valid YAML: {}", source, e.mark.line + 1, e.msg));
  }
  return yaml_input::parse_node_map(root, source);
}

NodeSpec load_node_spec(const std::string& path) {
  NodeSpec spec = parse_node_spec(read_text(path), path);
  if (spec.name.empty()) spec.name = path;
  return spec;
}

bool is_node_spec_text(const std::string& text) {
  try {
    const YAML::Node root = YAML::Load(text);
    if (!root.IsMap() || root["node"]) return false;
    for (const char* key : {"gpu", "cpu", "pcie", "nvlink", "nic", "nvlink_domain"})
      if (root[key]) return true;
    return false;
  } catch (const YAML::Exception&) {
    return false;
  }
}

NodeModel build_node(const NodeSpec& spec) {
  Builder b{spec, {}};
  b.m.name = spec.name;
  b.m.description = spec.description;
  b.m.cpu_vendor = spec.cpu_vendor;
  const int trays = spec.nvlink_domain > 0 ? spec.nvlink_domain / spec.gpus : 1;
  b.m.cores = spec.cores * trays;
  if (!spec.gpu_model.empty()) b.gpu_label = b.m.label(spec.gpu_model);
  if (!spec.cpu_model.empty()) b.cpu_label = b.m.label(spec.cpu_model);
  if (!spec.nic_model.empty()) b.nic_label = b.m.label(spec.nic_model);
  for (int t = 0; t < trays; ++t) b.add_tray(t);
  b.add_nvlink(trays);
  b.m.notes = spec.notes;
  if (trays > 1)
    b.m.notes.push_back(fmt::format(
        "one NVLink domain of {} trays x {} GPUs modelled as one node (NCCL builds its graphs over an MNNVL clique "
        "as over one node); --nodes counts domains",
        trays, spec.gpus));
  if (!spec.p2p) {
    disable_p2p(b.m);
    b.m.notes.push_back("p2p: false (as NCCL_P2P_DISABLE=1): no NVLink, GPU-to-GPU traffic takes the PCIe / CPU path");
  }
  return b.m;
}

// ---------------------------------------------------------------------------------------------
// Changes to a built node.

void set_gpu_model(NodeModel& m, const std::optional<std::string>& model, std::optional<int> sm) {
  std::optional<int> label;
  if (model) label = m.label(*model);
  if (model && !sm) sm = sm_of_model(*model);
  for (auto v : boost::make_iterator_range(boost::vertices(m.graph))) {
    Device& d = m.graph[v];
    if (d.kind != DeviceKind::Gpu) continue;
    if (label) d.model = *label;
    if (sm) d.sm = *sm;
  }
}

void set_nvlink_gbps(NodeModel& m, double gbps) {
  Graph& g = m.graph;
  bool any = false;
  for (auto v : boost::make_iterator_range(boost::vertices(g))) {
    if (g[v].kind != DeviceKind::Gpu) continue;
    double total = 0.0;
    for (auto e : boost::make_iterator_range(boost::out_edges(v, g)))
      if (g[e].kind == LinkKind::NvLink) total += g[e].bw_gbps;
    if (total == 0.0) continue;
    any = true;
    // A GPU-to-GPU bundle is scaled from both ends; scale only the bundles where v is the
    // lower end (or the other end is a switch), once.
    for (auto e : boost::make_iterator_range(boost::out_edges(v, g))) {
      if (g[e].kind != LinkKind::NvLink) continue;
      const Vertex other = boost::target(e, g);
      if (g[other].kind == DeviceKind::Gpu && other < v) continue;
      g[e].bw_gbps *= gbps / total;
    }
  }
  if (!any)
    throw InputError(fmt::format(
        "overrides: 'nvlink_gbps: {}' on {}, which has no NVLink: expected 'nvlink: {{...}}' to add NVLink switches",
        gbps, m.name));
  m.notes.push_back(fmt::format("NVLink set to {} GB/s per GPU per direction by the cluster spec", gbps));
}

void add_nvswitches(NodeModel& m, const std::vector<int>& links, double gbps_per_link) {
  std::vector<Vertex> gpus;
  for (auto v : boost::make_iterator_range(boost::vertices(m.graph))) {
    if (m.graph[v].kind == DeviceKind::Gpu) gpus.push_back(v);
    for (auto e : boost::make_iterator_range(boost::out_edges(v, m.graph)))
      if (m.graph[e].kind == LinkKind::NvLink)
        throw InputError(
            fmt::format("{}: already has NVLink: an NVLink switch override applies to a node without", m.name));
  }
  if (gpus.empty()) throw InputError(fmt::format("{}: has no GPU to join by NVLink switches", m.name));
  for (int k : links) {
    const Vertex nvs = m.add_device(DeviceKind::NvSwitch);
    for (Vertex gpu : gpus) m.add_link(gpu, nvs, LinkKind::NvLink, k * gbps_per_link, c::kNvlinkLatencyUs, k);
  }
}

void disable_p2p(NodeModel& m) {
  const Graph& g = m.graph;
  Graph out;
  std::map<Vertex, Vertex> renumber;
  std::map<DeviceKind, int> index;
  for (auto v : boost::make_iterator_range(boost::vertices(g))) {
    if (g[v].kind == DeviceKind::NvSwitch) continue;
    Device d = g[v];
    d.local_index = index[d.kind]++;
    renumber[v] = boost::add_vertex(d, out);
  }
  for (auto e : boost::make_iterator_range(boost::edges(g))) {
    if (g[e].kind == LinkKind::NvLink) continue;
    boost::add_edge(renumber.at(boost::source(e, g)), renumber.at(boost::target(e, g)), g[e], out);
  }
  m.graph = std::move(out);
}

}  // namespace topocoll::topo
