#include "topologies/export.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/graph/graphviz.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <pugixml.hpp>
#include <set>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <sstream>

#include "topologies/constants.hpp"
#include "topologies/paths.hpp"
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

// A platform file in the temporary directory, removed with this object.
class PlatformFile {
 public:
  PlatformFile(const Topology& t, std::string_view tag)
      : path_(std::filesystem::temp_directory_path() / fmt::format("topocoll_export_test_{}_{}.xml", getpid(), tag)) {
    std::ofstream out(path_);
    write_simgrid_platform(t, out);
  }
  ~PlatformFile() { std::filesystem::remove(path_); }
  PlatformFile(const PlatformFile&) = delete;
  PlatformFile& operator=(const PlatformFile&) = delete;
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

struct SimgridRoute {
  std::vector<std::string> links;  // SimGrid names: "<id>_UP" / "<id>_DOWN" for split-duplex links
  double latency_us = 0.0;         // SimGrid's sum in seconds, converted (doctest::Approx is relative to
                                   // max(1, |value|): compared in seconds every latency would match)
};

struct SimgridLoad {
  bool loaded = false;
  std::size_t hosts = 0;
  std::vector<SimgridRoute> routes;  // one per requested pair
  std::string error;
};

using HostPairs = std::vector<std::pair<std::string, std::string>>;

// Child side: load the platform into SimGrid, report hosts and routes as text on `fd`.
[[noreturn]] void report_from_child(const std::string& path, const HostPairs& pairs, int fd) {
  std::string report;
  try {
    char arg0[] = "topologies_export_tests";
    char arg1[] = "--log=root.thres:critical";
    char* argv[] = {arg0, arg1, nullptr};
    int argc = 2;
    simgrid::s4u::Engine engine(&argc, argv);
    engine.load_platform(path);
    engine.seal_platform();
    report += fmt::format("hosts {}\n", engine.get_host_count());
    // One line per pair: latency, link count, link names.
    for (const auto& [a, b] : pairs) {
      const auto* src = simgrid::s4u::Host::by_name_or_null(a);
      const auto* dst = simgrid::s4u::Host::by_name_or_null(b);
      if (!src || !dst) throw std::invalid_argument(fmt::format("host {} or {} not in the platform", a, b));
      std::vector<simgrid::s4u::Link*> links;
      double latency = 0.0;
      src->route_to(dst, links, &latency);
      report += fmt::format("route {:.17g} {}", latency, links.size());
      for (const auto* l : links) report += " " + l->get_name();
      report += "\n";
    }
  } catch (const std::exception& e) {
    report += fmt::format("error {}\n", e.what());
  }
  for (std::size_t done = 0; done < report.size();) {
    const ssize_t n = write(fd, report.data() + done, report.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  _exit(0);
}

// SimGrid's Engine is a singleton and 3.32 cannot load a second platform into it (a second
// <config> or a second link of the same name aborts), so each platform is loaded in a child
// process that reports back over a pipe.
SimgridLoad load_in_simgrid(const std::string& path, const HostPairs& pairs) {
  SimgridLoad result;
  int fds[2];
  if (pipe(fds) != 0) {
    result.error = "pipe() failed";
    return result;
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    result.error = "fork() failed";
    return result;
  }
  if (pid == 0) {
    close(fds[0]);
    report_from_child(path, pairs, fds[1]);
  }
  close(fds[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);

  std::istringstream in(text);
  // Lines: "hosts N", "route LATENCY COUNT NAME...", "error MESSAGE".
  for (std::string word; in >> word;) {
    if (word == "hosts") {
      in >> result.hosts;
      result.loaded = true;
    } else if (word == "route") {
      SimgridRoute r;
      std::size_t count = 0;
      double latency_s = 0.0;
      in >> latency_s >> count;
      r.latency_us = latency_s * 1e6;
      r.links.resize(count);
      for (std::string& name : r.links) in >> name;
      result.routes.push_back(std::move(r));
    } else if (word == "error") {
      std::getline(in, result.error);
      result.loaded = false;
    }
  }
  // A SimGrid abort (xbt_die on a malformed platform) kills the child: its message is on stderr.
  if (!WIFEXITED(status)) {
    result.loaded = false;
    result.error += fmt::format(" (SimGrid child died, wait status {:#x})", status);
  }
  return result;
}

std::size_t host_count(const Topology& t) {
  return t.count(DeviceKind::Gpu) + t.count(DeviceKind::Cpu);
}

std::string gpu_host(const Topology& t, int rank) {
  return t.device_name(t.rank(rank).gpu);
}

// The leaf a NIC is cabled to.
std::string leaf_of(const Topology& t, Vertex nic) {
  for (auto e : boost::make_iterator_range(boost::out_edges(nic, t.graph())))
    if (t.graph()[e].kind == LinkKind::Network) return t.device_name(boost::target(e, t.graph()));
  return "";
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

TEST_CASE("export: SimGrid loads tiny clusters; GPU-to-GPU routes have the model's latency") {
  struct Case {
    int nodes;
    FabricSpec fabric;
    std::string name;
    double latency_us;  // first GPU of node 0 -> last GPU of the last node, by hand
  };
  // GPU -> PCIe switch -> NIC -> leaf [-> spine -> leaf] -> NIC -> PCIe switch -> GPU.
  const double same_leaf = 4 * c::kPcieLatencyUs + 2 * c::kNetworkLinkLatencyUs;
  const double via_spine = same_leaf + 2 * c::kNetworkLinkLatencyUs;
  const double nvlink = 2 * c::kNvlinkLatencyUs;  // GPU -> NVSwitch -> GPU
  const std::vector<Case> cases = {
      {1, fabric(FabricKind::SingleSwitch), "1-single-switch", nvlink},
      {2, fabric(FabricKind::SingleSwitch), "2-single-switch", same_leaf},
      {5, fabric(FabricKind::SingleSwitch), "5-single-switch", same_leaf},
      {1, fabric(FabricKind::RailFatTree), "1-rail-fat-tree", nvlink},
      {2, fabric(FabricKind::RailFatTree), "2-rail-fat-tree", same_leaf},
      {5, fabric(FabricKind::RailFatTree), "5-rail-fat-tree", same_leaf},  // one scalable unit: one leaf
      {2, fabric(FabricKind::RailFatTree, 4), "2-rail-fat-tree-radix4", same_leaf},
      {5, fabric(FabricKind::RailFatTree, 4), "5-rail-fat-tree-radix4", via_spine},  // 2 nodes per leaf
  };
  const NodeModel node = tiny_node();
  for (const Case& k : cases) {
    CAPTURE(k.name);
    const Topology t = Topology::build(node, k.nodes, k.fabric);
    const int last_rank = t.num_ranks() - 1;
    const PlatformFile file(t, k.name);
    const SimgridLoad load =
        load_in_simgrid(file.path(), {{gpu_host(t, 0), gpu_host(t, last_rank)}, {gpu_host(t, 0), gpu_host(t, 1)}});
    INFO("SimGrid error: ", load.error);
    REQUIRE(load.loaded);
    CHECK(load.hosts == host_count(t));
    REQUIRE(load.routes.size() == 2);

    const Path model = find_path(t, t.rank(0).gpu, t.rank(last_rank).gpu);
    REQUIRE(model.found);
    CHECK(model.latency_us == doctest::Approx(k.latency_us));
    const SimgridRoute& far = load.routes[0];
    CHECK(!far.links.empty());
    CHECK(far.latency_us == doctest::Approx(k.latency_us));
    // Across nodes the platform adds the two attach links (latency 0) to the model's links.
    CHECK(far.links.size() == model.hops() + (k.nodes > 1 ? 2 : 0));
    if (k.nodes > 1) {
      CHECK(contains(far.links, fmt::format("n0/attach_UP")));
      CHECK(contains(far.links, fmt::format("n{}/attach_DOWN", k.nodes - 1)));
    }
    // Inside node 0 the two GPUs talk over NVLink, through their NVSwitch ports.
    const SimgridRoute& near = load.routes[1];
    CHECK(near.latency_us == doctest::Approx(nvlink));
    CHECK(near.links == std::vector<std::string>{"n0/gpu0--n0/nvswitches_UP", "n0/gpu1--n0/nvswitches_DOWN"});
  }
}

TEST_CASE("export: SimGrid keeps each GPU's rail (2 x DGX-H100, rail-fat-tree)") {
  const Topology t = Topology::build(make_dgx_h100_node(), 2, fabric(FabricKind::RailFatTree));
  const PlatformFile file(t, "dgx-h100-rails");
  // Same rail (rank 3 -> rank 11), cross rail (rank 0 -> rank 11), and back.
  const SimgridLoad load = load_in_simgrid(
      file.path(),
      {{gpu_host(t, 3), gpu_host(t, 11)}, {gpu_host(t, 0), gpu_host(t, 11)}, {gpu_host(t, 11), gpu_host(t, 3)}});
  INFO("SimGrid error: ", load.error);
  REQUIRE(load.loaded);
  CHECK(load.hosts == 2 * (8 + 2));
  REQUIRE(load.routes.size() == 3);

  const Vertex nic3 = t.rank(3).nic, nic11 = t.rank(11).nic;
  const std::string out_of_node0 = fmt::format("{}--{}_UP", t.device_name(nic3), leaf_of(t, nic3));
  const std::string into_node1 = fmt::format("{}--{}_DOWN", t.device_name(nic11), leaf_of(t, nic11));
  CHECK(t.rank(3).rail == t.rank(11).rail);
  CHECK(contains(load.routes[0].links, out_of_node0));
  CHECK(contains(load.routes[0].links, into_node1));
  CHECK(load.routes[0].latency_us == doctest::Approx(find_path(t, t.rank(3).gpu, t.rank(11).gpu).latency_us));

  // The way back uses the same links, the other direction of each.
  const std::string back_out = fmt::format("{}--{}_UP", t.device_name(nic11), leaf_of(t, nic11));
  CHECK(contains(load.routes[2].links, back_out));
  CHECK(load.routes[2].links.size() == load.routes[0].links.size());

  // Rank 0 leaves through its own rail's NIC, not rank 11's. Known simplification (export.cpp,
  // point 2): cross-rail traffic inside one scalable unit does not cross the spines.
  const Vertex nic0 = t.rank(0).nic;
  CHECK(contains(load.routes[1].links, fmt::format("{}--{}_UP", t.device_name(nic0), leaf_of(t, nic0))));
  CHECK(contains(load.routes[1].links, into_node1));
  const Path cross = find_path(t, t.rank(0).gpu, t.rank(11).gpu);
  CHECK(load.routes[1].latency_us == doctest::Approx(cross.latency_us - 2 * c::kNetworkLinkLatencyUs));
}

TEST_CASE("export: SimGrid platform XML structure (3 x DGX-H100, rail-fat-tree with spines)") {
  const Topology t = Topology::build(make_dgx_h100_node(), 3, fabric(FabricKind::RailFatTree, 4));
  std::ostringstream text;
  write_simgrid_platform(t, text);
  pugi::xml_document doc;
  REQUIRE(doc.load_string(text.str().c_str()));
  const pugi::xml_node platform = doc.child("platform");
  CHECK(std::string(platform.attribute("version").value()) == "4.1");
  const pugi::xml_node top = platform.child("zone");
  CHECK(std::string(top.attribute("routing").value()) == "DijkstraCache");

  // Zones: top (DijkstraCache) > one group per home leaf (DijkstraCache) > its nodes (Full) and a hub
  // holding the leaf; the spine layer (Full) beside the groups.
  const pugi::xpath_node_set groups = doc.select_nodes("/platform/zone/zone[starts-with(@id, 'group')]");
  CHECK(groups.size() == 2);  // 2 nodes per scalable unit: nodes 0-1 and node 2
  std::size_t node_zones = 0, node_routes = 0;
  for (pugi::xpath_node group : groups) {
    CHECK(std::string(group.node().attribute("routing").value()) == "DijkstraCache");
    for (pugi::xml_node zone : group.node().children("zone")) {
      const std::string id = zone.attribute("id").value();
      CHECK(std::string(zone.attribute("routing").value()) == "Full");
      if (id.ends_with("/leaf"))
        CHECK(zone.select_nodes("router").size() == 1);
      else
        ++node_zones;
    }
    node_routes += group.node().select_nodes("zoneRoute").size();
  }
  CHECK(node_zones == 3);
  CHECK(node_routes == 3);
  CHECK(doc.select_nodes("/platform/zone/zone[@id='spine-layer']").size() == 1);
  CHECK(top.select_nodes("zoneRoute").size() == 2);  // each group to the spine layer

  // Every link split-duplex; every link_ctn names a declared link and a direction.
  std::set<std::string> declared;
  for (pugi::xpath_node x : doc.select_nodes("//link")) {
    declared.insert(x.node().attribute("id").value());
    CHECK(std::string(x.node().attribute("sharing_policy").value()) == "SPLITDUPLEX");
  }
  std::size_t bad_refs = 0;
  for (pugi::xpath_node x : doc.select_nodes("//link_ctn")) {
    const std::string direction = x.node().attribute("direction").value();
    if (!declared.contains(x.node().attribute("id").value()) || (direction != "UP" && direction != "DOWN")) ++bad_refs;
  }
  CHECK(bad_refs == 0);
  // One link per model edge inside nodes (but the GPU-NVSwitch edges: one port per GPU
  // instead) and from NICs to leaves, plus one attach link per node, plus one bundle per home
  // leaf (the leaf-spine edges are aggregated).
  const std::size_t nic_links = t.count(DeviceKind::Nic);
  const std::size_t gpu_nvswitch = 3 * 8 * 4;  // each H100 to each of the 4 NVSwitches
  const std::size_t internal = boost::num_edges(t.graph()) - t.count(LinkKind::Network) - gpu_nvswitch;
  const std::size_t gpu_ports = t.count(DeviceKind::Gpu);
  const std::size_t home_leaves = groups.size();
  CHECK(declared.size() == internal + gpu_ports + nic_links + 3 + home_leaves);
  // A GPU's NVSwitch port carries all its NVLinks: 18 x 25 GB/s on an H100.
  const pugi::xpath_node port = doc.select_node("//link[@id='n2/gpu7--n2/nvswitches']");
  REQUIRE(port);
  CHECK(std::string(port.node().attribute("bandwidth").value()) == "450GBps");

  // Hosts: every GPU and CPU; every rank exactly once.
  std::set<int> ranks;
  std::size_t hosts = 0;
  for (pugi::xpath_node x : doc.select_nodes("//host")) {
    ++hosts;
    if (auto p = x.node().find_child_by_attribute("prop", "id", "rank")) ranks.insert(p.attribute("value").as_int());
  }
  CHECK(hosts == host_count(t));
  CHECK(ranks.size() == static_cast<std::size_t>(t.num_ranks()));
  CHECK(*ranks.rbegin() == t.num_ranks() - 1);
}

TEST_CASE("export: the SimGrid platform of 3 x DGX-H100 with spines loads and routes across units") {
  const Topology t = Topology::build(make_dgx_h100_node(), 3, fabric(FabricKind::RailFatTree, 4));
  const PlatformFile file(t, "dgx-h100-spines");
  // Rank 0 (node 0, unit 0) -> rank 16 (node 2, unit 1), same rail: through the spines.
  const SimgridLoad load = load_in_simgrid(file.path(), {{gpu_host(t, 0), gpu_host(t, 16)}});
  INFO("SimGrid error: ", load.error);
  REQUIRE(load.loaded);
  CHECK(load.hosts == host_count(t));
  REQUIRE(load.routes.size() == 1);
  const Path model = find_path(t, t.rank(0).gpu, t.rank(16).gpu);
  CHECK(model.hops() == 8);
  CHECK(load.routes[0].latency_us == doctest::Approx(model.latency_us));
  CHECK(contains(load.routes[0].links, "leaf0--spines_UP"));
}

TEST_CASE("export: every GPU pair of two preset nodes on one switch has the model's latency") {
  // On a single switch every path between nodes crosses one leaf whatever the rails, so no
  // simplification of the platform changes a latency. Inside a node the expected path is the
  // one found on the node alone (export.cpp, point 5): on the full cluster find_path may leave
  // the node through the network when a NIC is wider than the inter-socket link (pcie-8gpu).
  for (const std::string preset : {"dgx-a100", "dgx-h100", "pcie-8gpu"}) {
    CAPTURE(preset);
    const NodeModel node = make_preset_node(preset);
    const Topology t = Topology::build(node, 2, fabric(FabricKind::SingleSwitch));
    const Topology alone = Topology::build(node, 1, FabricSpec{});
    const PlatformFile file(t, preset);
    HostPairs pairs;
    std::vector<double> expected_us;
    // All ordered pairs of distinct ranks, inside and across the nodes.
    for (int a = 0; a < t.num_ranks(); ++a)
      for (int b = 0; b < t.num_ranks(); ++b) {
        if (a == b) continue;
        pairs.emplace_back(gpu_host(t, a), gpu_host(t, b));
        const RankInfo &ra = t.rank(a), &rb = t.rank(b);
        const Path p = ra.node == rb.node ? find_path(alone, alone.rank(ra.local).gpu, alone.rank(rb.local).gpu)
                                          : find_path(t, ra.gpu, rb.gpu);
        expected_us.push_back(p.latency_us);
      }
    const SimgridLoad load = load_in_simgrid(file.path(), pairs);
    INFO("SimGrid error: ", load.error);
    REQUIRE(load.loaded);
    REQUIRE(load.routes.size() == pairs.size());
    int mismatches = 0;
    for (std::size_t i = 0; i < pairs.size(); ++i)
      if (load.routes[i].latency_us != doctest::Approx(expected_us[i])) ++mismatches;
    CHECK(mismatches == 0);
  }
}

TEST_CASE("export: inside a DGX-H100 node, GPU pairs use their whole NVSwitch ports") {
  const Topology t = Topology::build(make_dgx_h100_node(), 1, FabricSpec{});
  const PlatformFile file(t, "dgx-h100-nvswitch");
  const SimgridLoad load =
      load_in_simgrid(file.path(), {{gpu_host(t, 0), gpu_host(t, 5)}, {gpu_host(t, 5), gpu_host(t, 0)}});
  INFO("SimGrid error: ", load.error);
  REQUIRE(load.loaded);
  REQUIRE(load.routes.size() == 2);
  CHECK(load.routes[0].links == std::vector<std::string>{"n0/gpu0--n0/nvswitches_UP", "n0/gpu5--n0/nvswitches_DOWN"});
  CHECK(load.routes[1].links == std::vector<std::string>{"n0/gpu5--n0/nvswitches_UP", "n0/gpu0--n0/nvswitches_DOWN"});
  CHECK(load.routes[0].latency_us == doctest::Approx(find_path(t, t.rank(0).gpu, t.rank(5).gpu).latency_us));
}

TEST_CASE("export: nodes without a NIC load; SimGrid finds no route between them") {
  NodeModel node;
  node.name = "no-nic";
  const Vertex cpu = node.add_device(DeviceKind::Cpu, 0);
  for (int i = 0; i < 2; ++i)
    node.add_link(cpu, node.add_gpu(0, 90), LinkKind::Pcie, 16 * *c::pcie_gbps_per_lane(16.0), c::kPcieLatencyUs, 16);
  const Topology t = Topology::build(node, 2, FabricSpec{});
  const PlatformFile file(t, "no-nic");
  const SimgridLoad inside = load_in_simgrid(file.path(), {{gpu_host(t, 0), gpu_host(t, 1)}});
  INFO("SimGrid error: ", inside.error);
  REQUIRE(inside.loaded);
  CHECK(inside.hosts == 6);
  CHECK(inside.routes.at(0).latency_us == doctest::Approx(2 * c::kPcieLatencyUs));
  const SimgridLoad across = load_in_simgrid(file.path(), {{gpu_host(t, 0), gpu_host(t, 2)}});
  CHECK(!across.loaded);
  CHECK(across.error.find("No route") != std::string::npos);
}

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
