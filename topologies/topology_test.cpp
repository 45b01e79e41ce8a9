#include <doctest/doctest.h>

#include "common/errors.hpp"
#include "topologies/presets.hpp"
#include "topologies/test_helpers.hpp"

using namespace topocoll::topo;
using topocoll::topo::testing::bw_of;
using topocoll::topo::testing::links_of;

namespace {

struct Counts {
  std::size_t gpus, cpus, pcie, nvs, nics, nvlink, pcie_links, inter_socket;
};

void check_node(const NodeModel& m, const Counts& c) {
  Topology t = Topology::build(m, 1, FabricSpec{});
  CHECK(t.count(DeviceKind::Gpu) == c.gpus);
  CHECK(t.count(DeviceKind::Cpu) == c.cpus);
  CHECK(t.count(DeviceKind::PcieSwitch) == c.pcie);
  CHECK(t.count(DeviceKind::NvSwitch) == c.nvs);
  CHECK(t.count(DeviceKind::Nic) == c.nics);
  CHECK(t.count(LinkKind::NvLink) == c.nvlink);
  CHECK(t.count(LinkKind::Pcie) == c.pcie_links);
  CHECK(t.count(LinkKind::InterSocket) == c.inter_socket);
  CHECK(t.count(LinkKind::Network) == 0);
  CHECK(t.count(DeviceKind::LeafSwitch) == 0);
  CHECK_FALSE(t.fabric().has_value());
}

}  // namespace

TEST_CASE("presets: device and link counts of one node") {
  check_node(make_dgx_a100_node(), {8, 2, 4, 6, 8, 48, 20, 1});
  check_node(make_dgx_h100_node(), {8, 2, 8, 4, 8, 32, 24, 1});
  check_node(make_pcie_8gpu_node(), {8, 2, 0, 0, 2, 0, 10, 1});
}

TEST_CASE("presets: per-GPU bandwidths follow the vendor figures") {
  SUBCASE("dgx-h100: 18 NVLink4 links = 450 GB/s per direction, Gen5 x16, NDR NIC") {
    Topology t = Topology::build(make_dgx_h100_node(), 1, FabricSpec{});
    for (const RankInfo& r : t.ranks()) {
      CHECK(bw_of(t.graph(), r.gpu, LinkKind::NvLink) == doctest::Approx(450.0));
      CHECK(links_of(t.graph(), r.gpu, LinkKind::NvLink) == 4);  // one bundle per NVSwitch
      CHECK(bw_of(t.graph(), r.gpu, LinkKind::Pcie) == doctest::Approx(16 * 3.938));
      CHECK(t.graph()[r.nic].port_gbps == doctest::Approx(50.0));
      CHECK(r.rail == r.local);  // each GPU's own NIC sits on its PCIe switch
    }
  }
  SUBCASE("dgx-a100: 12 NVLink3 links = 300 GB/s, Gen4 x16, HDR NIC, two GPUs per NIC pair") {
    Topology t = Topology::build(make_dgx_a100_node(), 1, FabricSpec{});
    for (const RankInfo& r : t.ranks()) {
      CHECK(bw_of(t.graph(), r.gpu, LinkKind::NvLink) == doctest::Approx(300.0));
      CHECK(bw_of(t.graph(), r.gpu, LinkKind::Pcie) == doctest::Approx(16 * 1.969));
      CHECK(t.graph()[r.nic].port_gbps == doctest::Approx(25.0));
      CHECK(t.graph()[r.nic].numa == t.graph()[r.gpu].numa);
    }
    // Two GPUs share a switch with two NICs: the nearest-NIC rule gives each its own rail.
    for (int i = 0; i < 8; ++i) CHECK(t.rank(i).rail == i);
  }
  SUBCASE("pcie-8gpu: no NVLink, four GPUs per socket on Gen4 root ports") {
    Topology t = Topology::build(make_pcie_8gpu_node(), 1, FabricSpec{});
    for (const RankInfo& r : t.ranks()) {
      CHECK(bw_of(t.graph(), r.gpu, LinkKind::NvLink) == 0.0);
      CHECK(t.graph()[r.gpu].numa == r.local / 4);
      CHECK(r.rail == r.local / 4);  // the NIC of its own socket
    }
  }
}

TEST_CASE("topology: ranks know node, local index and rail") {
  Topology t = Topology::build(make_dgx_h100_node(), 3, FabricSpec{});
  REQUIRE(t.num_ranks() == 24);
  for (int r = 0; r < 24; ++r) {
    CHECK(t.rank(r).node == r / 8);
    CHECK(t.rank(r).local == r % 8);
    CHECK(t.graph()[t.rank(r).gpu].node == r / 8);
    CHECK(t.graph()[t.rank(r).nic].node == r / 8);
  }
  CHECK(t.device_name(t.rank(13).gpu) == "n1/gpu5");
  CHECK(t.find_device("n2/nic7").has_value());
  CHECK_FALSE(t.find_device("n3/gpu0").has_value());
}

