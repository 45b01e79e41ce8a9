#include "topologies/local.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "topologies/constants.hpp"
#include "topologies/topology.hpp"

using namespace topocoll::topo;

namespace {

namespace c = constants;

bool has_note(const NodeModel& m, std::string_view start) {
  return std::any_of(m.notes.begin(), m.notes.end(), [&](const std::string& n) { return n.starts_with(start); });
}

std::size_t gpus_in(const LocalInventory& inv) {
  return static_cast<std::size_t>(std::count_if(inv.pci.begin(), inv.pci.end(), [](const LocalPciObject& o) {
    return !o.is_bridge && classify_pci(o.class_id, o.vendor_id) == PciRole::Gpu;
  }));
}

// GPUs the kernel lists in sysfs, classified by the same rule; nullopt without sysfs.
std::optional<std::size_t> gpus_in_sysfs() {
  const std::filesystem::path root = "/sys/bus/pci/devices";
  std::error_code ec;
  if (!std::filesystem::is_directory(root, ec)) return std::nullopt;
  std::size_t gpus = 0;
  // Each PCI function has "class" (0xCCSSPP) and "vendor" (0xVVVV).
  for (const auto& dir : std::filesystem::directory_iterator(root, ec)) {
    std::ifstream class_file(dir.path() / "class"), vendor_file(dir.path() / "vendor");
    std::string class_text, vendor_text;
    if (!(class_file >> class_text) || !(vendor_file >> vendor_text)) continue;
    const auto class_id = static_cast<std::uint16_t>(std::stoul(class_text, nullptr, 16) >> 8);
    const auto vendor_id = static_cast<std::uint16_t>(std::stoul(vendor_text, nullptr, 16));
    if (classify_pci(class_id, vendor_id) == PciRole::Gpu) ++gpus;
  }
  return gpus;
}

Edge edge_between(const NodeModel& m, Vertex a, Vertex b) {
  auto [e, found] = boost::edge(a, b, m.graph);
  REQUIRE(found);
  return e;
}

std::optional<Vertex> find_kind(const NodeModel& m, DeviceKind kind, int local_index) {
  for (auto v : boost::make_iterator_range(boost::vertices(m.graph)))
    if (m.graph[v].kind == kind && m.graph[v].local_index == local_index) return v;
  return std::nullopt;
}

LocalPciObject pci(std::string bus_id, std::uint16_t class_id, std::uint16_t vendor_id, int parent, int package,
                   float link_gbps) {
  LocalPciObject o;
  o.bus_id = std::move(bus_id);
  o.class_id = class_id;
  o.vendor_id = vendor_id;
  o.is_bridge = class_id == 0x0604;
  o.parent = parent;
  o.package = package;
  o.link_gbps = link_gbps;
  return o;
}

// A two-socket Sapphire Rapids box:
//
//   cpu0 ═════ UPI ═════ cpu1
//    |                    |  (root port)
//   root port             +── gpu1 (link speed unknown)
//    |                    +── nic1 eth0 (no port speed from the OS)
//   pcie switch (usp 16:00.0; dsp 17:00.0, 17:01.0)
//    |            |
//   gpu0         nic0 mlx5_0 (200 Gb/s HDR)        + an ASPEED BMC VGA on cpu0: not a GPU
LocalInventory two_socket_inventory() {
  LocalInventory inv;
  inv.hostname = "test-box";
  for (int p = 0; p < 2; ++p) inv.packages.push_back({"GenuineIntel", "Intel(R) Xeon(R) Platinum 8480+", 6, 0x8F, 56});
  inv.numa_nodes = 2;
  inv.cores = 112;
  inv.hardware_threads = 224;
  inv.pci = {
      pci("0000:15:01.0", 0x0604, 0x8086, -1, 0, 31.5f),  // 0 root port
      pci("0000:16:00.0", 0x0604, 0x1000, 0, 0, 63.0f),   // 1 switch upstream port
      pci("0000:17:00.0", 0x0604, 0x1000, 1, 0, 63.0f),   // 2 switch downstream port
      pci("0000:18:00.0", 0x0302, 0x10de, 2, 0, 63.0f),   // 3 GPU
      pci("0000:17:01.0", 0x0604, 0x1000, 1, 0, 63.0f),   // 4 switch downstream port
      pci("0000:19:00.0", 0x0207, 0x15b3, 4, 0, 31.5f),   // 5 InfiniBand NIC
      pci("0000:97:01.0", 0x0604, 0x8086, -1, 1, 31.5f),  // 6 root port
      pci("0000:98:00.0", 0x0302, 0x10de, 6, 1, 0.0f),    // 7 GPU, link speed unknown
      pci("0000:03:00.0", 0x0300, 0x1a03, -1, 0, 0.5f),   // 8 ASPEED BMC VGA
      pci("0000:99:00.0", 0x0200, 0x8086, 6, 1, 15.75f),  // 9 Ethernet NIC
  };
  inv.pci[3].name = "GH100 [H100 SXM5 80GB]";
  inv.pci[5].os_devices = {"mlx5_0", "ib0"};
  inv.pci[5].port_gbps = 25.0;
  inv.pci[9].os_devices = {"eth0"};
  return inv;
}

}  // namespace

