#include "topologies/local.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <hwloc.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "common/errors.hpp"
#include "topologies/constants.hpp"

namespace topocoll::topo {

namespace c = constants;

// ---------------------------------------------------------------------------------------------
// Pure helpers

PciRole classify_pci(std::uint16_t class_id, std::uint16_t vendor_id) {
  constexpr std::uint16_t kNvidia = 0x10de;
  constexpr std::uint16_t kAmd = 0x1002;
  constexpr std::uint16_t k3dController = 0x0302;
  const std::uint16_t base_class = class_id >> 8;
  if (class_id == k3dController) return PciRole::Gpu;
  if (base_class == 0x03 && (vendor_id == kNvidia || vendor_id == kAmd)) return PciRole::Gpu;
  if (base_class == 0x02) return PciRole::Nic;
  return PciRole::Ignored;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

// The leading decimal number of `text` and what follows it.
std::optional<std::pair<double, std::string_view>> leading_number(std::string_view text) {
  text = trim(text);
  double value = 0.0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr == text.data()) return std::nullopt;
  return std::pair{value, trim(std::string_view(ptr, static_cast<std::size_t>(text.data() + text.size() - ptr)))};
}

}  // namespace

std::optional<double> parse_net_speed(std::string_view text) {
  auto number = leading_number(text);
  if (!number || !number->second.empty() || number->first <= 0.0) return std::nullopt;
  return number->first / 8000.0;  // Mb/s -> GB/s
}

std::optional<double> parse_ib_rate(std::string_view text) {
  auto number = leading_number(text);
  if (!number || number->first <= 0.0 || !number->second.starts_with("Gb/sec")) return std::nullopt;
  return number->first / 8.0;  // Gb/s -> GB/s
}

// ---------------------------------------------------------------------------------------------
// hwloc probe: every hwloc call of the project is in this section.

namespace {

struct HwlocTopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using HwlocTopology = std::unique_ptr<hwloc_topology, HwlocTopologyDeleter>;

// hwloc loads its plugins in hwloc_topology_init when no topology exists and unloads them when the
// last one is destroyed. Its PCI plugin brings libpciaccess, which keeps its pci.ids name cache
// (the vendor and device names) in globals it never frees: every unload lost that cache (about
// 1 KB per probe; LeakSanitizer reports it as allocated in an unloaded module). One empty
// topology kept for the process's lifetime keeps the plugins loaded, so the cache is built once
// and stays reachable. Volatile: nothing reads the pointer, and the store must stay (it is what
// keeps the topology reachable for a leak checker).
hwloc_topology_t volatile hwloc_keep_alive = nullptr;

void keep_hwloc_plugins_loaded() {
  static std::once_flag once;
  std::call_once(once, [] {
    hwloc_topology_t t = nullptr;
    if (hwloc_topology_init(&t) == 0) hwloc_keep_alive = t;
  });
}

HwlocTopology load_hwloc_topology() {
  keep_hwloc_plugins_loaded();
  hwloc_topology_t raw = nullptr;
  if (int err = hwloc_topology_init(&raw); err != 0)
    throw InternalError(fmt::format("hwloc_topology_init failed ({})", err));
  HwlocTopology topo(raw);
  if (int err = hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT); err != 0)
    throw InternalError(fmt::format("hwloc_topology_set_io_types_filter failed ({})", err));
  if (int err = hwloc_topology_load(raw); err != 0)
    throw InternalError(fmt::format("hwloc_topology_load failed ({})", err));
  return topo;
}

std::string info_of(hwloc_obj_t obj, const char* name) {
  const char* value = obj ? hwloc_obj_get_info_by_name(obj, name) : nullptr;
  return value ? std::string(value) : std::string();
}

int int_info_of(hwloc_obj_t obj, const char* name) {
  const std::string text = info_of(obj, name);
  int value = -1;
  if (text.empty() || std::from_chars(text.data(), text.data() + text.size(), value).ec != std::errc()) return -1;
  return value;
}

