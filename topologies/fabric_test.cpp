// Fabrics and transports: profile lookup, what a named transport puts on the links, the
// oversubscribed, multi-plane and dragonfly fabrics, ECMP ideal's aggregated links, and several
// NICs per GPU (RankInfo::nics).
#include <doctest/doctest.h>

#include <set>
#include <sstream>
#include <string>

#include "common/errors.hpp"
#include "topologies/constants.hpp"
#include "topologies/export.hpp"
#include "topologies/load.hpp"
#include "topologies/presets.hpp"
#include "topologies/summary.hpp"
#include "topologies/transform.hpp"
#include "topologies/transports.hpp"

using namespace topocoll::topo;
using topocoll::InputError;

namespace {

// One GPU and one NIC of `gbps` behind a PCIe switch.
NodeModel one_gpu_node(double gbps = 50.0) {
  NodeModel m;
  m.name = "one-gpu";
  const auto cpu = m.add_device(DeviceKind::Cpu, 0);
  const auto sw = m.add_device(DeviceKind::PcieSwitch, 0);
  const auto gpu = m.add_gpu(0, 90);
  const auto nic = m.add_nic(0, gbps);
  m.add_link(cpu, sw, LinkKind::Pcie, 63.0, 0.5, 16);
  m.add_link(sw, gpu, LinkKind::Pcie, 63.0, 0.5, 16);
  m.add_link(sw, nic, LinkKind::Pcie, 63.0, 0.5, 16);
  return m;
}

FabricSpec spec(FabricKind kind, int radix = 64) {
  FabricSpec f;
  f.kind = kind;
  f.switch_radix = radix;
  return f;
}

bool is_switch(const Device& d) {
  return d.kind == DeviceKind::LeafSwitch || d.kind == DeviceKind::SpineSwitch;
}

// Network links between two switches, as (edge) list.
std::vector<Edge> switch_links(const Topology& t) {
  std::vector<Edge> out;
  const Graph& g = t.graph();
  for (auto e : boost::make_iterator_range(boost::edges(g)))
    if (is_switch(g[boost::source(e, g)]) && is_switch(g[boost::target(e, g)])) out.push_back(e);
  return out;
}

}  // namespace

TEST_CASE("transports: every profile has a rate rule and a source for each value; defaults where none") {
  std::set<std::string_view> names;
  for (const TransportProfile& p : transports()) {
    CAPTURE(p.name);
    CHECK(names.insert(p.name).second);
    CHECK_FALSE(p.description.empty());
    CHECK_FALSE(p.port_source.empty());
    CHECK_FALSE(p.latency_source.empty());
    CHECK_FALSE(p.efficiency_source.empty());
    CHECK(p.port_gbps >= 0.0);
    CHECK(p.hop_latency_us > 0.0);
    CHECK((p.efficiency > 0.0 && p.efficiency <= 1.0));
    // A value said "not sourced" is the InfiniBand default, never a number of its own.
    if (p.latency_source.starts_with("not sourced")) CHECK(p.hop_latency_us == kDefaultHopLatencyUs);
    if (p.efficiency_source.starts_with("not sourced")) CHECK(p.efficiency == kDefaultEfficiency);
  }
  CHECK(names.size() == 13);
  CHECK(find_transport("hdr").port_gbps == constants::kHdrGbps);
  CHECK(find_transport("ndr").port_gbps == constants::kNdrGbps);
  CHECK(find_transport("xdr").port_gbps == 100.0);
  CHECK(find_transport("efa-gen2").port_gbps == 12.5);
  CHECK(find_transport("efa-gen3").port_gbps == 25.0);
  CHECK(find_transport("slingshot-11").port_gbps == 25.0);
  CHECK(find_transport("tcp").port_gbps == 0.0);  // the node's own NIC rate
  CHECK_THROWS_WITH_AS(find_transport("omnipath"),
                       "unknown transport 'omnipath': expected one of hdr, ndr, xdr, roce-100g, roce-200g, roce-400g, "
                       "efa-gen1, efa-gen2, efa-gen3, slingshot-11, tcpx, tcpxo, tcp",
                       InputError);
}

