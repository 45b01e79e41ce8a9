#include "topologies/nccl_xml.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <pugixml.hpp>
#include <sstream>
#include <utility>
#include <vector>

#include "common/errors.hpp"
#include "common/files.hpp"
#include "topologies/constants.hpp"

namespace topocoll::topo {

namespace c = constants;

namespace {

// ---------------------------------------------------------------------------------------------
// Small parsers for attribute values. Each returns nullopt when the text is not of the form.

// A decimal integer, the whole text.
std::optional<long long> parse_integer(std::string_view text) {
  long long value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

// A finite decimal number, the whole text.
std::optional<double> parse_number(std::string_view text) {
  double value = 0.0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty() || !std::isfinite(value)) return std::nullopt;
  return value;
}

// A PCI class code as sysfs and NCCL write it: "0x" and six hex digits (base class, subclass,
// programming interface), e.g. 0x030200.
std::optional<std::uint32_t> parse_pci_class(std::string_view text) {
  if (text.size() != 8 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) return std::nullopt;
  std::uint32_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data() + 2, end, value, 16);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return out;
}

// What a PCI class code stands for (NCCL src/graph/topo.cc, kvDictPciClass).
enum class PciRole { Switch, NvSwitch, Cpu, Gpu, Nic, Other };

PciRole pci_role(std::uint32_t pci_class) {
  if ((pci_class >> 8) == 0x0604) return PciRole::Switch;  // PCI-to-PCI bridge
  if (pci_class == 0x068000) return PciRole::NvSwitch;
  if (pci_class == 0x068001) return PciRole::Cpu;      // NCCL's class for a CPU as an NVLink target
  if ((pci_class >> 16) == 0x03) return PciRole::Gpu;  // display controllers
  if ((pci_class >> 16) == 0x02) return PciRole::Nic;  // network controllers (Ethernet, InfiniBand)
  return PciRole::Other;
}

std::string_view role_name(PciRole role) {
  switch (role) {
    case PciRole::Switch:
      return "PCIe switch";
    case PciRole::NvSwitch:
      return "NVSwitch";
    case PciRole::Cpu:
      return "CPU";
    case PciRole::Gpu:
      return "GPU";
    case PciRole::Nic:
      return "NIC";
    case PciRole::Other:
      break;
  }
  return "device";
}

constexpr std::string_view kPcieSpeedForms =
    "a PCIe transfer rate such as \"16 GT/s\" or \"32.0 GT/s PCIe\" (2.5, 5, 8, 16, 32 or 64 GT/s)";
constexpr double kFallbackGts = 8.0;  // NCCL kvDictPciGen: unknown link_speed counts as Gen3
constexpr int kMaxPcieWidth = 32;
// What one node's file may hold (InputError beyond, naming the limit): enough for any machine
// NCCL describes, small enough that the model's paths and bounds stay fast and their sums of
// link rates cannot overflow. NVLinks: a GPU has at most 18 (Hopper, Blackwell).
constexpr int kMaxNodeGpus = 64;
constexpr int kMaxNodeCpus = 64;
constexpr int kMaxNodeDevices = 1024;  // GPUs, NICs (ports), switches, NVSwitches
constexpr int kMaxPciDepth = 32;       // nested <pci> levels below a <cpu>
constexpr long long kMaxNvlinks = 64;  // per <nvlink> and per GPU in all
constexpr long long kMaxNuma = 1023;
constexpr long long kMaxSm = 999;
constexpr double kMaxNetMbps = 1e7;  // 10 Tb/s per port

// ---------------------------------------------------------------------------------------------
// The text being parsed: pugixml parses a private copy in place, so every element name and
// attribute value points into `buffer_` at the same offset as in the original text.
class SourceText {
 public:
  SourceText(std::string_view text, std::string name) : name_(std::move(name)), original_(text), buffer_(text) {}

  const std::string& name() const { return name_; }
  char* buffer() { return buffer_.data(); }
  std::size_t size() const { return buffer_.size(); }

  // 1-based line of a byte offset in the text.
  int line_at_offset(std::ptrdiff_t offset) const {
    const auto end =
        original_.begin() + std::clamp<std::ptrdiff_t>(offset, 0, static_cast<std::ptrdiff_t>(original_.size()));
    return 1 + static_cast<int>(std::count(original_.begin(), end, '\n'));
  }
  int line_of(pugi::xml_node node) const { return line_of_pointer(node.name()); }
  int line_of(pugi::xml_node node, pugi::xml_attribute attr) const {
    const int line = attr ? line_of_pointer(attr.value()) : 0;
    return line > 0 ? line : line_of(node);
  }

  [[noreturn]] void fail(int line, std::string_view found, std::string_view expected) const {
    throw InputError(fmt::format("{}:{}: {}: expected {}", name_, line, found, expected));
  }

 private:
  int line_of_pointer(const char* p) const {
    const char* begin = buffer_.data();
    if (p < begin || p >= begin + buffer_.size()) return 0;
    return line_at_offset(p - begin);
  }

  std::string name_;
  std::string original_;
  std::string buffer_;
};

// "<pci busid="0000:a1:00.0">": an element named by its identifying attribute, for messages.
std::string describe(pugi::xml_node node) {
  for (const char* key : {"busid", "target", "name"})
    if (pugi::xml_attribute a = node.attribute(key)) return fmt::format("<{} {}=\"{}\">", node.name(), key, a.value());
  return fmt::format("<{}>", node.name());
}

// ---------------------------------------------------------------------------------------------
// The importer. It walks the XML once into a plan (CPUs and devices with their parents), then
// builds the graph from the plan so that GPUs can be added in local-index order.

struct PlannedCpu {
  pugi::xml_node xml;
  int numa = 0;
  std::string vendor;  // "intel", "amd", "arm", "" unknown
  double inter_socket_gbps = 0.0;
  Vertex vertex = 0;
};

struct PlannedDevice {
  DeviceKind kind = DeviceKind::PcieSwitch;
  pugi::xml_node xml;        // the <pci> (or <nic> for a NIC without a PCI path)
  int cpu = 0;               // index into cpus_
  int parent = -1;           // index into devices_; -1: linked to the CPU itself
  double uplink_gbps = 0.0;  // link to the parent
  int uplink_lanes = 0;
  double uplink_max_gbps = 0.0;  // 0 unknown
  std::string busid;             // lower case
  int depth = 0;                 // <pci> nesting level, 1 under a <cpu>
  // GPUs
  pugi::xml_node gpu_xml;  // <gpu>, absent in skeleton files
  int sm = 0;
  std::optional<long long> rank;
  std::optional<long long> dev;
  // NICs
  double port_gbps = 0.0;
  Vertex vertex = 0;
};

class NcclXmlImporter {
 public:
  explicit NcclXmlImporter(SourceText& source, std::optional<std::string> host = std::nullopt,
                           std::string host_note = "")
      : source_(source), host_(std::move(host)), host_note_(std::move(host_note)) {}

