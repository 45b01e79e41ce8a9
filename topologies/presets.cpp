#include "topologies/presets.hpp"

#include <fmt/format.h>

#include "common/errors.hpp"
#include "topologies/constants.hpp"
#include "topologies/local.hpp"

namespace topocoll::topo {

namespace c = constants;

namespace {

double pcie_gbps(double gts, int width) {
  return width * *c::pcie_gbps_per_lane(gts);
}

// Joins every pair of sockets with an inter-socket link.
void link_sockets(NodeModel& m, const std::vector<Vertex>& cpus, double gbps) {
  for (std::size_t i = 0; i < cpus.size(); ++i)
    for (std::size_t j = i + 1; j < cpus.size(); ++j)
      m.add_link(cpus[i], cpus[j], LinkKind::InterSocket, gbps, c::kInterSocketLatencyUs);
}

}  // namespace

// DGX A100 (NVIDIA DGX A100 System Architecture white paper; DGX A100 User Guide):
//
//            cpu0 (EPYC 7742) ═══ xGMI ═══ cpu1 (EPYC 7742)
//             /         \                   /         \
//         pcie0        pcie1            pcie2        pcie3      PCIe Gen4 switches
//        / |  \ \     / |  \ \          ...          ...
//     gpu0 gpu1 nic0 nic1 gpu2 gpu3 nic2 nic3   ...  gpu6 gpu7 nic6 nic7   ConnectX-6 HDR 200 Gb/s
//       \\   \\                                       //   //
//        nvswitch0 … nvswitch5   (each A100: 12 NVLink3 links, 2 to each of the 6 NVSwitches)
NodeModel make_dgx_a100_node() {
  NodeModel m;
  m.name = "dgx-a100";
  m.description =
      "NVIDIA DGX A100: 8x A100 SXM4, 6 NVSwitches (NVLink3, 300 GB/s/dir per GPU), 8x HDR 200 Gb/s, 2x AMD EPYC 7742";
  m.cpu_vendor = "amd";
  m.cores = 128;
  const int gpu_model = m.label("A100-SXM4");
  const int cpu_model = m.label("EPYC-7742");
  const int nic_model = m.label("ConnectX-6-HDR");
  std::vector<Vertex> cpus = {m.add_device(DeviceKind::Cpu, 0, cpu_model), m.add_device(DeviceKind::Cpu, 1, cpu_model)};
  link_sockets(m, cpus, c::kInterSocketAmdGbps);
  const double gen4x16 = pcie_gbps(16.0, 16);
  std::vector<Vertex> gpus;
  // Four PCIe switches, two per socket, each with two GPUs and two NICs.
  for (int sw = 0; sw < 4; ++sw) {
    const int numa = sw / 2;
    Vertex pcie = m.add_device(DeviceKind::PcieSwitch, numa);
    m.add_link(cpus[static_cast<std::size_t>(numa)], pcie, LinkKind::Pcie, gen4x16, c::kPcieLatencyUs, 16);
    for (int k = 0; k < 2; ++k) {
      Vertex gpu = m.add_gpu(numa, 80, gpu_model);
      m.add_link(pcie, gpu, LinkKind::Pcie, gen4x16, c::kPcieLatencyUs, 16);
      gpus.push_back(gpu);
    }
    for (int k = 0; k < 2; ++k) {
      Vertex nic = m.add_nic(numa, c::kHdrGbps, nic_model);
      m.add_link(pcie, nic, LinkKind::Pcie, gen4x16, c::kPcieLatencyUs, 16);
    }
  }
  // Six NVSwitches; every GPU has two NVLink3 links to each.
  for (int s = 0; s < 6; ++s) {
    Vertex nvs = m.add_device(DeviceKind::NvSwitch);
    for (Vertex gpu : gpus) m.add_link(gpu, nvs, LinkKind::NvLink, 2 * c::kNvlink3GbpsPerLink, c::kNvlinkLatencyUs, 2);
  }
  return m;
}

// DGX H100 (NVIDIA DGX H100 User Guide; H100 datasheet), PCIe layout as in a real 8x H100 NCCL
// dump (ibm-h100x8-dump.xml): one Gen5 switch per GPU holding that GPU and its NDR NIC.
//
//            cpu0 (Xeon 8480C) ═══ UPI ═══ cpu1 (Xeon 8480C)
//           /   |   |   \                  /   |   |   \
//       pcie0 pcie1 pcie2 pcie3        pcie4 … pcie7            PCIe Gen5 switches
//       /  \                              /  \
//    gpu0  nic0                        gpu7  nic7               ConnectX-7 NDR 400 Gb/s
//      \\ 5,4,4,5 NVLink4 links
//       nvswitch0 … nvswitch3     (each H100: 18 links: 5, 4, 4, 5 to the four NVSwitches)
NodeModel make_dgx_h100_node() {
  NodeModel m;
  m.name = "dgx-h100";
  m.description =
      "NVIDIA DGX H100: 8x H100 SXM5, 4 NVSwitches (NVLink4, 450 GB/s/dir per GPU), 8x NDR 400 Gb/s, 2x Xeon 8480C";
  m.cpu_vendor = "intel";
  m.cores = 112;
  const int gpu_model = m.label("H100-SXM5");
  const int cpu_model = m.label("Xeon-8480C");
  const int nic_model = m.label("ConnectX-7-NDR");
  std::vector<Vertex> cpus = {m.add_device(DeviceKind::Cpu, 0, cpu_model), m.add_device(DeviceKind::Cpu, 1, cpu_model)};
  link_sockets(m, cpus, c::kInterSocketIntelSapphireRapidsGbps);
  const double gen5x16 = pcie_gbps(32.0, 16);
  std::vector<Vertex> gpus;
  for (int sw = 0; sw < 8; ++sw) {
    const int numa = sw / 4;
    Vertex pcie = m.add_device(DeviceKind::PcieSwitch, numa);
    m.add_link(cpus[static_cast<std::size_t>(numa)], pcie, LinkKind::Pcie, gen5x16, c::kPcieLatencyUs, 16);
    Vertex gpu = m.add_gpu(numa, 90, gpu_model);
    m.add_link(pcie, gpu, LinkKind::Pcie, gen5x16, c::kPcieLatencyUs, 16);
    gpus.push_back(gpu);
    Vertex nic = m.add_nic(numa, c::kNdrGbps, nic_model);
    m.add_link(pcie, nic, LinkKind::Pcie, gen5x16, c::kPcieLatencyUs, 16);
  }
  constexpr int kLinksPerSwitch[4] = {5, 4, 4, 5};
  for (int s = 0; s < 4; ++s) {
    Vertex nvs = m.add_device(DeviceKind::NvSwitch);
    const int links = kLinksPerSwitch[s];
    for (Vertex gpu : gpus)
      m.add_link(gpu, nvs, LinkKind::NvLink, links * c::kNvlink4GbpsPerLink, c::kNvlinkLatencyUs, links);
  }
  return m;
}

// An 8-GPU PCIe server with no NVLink and no PCIe switch: four GPUs on each of two sockets'
// root ports, one 200 Gb/s NIC per socket. Every GPU-to-GPU path goes through a CPU (PHB) and
// half of them cross the inter-socket link (SYS): the cross-NUMA case engineers report
// (e.g. 8x RTX 4090 / L40S boxes; see experiments/calibration/data/rtx4090-8gpu-pcie-crossnuma.csv).
//
//      cpu0 ═══════ inter-socket ═══════ cpu1
//     / | | | \                        / | | | \
//  gpu0 … gpu3 nic0                 gpu4 … gpu7 nic1         PCIe Gen4 x16 root ports
NodeModel make_pcie_8gpu_node() {
  NodeModel m;
  m.name = "pcie-8gpu";
  m.description =
      "8 GPUs on PCIe Gen4 x16 root ports across 2 sockets (4+4), no NVLink, no PCIe switch, 1x HDR NIC per socket";
  m.cpu_vendor = "amd";
  m.cores = 64;
  const int gpu_model = m.label("pcie-gpu-gen4");
  const int cpu_model = m.label("x86-socket");
  const int nic_model = m.label("ConnectX-6-HDR");
  std::vector<Vertex> cpus = {m.add_device(DeviceKind::Cpu, 0, cpu_model), m.add_device(DeviceKind::Cpu, 1, cpu_model)};
  link_sockets(m, cpus, c::kInterSocketAmdGbps);
  const double gen4x16 = pcie_gbps(16.0, 16);
  for (int numa = 0; numa < 2; ++numa)
    for (int k = 0; k < 4; ++k) {
      Vertex gpu = m.add_gpu(numa, 89, gpu_model);
      m.add_link(cpus[static_cast<std::size_t>(numa)], gpu, LinkKind::Pcie, gen4x16, c::kPcieLatencyUs, 16);
    }
  for (int numa = 0; numa < 2; ++numa) {
    Vertex nic = m.add_nic(numa, c::kHdrGbps, nic_model);
    m.add_link(cpus[static_cast<std::size_t>(numa)], nic, LinkKind::Pcie, gen4x16, c::kPcieLatencyUs, 16);
  }
  return m;
}

const std::vector<PresetInfo>& presets() {
  static const std::vector<PresetInfo> kPresets = {
      {"dgx-a100", "NVIDIA DGX A100: 8x A100, 6 NVSwitches, 8x HDR 200 Gb/s NICs, 2 AMD sockets"},
      {"dgx-h100", "NVIDIA DGX H100: 8x H100, 4 NVSwitches, 8x NDR 400 Gb/s NICs, 2 Intel sockets"},
      {"pcie-8gpu", "8 PCIe GPUs on two NUMA sockets, no NVLink, no PCIe switch (the cross-NUMA case)"},
      {"local", "this machine, detected with hwloc (sockets, NUMA nodes, cores; GPUs and NICs when present)"},
  };
  return kPresets;
}

bool is_preset(std::string_view name) {
  for (const PresetInfo& p : presets())
    if (p.name == name) return true;
  return false;
}

NodeModel make_preset_node(std::string_view name) {
  if (name == "dgx-a100") return make_dgx_a100_node();
  if (name == "dgx-h100") return make_dgx_h100_node();
  if (name == "pcie-8gpu") return make_pcie_8gpu_node();
  if (name == "local") return detect_local_node();
  std::string known;
  for (const PresetInfo& p : presets()) known += (known.empty() ? "" : ", ") + p.name;
  throw InputError(fmt::format(
      "unknown topology preset '{}': expected one of {}, an NCCL topology .xml file or a .yaml cluster spec", name,
      known));
}

}  // namespace topocoll::topo