std::optional<std::string> read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

// The port rate the OS reports for a NIC's OS devices (GB/s), 0 when none does.
double os_port_gbps(hwloc_obj_t osdev) {
  const std::string name = osdev->name ? osdev->name : "";
  if (osdev->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK) {
    if (auto line = read_first_line(fmt::format("/sys/class/net/{}/speed", name)))
      if (auto gbps = parse_net_speed(*line)) return *gbps;
  }
  if (osdev->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
    if (auto line = read_first_line(fmt::format("/sys/class/infiniband/{}/ports/1/rate", name)))
      if (auto gbps = parse_ib_rate(*line)) return *gbps;
  }
  return 0.0;
}

// The package whose cpuset holds the locality of an IO object; -1 when several or none do.
int package_of(hwloc_topology_t topo, hwloc_obj_t io_obj) {
  hwloc_obj_t ancestor = hwloc_get_non_io_ancestor_obj(topo, io_obj);
  if (!ancestor || !ancestor->cpuset) return -1;
  const int packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  int found = -1;
  // A locality inside one package's cpuset belongs to that package.
  for (int p = 0; p < packages; ++p) {
    hwloc_obj_t package = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, static_cast<unsigned>(p));
    if (!hwloc_bitmap_isincluded(ancestor->cpuset, package->cpuset)) continue;
    if (found >= 0) return -1;
    found = p;
  }
  return found;
}

// `this_machine`: the topology is this machine's, so its OS devices' port rates can be read from
// sysfs; false for a topology loaded from an XML file of another machine.
LocalPciObject pci_object_of(hwloc_topology_t topo, hwloc_obj_t obj, int parent, bool this_machine) {
  const bool bridge = obj->type == HWLOC_OBJ_BRIDGE;
  const auto& pci = bridge ? obj->attr->bridge.upstream.pci : obj->attr->pcidev;
  LocalPciObject o;
  o.bus_id = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", pci.domain, pci.bus, pci.dev, pci.func);
  o.class_id = pci.class_id;
  o.vendor_id = pci.vendor_id;
  o.device_id = pci.device_id;
  o.is_bridge = bridge;
  o.link_gbps = pci.linkspeed;
  o.parent = parent;
  o.package = package_of(topo, obj);
  o.name = info_of(obj, "PCIDevice");
  // OS devices (network interfaces, InfiniBand HCAs, DRM cards) hang below a PCI device.
  for (hwloc_obj_t child = obj->io_first_child; child; child = child->next_sibling) {
    if (child->type != HWLOC_OBJ_OS_DEVICE) continue;
    if (child->name) o.os_devices.emplace_back(child->name);
    if (this_machine) o.port_gbps = std::max(o.port_gbps, os_port_gbps(child));
  }
  return o;
}

// Depth-first over the IO tree below `obj`, parents before children. Host bridges are not
// recorded (they are the CPU's root complex): their children get parent -1.
void collect_pci(hwloc_topology_t topo, hwloc_obj_t obj, int parent, bool this_machine,
                 std::vector<LocalPciObject>& out) {
  for (hwloc_obj_t child = obj->io_first_child; child; child = child->next_sibling) {
    const bool host_bridge =
        child->type == HWLOC_OBJ_BRIDGE && child->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
    const bool pci_object = child->type == HWLOC_OBJ_PCI_DEVICE || (child->type == HWLOC_OBJ_BRIDGE && !host_bridge);
    int index = parent;
    if (pci_object) {
      out.push_back(pci_object_of(topo, child, parent, this_machine));
      index = static_cast<int>(out.size() - 1);
    }
    collect_pci(topo, child, index, this_machine, out);
  }
}

// IO objects hang below normal objects (machine, package, group, ...): visit them all.
void collect_pci_below(hwloc_topology_t topo, hwloc_obj_t obj, bool this_machine, std::vector<LocalPciObject>& out) {
  collect_pci(topo, obj, -1, this_machine, out);
  for (hwloc_obj_t child = obj->first_child; child; child = child->next_sibling)
    collect_pci_below(topo, child, this_machine, out);
}