  NodeModel run() {
    pugi::xml_document doc;
    const pugi::xml_parse_result parsed =
        doc.load_buffer_inplace(source_.buffer(), source_.size(), pugi::parse_default, pugi::encoding_utf8);
    if (!parsed)
      source_.fail(source_.line_at_offset(parsed.offset), fmt::format("not well-formed XML ({})", parsed.description()),
                   "an NCCL topology XML file (<system version=\"1\"> ... </system>)");
    const pugi::xml_node system = check_system(doc.document_element());
    model_.name = source_.name();

    plan_system(system);
    build_vertices();
    build_pcie_links();
    build_nvlinks();
    build_inter_socket_links();
    finish_notes();
    model_.description = describe_model();
    return std::move(model_);
  }

 private:
  // --- <system> -----------------------------------------------------------------------------

  pugi::xml_node check_system(pugi::xml_node root) {
    if (std::string_view(root.name()) != "system")
      source_.fail(source_.line_of(root), fmt::format("root element <{}>", root.name()),
                   "<system version=\"1\"> (an NCCL topology file)");
    const pugi::xml_attribute version = root.attribute("version");
    if (!version) source_.fail(source_.line_of(root), "<system> without a version attribute", "<system version=\"1\">");
    if (std::string_view(version.value()) != "1")
      source_.fail(source_.line_of(root, version), fmt::format("<system version=\"{}\">", version.value()),
                   "version=\"1\", the only NCCL topology XML version");
    return root;
  }

  void plan_system(pugi::xml_node system) {
    // One <cpu> per socket (NUMA node); anything else at this level is not NCCL's.
    for (pugi::xml_node child : system.children()) {
      if (child.type() != pugi::node_element) continue;
      if (std::string_view(child.name()) == "cpu") {
        // A dump of several hosts (NCCL's host_hash, src/graph/topo.cc ncclGetSystemId): one
        // importer run per host, each keeping its own sockets.
        if (host_ && lowercase(child.attribute("host_hash").value()) != *host_) continue;
        plan_cpu(child);
      } else
        ignore(child);
    }
  }

  // --- <cpu> --------------------------------------------------------------------------------

  void plan_cpu(pugi::xml_node xml) {
    PlannedCpu cpu;
    cpu.xml = xml;
    cpu.numa = static_cast<int>(cpus_.size());
    if (pugi::xml_attribute numaid = xml.attribute("numaid"))
      cpu.numa = static_cast<int>(in_range(xml, numaid, 0, kMaxNuma, "kMaxNuma", "a NUMA node number (0, 1, ...)"));
    else
      numa_from_order_ = true;
    classify_cpu(cpu);
    if (cpus_.size() >= static_cast<std::size_t>(kMaxNodeCpus))
      source_.fail(source_.line_of(xml), fmt::format("more than {} <cpu> elements", kMaxNodeCpus),
                   fmt::format("at most {} sockets per node (the limit kMaxNodeCpus)", kMaxNodeCpus));
    const int index = static_cast<int>(cpus_.size());
    cpus_.push_back(cpu);

    // Root ports hang off the socket: <pci> trees, and <nic> without a PCI path.
    for (pugi::xml_node child : xml.children()) {
      if (child.type() != pugi::node_element) continue;
      const std::string_view name = child.name();
      if (name == "pci")
        plan_pci(child, index, -1, 1);
      else if (name == "nic")
        plan_pathless_nic(child, index);
      else
        ignore(child);
    }
  }

  // Vendor key and inter-socket rate (NCCL src/graph/topo.cc, ncclTopoGetInterCpuBw).
  void classify_cpu(PlannedCpu& cpu) {
    const std::string_view arch = cpu.xml.attribute("arch").value();
    const std::string_view vendor = cpu.xml.attribute("vendor").value();
    if (arch == "arm64") {
      cpu.vendor = "arm";
      cpu.inter_socket_gbps = c::kInterSocketArmGbps;
    } else if (vendor == "GenuineIntel") {
      cpu.vendor = "intel";
      long long model = 0;
      if (pugi::xml_attribute modelid = cpu.xml.attribute("modelid"))
        model = non_negative(cpu.xml, modelid, "an integer CPU model number (143 = Sapphire Rapids)");
      cpu.inter_socket_gbps = model >= 143 ? c::kInterSocketIntelSapphireRapidsGbps : c::kInterSocketIntelSkylakeGbps;
    } else if (vendor == "AuthenticAMD") {
      cpu.vendor = "amd";
      cpu.inter_socket_gbps = c::kInterSocketAmdGbps;
    } else {
      cpu.inter_socket_gbps = c::kInterSocketIntelSkylakeGbps;
      unknown_cpus_.push_back(
          fmt::format("arch \"{}\" vendor \"{}\" (line {})", arch, vendor, source_.line_of(cpu.xml)));
    }
  }

  // --- <pci> --------------------------------------------------------------------------------

