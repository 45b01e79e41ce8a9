#include "topologies/node_spec.hpp"

#include <doctest/doctest.h>

#include "common/errors.hpp"
#include "topologies/diagnostics.hpp"
#include "topologies/load.hpp"
#include "topologies/presets.hpp"
#include "topologies/test_helpers.hpp"

using namespace topocoll::topo;
using topocoll::InputError;
using topocoll::topo::testing::bw_of;
using topocoll::topo::testing::links_of;
using topocoll::topo::testing::source_path;

namespace {

std::vector<Vertex> of_kind(const Graph& g, DeviceKind kind) {
  std::vector<Vertex> out;
  for (auto v : boost::make_iterator_range(boost::vertices(g)))
    if (g[v].kind == kind) out.push_back(v);
  return out;
}

struct Expect {
  const char* name;
  std::size_t gpus, cpus, nvswitches, nics;
  int sm;
  double nvlink_per_gpu;  // GB/s per direction
  double nic_gbps;
  const char* gpu_label;
};

}  // namespace

TEST_CASE("node presets: every preset loads, diagnose runs, counts and rates are the vendor figures") {
  // The figures of each preset's YAML comments (datasheets, user guides).
  const Expect expected[] = {
      {"dgx-a100", 8, 2, 6, 8, 80, 300.0, 25.0, "A100-SXM4"},
      {"dgx-h100", 8, 2, 4, 8, 90, 450.0, 50.0, "H100-SXM5"},
      {"hgx-h200", 8, 2, 4, 8, 90, 450.0, 50.0, "H200-SXM"},
      {"hgx-b200", 8, 2, 2, 8, 100, 900.0, 50.0, "B200"},
      {"gb200-nvl72", 72, 36, 18, 72, 100, 900.0, 50.0, "B200-GB200"},
      {"h100-pcie", 8, 2, 0, 4, 90, 0.0, 50.0, "H100-PCIe"},
      {"h100-pcie-nvlink", 8, 2, 0, 4, 90, 300.0, 50.0, "H100-PCIe"},
      {"l40s-pcie", 8, 2, 0, 4, 89, 0.0, 25.0, "L40S"},
      {"a100-4gpu-2nic", 4, 4, 0, 2, 80, 300.0, 25.0, "A100-SXM4"},
      {"pcie-8gpu", 8, 2, 0, 2, 89, 0.0, 25.0, "pcie-gpu-gen4"},
  };
  std::size_t yaml_presets = 0;
  for (const PresetInfo& p : presets())
    if (p.name != "local") ++yaml_presets;
  CHECK(yaml_presets == std::size(expected));
  for (const Expect& e : expected) {
    CAPTURE(e.name);
    REQUIRE(is_preset(e.name));
    const NodeModel m = make_preset_node(e.name);
    CHECK(m.name == e.name);
    CHECK_FALSE(m.description.empty());
    CHECK(m.count(DeviceKind::Gpu) == e.gpus);
    CHECK(m.count(DeviceKind::Cpu) == e.cpus);
    CHECK(m.count(DeviceKind::NvSwitch) == e.nvswitches);
    CHECK(m.count(DeviceKind::Nic) == e.nics);
    for (Vertex gpu : of_kind(m.graph, DeviceKind::Gpu)) {
      CHECK(m.graph[gpu].sm == e.sm);
      CHECK(m.labels.at(static_cast<std::size_t>(m.graph[gpu].model)) == e.gpu_label);
      CHECK(bw_of(m.graph, gpu, LinkKind::NvLink) == doctest::Approx(e.nvlink_per_gpu));
    }
    for (Vertex nic : of_kind(m.graph, DeviceKind::Nic)) CHECK(m.graph[nic].port_gbps == doctest::Approx(e.nic_gbps));
    const Topology t = Topology::build(m, 2, FabricSpec{});
    CHECK(t.num_ranks() == static_cast<int>(2 * e.gpus));
    const std::vector<Finding> findings = diagnose(t);
    for (const Finding& f : findings) CHECK_FALSE(f.message.empty());
  }
}