TEST_CASE("fabrics: switch and link counts") {
  const NodeModel h100 = make_dgx_h100_node();
  SUBCASE("single-switch: one switch, one link per NIC") {
    Topology t = Topology::build(h100, 4, FabricSpec{FabricKind::SingleSwitch});
    CHECK(t.count(DeviceKind::LeafSwitch) == 1);
    CHECK(t.count(DeviceKind::SpineSwitch) == 0);
    CHECK(t.count(LinkKind::Network) == 32);
  }
  SUBCASE("rail-fat-tree, 128 nodes, radix 64, 1:1: 4 units x 8 rails = 32 leaves, 32 spines") {
    Topology t = Topology::build(h100, 128, FabricSpec{FabricKind::RailFatTree, 1.0, 64});
    CHECK(t.count(DeviceKind::LeafSwitch) == 32);
    CHECK(t.count(DeviceKind::SpineSwitch) == 32);
    CHECK(t.count(LinkKind::Network) == 128 * 8 + 32 * 32);
    // Each leaf: 32 NIC ports of 50 GB/s down, 32 x 50 GB/s up (1:1).
    const Vertex leaf = *t.find_device("leaf0");
    double down = 0, up = 0;
    for (auto e : boost::make_iterator_range(boost::out_edges(leaf, t.graph())))
      (t.graph()[boost::target(e, t.graph())].kind == DeviceKind::SpineSwitch ? up : down) += t.graph()[e].bw_gbps;
    CHECK(down == doctest::Approx(32 * 50.0));
    CHECK(up == doctest::Approx(32 * 50.0));
    // Rail r of node 0 and rail r of node 31 share a leaf; node 32 is in the next unit.
    auto leaf_of = [&](const char* nic) {
      for (auto e : boost::make_iterator_range(boost::out_edges(*t.find_device(nic), t.graph())))
        if (t.graph()[e].kind == LinkKind::Network) return boost::target(e, t.graph());
      return Vertex(0);
    };
    CHECK(leaf_of("n0/nic3") == leaf_of("n31/nic3"));
    CHECK(leaf_of("n0/nic3") != leaf_of("n0/nic4"));
    CHECK(leaf_of("n0/nic3") != leaf_of("n32/nic3"));
  }
  SUBCASE("rail-fat-tree 3:1 oversubscription: leaf up bandwidth is a third of down") {
    Topology t = Topology::build(h100, 128, FabricSpec{FabricKind::RailFatTree, 3.0, 64});
    const Vertex leaf = *t.find_device("leaf0");
    double down = 0, up = 0;
    for (auto e : boost::make_iterator_range(boost::out_edges(leaf, t.graph())))
      (t.graph()[boost::target(e, t.graph())].kind == DeviceKind::SpineSwitch ? up : down) += t.graph()[e].bw_gbps;
    CHECK(down / up == doctest::Approx(3.0));
    CHECK(down == doctest::Approx(48 * 50.0));  // 64 * 3/4 = 48 down ports
  }
  SUBCASE("fat-tree: a node's 8 NICs share a leaf, 4 nodes per 32-port leaf") {
    Topology t = Topology::build(h100, 16, FabricSpec{FabricKind::FatTree, 1.0, 64});
    CHECK(t.count(DeviceKind::LeafSwitch) == 4);
    CHECK(t.count(DeviceKind::SpineSwitch) == 32);
  }
  SUBCASE("one node: no fabric at all") {
    Topology t = Topology::build(h100, 1, FabricSpec{});
    CHECK(t.count(DeviceKind::LeafSwitch) + t.count(DeviceKind::SpineSwitch) == 0);
  }
}

TEST_CASE("topology: bad node counts and fabric parameters are input errors") {
  const NodeModel m = make_pcie_8gpu_node();
  CHECK_THROWS_WITH_AS(Topology::build(m, 0, FabricSpec{}), doctest::Contains("--nodes 0"), topocoll::InputError);
  CHECK_THROWS_WITH_AS(Topology::build(m, 16385, FabricSpec{}), doctest::Contains("from 1 to 16384"),
                       topocoll::InputError);
  CHECK_THROWS_WITH_AS(Topology::build(m, 2, FabricSpec{FabricKind::RailFatTree, 0.5}), doctest::Contains(">= 1"),
                       topocoll::InputError);
  CHECK_THROWS_WITH_AS(parse_fabric("torus"), doctest::Contains("single-switch, rail-fat-tree, fat-tree"),
                       topocoll::InputError);
  CHECK_THROWS_WITH_AS(make_preset_node("dgx-z9"), doctest::Contains("unknown topology preset 'dgx-z9'"),
                       topocoll::InputError);
}

#include "topologies/paths.hpp"
#include "topologies/transform.hpp"

TEST_CASE("transform: merged NVSwitch planes give each GPU pair its full NVLink bandwidth") {
  const NodeModel merged = merge_nvswitch_planes(make_dgx_h100_node());
  Topology t = Topology::build(merged, 2, FabricSpec{});
  CHECK(t.count(DeviceKind::NvSwitch) == 2);
  CHECK(t.count(LinkKind::NvLink) == 16);
  CHECK(t.count(LinkKind::Pcie) == 2 * 24);  // everything else kept
  const Path p = find_path(t, t.rank(0).gpu, t.rank(5).gpu);
  CHECK(p.type == PathType::NVL);
  CHECK(p.bw_gbps == doctest::Approx(450.0));
  for (const RankInfo& r : t.ranks()) CHECK(r.rail == r.local);  // rails unchanged
  // A node without NVSwitches is returned as it is.
  CHECK(boost::num_edges(merge_nvswitch_planes(make_pcie_8gpu_node()).graph) ==
        boost::num_edges(make_pcie_8gpu_node().graph));
}