  void plan_pci(pugi::xml_node pci, int cpu, int parent, int depth) {
    if (depth > kMaxPciDepth)
      source_.fail(source_.line_of(pci), fmt::format("{} nested {} levels deep", describe(pci), depth),
                   fmt::format("at most {} levels of <pci> (the limit kMaxPciDepth)", kMaxPciDepth));
    const std::string busid = lowercase(pci.attribute("busid").value());
    if (!busid.empty()) {
      const auto [seen, fresh] = busid_line_.emplace(busid, source_.line_of(pci));
      if (!fresh)
        source_.fail(source_.line_of(pci, pci.attribute("busid")),
                     fmt::format("{} again (first on line {})", describe(pci), seen->second),
                     "each PCI bus id once: one <pci> per device");
    }
    const PciRole role = role_of(pci, true);
    const PcieLink link = pcie_link(pci);
    // A bridge or device of another class counts only as a pass-through to devices behind it.
    const bool other = role == PciRole::Cpu || role == PciRole::Other;
    if (other && !holds_devices(pci) && !pci.attribute("class")) {
      classless_.push_back(fmt::format("{} (line {})", describe(pci), source_.line_of(pci)));
      return;
    }
    if (other && !holds_devices(pci)) {
      skipped_.push_back(
          fmt::format("{} class {} (line {}), not a GPU, NIC, NVSwitch or switch and with no device behind it",
                      describe(pci), pci.attribute("class").value(), source_.line_of(pci)));
      return;
    }
    if (other)
      pass_through_.push_back(
          fmt::format("{} class {} (line {})", describe(pci), pci.attribute("class").value(), source_.line_of(pci)));
    default_width_links_ += link.width_assumed ? 1 : 0;
    unknown_speed_links_ += link.speed_assumed ? 1 : 0;

    PlannedDevice device;
    device.xml = pci;
    device.cpu = cpu;
    device.parent = parent;
    device.uplink_gbps = link.gbps;
    device.uplink_lanes = link.lanes;
    device.uplink_max_gbps = link.max_gbps;
    device.busid = busid;
    device.depth = depth;
    switch (role) {
      case PciRole::Gpu:
        plan_gpu(device);
        return;
      case PciRole::Nic:
        plan_nic(device, pci.child("nic"));
        return;
      case PciRole::NvSwitch:
        device.kind = DeviceKind::NvSwitch;
        add_planned(device);
        return;
      case PciRole::Switch:
      case PciRole::Cpu:
      case PciRole::Other:
        plan_switch(device, pci);
        return;
    }
  }

  void plan_switch(PlannedDevice& device, pugi::xml_node pci) {
    device.kind = DeviceKind::PcieSwitch;
    const int index = add_planned(device);
    // Devices and further switches below this one.
    for (pugi::xml_node child : pci.children()) {
      if (child.type() != pugi::node_element) continue;
      if (std::string_view(child.name()) == "pci")
        plan_pci(child, device.cpu, index, device.depth + 1);
      else
        ignore(child);
    }
  }

  // A <pci> without a class attribute (AWS g5.48xlarge's file): NCCL fills the class in from
  // sysfs at run time (src/graph/xml.cc, ncclTopoGetXmlFromSys). Here the role is inferred from
  // what the element holds, else from its vendor id; nullopt when nothing tells.
  std::optional<std::pair<PciRole, std::string>> inferred_role(pugi::xml_node pci) {
    if (pci.child("gpu")) return std::pair{PciRole::Gpu, std::string("a <gpu> child")};
    if (pci.child("nic")) return std::pair{PciRole::Nic, std::string("a <nic> child")};
    if (pci.child("pci")) return std::pair{PciRole::Switch, std::string("<pci> children")};
    // Vendor ids (PCI-SIG assigned; pci.ids): 0x10de NVIDIA (GPUs), 0x15b3 Mellanox (ConnectX
    // NICs), 0x1d0f Amazon (EFA NICs, device ids 0xefa0-0xefa3).
    const std::string vendor = lowercase(pci.attribute("vendor").value());
    const std::string device_id = lowercase(pci.attribute("device").value());
    if (vendor == "0x10de") return std::pair{PciRole::Gpu, std::string("vendor 0x10de (NVIDIA)")};
    if (vendor == "0x15b3") return std::pair{PciRole::Nic, std::string("vendor 0x15b3 (Mellanox)")};
    if (vendor == "0x1d0f" && device_id.starts_with("0xefa"))
      return std::pair{PciRole::Nic, std::string("vendor 0x1d0f device 0xefa* (Amazon EFA)")};
    return std::nullopt;
  }

  PciRole role_of(pugi::xml_node pci, bool record = false) {
    const pugi::xml_attribute attr = pci.attribute("class");
    if (!attr) {
      const auto inferred = inferred_role(pci);
      if (!inferred) return PciRole::Other;
      if (record)
        inferred_classes_.push_back(fmt::format("{} (line {}) taken as a {} from {}", describe(pci),
                                                source_.line_of(pci), role_name(inferred->first), inferred->second));
      return inferred->first;
    }
    const std::optional<std::uint32_t> pci_class = parse_pci_class(attr.value());
    if (!pci_class)
      source_.fail(source_.line_of(pci, attr), fmt::format("{} class=\"{}\"", describe(pci), attr.value()),
                   "a PCI class code: 0x and six hex digits, such as 0x060400 or 0x030200");
    return pci_role(*pci_class);
  }

  // True when a GPU, NIC or NVSwitch sits anywhere below `pci`.
  bool holds_devices(pugi::xml_node pci, int depth = 0) {
    // Depth-first over the nested <pci> elements (plan_pci refuses more than kMaxPciDepth levels).
    if (depth > kMaxPciDepth) return true;
    for (pugi::xml_node child : pci.children("pci")) {
      const PciRole role = role_of(child);
      if (role == PciRole::Gpu || role == PciRole::Nic || role == PciRole::NvSwitch || holds_devices(child, depth + 1))
        return true;
    }
    return static_cast<bool>(pci.child("nic"));
  }

  // The link from a <pci> to its parent: width x per-lane rate of link_speed, per direction.
  struct PcieLink {
    double gbps = 0.0;
    int lanes = 0;
    bool width_assumed = false;  // link_width 0 or absent: x16, as NCCL does
    bool speed_assumed = false;  // link_speed empty, absent or "Unknown": Gen3, NCCL's fallback
    double max_gbps = 0.0;       // at max_link_width x max_link_speed when both are given; else 0
  };

