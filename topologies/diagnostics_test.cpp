#include "topologies/diagnostics.hpp"

#include <doctest/doctest.h>

#include <algorithm>

#include "topologies/load.hpp"
#include "topologies/presets.hpp"

using namespace topocoll::topo;

namespace {

std::vector<Finding> of_check(const std::vector<Finding>& all, const std::string& check) {
  std::vector<Finding> out;
  std::copy_if(all.begin(), all.end(), std::back_inserter(out), [&](const Finding& f) { return f.check == check; });
  return out;
}

}  // namespace

TEST_CASE("diagnostics: pcie-8gpu names the GPU pairs that cross NUMA nodes") {
  Topology t = Topology::build(make_pcie_8gpu_node(), 1, FabricSpec{});
  const auto p2p = of_check(diagnose(t), "no-p2p");
  REQUIRE(p2p.size() == 2);
  const std::string& cross = p2p[0].message;
  CHECK(cross.find("16 GPU pairs cross NUMA nodes") != std::string::npos);
  for (int a = 0; a < 4; ++a)
    for (int b = 4; b < 8; ++b) CHECK(cross.find(std::to_string(a) + "-" + std::to_string(b)) != std::string::npos);
  CHECK(cross.find("0-1") == std::string::npos);
  CHECK(p2p[1].message.find("12 GPU pairs meet only at a CPU host bridge") != std::string::npos);
}

TEST_CASE("diagnostics: a clean DGX-H100 cluster has no warnings") {
  Topology t = Topology::build(make_dgx_h100_node(), 16, FabricSpec{});
  for (const Finding& f : diagnose(t)) CHECK_MESSAGE(f.severity != Severity::Warning, f.message);
}

TEST_CASE("diagnostics: a GPU whose only NIC is on the other socket") {
  // Two sockets, a GPU on each, one NIC on socket 0: GPU 1 (NUMA 1) uses a NUMA-0 NIC.
  NodeModel m;
  Vertex c0 = m.add_device(DeviceKind::Cpu, 0), c1 = m.add_device(DeviceKind::Cpu, 1);
  m.add_link(c0, c1, LinkKind::InterSocket, 10.0, 0.5);
  Vertex g0 = m.add_gpu(0, 90), g1 = m.add_gpu(1, 90);
  m.add_link(c0, g0, LinkKind::Pcie, 63.0, 0.5, 16);
  m.add_link(c1, g1, LinkKind::Pcie, 63.0, 0.5, 16);
  Vertex nic = m.add_nic(0, 50.0);
  m.add_link(c0, nic, LinkKind::Pcie, 63.0, 0.5, 16);
  Topology t = Topology::build(m, 1, FabricSpec{});
  const auto numa = of_check(diagnose(t), "nic-numa");
  REQUIRE(numa.size() == 1);
  CHECK(numa[0].message.find("n0/gpu1 (NUMA 1) uses n0/nic0 on NUMA 0") != std::string::npos);
}

TEST_CASE("diagnostics: nodes that differ and links slower than their peers") {
  // A 4-node cluster where node 2's NICs run at half rate (YAML node override).
  const std::string spec = std::string(TOPOCOLL_SOURCE_DIR) + "/topologies/testdata/degraded-node.yaml";
  Topology t = load_topology(TopologyOptions{spec});
  const auto all = diagnose(t);
  const auto differ = of_check(all, "node-differs");
  REQUIRE(differ.size() == 1);
  CHECK(differ[0].message.find("nodes 2 differ from the 3 others") != std::string::npos);
  const auto slow = of_check(all, "slow-link");
  REQUIRE_FALSE(slow.empty());
  bool named = false;
  for (const Finding& f : slow) named |= f.message.find("8 of 32 network links nic-leaf") != std::string::npos;
  CHECK(named);
}