TEST_CASE("node presets: the wiring each source gives") {
  SUBCASE("gb200-nvl72: 18 trays in one NVLink domain, each GPU on a Grace by C2C, one link to each of 18 chips") {
    const NodeModel m = make_preset_node("gb200-nvl72");
    for (Vertex gpu : of_kind(m.graph, DeviceKind::Gpu)) {
      CHECK(links_of(m.graph, gpu, LinkKind::NvLink) == 18);
      CHECK(links_of(m.graph, gpu, LinkKind::C2C) == 1);
      CHECK(bw_of(m.graph, gpu, LinkKind::C2C) == doctest::Approx(225.0));
      CHECK(links_of(m.graph, gpu, LinkKind::Pcie) == 0);
    }
    for (Vertex nvs : of_kind(m.graph, DeviceKind::NvSwitch)) CHECK(links_of(m.graph, nvs, LinkKind::NvLink) == 72);
    CHECK(m.cores == 18 * 144);
    CHECK(m.cpu_vendor == "arm");
    // NUMA nodes run over the trays: tray t's sockets are 2t and 2t + 1.
    const auto gpus = of_kind(m.graph, DeviceKind::Gpu);
    CHECK(m.graph[gpus[0]].numa == 0);
    CHECK(m.graph[gpus[2]].numa == 1);
    CHECK(m.graph[gpus[71]].numa == 35);
    REQUIRE_FALSE(m.notes.empty());
    CHECK(m.notes.back().find("one NVLink domain of 18 trays x 4 GPUs") != std::string::npos);
    const Topology two_racks = Topology::build(m, 2, FabricSpec{});
    CHECK(two_racks.num_ranks() == 144);
  }
  SUBCASE("h100-pcie-nvlink: bridges join GPUs in pairs, 12 links each") {
    const NodeModel m = make_preset_node("h100-pcie-nvlink");
    const auto gpus = of_kind(m.graph, DeviceKind::Gpu);
    auto [e, ok] = boost::edge(gpus[0], gpus[1], m.graph);
    REQUIRE(ok);
    CHECK(m.graph[e].lanes == 12);
    CHECK(m.graph[e].bw_gbps == doctest::Approx(300.0));
    CHECK_FALSE(boost::edge(gpus[1], gpus[2], m.graph).second);
  }
  SUBCASE("a100-4gpu-2nic: all-to-all NVLink, each NIC next to one GPU (Polaris' affinity table)") {
    const NodeModel m = make_preset_node("a100-4gpu-2nic");
    CHECK(boost::num_edges(m.graph) == 6 /*cpu pairs*/ + 4 + 2 /*pcie*/ + 6 /*nvlink pairs*/);
    const auto gpus = of_kind(m.graph, DeviceKind::Gpu);
    const auto nics = of_kind(m.graph, DeviceKind::Nic);
    CHECK(m.graph[gpus[0]].numa == 3);
    CHECK(m.graph[gpus[3]].numa == 0);
    CHECK(m.graph[nics[0]].numa == m.graph[gpus[1]].numa);
    CHECK(m.graph[nics[1]].numa == m.graph[gpus[3]].numa);
    const std::vector<Finding> f = diagnose(Topology::build(m, 1, FabricSpec{}));
    bool nic_numa = false;
    for (const Finding& x : f) nic_numa = nic_numa || x.check == "nic-numa";
    CHECK(nic_numa);  // GPU0 and GPU2 reach a NIC on another NUMA node, as on Polaris
  }
  SUBCASE("l40s-pcie: Gen4 x16 links, no NVLink") {
    const NodeModel m = make_preset_node("l40s-pcie");
    for (Vertex gpu : of_kind(m.graph, DeviceKind::Gpu)) {
      CHECK(bw_of(m.graph, gpu, LinkKind::Pcie) == doctest::Approx(16 * 1.969));
      CHECK(links_of(m.graph, gpu, LinkKind::NvLink) == 0);
    }
  }
}

TEST_CASE("node spec: a node file, GPU index lists, nested switches, sm from the model name") {
  const NodeSpec spec = load_node_spec(source_path("topologies/testdata/node-2socket-bridged.yaml"));
  CHECK(spec.sm == 86);
  const NodeModel m = build_node(spec);
  CHECK(m.name == "two-socket-bridged");
  CHECK(m.count(DeviceKind::PcieSwitch) == 3);
  CHECK(m.count(DeviceKind::Nic) == 4);
  const auto gpus = of_kind(m.graph, DeviceKind::Gpu);
  // NVLink per link from sm86: 14.0625 GB/s (A40 bridge figure), 4 links.
  auto [e, ok] = boost::edge(gpus[2], gpus[3], m.graph);
  REQUIRE(ok);
  CHECK(m.graph[e].bw_gbps == doctest::Approx(4 * 112.5 / 8.0));
  // The second nested switch is x8.
  CHECK(bw_of(m.graph, gpus[3], LinkKind::Pcie) == doctest::Approx(8 * 1.969));
  CHECK(bw_of(m.graph, gpus[0], LinkKind::Pcie) == doctest::Approx(16 * 1.969));
}

