// The YAML presets against the C++ builders they replaced: dgx-a100, dgx-h100 and pcie-8gpu must
// build the very same graph (vertex order, devices, links in order, rates, labels, notes,
// description), or every golden output of the simulator would move. The builders below are the
// ones of topologies/presets.cpp before the presets became YAML, kept only here.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "topologies/constants.hpp"
#include "topologies/diagnostics.hpp"
#include "topologies/presets.hpp"
#include "topologies/test_helpers.hpp"

using namespace topocoll::topo;

namespace {

namespace c = constants;

double pcie_gbps(double gts, int width) {
  return width * *c::pcie_gbps_per_lane(gts);
}

// Joins every pair of sockets with an inter-socket link.
void link_sockets(NodeModel& m, const std::vector<Vertex>& cpus, double gbps) {
  for (std::size_t i = 0; i < cpus.size(); ++i)
    for (std::size_t j = i + 1; j < cpus.size(); ++j)
      m.add_link(cpus[i], cpus[j], LinkKind::InterSocket, gbps, c::kInterSocketLatencyUs);
}

// DGX A100 (NVIDIA DGX A100 System Architecture white paper; DGX A100 User Guide):
//
//            cpu0 (EPYC 7742) ═══ xGMI ═══ cpu1 (EPYC 7742)
//             /         \                   /         \
//         pcie0        pcie1            pcie2        pcie3      PCIe Gen4 switches
//        / |  \ \     / |  \ \          ...          ...
//     gpu0 gpu1 nic0 nic1 gpu2 gpu3 nic2 nic3   ...  gpu6 gpu7 nic6 nic7   ConnectX-6 HDR 200 Gb/s
//       \\   \\                                       //   //
//        nvswitch0 … nvswitch5   (each A100: 12 NVLink3 links, 2 to each of the 6 NVSwitches)
NodeModel reference_dgx_a100() {
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
NodeModel reference_dgx_h100() {
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
NodeModel reference_pcie_8gpu() {
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

// Every vertex and every edge (in graph order) as text.
std::string dump(const NodeModel& m) {
  std::string s =
      fmt::format("name={} description={} vendor={} cores={}\n", m.name, m.description, m.cpu_vendor, m.cores);
  for (const auto& l : m.labels) s += "label " + l + "\n";
  for (const auto& n : m.notes) s += "note " + n + "\n";
  const Graph& g = m.graph;
  for (auto v : boost::make_iterator_range(boost::vertices(g))) {
    const Device& d = g[v];
    s += fmt::format("v{} {} node={} idx={} numa={} model={} port={} sm={} group={}\n", v, to_string(d.kind), d.node,
                     d.local_index, d.numa, d.model, d.port_gbps, d.sm, d.group);
    for (auto e : boost::make_iterator_range(boost::out_edges(v, g))) {
      const Link& l = g[e];
      s += fmt::format("  -> v{} {} {} {} {} {}\n", boost::target(e, g), to_string(l.kind), l.bw_gbps, l.latency_us,
                       l.lanes, l.efficiency);
    }
  }
  return s;
}

}  // namespace

TEST_CASE("presets: dgx-a100, dgx-h100 and pcie-8gpu from YAML are the graphs the C++ builders made") {
  CHECK(dump(make_preset_node("dgx-a100")) == dump(reference_dgx_a100()));
  CHECK(dump(make_preset_node("dgx-h100")) == dump(reference_dgx_h100()));
  CHECK(dump(make_preset_node("pcie-8gpu")) == dump(reference_pcie_8gpu()));
  // Edge order of the whole graph too (boost::edges), which route searches walk.
  for (const char* name : {"dgx-a100", "dgx-h100", "pcie-8gpu"}) {
    const NodeModel a = make_preset_node(name);
    const NodeModel b = std::string(name) == "dgx-a100"   ? reference_dgx_a100()
                        : std::string(name) == "dgx-h100" ? reference_dgx_h100()
                                                          : reference_pcie_8gpu();
    std::string ea, eb;
    for (auto e : boost::make_iterator_range(boost::edges(a.graph)))
      ea += fmt::format("{}-{} ", boost::source(e, a.graph), boost::target(e, a.graph));
    for (auto e : boost::make_iterator_range(boost::edges(b.graph)))
      eb += fmt::format("{}-{} ", boost::source(e, b.graph), boost::target(e, b.graph));
    CHECK_MESSAGE(ea == eb, name);
  }
}
