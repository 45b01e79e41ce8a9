// Tests of the DOT and JSON exports. The SimGrid platform XML is tested with its writer
// (simulator/simgrid/platform_xml_test.cpp).
#include "topologies/export.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <boost/graph/graphviz.hpp>
#include <set>
#include <sstream>

#include "topologies/constants.hpp"
#include "topologies/presets.hpp"

using namespace topocoll::topo;

namespace {

namespace c = constants;

// The smallest node with every kind of intra-node device:
//
//   cpu0 ── pcie_switch0 ── nic0 (NDR, 50 GB/s)      ── PCIe Gen4 x16
//            │        │
//          gpu0      gpu1                           ══ NVLink, 4 links each
//            ╚═ nvswitch0 ═╝
NodeModel tiny_node() {
  NodeModel m;
  m.name = "tiny";
  m.description = "2 GPUs, 1 CPU, 1 PCIe switch, 1 NIC, 1 NVSwitch";
  m.cores = 8;
  const double gen4x16 = 16 * *c::pcie_gbps_per_lane(16.0);
  const Vertex cpu = m.add_device(DeviceKind::Cpu, 0, m.label("cpu"));
  const Vertex pcie = m.add_device(DeviceKind::PcieSwitch, 0);
  const Vertex nvswitch = m.add_device(DeviceKind::NvSwitch);
  m.add_link(cpu, pcie, LinkKind::Pcie, gen4x16, c::kPcieLatencyUs, 16);
  for (int i = 0; i < 2; ++i) {
    const Vertex gpu = m.add_gpu(0, 90, m.label("H100"));
    m.add_link(pcie, gpu, LinkKind::Pcie, gen4x16, c::kPcieLatencyUs, 16);
    m.add_link(gpu, nvswitch, LinkKind::NvLink, 4 * c::kNvlink4GbpsPerLink, c::kNvlinkLatencyUs, 4);
  }
  const Vertex nic = m.add_nic(0, c::kNdrGbps, m.label("ConnectX-7"));
  m.add_link(pcie, nic, LinkKind::Pcie, gen4x16, c::kPcieLatencyUs, 16);
  return m;
}

FabricSpec fabric(FabricKind kind, int radix = c::kQuantum2Radix) {
  FabricSpec f;
  f.kind = kind;
  f.switch_radix = radix;
  return f;
}

}  // namespace

TEST_CASE("export: DOT is an undirected graph with one cluster per node") {
  const Topology t = Topology::build(tiny_node(), 2, fabric(FabricKind::RailFatTree));
  std::ostringstream out;
  write_dot(t, out);
  const std::string dot = out.str();
  CHECK(dot.starts_with("graph topocoll {"));
  auto occurrences = [&](const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = dot.find(what); at != std::string::npos; at = dot.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(occurrences("subgraph cluster_n0 ") == 1);
  CHECK(occurrences("subgraph cluster_n") == 2);
  CHECK(occurrences("label=\"nvlink 100 GB/s\"") == 4);
  CHECK(occurrences("label=\"network 50 GB/s\"") == 2);

  // Boost's Graphviz reader accepts it and finds every device and link.
  using DotGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS,
                                         boost::property<boost::vertex_name_t, std::string>,
                                         boost::property<boost::edge_name_t, std::string>>;
  DotGraph parsed;
  boost::dynamic_properties dp(boost::ignore_other_properties);
  dp.property("node_id", boost::get(boost::vertex_name, parsed));
  dp.property("label", boost::get(boost::edge_name, parsed));
  REQUIRE(boost::read_graphviz(dot, parsed, dp, "node_id"));
  CHECK(boost::num_vertices(parsed) == boost::num_vertices(t.graph()));
  CHECK(boost::num_edges(parsed) == boost::num_edges(t.graph()));
  std::set<std::string> names;
  for (auto v : boost::make_iterator_range(boost::vertices(parsed)))
    names.insert(boost::get(boost::vertex_name, parsed, v));
  CHECK(names.contains("n1/nvswitch0"));
  CHECK(names.contains("leaf0"));
}

TEST_CASE("export: JSON counts equal the model's") {
  for (int nodes : {1, 3}) {
    CAPTURE(nodes);
    const Topology t = Topology::build(make_dgx_h100_node(), nodes, fabric(FabricKind::RailFatTree, 4));
    const nlohmann::json j = to_json(t);
    CHECK(j["nodes"] == nodes);
    CHECK(j["devices"].size() == boost::num_vertices(t.graph()));
    CHECK(j["links"].size() == boost::num_edges(t.graph()));
    CHECK(j["ranks"].size() == static_cast<std::size_t>(t.num_ranks()));
    // Per kind, devices and links.
    for (DeviceKind kind : {DeviceKind::Gpu, DeviceKind::Cpu, DeviceKind::PcieSwitch, DeviceKind::NvSwitch,
                            DeviceKind::Nic, DeviceKind::LeafSwitch, DeviceKind::SpineSwitch}) {
      const auto n = std::count_if(j["devices"].begin(), j["devices"].end(),
                                   [&](const auto& d) { return d["kind"] == to_string(kind); });
      CHECK_MESSAGE(static_cast<std::size_t>(n) == t.count(kind), to_string(kind));
    }
    for (LinkKind kind : {LinkKind::NvLink, LinkKind::Pcie, LinkKind::C2C, LinkKind::InterSocket, LinkKind::Network}) {
      const auto n = std::count_if(j["links"].begin(), j["links"].end(),
                                   [&](const auto& l) { return l["kind"] == to_string(kind); });
      CHECK_MESSAGE(static_cast<std::size_t>(n) == t.count(kind), to_string(kind));
    }
    CHECK(j["devices"][t.rank(0).gpu]["name"] == t.device_name(t.rank(0).gpu));
    CHECK(j["ranks"][0]["gpu"] == t.rank(0).gpu);
    CHECK(j["ranks"][0]["nic"] == t.rank(0).nic);
    if (nodes == 1) {
      CHECK(j["fabric"].is_null());
    } else {
      CHECK(j["fabric"]["kind"] == "rail-fat-tree");
      CHECK(j["fabric"]["radix"] == 4);
    }
  }
}