TEST_CASE("local: this machine gives a valid node model") {
  const LocalInventory inv = probe_local_inventory();
  const NodeModel m = build_local_node(inv);
  CHECK(m.name == "local");
  CHECK(m.count(DeviceKind::Cpu) >= 1);
  CHECK(m.count(DeviceKind::Cpu) == std::max<std::size_t>(1, inv.packages.size()));
  CHECK(m.cores >= 1);
  // GPUs: what hwloc lists, and what the kernel lists in sysfs, by the same rule.
  CHECK(m.count(DeviceKind::Gpu) == gpus_in(inv));
  if (auto sysfs = gpus_in_sysfs()) CHECK(m.count(DeviceKind::Gpu) == *sysfs);
  if (m.count(DeviceKind::Gpu) == 0) CHECK(has_note(m, "no GPU found on this machine: ranks map to CPU cores"));
  CHECK(has_note(m, "hwloc: "));

  // detect_local_node is the same thing in one call, and it builds into a cluster.
  const NodeModel detected = detect_local_node();
  CHECK(detected.count(DeviceKind::Gpu) == m.count(DeviceKind::Gpu));
  const Topology t = Topology::build(detected, 2, FabricSpec{});
  CHECK(t.nodes() == 2);
  CHECK(t.count(DeviceKind::Cpu) == 2 * detected.count(DeviceKind::Cpu));
  CHECK(t.num_ranks() == static_cast<int>(2 * detected.count(DeviceKind::Gpu)));
  CHECK(t.cores_per_node() == detected.cores);
  MESSAGE("local: ", detected.description);
}

TEST_CASE("local: PCI classes") {
  CHECK(classify_pci(0x0302, 0x10de) == PciRole::Gpu);      // NVIDIA A100 / H100: 3D controller
  CHECK(classify_pci(0x0300, 0x10de) == PciRole::Gpu);      // NVIDIA VGA (workstation GPUs)
  CHECK(classify_pci(0x0380, 0x1002) == PciRole::Gpu);      // AMD Instinct: display controller
  CHECK(classify_pci(0x0302, 0x1234) == PciRole::Gpu);      // any 3D controller
  CHECK(classify_pci(0x0300, 0x1a03) == PciRole::Ignored);  // ASPEED BMC VGA
  CHECK(classify_pci(0x0300, 0x1234) == PciRole::Ignored);  // QEMU VGA
  CHECK(classify_pci(0x0200, 0x1af4) == PciRole::Nic);      // virtio-net
  CHECK(classify_pci(0x0207, 0x15b3) == PciRole::Nic);      // Mellanox InfiniBand
  CHECK(classify_pci(0x0108, 0x144d) == PciRole::Ignored);  // NVMe
  CHECK(classify_pci(0x0604, 0x1000) == PciRole::Ignored);  // PCI bridge
}

TEST_CASE("local: port rates from sysfs text") {
  CHECK(parse_net_speed("100000\n") == doctest::Approx(12.5));
  CHECK(parse_net_speed("25000") == doctest::Approx(3.125));
  CHECK_FALSE(parse_net_speed("-1").has_value());  // link down
  CHECK_FALSE(parse_net_speed("").has_value());
  CHECK_FALSE(parse_net_speed("fast").has_value());
  CHECK(parse_ib_rate("200 Gb/sec (4X HDR)") == doctest::Approx(25.0));
  CHECK(parse_ib_rate("400 Gb/sec (4X NDR)\n") == doctest::Approx(50.0));
  CHECK(parse_ib_rate("2.5 Gb/sec (1X SDR)") == doctest::Approx(0.3125));
  CHECK_FALSE(parse_ib_rate("200").has_value());
  CHECK_FALSE(parse_ib_rate("").has_value());
}

