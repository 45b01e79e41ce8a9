// The cluster model: a Boost.Graph graph of devices and links.
//
// A cluster is built in two layers:
//   NodeModel  one machine (GPUs, CPUs, PCIe switches, NVSwitches, NICs and the links between
//              them), from a preset, an NCCL topology XML file or hwloc detection;
//   Topology   `nodes` copies of a NodeModel joined by a fabric (network switches).
//
//            spine ... spine                       fabric (absent when nodes == 1)
//             /   \     /  \       (spines: one layer, each linked to every leaf)
//          leaf   leaf  leaf  leaf                 one leaf per rail (rail-fat-tree)
//           |       |     |     |
//   node0: nic0 … nic7   node1: nic0 … nic7        NodeModel copies
//           |                    |
//         pcie sw ── gpu ══ nvswitch ══ gpu        ══ NVLink, ── PCIe
//           |
//          cpu ─── cpu                              inter-socket
//
// Links are symmetric: `bw_gbps` is the bandwidth in each direction (GB/s, 1e9 B/s).
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace topocoll::topo {

enum class DeviceKind : std::uint8_t { Gpu, Cpu, PcieSwitch, NvSwitch, Nic, LeafSwitch, SpineSwitch };
enum class LinkKind : std::uint8_t { NvLink, Pcie, C2C, InterSocket, Network };

std::string_view to_string(DeviceKind kind);
std::string_view to_string(LinkKind kind);

struct Device {
  DeviceKind kind = DeviceKind::Gpu;
  std::int32_t node = -1;        // node index; -1 for fabric switches
  std::int32_t local_index = 0;  // index among devices of this kind in its node (or fabric)
  std::int32_t numa = -1;        // NUMA node (CPU socket index) inside the node, -1 if none
  std::int32_t model = -1;       // index into Topology::labels() / NodeModel::labels (e.g. "H100")
  double port_gbps = 0.0;        // NICs: network port rate per direction (GB/s); else 0
  std::int32_t sm = 0;           // GPUs: compute capability (90 = Hopper), 0 unknown
  std::int32_t group = -1;       // fabric switches: dragonfly group or fabric plane; -1 none
};

struct Link {
  LinkKind kind = LinkKind::Pcie;
  double bw_gbps = 0.0;     // per direction, GB/s
  double latency_us = 0.0;  // one way
  std::int32_t lanes = 0;   // NVLink count or PCIe width; 0 when not meaningful
  // Network links of a named transport (topologies/transports.hpp): the fraction of bw_gbps a
  // transfer gets. 0 = not set: the calibration's efficiency for the link's kind applies.
  double efficiency = 0.0;
  // PCIe links: the rate at the device's maximum width and speed (sysfs max_link_width /
  // max_link_speed), when the source gives them; 0 = unknown. Below bw_gbps's peer: the link
  // trained below its rate (diagnostics "slow-link").
  double max_bw_gbps = 0.0;
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, Device, Link>;
using Vertex = Graph::vertex_descriptor;
using Edge = Graph::edge_descriptor;

// One machine, before it is copied into a cluster. Vertices are node-local (Device::node = 0).
struct NodeModel {
  std::string name;         // "dgx-h100", or the file it came from
  std::string description;  // one line
  Graph graph;
  std::vector<std::string> labels;  // Device::model indexes this (GPU / CPU / NIC model names)
  std::vector<std::string> notes;   // what the importer assumed (e.g. NIC speed not in file)
  std::string cpu_vendor;           // "intel", "amd", "arm", "" when unknown
  int cores = 0;                    // CPU cores in the node (for CPU-only rank mapping), 0 unknown

  Vertex add_device(DeviceKind kind, int numa = -1, int model = -1);
  Vertex add_nic(int numa, double port_gbps, int model = -1);
  Vertex add_gpu(int numa, int sm, int model = -1);
  void add_link(Vertex a, Vertex b, LinkKind kind, double bw_gbps, double latency_us, int lanes = 0);
  int label(std::string_view name);  // index of a label, added when new
  std::size_t count(DeviceKind kind) const;
};

enum class FabricKind : std::uint8_t { SingleSwitch, RailFatTree, FatTree, MultiPlane, Dragonfly };
std::string_view to_string(FabricKind kind);
FabricKind parse_fabric(std::string_view name);  // throws InputError naming the accepted values

// How a flow between two leaves picks one of the equal-cost ways (spines, or a dragonfly group
// pair's global links):
//   Hash   a deterministic hash of (source NIC, destination NIC) picks one, as a switch's ECMP
//          does: two flows may land on the same way and share it while another stays idle;
//   Ideal  the equal-cost ways are one aggregated link of their summed rate (perfect spreading:
//          packet spraying or ideal adaptive routing), so no collision can happen.
enum class EcmpMode : std::uint8_t { Hash, Ideal };
std::string_view to_string(EcmpMode mode);
EcmpMode parse_ecmp(std::string_view name);  // throws InputError naming the accepted values

struct FabricSpec {
  FabricKind kind = FabricKind::RailFatTree;
  double oversubscription = 1.0;  // leaf down:up bandwidth ratio, >= 1
  int switch_radix = 64;          // ports per switch (NDR Quantum-2 QM9700: 64 x 400 Gb/s)
  double link_gbps = 0.0;         // switch-to-switch port rate per direction; 0 = the NICs' rate
  double latency_us = 0.0;        // per network link; 0 = the transport's, else kNetworkLinkLatencyUs
  // A transport profile (topologies/transports.hpp: "ndr", "efa-gen2", ...); empty = none: NIC
  // rates as the node gives them, kNetworkLinkLatencyUs, the calibration's network efficiency.
  std::string transport;
  EcmpMode ecmp = EcmpMode::Hash;
  // Dragonfly: switches per group (0 = switch_radix / 2, Rosetta's 32), NIC ports per switch
  // (0 = switch_radix / 4, Rosetta's 16 edge ports) and global links between every pair of
  // groups (each on its own pair of switches; at most the group size).
  int group_switches = 0;
  int nics_per_switch = 0;
  int global_links = 1;
  // NCCL's PXN (PCI x NVLink, src/graph/paths.cc; off with NCCL_PXN_DISABLE=1): a GPU sending to
  // a NIC on another rail first crosses NVLink to the node's GPU on that rail and leaves through
  // its NIC. Off: it leaves through its own NIC and the fabric changes rail.
  bool pxn = true;
  // The switches reduce in the network (NVIDIA SHARP on Quantum InfiniBand switches; NCCL's
  // CollNet with the SHARP plugin): schedules with SwitchKind::Sharp groups can run here.
  bool sharp = false;
};

// What a rank knows about where it sits.
struct RankInfo {
  int rank = 0;
  int node = 0;
  int local = 0;  // local GPU index in the node
  Vertex gpu = 0;
  Vertex nic = 0;  // the NIC it uses for the network (nearest; ties balanced)
  int rail = -1;   // local index of that NIC; -1 when the node has no NIC
  // Every NIC the GPU owns, `nic` first: one per round of the nearest-NIC assignment, with
  // floor(NICs / GPUs) rounds in its node (at least one). A node with 16 NICs on 8 GPUs gives
  // each GPU two. Channel c of a transfer lands on nics[(c / G) % nics.size()], G the node's
  // GPUs (simulator/routes.hpp).
  std::vector<Vertex> nics;
};

class Topology {
 public:
  // `nodes` copies of `model` joined by `fabric` (no fabric when nodes == 1).
  // Throws InputError when nodes is outside 1..kMaxNodes.
  static Topology build(const NodeModel& model, int nodes, const FabricSpec& fabric);
  // Per-node models (heterogeneous clusters): models.size() == number of nodes.
  static Topology build(const std::vector<const NodeModel*>& node_models, const FabricSpec& fabric);

  const Graph& graph() const { return graph_; }
  Graph& mutable_graph() { return graph_; }
  int nodes() const { return nodes_; }
  int gpus_per_node(int node) const;
  int num_ranks() const { return static_cast<int>(ranks_.size()); }
  const RankInfo& rank(int r) const { return ranks_.at(static_cast<std::size_t>(r)); }
  const std::vector<RankInfo>& ranks() const { return ranks_; }
  const std::vector<std::string>& labels() const { return labels_; }
  const std::string& node_model_name(int node) const;
  const std::vector<std::string>& notes() const { return notes_; }
  const std::optional<FabricSpec>& fabric() const { return fabric_; }
  std::string_view cpu_vendor() const { return cpu_vendor_; }
  int cores_per_node() const { return cores_per_node_; }
  // Range of vertices that belong to node n: [first, last).
  std::pair<Vertex, Vertex> node_vertices(int n) const;

  std::size_t count(DeviceKind kind) const;
  std::size_t count(LinkKind kind) const;
  std::string device_name(Vertex v) const;  // "n3/gpu5", "leaf2", "spine0"
  // Finds a vertex by its device_name; nullopt when none.
  std::optional<Vertex> find_device(std::string_view name) const;

  // 131,072 GPUs of 8: the clusters planned in 2026 (100,000 GPUs and more).
  static constexpr int kMaxNodes = 16384;

 private:
  Graph graph_;
  int nodes_ = 0;
  std::vector<RankInfo> ranks_;
  std::vector<std::string> labels_;
  std::vector<std::string> model_names_;  // per node
  std::vector<std::string> notes_;
  std::vector<Vertex> node_first_;  // size nodes_+1
  std::optional<FabricSpec> fabric_;
  std::string cpu_vendor_;
  int cores_per_node_ = 0;
};

}  // namespace topocoll::topo