  // max_link_width / max_link_speed (sysfs names; present in files written from sysfs): what the
  // device and slot could train to. 0 when either is absent or unreadable.
  double max_pcie_gbps(pugi::xml_node pci) {
    const std::optional<long long> width = parse_integer(pci.attribute("max_link_width").value());
    const std::optional<double> gts = c::parse_pcie_link_speed(pci.attribute("max_link_speed").value());
    if (!width || *width <= 0 || *width > kMaxPcieWidth || !gts) return 0.0;
    const std::optional<double> per_lane = c::pcie_gbps_per_lane(*gts);
    return per_lane ? static_cast<double>(*width) * *per_lane : 0.0;
  }

  PcieLink pcie_link(pugi::xml_node pci) {
    PcieLink link;
    const pugi::xml_attribute speed_attr = pci.attribute("link_speed");
    const std::string_view speed_text = speed_attr.value();
    double gts = kFallbackGts;
    if (speed_text.empty() || lowercase(speed_text).starts_with("unknown")) {
      link.speed_assumed = true;
    } else {
      const std::optional<double> parsed = c::parse_pcie_link_speed(speed_text);
      if (!parsed)
        source_.fail(source_.line_of(pci, speed_attr), fmt::format("{} link_speed=\"{}\"", describe(pci), speed_text),
                     kPcieSpeedForms);
      gts = *parsed;
    }

    const pugi::xml_attribute width_attr = pci.attribute("link_width");
    long long width = 0;
    if (width_attr) {
      const std::optional<long long> parsed = parse_integer(width_attr.value());
      if (!parsed || *parsed < 0 || *parsed > kMaxPcieWidth)
        source_.fail(source_.line_of(pci, width_attr),
                     fmt::format("{} link_width=\"{}\"", describe(pci), width_attr.value()),
                     fmt::format("a PCIe lane count from 1 to {}, or 0 for unknown (taken as x{}, as NCCL does)",
                                 kMaxPcieWidth, c::kPcieDefaultWidth));
      width = *parsed;
    }
    if (width == 0) {
      link.width_assumed = true;
      width = c::kPcieDefaultWidth;
    }
    link.lanes = static_cast<int>(width);
    link.gbps = static_cast<double>(width) * *c::pcie_gbps_per_lane(gts);
    link.max_gbps = max_pcie_gbps(pci);
    return link;
  }

  // --- GPUs ---------------------------------------------------------------------------------

  void plan_gpu(PlannedDevice& device) {
    device.kind = DeviceKind::Gpu;
    device.gpu_xml = device.xml.child("gpu");
    if (const pugi::xml_node gpu = device.gpu_xml) {
      const pugi::xml_attribute sm = gpu.attribute("sm");
      if (!sm)
        source_.fail(source_.line_of(gpu), "<gpu> without an sm attribute",
                     "sm=\"NN\", the compute capability (80, 90, ...)");
      const long long sm_value = positive(gpu, sm, "a compute capability such as 80 or 90");
      if (sm_value > kMaxSm)
        source_.fail(source_.line_of(gpu, sm), fmt::format("<gpu> sm=\"{}\"", sm.value()),
                     fmt::format("a compute capability such as 80 or 90, at most {} (the limit kMaxSm)", kMaxSm));
      device.sm = static_cast<int>(sm_value);
      if (pugi::xml_attribute rank = gpu.attribute("rank"))
        device.rank = non_negative(gpu, rank, "a rank number (0, 1, ...)");
      if (pugi::xml_attribute dev = gpu.attribute("dev"))
        device.dev = non_negative(gpu, dev, "a CUDA device number (0, 1, ...)");
    } else {
      ++skeleton_gpus_;
    }
    if (++gpus_ > kMaxNodeGpus)
      source_.fail(source_.line_of(device.xml), fmt::format("more than {} GPUs", kMaxNodeGpus),
                   fmt::format("at most {} GPUs per node (the limit kMaxNodeGpus)", kMaxNodeGpus));
    add_planned(device);
  }

  // --- NICs ---------------------------------------------------------------------------------

  // A NIC PCI device: one Nic per <net> port, each its own rail with the device's full PCIe link.
  void plan_nic(PlannedDevice& device, pugi::xml_node nic) {
    device.kind = DeviceKind::Nic;
    std::vector<pugi::xml_node> ports;
    for (pugi::xml_node net : nic.children("net")) ports.push_back(net);
    if (ports.empty()) {
      // Skeleton: the port rate is not in the file.
      device.port_gbps = device.uplink_gbps;
      ++assumed_nic_rates_[device.port_gbps];
      add_planned(device);
      return;
    }
    if (ports.size() > 1)
      multi_port_nics_.push_back(
          fmt::format("{} ({} ports, line {})", describe(device.xml), ports.size(), source_.line_of(device.xml)));
    // One device per port.
    for (pugi::xml_node net : ports) {
      PlannedDevice port = device;
      port.port_gbps = port_rate(net, device.uplink_gbps);
      add_planned(port);
    }
  }

  // <nic> straight under <cpu>: a network device with no PCI path (NCCL links it to the CPU at
  // LOC_BW). Its ports need a speed: there is no PCIe link to fall back to.
  void plan_pathless_nic(pugi::xml_node nic, int cpu) {
    PlannedDevice device;
    device.kind = DeviceKind::Nic;
    device.xml = nic;
    device.cpu = cpu;
    device.uplink_gbps = c::kLocalGbps;
    bool any = false;
    // One device per port, as under a <pci>; a port without a speed has nothing to assume it from.
    for (pugi::xml_node net : nic.children("net")) {
      PlannedDevice port = device;
      port.port_gbps = port_rate(net, 0.0);
      if (port.port_gbps <= 0.0) {
        skipped_.push_back(
            fmt::format("{} with no speed and no PCI path (line {})", describe(net), source_.line_of(net)));
        continue;
      }
      add_planned(port);
      any = true;
    }
    if (any) pathless_nics_.push_back(fmt::format("line {}", source_.line_of(nic)));
  }

