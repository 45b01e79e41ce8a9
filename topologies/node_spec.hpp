// The node description language: one machine (or one NVLink domain of trays) written in YAML,
// parsed into a typed NodeSpec, every field validated, and built into a NodeModel with the
// helpers of topology.hpp. The presets (topologies/presets/*.yaml) are written in it; a cluster
// spec's `node:` may be a node file or an inline map in it. docs/topologies.md documents every
// field.
//
//   name: dgx-h100
//   description: "NVIDIA DGX H100: ..."
//   gpu: {model: H100-SXM5, sm: 90, count: 8}
//   cpu: {model: Xeon-8480C, vendor: intel, sockets: 2, cores: 112}
//   pcie: {generation: 5, width: 16, switches: [{socket: 0, gpus: 1, nics: 1}, ...]}
//   nvlink: {generation: 4, switches: [5, 4, 4, 5]}
//   nic: {model: ConnectX-7-NDR, speed: 400 Gb/s}
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "topologies/topology.hpp"

namespace topocoll::topo {

// How a group of GPUs reaches its parent (a PCIe switch or a socket).
enum class GpuAttach : std::uint8_t { Pcie, C2C };

// One PCIe switch, or the root ports of a socket: the GPUs and NICs below it, nested switches.
// GPUs are numbered in the order the tree is walked (docs/topologies.md: switches first, depth
// first in list order, then the root ports of each socket), so `gpus` is a count; a list of
// indices is accepted and must be those next indices.
struct PcieGroup {
  int socket = 0;
  int gpus = 0;
  int nics = 0;
  int width = 0;  // lanes of this switch's uplink and its devices' links; 0 = pcie.width
  GpuAttach attach = GpuAttach::Pcie;
  std::vector<PcieGroup> switches;  // nested switches (same socket)
  std::vector<int> gpu_list;        // `gpus` as written when a list of indices (checked), else empty
  int line = 0;                     // where it was written (errors)
};

struct NvlinkBridge {
  int a = 0, b = 0;  // GPU indices (in a tray when nvlink_domain is set)
  int links = 1;
};

struct NodeSpec {
  std::string name;
  std::string description;
  std::string source;  // file (or "preset NAME") it came from, for errors

  std::string gpu_model;  // label, e.g. "H100-SXM5"
  int sm = 0;             // compute capability, 0 unknown
  int gpus = 0;           // GPUs per node (per tray when nvlink_domain > 0)

  std::string cpu_model;
  std::string cpu_vendor;                   // intel | amd | arm | ""
  int sockets = 1;                          // per node (per tray)
  int cores = 0;                            // per node (per tray)
  std::optional<double> inter_socket_gbps;  // unset: NCCL's figure for the vendor

  double pcie_gts = 16.0;  // transfer rate of the generation (Gen4 16 GT/s)
  int pcie_width = 16;
  std::vector<PcieGroup> switches;    // PCIe switches, in order
  std::vector<PcieGroup> root_ports;  // devices straight on a socket's root ports

  double c2c_gbps = 0.0;  // NVLink-C2C per GPU per direction, when a group attaches by c2c

  enum class Nvlink : std::uint8_t { None, Switch, Bridges, Mesh } nvlink = Nvlink::None;
  double nvlink_gbps_per_link = 0.0;  // from the generation or given
  std::vector<int> nvswitch_links;    // Switch: links from each GPU to each NVSwitch chip
  std::vector<NvlinkBridge> bridges;  // Bridges: GPU pairs
  int mesh_links = 0;                 // Mesh: links between every pair of GPUs

  std::string nic_model;
  double nic_gbps = 0.0;  // GB/s per direction (written in Gb/s)

  bool p2p = true;
  int nvlink_domain = 0;  // GPUs in one NVLink domain over several trays; 0 = the node alone

  std::vector<std::string> notes;
};

// Parses a node description (the whole text is one node). Errors are InputError
// "SOURCE:LINE: ..." naming what was given and what was expected.
NodeSpec parse_node_spec(const std::string& text, const std::string& source);
NodeSpec load_node_spec(const std::string& path);
// True when the YAML text holds a node description (a top-level key of the node language: gpu,
// cpu, pcie, nvlink, nic, nvlink_domain) rather than a cluster spec (top-level key `node`). Not
// YAML, or neither: false.
bool is_node_spec_text(const std::string& text);

// The node model of a spec: devices in the order of the walk above, then NVSwitches.
NodeModel build_node(const NodeSpec& spec);

// --- Changes to a built node (cluster spec overrides; they apply to any node source) ----------
// Every GPU gets this model label and/or compute capability.
void set_gpu_model(NodeModel& m, const std::optional<std::string>& model, std::optional<int> sm);
// Every GPU's NVLink bundles scaled so that its NVLink total per direction is `gbps`. InputError
// when the node has no NVLink.
void set_nvlink_gbps(NodeModel& m, double gbps);
// Adds `links.size()` NVSwitch chips with links[s] links of `gbps_per_link` from every GPU to
// chip s (the NVLink a skeleton XML file leaves out). InputError when the node has no GPU or
// already has NVLink.
void add_nvswitches(NodeModel& m, const std::vector<int>& links, double gbps_per_link);
// P2P off (NCCL_P2P_DISABLE=1): NVLink and NVSwitches removed, so GPU-to-GPU traffic takes the
// PCIe / CPU path; devices keep their order.
void disable_p2p(NodeModel& m);

}  // namespace topocoll::topo