TEST_CASE("transports: a named transport sets the NICs' rate and the network links' latency and efficiency") {
  SUBCASE("none: today's numbers (the node's NIC rate, kNetworkLinkLatencyUs, the calibration's efficiency)") {
    const Topology t = Topology::build(make_dgx_h100_node(), 2, spec(FabricKind::RailFatTree));
    for (auto e : boost::make_iterator_range(boost::edges(t.graph())))
      if (t.graph()[e].kind == LinkKind::Network) {
        CHECK(t.graph()[e].latency_us == constants::kNetworkLinkLatencyUs);
        CHECK(t.graph()[e].efficiency == 0.0);
      }
    CHECK(t.graph()[t.rank(0).nic].port_gbps == constants::kNdrGbps);
  }
  SUBCASE("hdr on a DGX H100: 25 GB/s NICs, every network link carries the profile") {
    FabricSpec f = spec(FabricKind::RailFatTree);
    f.transport = "hdr";
    const Topology t = Topology::build(make_dgx_h100_node(), 2, f);
    const TransportProfile& p = find_transport("hdr");
    int network = 0;
    for (auto e : boost::make_iterator_range(boost::edges(t.graph())))
      if (t.graph()[e].kind == LinkKind::Network) {
        ++network;
        CHECK(t.graph()[e].latency_us == p.hop_latency_us);
        CHECK(t.graph()[e].efficiency == p.efficiency);
        CHECK(t.graph()[e].bw_gbps == doctest::Approx(25.0));
      }
    CHECK(network == 16 + 8 * 32);  // 16 NIC links; 8 rail leaves x 32 spines
    for (const RankInfo& r : t.ranks()) CHECK(t.graph()[r.nic].port_gbps == 25.0);
  }
  SUBCASE("tcp keeps the node's NIC rate; an explicit latency_us wins over the profile's") {
    FabricSpec f = spec(FabricKind::SingleSwitch);
    f.transport = "tcp";
    f.latency_us = 5.0;
    const Topology t = Topology::build(make_dgx_a100_node(), 2, f);
    CHECK(t.graph()[t.rank(0).nic].port_gbps == constants::kHdrGbps);
    for (auto e : boost::make_iterator_range(boost::edges(t.graph())))
      if (t.graph()[e].kind == LinkKind::Network) CHECK(t.graph()[e].latency_us == 5.0);
  }
  SUBCASE("a bad name in the spec or the options") {
    FabricSpec f = spec(FabricKind::RailFatTree);
    f.transport = "ndr2";
    CHECK_THROWS_AS(Topology::build(make_dgx_h100_node(), 2, f), InputError);
    TopologyOptions o{"dgx-h100"};
    o.nodes = 2;
    o.transport = "ndr2";
    CHECK_THROWS_WITH_AS(load_topology(o), doctest::Contains("unknown transport 'ndr2': expected one of hdr, ndr"),
                         InputError);
  }
}

TEST_CASE("fabrics: names and ECMP modes parse; bad ones list what is accepted") {
  for (FabricKind k : {FabricKind::SingleSwitch, FabricKind::RailFatTree, FabricKind::FatTree, FabricKind::MultiPlane,
                       FabricKind::Dragonfly})
    CHECK(parse_fabric(to_string(k)) == k);
  CHECK_THROWS_WITH_AS(
      parse_fabric("torus"),
      "unknown fabric 'torus': expected one of single-switch, rail-fat-tree, fat-tree, multi-plane, dragonfly",
      InputError);
  CHECK(parse_ecmp("hash") == EcmpMode::Hash);
  CHECK(parse_ecmp("ideal") == EcmpMode::Ideal);
  CHECK_THROWS_WITH_AS(parse_ecmp("random"), "unknown ECMP mode 'random': expected hash or ideal", InputError);
}

TEST_CASE("fabrics: oversubscribed fat trees at 2:1 and 3:1 give each leaf 1/R of its down bandwidth up") {
  for (double r : {1.0, 2.0, 3.0}) {
    CAPTURE(r);
    FabricSpec f = spec(FabricKind::FatTree);
    f.oversubscription = r;
    // 64 ports: down = floor(64 R / (R + 1)) = 32, 42, 48 NIC ports per leaf.
    const int down = r == 1.0 ? 32 : r == 2.0 ? 42 : 48;
    const Topology t = Topology::build(one_gpu_node(50.0), 3 * down, f);
    const Graph& g = t.graph();
    CHECK(t.count(DeviceKind::LeafSwitch) == 3);
    CHECK(t.count(DeviceKind::SpineSwitch) == static_cast<std::size_t>(std::ceil(down / r)));
    for (auto v : boost::make_iterator_range(boost::vertices(g))) {
      if (g[v].kind != DeviceKind::LeafSwitch) continue;
      double up = 0.0, dn = 0.0;
      for (auto e : boost::make_iterator_range(boost::out_edges(v, g)))
        (g[boost::target(e, g)].kind == DeviceKind::SpineSwitch ? up : dn) += g[e].bw_gbps;
      CHECK(dn == doctest::Approx(down * 50.0));
      CHECK(dn / up == doctest::Approx(r));
    }
  }
}