  // Port rate of a <net>: speed is in Mb/s (200000 = 200 Gb/s = 25 GB/s). A missing or zero speed
  // (a port that was down when NCCL dumped it) falls back to `fallback_gbps`.
  double port_rate(pugi::xml_node net, double fallback_gbps) {
    const pugi::xml_attribute speed = net.attribute("speed");
    if (speed) {
      const std::optional<double> mbps = parse_number(speed.value());
      if (!mbps || *mbps < 0.0 || *mbps > kMaxNetMbps)
        source_.fail(source_.line_of(net, speed), fmt::format("{} speed=\"{}\"", describe(net), speed.value()),
                     fmt::format("the port rate in Mb/s, a number such as 200000 (200 Gb/s), at most {:g} (the "
                                 "limit kMaxNetMbps)",
                                 kMaxNetMbps));
      if (*mbps > 0.0) return *mbps / 8000.0;
    }
    if (fallback_gbps > 0.0) ++assumed_nic_rates_[fallback_gbps];
    return fallback_gbps;
  }

  // --- graph --------------------------------------------------------------------------------

  int add_planned(const PlannedDevice& device) {
    if (devices_.size() >= static_cast<std::size_t>(kMaxNodeDevices))
      source_.fail(
          source_.line_of(device.xml), fmt::format("more than {} devices", kMaxNodeDevices),
          fmt::format("at most {} GPUs, NICs and switches per node (the limit kMaxNodeDevices)", kMaxNodeDevices));
    devices_.push_back(device);
    return static_cast<int>(devices_.size() - 1);
  }

  // CPUs first, then GPUs in local-index order (Topology::build numbers ranks in vertex order),
  // then switches, NICs and NVSwitches in document order.
  void build_vertices() {
    for (PlannedCpu& cpu : cpus_) cpu.vertex = model_.add_device(DeviceKind::Cpu, cpu.numa);
    const auto known =
        std::find_if(cpus_.begin(), cpus_.end(), [](const PlannedCpu& cpu) { return !cpu.vendor.empty(); });
    if (known != cpus_.end()) model_.cpu_vendor = known->vendor;
    for (int index : gpu_order()) {
      PlannedDevice& gpu = devices_[static_cast<std::size_t>(index)];
      const int label = gpu.sm > 0 ? model_.label(fmt::format("sm{}", gpu.sm)) : -1;
      gpu.vertex = model_.add_gpu(numa_of(gpu), gpu.sm, label);
    }
    // The remaining devices, in document order.
    for (PlannedDevice& device : devices_) {
      if (device.kind == DeviceKind::Gpu) continue;
      if (device.kind == DeviceKind::Nic)
        device.vertex = model_.add_nic(numa_of(device), device.port_gbps);
      else
        device.vertex = model_.add_device(device.kind, numa_of(device));
      if (device.kind == DeviceKind::NvSwitch && !device.busid.empty())
        nvswitch_by_busid_[device.busid] = device.vertex;
    }
  }

  // Local GPU index: the rank attribute when every <gpu> has a distinct one, else dev likewise,
  // else document order.
  std::vector<int> gpu_order() const {
    std::vector<int> order;
    for (std::size_t i = 0; i < devices_.size(); ++i)
      if (devices_[i].kind == DeviceKind::Gpu) order.push_back(static_cast<int>(i));
    auto sort_by = [&](std::optional<long long> PlannedDevice::*key) {
      std::vector<long long> keys;
      for (int i : order) {
        const std::optional<long long>& k = devices_[static_cast<std::size_t>(i)].*key;
        if (!k) return false;
        keys.push_back(*k);
      }
      std::sort(keys.begin(), keys.end());
      if (std::adjacent_find(keys.begin(), keys.end()) != keys.end()) return false;
      std::sort(order.begin(), order.end(), [&](int a, int b) {
        return *(devices_[static_cast<std::size_t>(a)].*key) < *(devices_[static_cast<std::size_t>(b)].*key);
      });
      return true;
    };
    if (!sort_by(&PlannedDevice::rank)) sort_by(&PlannedDevice::dev);
    return order;
  }

  int numa_of(const PlannedDevice& device) const { return cpus_[static_cast<std::size_t>(device.cpu)].numa; }

  Vertex parent_vertex(const PlannedDevice& device) const {
    if (device.parent < 0) return cpus_[static_cast<std::size_t>(device.cpu)].vertex;
    return devices_[static_cast<std::size_t>(device.parent)].vertex;
  }

  void build_pcie_links() {
    // Every planned device links to its parent switch, or to its socket at the top level.
    for (const PlannedDevice& device : devices_) {
      model_.add_link(parent_vertex(device), device.vertex, LinkKind::Pcie, device.uplink_gbps, c::kPcieLatencyUs,
                      device.uplink_lanes);
      if (device.uplink_max_gbps > 0.0) {
        const auto [edge, found] = boost::edge(parent_vertex(device), device.vertex, model_.graph);
        if (found) model_.graph[edge].max_bw_gbps = device.uplink_max_gbps;
      }
    }
  }

  // --- NVLink -------------------------------------------------------------------------------