TEST_CASE("load: a node file, a node file under a cluster spec, an inline node") {
  SUBCASE("--topology node.yaml") {
    const Topology t = load_topology(TopologyOptions{source_path("topologies/testdata/node-2socket-bridged.yaml")});
    CHECK(t.nodes() == 1);
    CHECK(t.num_ranks() == 4);
  }
  SUBCASE("node: FILE.yaml") {
    const Topology t = load_topology(TopologyOptions{source_path("topologies/testdata/cluster-node-file.yaml")});
    CHECK(t.nodes() == 4);
    CHECK(t.num_ranks() == 16);
    CHECK(t.fabric()->kind == FabricKind::SingleSwitch);
  }
  SUBCASE("node: {inline map}") {
    const Topology t = load_topology(TopologyOptions{source_path("topologies/testdata/cluster-inline-node.yaml")});
    CHECK(t.nodes() == 2);
    CHECK(t.num_ranks() == 8);
    CHECK(t.count(DeviceKind::NvSwitch) == 6);
    CHECK(bw_of(t.graph(), t.rank(0).gpu, LinkKind::NvLink) == doctest::Approx(18 * 25.0));
    CHECK(t.graph()[t.rank(0).gpu].sm == 90);
  }
}

TEST_CASE("load: overrides change node fields of any source") {
  SUBCASE("a skeleton XML gets its NVLink back") {
    const Topology t = load_topology(TopologyOptions{source_path("topologies/testdata/cluster-skeleton-nvlink.yaml")});
    CHECK(t.nodes() == 2);
    CHECK(t.count(DeviceKind::NvSwitch) == 8);
    for (const RankInfo& r : t.ranks()) {
      CHECK(bw_of(t.graph(), r.gpu, LinkKind::NvLink) == doctest::Approx(450.0));
      CHECK(t.graph()[r.gpu].sm == 90);
    }
    bool noted = false;
    for (const std::string& n : t.notes()) noted = noted || n.find("4 NVLink switches added") != std::string::npos;
    CHECK(noted);
  }
  SUBCASE("gpu and nvlink_gbps on a preset") {
    const ClusterSpec spec =
        parse_cluster_spec("node: dgx-h100\noverrides: {gpu: H200-SXM, nvlink_gbps: 300}\n", "spec.yaml", ".");
    CHECK(spec.gpu_model == std::optional<std::string>("H200-SXM"));
    CHECK(spec.nvlink_gbps == std::optional<double>(300.0));
  }
  SUBCASE("nic speed in Gb/s and model on a preset") {
    const ClusterSpec spec = parse_cluster_spec(
        "node: dgx-a100\noverrides: {nic: {speed: 400 Gb/s, model: ConnectX-7-NDR}, p2p: false}\n", "spec.yaml", ".");
    CHECK(spec.nic_gbps == std::optional<double>(50.0));
    CHECK(spec.nic_model == std::optional<std::string>("ConnectX-7-NDR"));
    CHECK(spec.p2p == std::optional<bool>(false));
    CHECK_THROWS_WITH_AS(
        parse_cluster_spec("node: dgx-a100\noverrides: {nic_gbps: 50, nic: {speed: 400 Gb/s}}\n", "spec.yaml", "."),
        doctest::Contains("spec.yaml:2: 'nic.speed' and 'nic_gbps' both set the NIC rate"), InputError);
  }
  SUBCASE("p2p off removes NVLink; nvlink_gbps scales it") {
    NodeModel m = make_preset_node("dgx-h100");
    set_nvlink_gbps(m, 300.0);
    for (Vertex gpu : of_kind(m.graph, DeviceKind::Gpu))
      CHECK(bw_of(m.graph, gpu, LinkKind::NvLink) == doctest::Approx(300.0));
    NodeModel bridged = make_preset_node("h100-pcie-nvlink");
    set_nvlink_gbps(bridged, 150.0);
    for (Vertex gpu : of_kind(bridged.graph, DeviceKind::Gpu))
      CHECK(bw_of(bridged.graph, gpu, LinkKind::NvLink) == doctest::Approx(150.0));
    disable_p2p(m);
    CHECK(m.count(DeviceKind::NvSwitch) == 0);
    CHECK(m.count(DeviceKind::Gpu) == 8);
    for (Vertex gpu : of_kind(m.graph, DeviceKind::Gpu)) CHECK(links_of(m.graph, gpu, LinkKind::NvLink) == 0);
    set_gpu_model(m, std::string("B200"), std::nullopt);
    for (Vertex gpu : of_kind(m.graph, DeviceKind::Gpu)) CHECK(m.graph[gpu].sm == 100);
    CHECK_THROWS_WITH_AS(set_nvlink_gbps(m, 100.0), doctest::Contains("has no NVLink"), InputError);
  }
  SUBCASE("p2p: false in a node description") {
    const NodeModel m =
        build_node(parse_node_spec("gpu: {model: H100-SXM5, count: 2}\npcie: {root_ports: [{socket: 0, gpus: 2}]}\n"
                                   "nvlink: {generation: 4, mesh: 18}\np2p: false\n",
                                   "n.yaml"));
    CHECK(m.count(DeviceKind::Gpu) == 2);
    CHECK(boost::num_edges(m.graph) == 2);
  }
}