LocalInventory inventory_of(hwloc_topology_t t, bool this_machine) {
  LocalInventory inv;
  inv.hostname = info_of(hwloc_get_root_obj(t), "HostName");
  inv.numa_nodes = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  inv.cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  inv.hardware_threads = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
  const int packages = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
  for (int p = 0; p < packages; ++p) {
    hwloc_obj_t package = hwloc_get_obj_by_type(t, HWLOC_OBJ_PACKAGE, static_cast<unsigned>(p));
    LocalPackage lp;
    lp.vendor = info_of(package, "CPUVendor");
    lp.model = info_of(package, "CPUModel");
    lp.family = int_info_of(package, "CPUFamilyNumber");
    lp.model_number = int_info_of(package, "CPUModelNumber");
    lp.cores = hwloc_get_nbobjs_inside_cpuset_by_type(t, package->cpuset, HWLOC_OBJ_CORE);
    inv.packages.push_back(lp);
  }
  collect_pci_below(t, hwloc_get_root_obj(t), this_machine, inv.pci);
  return inv;
}

}  // namespace

LocalInventory probe_local_inventory() {
  HwlocTopology topo = load_hwloc_topology();
  return inventory_of(topo.get(), true);
}

std::optional<LocalInventory> hwloc_xml_inventory(std::string_view xml) {
  keep_hwloc_plugins_loaded();
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) throw InternalError("hwloc_topology_init failed");
  HwlocTopology topo(raw);
  if (hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT) != 0)
    throw InternalError("hwloc_topology_set_io_types_filter failed");
  if (hwloc_topology_set_xmlbuffer(raw, xml.data(), static_cast<int>(xml.size())) != 0) return std::nullopt;
  if (hwloc_topology_load(raw) != 0) return std::nullopt;
  return inventory_of(raw, false);
}

// ---------------------------------------------------------------------------------------------
// Building the node model (pure)

namespace {

// NCCL's CPU model rule (src/graph/topo.cc): Intel family 6 from model 0x8F (Sapphire Rapids)
// gets the SPR inter-socket figure, older Intel the Skylake one.
constexpr int kIntelSapphireRapidsModel = 0x8F;

std::string vendor_name(std::string_view hwloc_vendor) {
  if (hwloc_vendor == "GenuineIntel") return "intel";
  if (hwloc_vendor == "AuthenticAMD") return "amd";
  return "";
}

class LocalNodeBuilder {
 public:
  explicit LocalNodeBuilder(const LocalInventory& inv) : inv_(inv) {}

  NodeModel build() {
    add_sockets();
    add_pci_devices();
    add_summary_notes();
    return std::move(m_);
  }

 private:
  const LocalInventory& inv_;
  NodeModel m_;
  std::vector<Vertex> cpus_;
  std::map<int, Vertex> switch_of_bridge_;  // bridge index in inv_.pci -> PcieSwitch vertex
  std::vector<std::string> unknown_link_speed_;
  std::set<std::string> unplaced_;  // bus ids, sorted and once each

  void add_sockets() {
    const std::size_t sockets = std::max<std::size_t>(1, inv_.packages.size());
    if (inv_.packages.empty()) m_.notes.emplace_back("hwloc reported no CPU package: one socket assumed");
    const LocalPackage first = inv_.packages.empty() ? LocalPackage{} : inv_.packages.front();
    m_.cpu_vendor = vendor_name(first.vendor);
    for (std::size_t p = 0; p < sockets; ++p) {
      const std::string model = p < inv_.packages.size() ? inv_.packages[p].model : std::string();
      cpus_.push_back(m_.add_device(DeviceKind::Cpu, static_cast<int>(p), m_.label(model.empty() ? "cpu" : model)));
    }
    const double gbps = inter_socket_gbps(first);
    // Every pair of sockets is joined directly (2- and 4-socket boards are fully connected).
    for (std::size_t i = 0; i < cpus_.size(); ++i)
      for (std::size_t j = i + 1; j < cpus_.size(); ++j)
        m_.add_link(cpus_[i], cpus_[j], LinkKind::InterSocket, gbps, c::kInterSocketLatencyUs);
  }

