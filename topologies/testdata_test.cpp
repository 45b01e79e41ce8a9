// Every node file in topologies/testdata (NCCL XML, hwloc XML, nvidia-smi topo -m) loads through
// load_topology, as `topo show` and `sim` load it, and diagnose runs on it.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "common/errors.hpp"
#include "topologies/diagnostics.hpp"
#include "topologies/hwloc_xml.hpp"
#include "topologies/load.hpp"
#include "topologies/node_file.hpp"
#include "topologies/smi_topo.hpp"

namespace topocoll::topo {
namespace {

std::string testdata(const std::string& name) {
  return std::string(TOPOCOLL_SOURCE_DIR) + "/topologies/testdata/" + name;
}

struct Expect {
  int nodes, gpus, nics, nvlinks;  // nvlinks: NVLink links in the whole topology
};

// One row per file: a new file in testdata without a row fails the test below.
const std::map<std::string, Expect> kExpected = {
    {"ibm-h100x8-dump.xml", {1, 8, 8, 32}},
    {"azure-ndv5-h100-skeleton.xml", {1, 8, 8, 0}},
    {"aws-p4d-a100-skeleton.xml", {1, 8, 4, 0}},
    {"aws-p5-h100-no-nvlink.xml", {1, 8, 32, 0}},
    {"aws-g5-a10g-classless.xml", {1, 0, 0, 0}},
    {"azure-ncv4-a100-self-nvlink.xml", {1, 4, 1, 0}},
    {"handwritten-dgx1v-hybrid-cube-mesh.xml", {1, 8, 4, 16}},
    {"handwritten-amd-nested-dualport.xml", {1, 3, 2, 1}},
    {"handwritten-grace-no-gpu.xml", {1, 0, 3, 0}},
    {"handwritten-two-hosts.xml", {2, 4, 2, 2}},
    {"handwritten-hwloc-2socket-8gpu.xml", {1, 8, 4, 0}},
    {"handwritten-smi-h100x8-nv18.txt", {1, 8, 8, 8}},
    {"smi-5gpu-phb-node-sys.txt", {1, 5, 0, 0}},
    {"smi-2gpu-phb.txt", {1, 2, 0, 0}},
};

bool any_has(const std::vector<std::string>& notes, const std::string& fragment) {
  return std::any_of(notes.begin(), notes.end(),
                     [&](const std::string& n) { return n.find(fragment) != std::string::npos; });
}

TEST_CASE("testdata: every node file loads, with its GPUs, NICs and NVLinks, and diagnose runs on it") {
  std::set<std::string> seen;
  for (const auto& entry : std::filesystem::directory_iterator(testdata(""))) {
    const std::string name = entry.path().filename().string();
    if (!is_node_file_name(name)) continue;
    seen.insert(name);
    CAPTURE(name);
    const auto want = kExpected.find(name);
    REQUIRE_MESSAGE(want != kExpected.end(), "no expected counts for ", name);
    const Topology t = load_topology(TopologyOptions{entry.path().string()});
    CHECK(t.nodes() == want->second.nodes);
    CHECK(static_cast<int>(t.count(DeviceKind::Gpu)) == want->second.gpus);
    CHECK(static_cast<int>(t.count(DeviceKind::Nic)) == want->second.nics);
    CHECK(static_cast<int>(t.count(LinkKind::NvLink)) == want->second.nvlinks);
    const std::vector<Finding> findings = diagnose(t);
    // Every importer note is a finding; a file with GPUs and no NVLink says so.
    CHECK(findings.size() >= t.notes().size());
    if (want->second.gpus > 1 && want->second.nvlinks == 0 && name != "azure-ncv4-a100-self-nvlink.xml")
      CHECK(any_has(t.notes(), "NVLink unknown"));
  }
  CHECK(seen.size() == kExpected.size());
}

TEST_CASE("testdata: a two-host dump is two nodes; more nodes than hosts cycle through them, said in a note") {
  const Topology two = load_topology(TopologyOptions{testdata("handwritten-two-hosts.xml")});
  CHECK(two.nodes() == 2);
  CHECK(two.node_model_name(1).ends_with("#host1"));
  CHECK(two.fabric().has_value());
  TopologyOptions four{testdata("handwritten-two-hosts.xml")};
  four.nodes = 4;
  const Topology t = load_topology(four);
  CHECK(t.nodes() == 4);
  CHECK(t.num_ranks() == 8);
  CHECK(t.node_model_name(2) == t.node_model_name(0));
  CHECK(any_has(t.notes(), "4 nodes asked of a file of 2 hosts: node i is host i mod 2 (the hosts repeat)"));
}

TEST_CASE("testdata: the nvidia-smi matrix of an 8 x H100 box") {
  const Topology t = load_topology(TopologyOptions{testdata("handwritten-smi-h100x8-nv18.txt")});
  CHECK(t.count(DeviceKind::NvSwitch) == 1);
  CHECK(t.count(DeviceKind::Cpu) == 2);
  // PXB between each GPU and its NIC: an upper switch per pair, a lower switch per device.
  CHECK(t.count(DeviceKind::PcieSwitch) == 24);
  CHECK(any_has(t.notes(), "every GPU pair NV18: one NVSwitch, 18 links per GPU"));
  CHECK(any_has(t.notes(), "NIC0=mlx5_0"));
  CHECK(any_has(t.notes(), "nic_gbps"));
  for (const RankInfo& r : t.ranks()) {
    CHECK(t.graph()[r.gpu].numa == (r.local < 4 ? 0 : 1));
    CHECK(r.rail == r.local);
  }
  // The matrix's own diagnosis: no GPU's NIC across sockets, none shared.
  const auto findings = diagnose(t);
  for (const Finding& f : findings) CHECK_MESSAGE(f.severity != Severity::Warning, f.message);
}

TEST_CASE("testdata: a cluster spec's node may be an nvidia-smi matrix (node: FILE.txt)") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "topocoll-testdata-test";
  std::filesystem::create_directories(dir);
  const std::filesystem::path spec = dir / "smi-cluster.yaml";
  {
    std::ofstream out(spec);
    out << "node: " << testdata("handwritten-smi-h100x8-nv18.txt") << "\nnodes: 4\noverrides: {nic_gbps: 50}\n";
  }
  const Topology t = load_topology(TopologyOptions{spec.string()});
  CHECK(t.nodes() == 4);
  CHECK(t.num_ranks() == 32);
  CHECK(t.graph()[t.rank(9).nic].port_gbps == doctest::Approx(50.0));
  std::filesystem::remove_all(dir);
}

TEST_CASE("hwloc_xml: lstopo's XML of a 2-socket 8-GPU box; malformed XML names file:line") {
  const NodeModel m = load_hwloc_xml(testdata("handwritten-hwloc-2socket-8gpu.xml"));
  CHECK(m.count(DeviceKind::Cpu) == 2);
  CHECK(m.count(DeviceKind::Gpu) == 8);
  CHECK(m.count(DeviceKind::Nic) == 4);
  CHECK(m.count(DeviceKind::PcieSwitch) >= 4);
  CHECK(m.cpu_vendor == "intel");
  CHECK(any_has(m.notes, "NVLink unknown: 8 GPUs"));
  CHECK(any_has(m.notes, "nic_gbps"));
  CHECK_FALSE(any_has(m.notes, "this machine"));
  CHECK_THROWS_WITH_AS(
      parse_hwloc_xml("<topology version=\"2.0\">\n  <object type=\"Machine\">\n</topology>\n", "bad.xml"),
      doctest::Contains("bad.xml:3: not well-formed XML"), InputError);
  // The content, not the extension, picks the importer.
  CHECK(node_file_format("<?xml version=\"1.0\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n<topology>", "x.xml") ==
        NodeFileFormat::HwlocXml);
  CHECK(node_file_format("<system version=\"1\"/>", "x.txt") == NodeFileFormat::NcclXml);
  CHECK(node_file_format("\tGPU0\tGPU1\n", "x.xml") == NodeFileFormat::SmiTopo);
  CHECK_THROWS_WITH_AS(node_file_format("hello", "x.txt"), doctest::Contains("x.txt:1: neither XML nor a matrix"),
                       InputError);
}

// A matrix from `lines`, the header first.
std::string matrix(const std::string& rows) {
  return "\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n" + rows;
}

TEST_CASE("smi_topo: PIX, PHB and direct NVLinks") {
  const NodeModel m = parse_smi_topo(matrix("GPU0\t X \tNV4\tPIX\t0-7\t0\t\tN/A\n"
                                            "GPU1\tNV4\t X \tPHB\t0-7\t0\t\tN/A\n"
                                            "NIC0\tPIX\tPHB\t X \n"),
                                     "pair.txt");
  CHECK(m.count(DeviceKind::Gpu) == 2);
  CHECK(m.count(DeviceKind::Cpu) == 1);
  CHECK(m.count(DeviceKind::NvSwitch) == 0);
  CHECK(m.count(DeviceKind::PcieSwitch) == 2);  // GPU0 and NIC0 under one switch (PIX)
  std::size_t nvlinks = 0;
  for (auto e : boost::make_iterator_range(boost::edges(m.graph)))
    if (m.graph[e].kind == LinkKind::NvLink) {
      ++nvlinks;
      CHECK(m.graph[e].lanes == 4);
    }
  CHECK(nvlinks == 1);
  CHECK(looks_like_smi_topo(matrix("")));
  CHECK_FALSE(looks_like_smi_topo("<system version=\"1\">"));
}

TEST_CASE("smi_topo: older drivers name NIC columns by device (mlx5_0) and pastes may omit the NIC rows") {
  const NodeModel m = parse_smi_topo(
      "        GPU0    GPU1    mlx5_0  mlx5_1  CPU Affinity\n"
      "GPU0     X      NV2     PIX     SYS     0-23,48-71\n"
      "GPU1    NV2      X      SYS     PIX     24-47,72-95\n",
      "legacy.txt");
  CHECK(m.count(DeviceKind::Gpu) == 2);
  CHECK(m.count(DeviceKind::Nic) == 2);
  CHECK(m.count(DeviceKind::Cpu) == 2);  // SYS between the two halves: two NUMA nodes
  CHECK(any_has(m.notes, "2 NIC row(s) missing: their relations read from the GPU rows"));
  CHECK(any_has(m.notes, "mlx5_0"));
}

TEST_CASE("smi_topo: a malformed matrix is one line naming file:line") {
  CHECK_THROWS_WITH_AS(parse_smi_topo(matrix("GPU0\t X \tNV4\n"), "ragged.txt"),
                       doctest::Contains("ragged.txt:2: row GPU0 with 2 cells: expected 3 cells"), InputError);
  CHECK_THROWS_WITH_AS(parse_smi_topo(matrix("GPU0\t X \tNV4\tPIXX\t0-7\t0\n"), "cell.txt"),
                       doctest::Contains("cell.txt:2: cell 'PIXX' (GPU0 to NIC0): expected X, NV#"), InputError);
  CHECK_THROWS_WITH_AS(parse_smi_topo(matrix("GPU0\t X \tNV4\tPIX\t0-7\t0\n"
                                             "GPU1\tNV2\t X \tPHB\t0-7\t0\n"),
                                      "asym.txt"),
                       doctest::Contains("asym.txt:3: GPU1 to GPU0 differs from GPU0 to GPU1 (line 2): expected a "
                                         "symmetric matrix"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_smi_topo(matrix("GPU0\t X \tNV4\tPIX\t0-7\t0\n"), "short.txt"),
                       doctest::Contains("short.txt:1: no row for GPU1"), InputError);
  CHECK_THROWS_WITH_AS(parse_smi_topo("hello\n", "junk.txt"),
                       doctest::Contains("junk.txt:1: 'hello': expected the header line"), InputError);
}

}  // namespace
}  // namespace topocoll::topo