namespace {

void check_node_error(const std::string& yaml, const std::string& expected) {
  CAPTURE(yaml);
  try {
    (void)build_node(parse_node_spec(yaml, "node.yaml"));
    FAIL("no error for: " << yaml);
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK_MESSAGE(what.find(expected) != std::string::npos, what);
    CHECK(what.find('\n') == std::string::npos);  // one line
  }
}

constexpr const char* kPcie = "pcie: {root_ports: [{socket: 0, gpus: 2}]}\n";

}  // namespace

TEST_CASE("node spec: bad descriptions give one line with file:line") {
  const std::string gpu2 = "gpu: {model: H100-SXM5, count: 2}\n";
  check_node_error("gpu: {count: 2}\n" + std::string(kPcie) + "gpus: 4\n",
                   "node.yaml:3: unknown key 'gpus' in the node description: expected one of name, description, gpu");
  check_node_error("gpu: {count: two}\n" + std::string(kPcie), "node.yaml:1: 'count' must be an integer from 1 to");
  check_node_error("gpu: {count: 2, colour: red}\n" + std::string(kPcie),
                   "node.yaml:1: unknown key 'colour' in gpu: expected one of model, sm, count");
  check_node_error(gpu2 + kPcie + "nvlink:\n  bridges:\n    - {gpus: [0, 5], links: 4}\n",
                   "node.yaml:5: bridge GPU index 5 is outside 0..1 (gpu.count 2)");
  check_node_error(gpu2 + "pcie:\n  switches:\n    - {socket: 0, gpus: [0, 7]}\n",
                   "node.yaml:4: GPU index 7 is outside 0..1");
  check_node_error(gpu2 + "pcie:\n  switches:\n    - {socket: 0, gpus: [1, 0]}\n",
                   "node.yaml:4: lists GPU 1 where the walk places GPU 0");
  check_node_error(gpu2 + "pcie:\n  switches:\n    - {socket: 1, gpus: 2, nics: 1}\nnic: {speed: 200 Gb/s}\n",
                   "node.yaml:4: 'socket: 1' names a socket the node does not have (cpu.sockets 1: 0..0)");
  check_node_error(gpu2 + "pcie:\n  switches:\n    - {gpus: 2}\n", "node.yaml:4: a PCIe switch needs 'socket: N'");
  check_node_error(gpu2 + kPcie + "nic: {speed: -400 Gb/s}\n",
                   "node.yaml:3: 'speed: -400 Gb/s' must be a positive rate");
  check_node_error(gpu2 + kPcie + "nic: {speed: 400}\n", "node.yaml:3: 'speed: 400' must be a rate in Gb/s");
  check_node_error(gpu2 + kPcie + "cpu: {inter_socket_gbps: -3}\n",
                   "node.yaml:3: 'inter_socket_gbps' must be a positive number, got -3");
  check_node_error("gpu: {model: B200, count: 4}\n" + std::string("pcie: {root_ports: [{socket: 0, gpus: 4}]}\n") +
                       "nvlink: {switches: [1, 1]}\nnvlink_domain: 70\n",
                   "node.yaml:4: 'nvlink_domain: 70' is not a multiple of the tray's 4 GPUs");
  check_node_error(gpu2 + kPcie + "nvlink: {mesh: 2}\nnvlink_domain: 4\n",
                   "node.yaml:4: 'nvlink_domain' needs NVLink switches");
  check_node_error(gpu2 + "pcie: {root_ports: [{socket: 0, gpus: 3}]}\n",
                   "node.yaml:1: gpu.count is 2 but the PCIe tree (pcie.switches, pcie.root_ports) places 3 GPUs");
  check_node_error(gpu2 + "pcie: {root_ports: [{socket: 0, gpus: 2, nics: 1}]}\n",
                   "the PCIe tree places 1 NICs but 'nic.speed' is not given");
  check_node_error(gpu2 + kPcie + "nvlink: {mesh: 2, switches: [1]}\n", "node.yaml:3: 'nvlink' needs exactly one of");
  check_node_error(gpu2 + kPcie + "nvlink: {generation: 7, mesh: 2}\n",
                   "node.yaml:3: 'generation' must be an integer from 1 to 5, got 7");
  check_node_error(gpu2 + kPcie + "nvlink: {generation: 4, links_per_gpu: 18, switches: [5, 4]}\n",
                   "node.yaml:3: 'links_per_gpu: 18' but the switches give a GPU 9 links");
  check_node_error(gpu2 + "pcie: {generation: 9, root_ports: [{socket: 0, gpus: 2}]}\n",
                   "node.yaml:2: 'generation' must be an integer from 1 to 6, got 9");
  check_node_error(gpu2 + "pcie: {root_ports: [{socket: 0, gpus: 2, attach: nvlink}]}\n",
                   "node.yaml:2: 'attach: nvlink' must be pcie or c2c");
  check_node_error(gpu2 + "pcie: {root_ports: [{socket: 0, gpus: 2, attach: c2c}]}\n",
                   "GPUs attach by c2c but 'c2c_gbps' is not given");
  check_node_error(gpu2 + kPcie + "p2p: maybe\n", "node.yaml:3: 'p2p' must be true or false");
  check_node_error("gpu: {count: 2}\n", "missing 'pcie'");
  check_node_error(kPcie, "missing 'gpu'");
  check_node_error("gpu: [1\n", "node.yaml:");
}