  void build_nvlinks() {
    std::map<std::string, Vertex> gpu_by_busid;
    std::map<Vertex, int> sm_of;
    for (const PlannedDevice& device : devices_) {
      if (device.kind != DeviceKind::Gpu) continue;
      if (!device.busid.empty()) gpu_by_busid[device.busid] = device.vertex;
      sm_of[device.vertex] = device.sm;
    }
    // Lanes from each GPU's own list, summed per target: (gpu, target) -> lanes.
    std::map<std::pair<Vertex, Vertex>, int> gpu_gpu;
    std::map<std::pair<Vertex, Vertex>, int> gpu_other;
    std::map<std::pair<Vertex, Vertex>, LinkKind> other_kind;
    for (int index : gpu_order()) {
      const PlannedDevice& gpu = devices_[static_cast<std::size_t>(index)];
      // Each <nvlink> names the far end by bus id and PCI class.
      long long gpu_lanes = 0;
      for (pugi::xml_node nvlink : gpu.gpu_xml.children("nvlink")) {
        const int count = nvlink_count(nvlink);
        gpu_lanes += count;
        if (gpu_lanes > kMaxNvlinks)
          source_.fail(source_.line_of(nvlink), fmt::format("{} NVLinks of one GPU in all", gpu_lanes),
                       fmt::format("at most {} NVLinks per GPU (the limit kMaxNvlinks)", kMaxNvlinks));
        const std::string target = nvlink_target(nvlink);
        const std::optional<PciRole> role = nvlink_role(nvlink);
        ++nvlink_elements_;
        if (target == gpu.busid && role != PciRole::NvSwitch && role != PciRole::Cpu) {
          // Azure NC A100 v4's dump: NCCL looks the bus id up and connects the GPU to itself
          // (src/graph/topo.cc, ncclTopoAddNvLinks), a loop no path between devices uses. The
          // same for a self target of any class but NVSwitch / CPU (those name a far end).
          self_nvlinks_.push_back(fmt::format("{} (line {})", target, source_.line_of(nvlink)));
          continue;
        }
        if (role == PciRole::Cpu) {
          const std::pair key{gpu.vertex, cpus_[static_cast<std::size_t>(gpu.cpu)].vertex};
          gpu_other[key] += count;
          other_kind[key] = LinkKind::C2C;
        } else if (auto peer = gpu_by_busid.find(target); peer != gpu_by_busid.end() && peer->second != gpu.vertex) {
          gpu_gpu[{gpu.vertex, peer->second}] += count;
        } else if (role == PciRole::Gpu) {
          missing_peers_.push_back(fmt::format("{} (line {})", target, source_.line_of(nvlink)));
        } else {
          const std::pair key{gpu.vertex, nvswitch_for(target)};
          gpu_other[key] += count;
          other_kind[key] = LinkKind::NvLink;
        }
      }
    }
    build_c2c(gpu_other, other_kind);
    // GPU to NVSwitch / CPU: one link per (GPU, target), rate of the GPU's NVLink generation.
    for (const auto& [key, lanes] : gpu_other) {
      double gbps = lanes * c::nvlink_gbps_per_link(sm_of[key.first]);
      if (auto c2c = c2c_gbps_.find(key); c2c != c2c_gbps_.end()) gbps = std::max(gbps, c2c->second);
      model_.add_link(key.first, key.second, other_kind[key], gbps, c::kNvlinkLatencyUs, lanes);
    }
    // GPU to GPU: both ends usually list the link; one link per pair, the slower GPU's rate.
    for (const auto& [key, lanes] : gpu_gpu) {
      const auto [a, b] = key;
      const auto reverse = gpu_gpu.find({b, a});
      if (reverse != gpu_gpu.end() && b < a) continue;  // added from the other end
      int pair_lanes = lanes;
      if (reverse != gpu_gpu.end() && reverse->second != lanes) {
        pair_lanes = std::min(lanes, reverse->second);
        asymmetric_.push_back(fmt::format("gpu{}-gpu{} lists {} and {}", model_.graph[a].local_index,
                                          model_.graph[b].local_index, lanes, reverse->second));
      }
      const double per_link = std::min(c::nvlink_gbps_per_link(sm_of[a]), c::nvlink_gbps_per_link(sm_of[b]));
      model_.add_link(a, b, LinkKind::NvLink, pair_lanes * per_link, c::kNvlinkLatencyUs, pair_lanes);
    }
  }

  // <c2c bw="..." count="..."/> under a <gpu> (Grace Hopper / Grace Blackwell): NVLink-C2C to
  // the GPU's own CPU at bw x count MB/s, as NCCL reads it (src/graph/topo.cc, ncclTopoAddC2c:
  // c2cBw = bw * count / 1000 GB/s). Merged into an <nvlink tclass="0x068001"> to the same CPU
  // when the file has both: one C2C link of the larger rate.
  void build_c2c(std::map<std::pair<Vertex, Vertex>, int>& lanes, std::map<std::pair<Vertex, Vertex>, LinkKind>& kind) {
    for (const PlannedDevice& gpu : devices_) {
      if (gpu.kind != DeviceKind::Gpu) continue;
      for (pugi::xml_node c2c : gpu.gpu_xml.children("c2c")) {
        const pugi::xml_attribute bw = c2c.attribute("bw"), count = c2c.attribute("count");
        if (!bw || !count)
          source_.fail(source_.line_of(c2c), fmt::format("<c2c> without {}", bw ? "a count" : "a bw"),
                       "<c2c bw=\"MB/s per link\" count=\"links\"/>, as NCCL writes it");
        const long long mbps = positive(c2c, bw, "the per-link rate in MB/s, a positive integer such as 50000");
        const long long links = in_range(c2c, count, 1, kMaxNvlinks, "kMaxNvlinks", "a positive number of C2C links");
        if (mbps > static_cast<long long>(kMaxNetMbps))
          source_.fail(source_.line_of(c2c, bw), fmt::format("<c2c> bw=\"{}\"", bw.value()),
                       fmt::format("the per-link rate in MB/s, at most {:g}", kMaxNetMbps));
        const std::pair key{gpu.vertex, cpus_[static_cast<std::size_t>(gpu.cpu)].vertex};
        const double gbps = static_cast<double>(mbps * links) / 1000.0;
        c2c_gbps_[key] = std::max(c2c_gbps_[key], gbps);
        if (!lanes.contains(key)) lanes[key] = static_cast<int>(links);
        kind[key] = LinkKind::C2C;
      }
    }
  }

  int nvlink_count(pugi::xml_node nvlink) {
    const pugi::xml_attribute count = nvlink.attribute("count");
    if (!count)
      source_.fail(source_.line_of(nvlink), fmt::format("{} without a count attribute", describe(nvlink)),
                   "count=\"N\", the number of links");
    return static_cast<int>(in_range(nvlink, count, 1, kMaxNvlinks, "kMaxNvlinks", "a positive number of NVLinks"));
  }

  std::string nvlink_target(pugi::xml_node nvlink) {
    const std::string target = lowercase(nvlink.attribute("target").value());
    if (target.empty())
      source_.fail(source_.line_of(nvlink), "<nvlink> without a target", "target=\"<PCI bus id of the far end>\"");
    return target;
  }