TEST_CASE("fabrics: ECMP ideal makes the spine layer one logical spine of the summed rate") {
  FabricSpec f = spec(FabricKind::FatTree, 4);  // 2 NIC ports a leaf, 2 spines of 50 GB/s
  const Topology hashed = Topology::build(one_gpu_node(50.0), 4, f);
  f.ecmp = EcmpMode::Ideal;
  const Topology ideal = Topology::build(one_gpu_node(50.0), 4, f);
  CHECK(hashed.count(DeviceKind::SpineSwitch) == 2);
  CHECK(ideal.count(DeviceKind::SpineSwitch) == 1);
  for (Edge e : switch_links(hashed)) CHECK(hashed.graph()[e].bw_gbps == doctest::Approx(50.0));
  for (Edge e : switch_links(ideal)) CHECK(ideal.graph()[e].bw_gbps == doctest::Approx(100.0));
}

TEST_CASE("fabrics: multi-plane gives every rail its own leaves and spines, and planes never meet") {
  const Topology t = Topology::build(make_dgx_h100_node(), 4, spec(FabricKind::MultiPlane, 4));
  const Graph& g = t.graph();
  // 2 nodes a leaf: 2 leaves per plane, 2 spines per plane, 8 planes.
  CHECK(t.count(DeviceKind::LeafSwitch) == 16);
  CHECK(t.count(DeviceKind::SpineSwitch) == 16);
  for (Edge e : switch_links(t)) CHECK(g[boost::source(e, g)].group == g[boost::target(e, g)].group);
  for (const RankInfo& r : t.ranks())
    for (auto e : boost::make_iterator_range(boost::out_edges(r.nic, g)))
      if (g[e].kind == LinkKind::Network) CHECK(g[boost::target(e, g)].group == r.rail);
  std::set<Vertex> spines;
  for (auto v : boost::make_iterator_range(boost::vertices(g)))
    if (g[v].kind == DeviceKind::SpineSwitch) spines.insert(v);
  CHECK(spines.size() == 16);
}

TEST_CASE("fabrics: dragonfly groups are all-to-all inside, joined by global_links links per group pair") {
  FabricSpec f = spec(FabricKind::Dragonfly);
  f.nics_per_switch = 1;
  f.group_switches = 3;
  f.global_links = 2;
  // 9 one-NIC nodes: 9 switches in 3 groups of 3.
  const Topology t = Topology::build(one_gpu_node(), 9, f);
  const Graph& g = t.graph();
  CHECK(t.count(DeviceKind::LeafSwitch) == 9);
  CHECK(t.count(DeviceKind::SpineSwitch) == 0);
  std::map<std::pair<int, int>, int> between;
  std::set<std::pair<Vertex, Vertex>> pairs;
  for (Edge e : switch_links(t)) {
    Vertex u = boost::source(e, g), v = boost::target(e, g);
    if (u > v) std::swap(u, v);
    CHECK(pairs.insert({u, v}).second);  // one link per switch pair
    const int a = std::min(g[u].group, g[v].group), b = std::max(g[u].group, g[v].group);
    ++between[{a, b}];
  }
  for (int grp = 0; grp < 3; ++grp) CHECK(between[{grp, grp}] == 3);  // 3 switches all-to-all
  CHECK(between[{0, 1}] == 2);
  CHECK(between[{0, 2}] == 2);
  CHECK(between[{1, 2}] == 2);
  SUBCASE("ECMP ideal: one global link of the summed rate per group pair") {
    f.ecmp = EcmpMode::Ideal;
    const Topology i = Topology::build(one_gpu_node(), 9, f);
    int global = 0;
    for (Edge e : switch_links(i))
      if (i.graph()[boost::source(e, i.graph())].group != i.graph()[boost::target(e, i.graph())].group) {
        ++global;
        CHECK(i.graph()[e].bw_gbps == doctest::Approx(100.0));
      }
    CHECK(global == 3);
  }
  SUBCASE("more global links than a group has switches is refused") {
    f.global_links = 4;
    CHECK_THROWS_WITH_AS(Topology::build(one_gpu_node(), 9, f), doctest::Contains("global_links 4: expected 1 to 3"),
                         InputError);
  }
}