namespace {

// One socket; per GPU a PCIe switch holding it and its NIC, except where `wrong_slot` puts the
// GPU on a root port of its own (its NIC stays on the switch).
NodeModel one_socket(int gpus, int nics, int wrong_slot = -1) {
  NodeModel m;
  const Vertex cpu = m.add_device(DeviceKind::Cpu, 0);
  std::vector<Vertex> gpu, sw;
  for (int i = 0; i < gpus; ++i) gpu.push_back(m.add_gpu(0, 90));
  for (int i = 0; i < gpus; ++i) {
    sw.push_back(m.add_device(DeviceKind::PcieSwitch, 0));
    m.add_link(cpu, sw.back(), LinkKind::Pcie, 63.0, 0.5, 16);
    m.add_link(i == wrong_slot ? cpu : sw.back(), gpu[static_cast<std::size_t>(i)], LinkKind::Pcie, 63.0, 0.5, 16);
  }
  for (int i = 0; i < nics; ++i) {
    const Vertex nic = m.add_nic(0, 50.0);
    m.add_link(sw[static_cast<std::size_t>(i * gpus / nics)], nic, LinkKind::Pcie, 63.0, 0.5, 16);
  }
  const Vertex nvs = m.add_device(DeviceKind::NvSwitch);
  for (Vertex g : gpu) m.add_link(g, nvs, LinkKind::NvLink, 450.0, 0.3, 18);
  return m;
}

}  // namespace

TEST_CASE("diagnostics: a GPU behind the wrong root port (PHB to its NIC while the others are PIX)") {
  const Topology t = Topology::build(one_socket(4, 4, 2), 1, FabricSpec{});
  const auto root = of_check(diagnose(t), "root-port");
  REQUIRE(root.size() == 1);
  CHECK(root[0].message.find("1 GPU(s) reach their NIC through the CPU") != std::string::npos);
  CHECK(root[0].message.find("while 3 GPU(s) share a PCIe switch") != std::string::npos);
  CHECK(root[0].message.find("n0/gpu2-n0/nic2") != std::string::npos);
  // Every GPU on its NIC's switch: nothing to say.
  CHECK(of_check(diagnose(Topology::build(one_socket(4, 4), 1, FabricSpec{})), "root-port").empty());
}

TEST_CASE("diagnostics: fewer NICs than GPUs says how many GPUs share each NIC") {
  const Topology t = Topology::build(one_socket(8, 2), 1, FabricSpec{});
  const auto shared = of_check(diagnose(t), "nic-shared");
  REQUIRE(shared.size() == 1);
  CHECK(shared[0].message.find("8 GPUs share 2 NICs (up to 4 GPUs on one NIC") != std::string::npos);
  // Which GPUs share which NIC is the nearest-NIC assignment's (ties balanced over the NICs).
  CHECK(shared[0].message.find("n0/nic0 by 4 GPUs (0,") != std::string::npos);
  CHECK(shared[0].message.find("; n0/nic1 by 4 GPUs (") != std::string::npos);
  CHECK(of_check(diagnose(Topology::build(one_socket(8, 8), 1, FabricSpec{})), "nic-shared").empty());
}

TEST_CASE("diagnostics: missing P2P (GPUs meeting only at the CPU, no NVLink)") {
  NodeModel m;
  const Vertex cpu = m.add_device(DeviceKind::Cpu, 0);
  const Vertex g0 = m.add_gpu(0, 80), g1 = m.add_gpu(0, 80);
  m.add_link(cpu, g0, LinkKind::Pcie, 31.5, 0.5, 16);
  m.add_link(cpu, g1, LinkKind::Pcie, 31.5, 0.5, 16);
  const auto p2p = of_check(diagnose(Topology::build(m, 1, FabricSpec{})), "no-p2p");
  REQUIRE(p2p.size() == 1);
  CHECK(p2p[0].message.find("1 GPU pairs meet only at a CPU host bridge") != std::string::npos);
}

TEST_CASE("diagnostics: a PCIe link trained below its maximum width or speed") {
  NodeModel m = one_socket(2, 2);
  // gpu1's link: x8 Gen5 of an x16 Gen5 card.
  for (auto e : boost::make_iterator_range(boost::edges(m.graph))) {
    const Vertex a = boost::source(e, m.graph), b = boost::target(e, m.graph);
    const bool gpu1 = (m.graph[a].kind == DeviceKind::Gpu && m.graph[a].local_index == 1) ||
                      (m.graph[b].kind == DeviceKind::Gpu && m.graph[b].local_index == 1);
    if (m.graph[e].kind != LinkKind::Pcie) continue;
    m.graph[e].max_bw_gbps = 63.0;
    if (gpu1) m.graph[e].bw_gbps = 31.5;
  }
  const auto degraded = of_check(diagnose(Topology::build(m, 1, FabricSpec{})), "link-degraded");
  REQUIRE(degraded.size() == 1);
  CHECK(degraded[0].message.find("1 PCIe link(s) trained below") != std::string::npos);
  CHECK(degraded[0].message.find("gpu1 at 31.50 of 63.00 GB/s") != std::string::npos);
}