  // The far end's role from tclass; nullopt when the file does not say.
  std::optional<PciRole> nvlink_role(pugi::xml_node nvlink) {
    const pugi::xml_attribute tclass = nvlink.attribute("tclass");
    if (!tclass) return std::nullopt;
    const std::optional<std::uint32_t> pci_class = parse_pci_class(tclass.value());
    if (!pci_class)
      source_.fail(source_.line_of(nvlink, tclass), fmt::format("{} tclass=\"{}\"", describe(nvlink), tclass.value()),
                   "a PCI class code: 0x and six hex digits, such as 0x068000 (NVSwitch) or 0x030200 (GPU)");
    return pci_role(*pci_class);
  }

  // One NvSwitch vertex per distinct bus id (NCCL merges them all into one; we keep them apart).
  Vertex nvswitch_for(const std::string& busid) {
    auto it = nvswitch_by_busid_.find(busid);
    if (it != nvswitch_by_busid_.end()) return it->second;
    const Vertex v = model_.add_device(DeviceKind::NvSwitch);
    nvswitch_by_busid_.emplace(busid, v);
    return v;
  }

  // --- sockets ------------------------------------------------------------------------------

  void build_inter_socket_links() {
    // Every pair of sockets, at the slower socket's rate.
    for (std::size_t i = 0; i < cpus_.size(); ++i)
      for (std::size_t j = i + 1; j < cpus_.size(); ++j)
        model_.add_link(cpus_[i].vertex, cpus_[j].vertex, LinkKind::InterSocket,
                        std::min(cpus_[i].inter_socket_gbps, cpus_[j].inter_socket_gbps), c::kInterSocketLatencyUs);
  }

  // --- notes --------------------------------------------------------------------------------

  void finish_notes() {
    auto& notes = model_.notes;
    const std::string& file = source_.name();
    if (model_.count(DeviceKind::Gpu) == 0)
      notes.push_back(fmt::format("{} describes no GPU: the model has no GPU ranks", file));
    if (skeleton_gpus_ > 0)
      notes.push_back(
          fmt::format("{}: {} GPU(s) known only by PCI class (no <gpu> element): compute capability unknown (sm 0)",
                      file, skeleton_gpus_));
    const int gpus = static_cast<int>(model_.count(DeviceKind::Gpu));
    if (gpus > 1 && nvlink_elements_ == 0) notes.push_back(nvlink_unknown_note(file, gpus));
    if (!self_nvlinks_.empty())
      notes.push_back(fmt::format(
          "{}: <nvlink> naming the GPU's own bus id ({}): NCCL connects the GPU to itself, a loop no transfer "
          "uses; no link modelled",
          file, join(self_nvlinks_)));
    if (!inferred_classes_.empty())
      notes.push_back(
          fmt::format("{}: <pci> without a class (NCCL reads it from sysfs): {}", file, join(inferred_classes_, "; ")));
    if (!classless_.empty())
      notes.push_back(fmt::format(
          "{}: {} <pci> without a class and with nothing inside ({}): NCCL fills these in from sysfs on the "
          "machine itself; nothing is modelled there",
          file, classless_.size(), join(classless_)));
    if (!host_note_.empty()) notes.push_back(host_note_);
    if (!assumed_nic_rates_.empty()) {
      // "63.008 GB/s for 8": one entry per distinct assumed rate.
      std::vector<std::string> rates;
      int ports = 0;
      for (const auto& [gbps, count] : assumed_nic_rates_) {
        rates.push_back(fmt::format("{:g} GB/s for {}", gbps, count));
        ports += count;
      }
      notes.push_back(fmt::format(
          "{}: {} NIC port(s) with no speed in the file; port rate assumed equal to the NIC's PCIe link ({}); set "
          "it with `overrides: {{nic_gbps: ...}}` in a YAML cluster spec",
          file, ports, join(rates)));
    }
    if (!multi_port_nics_.empty())
      notes.push_back(fmt::format(
          "{}: multi-port NIC(s) {}: one NIC (rail) per port, each given the device's full PCIe link, which "
          "the ports share in reality",
          file, join(multi_port_nics_)));
    if (!pathless_nics_.empty())
      notes.push_back(
          fmt::format("{}: <nic> without a PCI path at {}: linked straight to its CPU at {:g} GB/s, as NCCL does", file,
                      join(pathless_nics_), c::kLocalGbps));
    if (default_width_links_ > 0)
      notes.push_back(fmt::format("{}: {} PCIe link(s) with link_width 0 or none: taken as x{}, as NCCL does", file,
                                  default_width_links_, c::kPcieDefaultWidth));
    if (unknown_speed_links_ > 0)
      notes.push_back(fmt::format(
          "{}: {} PCIe link(s) with an empty, missing or Unknown link_speed: taken as {:g} GT/s (Gen3), NCCL's "
          "fallback",
          file, unknown_speed_links_, kFallbackGts));
    if (!pass_through_.empty())
      notes.push_back(
          fmt::format("{}: PCI device(s) of another class with GPUs or NICs behind them, modelled as PCIe switches: {}",
                      file, join(pass_through_)));
    if (!skipped_.empty()) notes.push_back(fmt::format("{}: skipped: {}", file, join(skipped_, "; ")));
    if (!unknown_cpus_.empty())
      notes.push_back(
          fmt::format("{}: CPU of unknown vendor ({}): inter-socket link assumed {:g} GB/s (NCCL's Skylake figure)",
                      file, join(unknown_cpus_), c::kInterSocketIntelSkylakeGbps));
    if (numa_from_order_)
      notes.push_back(fmt::format("{}: <cpu> without numaid: NUMA node numbered in file order", file));
    if (!missing_peers_.empty())
      notes.push_back(fmt::format("{}: NVLink(s) to GPUs not in the file ignored: {}", file, join(missing_peers_)));
    if (!asymmetric_.empty())
      notes.push_back(fmt::format("{}: the two ends of an NVLink disagree on its count ({}); the smaller is used", file,
                                  join(asymmetric_)));
    if (!ignored_.empty()) notes.push_back(fmt::format("{}: ignored elements: {}", file, join(ignored_)));
  }