  double inter_socket_gbps(const LocalPackage& package) {
    if (m_.cpu_vendor == "amd") return c::kInterSocketAmdGbps;
    if (m_.cpu_vendor == "intel")
      return package.family == 6 && package.model_number >= kIntelSapphireRapidsModel
                 ? c::kInterSocketIntelSapphireRapidsGbps
                 : c::kInterSocketIntelSkylakeGbps;
    if (inv_.packages.size() > 1)
      m_.notes.push_back(fmt::format("CPU vendor '{}' unknown: inter-socket links assumed {} GB/s (Intel Skylake UPI)",
                                     package.vendor, c::kInterSocketIntelSkylakeGbps));
    return c::kInterSocketIntelSkylakeGbps;
  }

  struct PcieLink {
    double gbps = 0.0;
    int lanes = 0;  // 0: hwloc gives a rate, not a width
  };

  // A PCI function's upstream link; Gen3 x16 when hwloc does not know its rate.
  PcieLink pcie_link(const LocalPciObject& o) {
    if (o.link_gbps > 0.0f) return {o.link_gbps, 0};
    unknown_link_speed_.push_back(o.bus_id);
    return {c::kPcieDefaultWidth * *c::pcie_gbps_per_lane(8.0), c::kPcieDefaultWidth};
  }

  Vertex cpu_of(const LocalPciObject& o) {
    if (o.package >= 0 && static_cast<std::size_t>(o.package) < cpus_.size())
      return cpus_[static_cast<std::size_t>(o.package)];
    if (cpus_.size() > 1) unplaced_.insert(o.bus_id);
    return cpus_.front();
  }

  // The PCIe switches above a device, nearest first. Its bridges, nearest first, are
  // [downstream port, upstream port]* then the root port (whose parent is the host bridge).
  // The root port is part of the CPU; each (downstream, upstream) pair is one physical switch,
  // keyed by its upstream port, as NCCL does when it reads sysfs (two levels per switch).
  std::vector<int> switch_bridges(const LocalPciObject& device) const {
    std::vector<int> bridges;
    for (int b = device.parent; b >= 0; b = inv_.pci[static_cast<std::size_t>(b)].parent) bridges.push_back(b);
    if (!bridges.empty()) bridges.pop_back();  // the root port
    std::vector<int> switches;
    // Pairs (downstream, upstream): the switch is the upper bridge; a lone bridge is its own.
    for (std::size_t i = 0; i < bridges.size(); i += 2)
      switches.push_back(bridges[std::min(i + 1, bridges.size() - 1)]);
    return switches;
  }

  // The vertex a device's link goes up to: its nearest switch (created with its own uplinks
  // on first use) or, with no switch, the CPU of its package.
  Vertex upstream_of(const LocalPciObject& device) {
    const std::vector<int> switches = switch_bridges(device);
    if (switches.empty()) return cpu_of(device);
    // Create missing switches from the top down so that each links to the one above it.
    Vertex above = cpu_of(inv_.pci[static_cast<std::size_t>(switches.back())]);
    for (auto it = switches.rbegin(); it != switches.rend(); ++it) {
      auto found = switch_of_bridge_.find(*it);
      if (found == switch_of_bridge_.end()) {
        const LocalPciObject& bridge = inv_.pci[static_cast<std::size_t>(*it)];
        Vertex sw = m_.add_device(DeviceKind::PcieSwitch, m_.graph[above].numa);
        const PcieLink link = pcie_link(bridge);
        m_.add_link(above, sw, LinkKind::Pcie, link.gbps, c::kPcieLatencyUs, link.lanes);
        found = switch_of_bridge_.emplace(*it, sw).first;
      }
      above = found->second;
    }
    return above;
  }