TEST_CASE("nics per gpu: 16 NICs on 8 GPUs give each GPU two, the first as before") {
  const Topology one = Topology::build(make_dgx_h100_node(), 2, spec(FabricKind::RailFatTree));
  const Topology two = Topology::build(multiply_nics(make_dgx_h100_node(), 2), 2, spec(FabricKind::RailFatTree));
  CHECK(two.count(DeviceKind::Nic) == 32);
  std::set<Vertex> seen;
  for (int r = 0; r < two.num_ranks(); ++r) {
    CAPTURE(r);
    CHECK(one.rank(r).nics.size() == 1);
    REQUIRE(two.rank(r).nics.size() == 2);
    CHECK(two.rank(r).rail == one.rank(r).rail);
    CHECK(two.rank(r).nics.front() == two.rank(r).nic);
    CHECK(two.graph()[two.rank(r).nics[1]].local_index == 8 + two.rank(r).local);
    for (Vertex n : two.rank(r).nics) CHECK(seen.insert(n).second);  // no NIC shared
  }
  // The pcie-8gpu node has 2 NICs for 8 GPUs: one round, one NIC each (as before).
  const Topology pcie = Topology::build(make_pcie_8gpu_node(), 1, FabricSpec{});
  for (const RankInfo& r : pcie.ranks()) CHECK(r.nics.size() == 1);
  CHECK_THROWS_WITH_AS(multiply_nics(make_dgx_h100_node(), 0),
                       "--nics-per-gpu 0: expected 1 to 16 NICs for each NIC of the node", InputError);
}

TEST_CASE("load: a YAML fabric names its transport, ECMP, PXN and dragonfly shape") {
  const std::string yaml =
      "node: dgx-a100\nnodes: 8\nfabric: {kind: dragonfly, transport: slingshot-11, ecmp: ideal, pxn: false,\n"
      "         group_switches: 2, nics_per_switch: 8, global_links: 2}\noverrides: {nics_per_gpu: 2}\n";
  const ClusterSpec s = parse_cluster_spec(yaml, "df.yaml", ".");
  CHECK(s.fabric.kind == FabricKind::Dragonfly);
  CHECK(s.fabric.transport == "slingshot-11");
  CHECK(s.fabric.ecmp == EcmpMode::Ideal);
  CHECK_FALSE(s.fabric.pxn);
  CHECK(s.fabric.group_switches == 2);
  CHECK(s.fabric.nics_per_switch == 8);
  CHECK(s.fabric.global_links == 2);
  CHECK(s.nics_per_gpu == 2);
  CHECK_THROWS_WITH_AS(parse_cluster_spec("node: dgx-a100\nfabric: {kind: fat-tree, transport: ib}\n", "bad.yaml", "."),
                       doctest::Contains("bad.yaml:2: unknown transport 'ib': expected one of hdr"), InputError);
  CHECK_THROWS_WITH_AS(parse_cluster_spec("node: dgx-a100\nfabric: {kind: fat-tree, ecmp: spray}\n", "bad.yaml", "."),
                       "bad.yaml:2: unknown ECMP mode 'spray': expected hash or ideal", InputError);
  CHECK_THROWS_WITH_AS(
      parse_cluster_spec("node: dgx-a100\nfabric: {kind: dragonfly, global_links: 0}\n", "bad.yaml", "."),
      "bad.yaml:2: 'global_links' must be an integer from 1 to 65536, got 0", InputError);
}

TEST_CASE("exports and summaries name a transport, ECMP ideal and PXN off only when set") {
  const Topology plain = Topology::build(make_dgx_h100_node(), 2, spec(FabricKind::RailFatTree));
  const nlohmann::json p = to_json(plain);
  CHECK_FALSE(p["fabric"].contains("transport"));
  CHECK_FALSE(p["fabric"].contains("ecmp"));
  for (const auto& l : p["links"]) CHECK_FALSE(l.contains("efficiency"));
  std::ostringstream plain_text;
  write_text(summarize(plain, false), plain_text);
  CHECK(plain_text.str().find("fabric       rail-fat-tree (oversubscription 1:1, switch radix 64)\n") !=
        std::string::npos);

  FabricSpec f = spec(FabricKind::Dragonfly);
  f.transport = "slingshot-11";
  f.ecmp = EcmpMode::Ideal;
  f.pxn = false;
  const Topology named = Topology::build(make_dgx_h100_node(), 2, f);
  const nlohmann::json n = to_json(named);
  CHECK(n["fabric"]["transport"] == "slingshot-11");
  CHECK(n["fabric"]["ecmp"] == "ideal");
  CHECK(n["fabric"]["pxn"] == false);
  CHECK(n["fabric"]["global_links"] == 1);
  int with_efficiency = 0;
  for (const auto& l : n["links"])
    if (l.contains("efficiency")) {
      ++with_efficiency;
      CHECK(l["kind"] == "network");
      CHECK(l["efficiency"] == find_transport("slingshot-11").efficiency);
    }
  CHECK(with_efficiency == 16);  // 16 NIC links, one switch: both nodes fit on 16 ports
  std::ostringstream text;
  write_text(summarize(named, false), text);
  CHECK(text.str().find("dragonfly (oversubscription 1:1, switch radix 64, transport slingshot-11, ECMP ideal, "
                        "PXN off)") != std::string::npos);
}