TEST_CASE("load: bad node fields in a cluster spec name the spec's file and line") {
  auto check = [](const std::string& yaml, const std::string& expected) {
    CAPTURE(yaml);
    CHECK_THROWS_WITH_AS(parse_cluster_spec(yaml, "spec.yaml", "."), doctest::Contains(expected.c_str()), InputError);
  };
  check("nodes: 2\nnode:\n  gpu: {count: 0}\n", "spec.yaml:3: 'count' must be an integer from 1 to");
  check("node: dgx-h100\noverrides: {gpu: {model: H200, cores: 3}}\n",
        "spec.yaml:2: unknown key 'cores' in overrides.gpu: expected one of model, sm");
  check("node: dgx-h100\noverrides: {nvlink_gbps: -450}\n", "spec.yaml:2: 'nvlink_gbps' must be a positive number");
  check("node: dgx-h100\noverrides: {nvlink: {generation: 4}}\n", "'overrides.nvlink' needs 'switches: [...]'");
  check(
      "node: dgx-h100\noverrides: {colour: red}\n",
      "unknown key 'colour' in overrides: expected one of nic_gbps, nics_per_gpu, nic, gpu, nvlink_gbps, nvlink, p2p");
  check("node: dgx-z9\n", "'node: dgx-z9' is neither a preset (dgx-a100, dgx-h100, hgx-h200");
  // An NVLink switch override on a node that has NVLink already.
  NodeModel h100 = make_preset_node("dgx-h100");
  CHECK_THROWS_WITH_AS(add_nvswitches(h100, {1}, 25.0), doctest::Contains("already has NVLink"), InputError);
}

TEST_CASE("node spec: a node file is told from a cluster spec by its keys") {
  CHECK(is_node_spec_text("gpu: {count: 1}\n"));
  CHECK(is_node_spec_text("pcie: {}\n"));  // a node file missing 'gpu' still reads as one (and says so)
  CHECK_FALSE(is_node_spec_text("node: dgx-h100\nnodes: 2\n"));
  CHECK_FALSE(is_node_spec_text("node:\n  gpu: {count: 1}\n"));
  CHECK_FALSE(is_node_spec_text("- a\n"));
  CHECK_FALSE(is_node_spec_text("gpu: [1\n"));
}