  std::string pci_label(const LocalPciObject& o) {
    return o.name.empty() ? fmt::format("pci-{:04x}:{:04x}", o.vendor_id, o.device_id) : o.name;
  }

  void add_pci_devices() {
    // GPUs and NICs in hwloc's order (PCI bus order), with the switches above them.
    for (const LocalPciObject& o : inv_.pci) {
      if (o.is_bridge) continue;
      const PciRole role = classify_pci(o.class_id, o.vendor_id);
      if (role == PciRole::Ignored) {
        if ((o.class_id >> 8) == 0x03)
          m_.notes.push_back(
              fmt::format("ignored display controller {} ({:04x}:{:04x}): not a GPU (BMC or emulated VGA)", o.bus_id,
                          o.vendor_id, o.device_id));
        continue;
      }
      const Vertex up = upstream_of(o);
      const int numa = m_.graph[up].numa;
      const PcieLink link = pcie_link(o);
      const Vertex device = role == PciRole::Gpu
                                ? m_.add_gpu(numa, 0, m_.label(pci_label(o)))
                                : m_.add_nic(numa, nic_port_gbps(o, link.gbps), m_.label(pci_label(o)));
      m_.add_link(up, device, LinkKind::Pcie, link.gbps, c::kPcieLatencyUs, link.lanes);
    }
  }

  double nic_port_gbps(const LocalPciObject& o, double pcie_gbps) {
    if (o.port_gbps > 0.0) return o.port_gbps;
    const std::string names = o.os_devices.empty() ? o.bus_id : fmt::format("{}", fmt::join(o.os_devices, ","));
    m_.notes.push_back(fmt::format("NIC {}: port speed not reported by the OS, assumed its PCIe link rate ({} GB/s)",
                                   names, pcie_gbps));
    return pcie_gbps;
  }

  void add_summary_notes() {
    const std::size_t gpus = m_.count(DeviceKind::Gpu);
    const std::size_t nics = m_.count(DeviceKind::Nic);
    m_.name = "local";
    m_.cores = inv_.cores > 0 ? inv_.cores : std::max(1, inv_.hardware_threads);
    const std::string cpu_model =
        inv_.packages.empty() || inv_.packages.front().model.empty() ? "CPU" : inv_.packages.front().model;
    m_.description = fmt::format("this machine{}: {} x {}, {} GPUs, {} NICs",
                                 inv_.hostname.empty() ? "" : fmt::format(" ({})", inv_.hostname), cpus_.size(),
                                 cpu_model, gpus, nics);
    m_.notes.push_back(fmt::format("hwloc: {} sockets, {} NUMA nodes, {} cores, {} hardware threads",
                                   inv_.packages.size(), inv_.numa_nodes, m_.cores, inv_.hardware_threads));
    if (!unknown_link_speed_.empty())
      m_.notes.push_back(fmt::format("PCIe link speed unknown, assumed Gen3 x16 ({} GB/s): {}",
                                     c::kPcieDefaultWidth * *c::pcie_gbps_per_lane(8.0),
                                     fmt::join(unknown_link_speed_, ", ")));
    if (!unplaced_.empty())
      m_.notes.push_back(fmt::format("PCI locality unknown, attached to cpu0: {}", fmt::join(unplaced_, ", ")));
    if (gpus == 0) m_.notes.emplace_back("no GPU found on this machine: ranks map to CPU cores");
    if (gpus > 0) m_.notes.emplace_back("GPU compute capability is not reported by hwloc: sm = 0 (unknown)");
    if (gpus > 1) m_.notes.emplace_back("NVLink is not detected by hwloc: GPUs are joined over PCIe only");
  }
};

}  // namespace

NodeModel build_local_node(const LocalInventory& inventory) {
  return LocalNodeBuilder(inventory).build();
}

NodeModel detect_local_node() {
  return build_local_node(probe_local_inventory());
}

}  // namespace topocoll::topo
