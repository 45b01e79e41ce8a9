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