TEST_CASE("local: a two-socket inventory with a PCIe switch") {
  const NodeModel m = build_local_node(two_socket_inventory());
  CHECK(m.cpu_vendor == "intel");
  CHECK(m.cores == 112);
  CHECK(m.count(DeviceKind::Cpu) == 2);
  CHECK(m.count(DeviceKind::PcieSwitch) == 1);  // upstream + downstream ports: one switch
  CHECK(m.count(DeviceKind::Gpu) == 2);         // not the BMC's VGA
  CHECK(m.count(DeviceKind::Nic) == 2);

  const Vertex cpu0 = *find_kind(m, DeviceKind::Cpu, 0), cpu1 = *find_kind(m, DeviceKind::Cpu, 1);
  const Vertex sw = *find_kind(m, DeviceKind::PcieSwitch, 0);
  const Vertex gpu0 = *find_kind(m, DeviceKind::Gpu, 0), gpu1 = *find_kind(m, DeviceKind::Gpu, 1);
  const Vertex nic0 = *find_kind(m, DeviceKind::Nic, 0), nic1 = *find_kind(m, DeviceKind::Nic, 1);

  // Sapphire Rapids (family 6, model 0x8F): NCCL's SPR inter-socket figure.
  const Link& upi = m.graph[edge_between(m, cpu0, cpu1)];
  CHECK(upi.kind == LinkKind::InterSocket);
  CHECK(upi.bw_gbps == doctest::Approx(c::kInterSocketIntelSapphireRapidsGbps));

  // The switch hangs on cpu0 by its upstream port's link; the GPU and the NIC below it.
  CHECK(m.graph[edge_between(m, cpu0, sw)].bw_gbps == doctest::Approx(63.0));
  CHECK(m.graph[edge_between(m, sw, gpu0)].bw_gbps == doctest::Approx(63.0));
  CHECK(m.graph[edge_between(m, sw, nic0)].bw_gbps == doctest::Approx(31.5));
  CHECK(m.graph[nic0].port_gbps == doctest::Approx(25.0));
  CHECK(m.graph[gpu0].numa == 0);
  CHECK(m.labels[static_cast<std::size_t>(m.graph[gpu0].model)] == "GH100 [H100 SXM5 80GB]");

  // On cpu1's root port: a GPU whose link speed hwloc does not know (Gen3 x16 assumed), and a
  // NIC whose port speed the OS does not report (its PCIe link rate assumed).
  CHECK(m.graph[gpu1].numa == 1);
  CHECK(m.graph[edge_between(m, cpu1, gpu1)].bw_gbps == doctest::Approx(16 * *c::pcie_gbps_per_lane(8.0)));
  CHECK(m.graph[edge_between(m, cpu1, gpu1)].lanes == 16);
  CHECK(m.graph[nic1].port_gbps == doctest::Approx(15.75));
  CHECK(has_note(m, "PCIe link speed unknown, assumed Gen3 x16"));
  CHECK(has_note(m, "NIC eth0: port speed not reported by the OS"));
  CHECK(has_note(m, "ignored display controller 0000:03:00.0"));
  CHECK(has_note(m, "NVLink is not detected by hwloc"));
  CHECK_FALSE(has_note(m, "no GPU found"));

  // Two such nodes: each GPU's rail is the NIC nearest to it.
  const Topology t = Topology::build(m, 2, FabricSpec{});
  CHECK(t.num_ranks() == 4);
  CHECK(t.device_name(t.rank(0).nic) == "n0/nic0");
  CHECK(t.device_name(t.rank(1).nic) == "n0/nic1");
}

TEST_CASE("local: CPU vendors set the inter-socket rate") {
  LocalInventory inv = two_socket_inventory();
  inv.pci.clear();
  for (LocalPackage& p : inv.packages) p = {"AuthenticAMD", "AMD EPYC 9654", 25, 17, 96};
  NodeModel amd = build_local_node(inv);
  CHECK(amd.cpu_vendor == "amd");
  CHECK(amd.graph[edge_between(amd, 0, 1)].bw_gbps == doctest::Approx(c::kInterSocketAmdGbps));

  for (LocalPackage& p : inv.packages) p = {"GenuineIntel", "Intel(R) Xeon(R) Gold 6148", 6, 0x55, 20};
  NodeModel skylake = build_local_node(inv);
  CHECK(skylake.graph[edge_between(skylake, 0, 1)].bw_gbps == doctest::Approx(c::kInterSocketIntelSkylakeGbps));

  for (LocalPackage& p : inv.packages) p = {"SomeVendor", "", -1, -1, 8};
  NodeModel unknown = build_local_node(inv);
  CHECK(unknown.cpu_vendor.empty());
  CHECK(has_note(unknown, "CPU vendor 'SomeVendor' unknown"));
}

TEST_CASE("local: an empty inventory still gives a valid model") {
  const NodeModel m = build_local_node(LocalInventory{});
  CHECK(m.count(DeviceKind::Cpu) == 1);
  CHECK(m.count(DeviceKind::Gpu) == 0);
  CHECK(m.cores == 1);
  CHECK(has_note(m, "hwloc reported no CPU package: one socket assumed"));
  CHECK(has_note(m, "no GPU found on this machine: ranks map to CPU cores"));
  const Topology t = Topology::build(m, 2, FabricSpec{});
  CHECK(t.nodes() == 2);
  CHECK(t.num_ranks() == 0);
}