  std::string describe_model() const {
    const bool dump = std::any_of(devices_.begin(), devices_.end(), [](const PlannedDevice& d) {
      return d.gpu_xml || d.xml.child("nic") || std::string_view(d.xml.name()) == "nic";
    });
    return fmt::format("NCCL topology {} {}: GPU x{}, CPU socket x{}, PCIe switch x{}, NVSwitch x{}, NIC x{}",
                       dump ? "dump" : "skeleton", source_.name(), model_.count(DeviceKind::Gpu),
                       model_.count(DeviceKind::Cpu), model_.count(DeviceKind::PcieSwitch),
                       model_.count(DeviceKind::NvSwitch), model_.count(DeviceKind::Nic));
  }

  void ignore(pugi::xml_node node) {
    ignored_.push_back(fmt::format("{} (line {})", describe(node), source_.line_of(node)));
  }

  static std::string join(const std::vector<std::string>& items, std::string_view separator = ", ") {
    std::string out;
    for (const std::string& item : items) {
      if (!out.empty()) out += separator;
      out += item;
    }
    return out;
  }

  // --- numeric attributes -------------------------------------------------------------------

  long long non_negative(pugi::xml_node node, pugi::xml_attribute attr, std::string_view expected) {
    const std::optional<long long> value = parse_integer(attr.value());
    if (!value || *value < 0)
      source_.fail(source_.line_of(node, attr), fmt::format("{} {}=\"{}\"", describe(node), attr.name(), attr.value()),
                   expected);
    return *value;
  }

  // An integer from `min` to `max`, the limit named `limit`.
  long long in_range(pugi::xml_node node, pugi::xml_attribute attr, long long min, long long max, const char* limit,
                     std::string_view expected) {
    const long long value = non_negative(node, attr, expected);
    if (value < min || value > max)
      source_.fail(source_.line_of(node, attr), fmt::format("{} {}=\"{}\"", describe(node), attr.name(), attr.value()),
                   fmt::format("{}, at most {} (the limit {})", expected, max, limit));
    return value;
  }

  long long positive(pugi::xml_node node, pugi::xml_attribute attr, std::string_view expected) {
    const long long value = non_negative(node, attr, expected);
    if (value == 0)
      source_.fail(source_.line_of(node, attr), fmt::format("{} {}=\"0\"", describe(node), attr.name()), expected);
    return value;
  }

  SourceText& source_;
  NodeModel model_;
  std::vector<PlannedCpu> cpus_;
  std::vector<PlannedDevice> devices_;
  std::map<std::string, Vertex> nvswitch_by_busid_;
  std::map<std::string, int> busid_line_;  // every <pci> bus id, the line it is on
  int gpus_ = 0;
  // What the notes report.
  int skeleton_gpus_ = 0;
  int default_width_links_ = 0;
  int unknown_speed_links_ = 0;
  bool numa_from_order_ = false;
  std::map<double, int> assumed_nic_rates_;  // assumed port rate (GB/s) -> ports
  std::vector<std::string> multi_port_nics_, pathless_nics_, pass_through_, skipped_, unknown_cpus_, missing_peers_,
      asymmetric_, ignored_, self_nvlinks_, inferred_classes_, classless_;
  int nvlink_elements_ = 0;
  std::map<std::pair<Vertex, Vertex>, double> c2c_gbps_;  // (GPU, CPU) -> <c2c> rate
  std::optional<std::string> host_;                       // the host_hash kept; nullopt: every <cpu>
  std::string host_note_;
};

// The distinct host_hash values of the <cpu> elements, in file order ("" for a <cpu> without
// one). Empty when the text is not XML (the importer then reports the error).
std::vector<std::string> host_hashes(std::string_view text) {
  pugi::xml_document doc;
  std::vector<std::string> hosts;
  if (!doc.load_buffer(text.data(), text.size())) return hosts;
  for (pugi::xml_node cpu : doc.document_element().children("cpu")) {
    const std::string hash = lowercase(cpu.attribute("host_hash").value());
    if (std::find(hosts.begin(), hosts.end(), hash) == hosts.end()) hosts.push_back(hash);
  }
  return hosts;
}

}  // namespace

std::vector<NodeModel> parse_nccl_xml_hosts(std::string_view text, const std::string& source_name) {
  const std::vector<std::string> hosts = host_hashes(text);
  std::vector<NodeModel> models;
  if (hosts.size() <= 1) {
    SourceText source(text, source_name);
    models.push_back(NcclXmlImporter(source).run());
    return models;
  }
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    SourceText source(text, source_name);
    const std::string hash = hosts[h].empty() ? "(none)" : hosts[h];
    NodeModel m = NcclXmlImporter(source, hosts[h],
                                  fmt::format("{}: the file holds {} hosts (host_hash values); this node is host {} "
                                              "(host_hash {}), one node per host",
                                              source_name, hosts.size(), h, hash))
                      .run();
    m.name = fmt::format("{}#host{}", source_name, h);
    models.push_back(std::move(m));
  }
  return models;
}

NodeModel parse_nccl_xml(std::string_view text, const std::string& source_name) {
  std::vector<NodeModel> hosts = parse_nccl_xml_hosts(text, source_name);
  return std::move(hosts.front());
}

std::string nvlink_unknown_note(const std::string& file, int gpus, std::string_view missing) {
  return fmt::format(
      "{}: NVLink unknown: {} GPUs and {}, so the model "
      "joins them over PCIe only and every GPU-to-GPU figure is a PCIe figure; set `{}` in a YAML cluster "
      "spec to give the NVLink the machine has",
      file, gpus, missing, kNvlinkOverrideKey);
}

namespace {
std::string read_xml_file(const std::string& path) {
  return read_input_file(path, "a readable NCCL topology XML file (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE format)");
}
}  // namespace

NodeModel load_nccl_xml(const std::string& path) {
  return parse_nccl_xml(read_xml_file(path), path);
}

std::vector<NodeModel> load_nccl_xml_hosts(const std::string& path) {
  return parse_nccl_xml_hosts(read_xml_file(path), path);
}

}  // namespace topocoll::topo
