// The `local` preset: this machine's node model, detected with hwloc 2.x.
//
// Detection runs in two steps so that the model-building rules can be tested without the
// hardware they describe:
//   probe_local_inventory()    every hwloc call (and the sysfs reads for NIC port speeds);
//                              returns a plain LocalInventory;
//   build_local_node(inv)      pure: turns the inventory into a NodeModel.
//
//          cpu0 ════ inter-socket ════ cpu1          one Cpu per package (socket), numa = index
//         /     \                        |
//   pcie_switch0  nic0 (root port)     gpu1          root ports belong to the CPU; a PCIe switch
//      /    \                                        (upstream + downstream port bridges) is
//    gpu0   nic1                                     one PcieSwitch
//
// A machine without a GPU still yields a valid model (ranks then map to CPU cores): detection
// never throws because something is absent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topologies/topology.hpp"

namespace topocoll::topo {

// One CPU package (socket) as hwloc reports it.
struct LocalPackage {
  std::string vendor;     // hwloc info "CPUVendor": "GenuineIntel", "AuthenticAMD", ... ("" unknown)
  std::string model;      // hwloc info "CPUModel" ("" unknown)
  int family = -1;        // hwloc info "CPUFamilyNumber", -1 unknown
  int model_number = -1;  // hwloc info "CPUModelNumber", -1 unknown
  int cores = 0;          // physical cores in this package
};

// A PCI function (device or PCI-to-PCI bridge) that hwloc kept with IO filtering on.
struct LocalPciObject {
  std::string bus_id;          // "0000:3b:00.0"
  std::uint16_t class_id = 0;  // class << 8 | subclass, e.g. 0x0302
  std::uint16_t vendor_id = 0;
  std::uint16_t device_id = 0;
  bool is_bridge = false;               // a PCI-to-PCI bridge (root port, switch port)
  float link_gbps = 0.0f;               // hwloc linkspeed (GB/s, per direction); 0 = unknown
  int parent = -1;                      // index of the parent bridge in LocalInventory::pci; -1 = a host bridge
  int package = -1;                     // package (socket) index of its locality; -1 = unknown
  std::string name;                     // hwloc "PCIDevice" info, else "" (names come from pciids)
  std::vector<std::string> os_devices;  // OS device names under it: "eth0", "mlx5_0", "card1"
  double port_gbps = 0.0;               // NICs: port rate from the OS (GB/s per direction), 0 = unknown
};

struct LocalInventory {
  std::string hostname;
  std::vector<LocalPackage> packages;
  int numa_nodes = 0;
  int cores = 0;                    // physical cores, all packages
  int hardware_threads = 0;         // PUs
  std::vector<LocalPciObject> pci;  // parents come before their children
};

// What a PCI function is to the node model.
enum class PciRole : std::uint8_t { Gpu, Nic, Ignored };

// GPU: a 3D controller (class 0x0302) of any vendor, or any display controller (0x03xx) made by
// NVIDIA (0x10de) or AMD (0x1002). Other VGA controllers (0x0300: server BMCs such as ASPEED,
// emulated VGA in VMs) are not GPUs. NIC: class 0x02xx.
PciRole classify_pci(std::uint16_t class_id, std::uint16_t vendor_id);

// Port rates the OS reports, converted to GB/s per direction (nullopt when the text holds no
// usable rate):
//   /sys/class/net/<if>/speed                  "100000"  (Mb/s; "-1" when the link is down)
//   /sys/class/infiniband/<dev>/ports/N/rate   "200 Gb/sec (4X HDR)"
std::optional<double> parse_net_speed(std::string_view text);
std::optional<double> parse_ib_rate(std::string_view text);

// Every hwloc call lives here. Throws InternalError only when hwloc itself fails to load.
LocalInventory probe_local_inventory();

// The inventory of a topology hwloc saved as XML (`lstopo --of xml`), loaded with hwloc's own XML
// backend; NIC port rates are not read (the OS devices are another machine's). nullopt when
// hwloc refuses the text.
std::optional<LocalInventory> hwloc_xml_inventory(std::string_view xml);

// Pure: the node model of an inventory (sockets, PCIe switches, GPUs, NICs, links and notes).
NodeModel build_local_node(const LocalInventory& inventory);

// This machine: build_local_node(probe_local_inventory()).
NodeModel detect_local_node();

}  // namespace topocoll::topo
