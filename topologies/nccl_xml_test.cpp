#include "topologies/nccl_xml.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "topologies/constants.hpp"

namespace topocoll::topo {
namespace {

namespace c = constants;

std::string testdata(const std::string& name) {
  return std::string(TOPOCOLL_SOURCE_DIR) + "/topologies/testdata/" + name;
}

std::size_t count_links(const NodeModel& m, LinkKind kind) {
  std::size_t n = 0;
  for (auto e : boost::make_iterator_range(boost::edges(m.graph)))
    if (m.graph[e].kind == kind) ++n;
  return n;
}

// The vertex of the `local`-th device of a kind.
Vertex device(const NodeModel& m, DeviceKind kind, int local) {
  for (auto v : boost::make_iterator_range(boost::vertices(m.graph)))
    if (m.graph[v].kind == kind && m.graph[v].local_index == local) return v;
  FAIL("no ", to_string(kind), local);
  return 0;
}

// The links of one kind at a vertex, in edge order.
std::vector<Link> links_at(const NodeModel& m, Vertex v, LinkKind kind) {
  std::vector<Link> out;
  for (auto e : boost::make_iterator_range(boost::out_edges(v, m.graph)))
    if (m.graph[e].kind == kind) out.push_back(m.graph[e]);
  return out;
}

// The one link between two vertices.
Link link_between(const NodeModel& m, Vertex a, Vertex b) {
  auto [e, found] = boost::edge(a, b, m.graph);
  REQUIRE(found);
  return m.graph[e];
}

// The PCIe link from a device up to its parent (the device's only PCIe link when it is a leaf).
Link uplink(const NodeModel& m, Vertex v) {
  const std::vector<Link> pcie = links_at(m, v, LinkKind::Pcie);
  REQUIRE(pcie.size() == 1);
  return pcie.front();
}

bool has_note(const NodeModel& m, const std::string& fragment) {
  return std::any_of(m.notes.begin(), m.notes.end(),
                     [&](const std::string& n) { return n.find(fragment) != std::string::npos; });
}

struct Counts {
  std::size_t gpus, cpus, pcie_switches, nvswitches, nics;
  std::size_t pcie, nvlink, c2c, inter_socket;
};

void check_counts(const NodeModel& m, const Counts& want) {
  CHECK(m.count(DeviceKind::Gpu) == want.gpus);
  CHECK(m.count(DeviceKind::Cpu) == want.cpus);
  CHECK(m.count(DeviceKind::PcieSwitch) == want.pcie_switches);
  CHECK(m.count(DeviceKind::NvSwitch) == want.nvswitches);
  CHECK(m.count(DeviceKind::Nic) == want.nics);
  CHECK(count_links(m, LinkKind::Pcie) == want.pcie);
  CHECK(count_links(m, LinkKind::NvLink) == want.nvlink);
  CHECK(count_links(m, LinkKind::C2C) == want.c2c);
  CHECK(count_links(m, LinkKind::InterSocket) == want.inter_socket);
  CHECK(count_links(m, LinkKind::Network) == 0);
}

const double kGen3x16 = 16 * 0.985;
const double kGen4x16 = 16 * 1.969;
const double kGen5x16 = 16 * 3.938;

// ---------------------------------------------------------------------------------------------
// Real files

TEST_CASE("nccl_xml: IBM 8x H100 full dump") {
  const NodeModel m = load_nccl_xml(testdata("ibm-h100x8-dump.xml"));
  check_counts(m, {.gpus = 8,
                   .cpus = 2,
                   .pcie_switches = 8,
                   .nvswitches = 4,
                   .nics = 8,
                   .pcie = 24,
                   .nvlink = 32,
                   .c2c = 0,
                   .inter_socket = 1});
  CHECK(m.cpu_vendor == "intel");
  CHECK(m.name == testdata("ibm-h100x8-dump.xml"));

  // GPU0: 5, 5, 4, 4 NVLink4 links to the NVSwitches at f5, f4, f3, f6 (nvswitch0..3), 25 GB/s each.
  const Vertex gpu0 = device(m, DeviceKind::Gpu, 0);
  CHECK(m.graph[gpu0].sm == 90);
  CHECK(m.labels.at(static_cast<std::size_t>(m.graph[gpu0].model)) == "sm90");
  const int want_lanes[] = {5, 5, 4, 4};
  for (int s = 0; s < 4; ++s) {
    const Link l = link_between(m, gpu0, device(m, DeviceKind::NvSwitch, s));
    CHECK(l.kind == LinkKind::NvLink);
    CHECK(l.lanes == want_lanes[s]);
    CHECK(l.bw_gbps == doctest::Approx(want_lanes[s] * 25.0));
    CHECK(l.latency_us == doctest::Approx(c::kNvlinkLatencyUs));
  }
  // Every NVSwitch reaches all 8 GPUs.
  for (int s = 0; s < 4; ++s) CHECK(links_at(m, device(m, DeviceKind::NvSwitch, s), LinkKind::NvLink).size() == 8);

  // GPU PCIe: Gen5 with link_width="0", taken as x16; the virtual switch above it is x1 2.5 GT/s.
  const Link gpu_pcie = uplink(m, gpu0);
  CHECK(gpu_pcie.bw_gbps == doctest::Approx(kGen5x16));
  CHECK(gpu_pcie.lanes == 16);
  CHECK(gpu_pcie.latency_us == doctest::Approx(c::kPcieLatencyUs));
  const Vertex sw0 = device(m, DeviceKind::PcieSwitch, 0);
  CHECK(link_between(m, sw0, device(m, DeviceKind::Cpu, 0)).bw_gbps == doctest::Approx(0.25));
  CHECK(link_between(m, sw0, gpu0).lanes == 16);

  // NICs: <net speed="200000"> = 200 Gb/s = 25 GB/s, behind the same switch as their GPU.
  for (int n = 0; n < 8; ++n) CHECK(m.graph[device(m, DeviceKind::Nic, n)].port_gbps == doctest::Approx(25.0));
  CHECK(boost::edge(sw0, device(m, DeviceKind::Nic, 0), m.graph).second);

  // Sockets: Sapphire Rapids (modelid 143); GPUs 0-3 on NUMA 0, 4-7 on NUMA 1.
  const Link upi = link_between(m, device(m, DeviceKind::Cpu, 0), device(m, DeviceKind::Cpu, 1));
  CHECK(upi.bw_gbps == doctest::Approx(c::kInterSocketIntelSapphireRapidsGbps));
  CHECK(m.graph[device(m, DeviceKind::Gpu, 3)].numa == 0);
  CHECK(m.graph[device(m, DeviceKind::Gpu, 4)].numa == 1);
  CHECK(has_note(m, "16 PCIe link(s) with link_width 0"));
  CHECK_FALSE(has_note(m, "describes no GPU"));
}

TEST_CASE("nccl_xml: AWS p4d.24xlarge skeleton") {
  const NodeModel m = load_nccl_xml(testdata("aws-p4d-a100-skeleton.xml"));
  check_counts(m, {.gpus = 8,
                   .cpus = 2,
                   .pcie_switches = 4,
                   .nvswitches = 0,
                   .nics = 4,
                   .pcie = 16,
                   .nvlink = 0,
                   .c2c = 0,
                   .inter_socket = 1});
  // Gen3 x16 everywhere; skeleton GPUs have no compute capability.
  const Vertex gpu0 = device(m, DeviceKind::Gpu, 0);
  CHECK(uplink(m, gpu0).bw_gbps == doctest::Approx(kGen3x16));
  CHECK(uplink(m, gpu0).lanes == 16);
  CHECK(m.graph[gpu0].sm == 0);
  CHECK(m.graph[gpu0].model == -1);
  // EFA NICs (class 0x020000) with no <net>: port rate assumed to be the PCIe link.
  CHECK(m.graph[device(m, DeviceKind::Nic, 3)].port_gbps == doctest::Approx(kGen3x16));
  CHECK(has_note(m, "4 NIC port(s) with no speed"));
  CHECK(has_note(m, "nic_gbps"));
  CHECK(has_note(m, "8 GPU(s) known only by PCI class"));
  // Skylake-SP (modelid 85): NCCL's Skylake UPI figure.
  CHECK(link_between(m, device(m, DeviceKind::Cpu, 0), device(m, DeviceKind::Cpu, 1)).bw_gbps ==
        doctest::Approx(c::kInterSocketIntelSkylakeGbps));
  // Two GPUs and a NIC behind each switch; two switches per socket.
  CHECK(links_at(m, device(m, DeviceKind::PcieSwitch, 1), LinkKind::Pcie).size() == 4);
  CHECK(m.graph[device(m, DeviceKind::PcieSwitch, 2)].numa == 1);
}

TEST_CASE("nccl_xml: Azure ND H100 v5 skeleton") {
  const NodeModel m = load_nccl_xml(testdata("azure-ndv5-h100-skeleton.xml"));
  check_counts(m, {.gpus = 8,
                   .cpus = 2,
                   .pcie_switches = 8,
                   .nvswitches = 0,
                   .nics = 8,
                   .pcie = 24,
                   .nvlink = 0,
                   .c2c = 0,
                   .inter_socket = 1});
  // NIC class 0x020700 (InfiniBand) is a NIC; Gen5 x16 links.
  const Vertex nic7 = device(m, DeviceKind::Nic, 7);
  CHECK(m.graph[nic7].numa == 1);
  CHECK(m.graph[nic7].port_gbps == doctest::Approx(kGen5x16));
  CHECK(uplink(m, device(m, DeviceKind::Gpu, 5)).bw_gbps == doctest::Approx(kGen5x16));
  CHECK(link_between(m, device(m, DeviceKind::Cpu, 0), device(m, DeviceKind::Cpu, 1)).bw_gbps ==
        doctest::Approx(c::kInterSocketIntelSapphireRapidsGbps));
  CHECK(has_note(m, "8 NIC port(s) with no speed"));
  CHECK(has_note(m, "nic_gbps"));
}

// ---------------------------------------------------------------------------------------------
// Hand-written files

TEST_CASE("nccl_xml: DGX-1V hybrid cube mesh (GPU-to-GPU NVLinks)") {
  const NodeModel m = load_nccl_xml(testdata("handwritten-dgx1v-hybrid-cube-mesh.xml"));
  check_counts(m, {.gpus = 8,
                   .cpus = 2,
                   .pcie_switches = 4,
                   .nvswitches = 0,
                   .nics = 4,
                   .pcie = 16,
                   .nvlink = 16,
                   .c2c = 0,
                   .inter_socket = 1});
  // Listed from both ends, added once: 16 pairs, 24 links (6 per V100).
  int lanes = 0;
  for (auto e : boost::make_iterator_range(boost::edges(m.graph)))
    if (m.graph[e].kind == LinkKind::NvLink) lanes += m.graph[e].lanes;
  CHECK(lanes == 24);
  auto gpu = [&](int i) { return device(m, DeviceKind::Gpu, i); };
  CHECK(link_between(m, gpu(0), gpu(3)).lanes == 2);
  CHECK(link_between(m, gpu(0), gpu(3)).bw_gbps == doctest::Approx(2 * c::kNvlink2GbpsPerLink));
  CHECK(link_between(m, gpu(0), gpu(1)).bw_gbps == doctest::Approx(c::kNvlink2GbpsPerLink));
  CHECK_FALSE(boost::edge(gpu(0), gpu(5), m.graph).second);
  CHECK(m.graph[device(m, DeviceKind::Nic, 2)].port_gbps == doctest::Approx(12.5));
  // Broadwell (modelid 79) takes the Skylake figure: the model has no Broadwell constant.
  CHECK(link_between(m, device(m, DeviceKind::Cpu, 0), device(m, DeviceKind::Cpu, 1)).bw_gbps ==
        doctest::Approx(c::kInterSocketIntelSkylakeGbps));
  CHECK(m.notes.empty());
}

TEST_CASE("nccl_xml: AMD box with nested switches, a dual-port NIC and an NVLink bridge") {
  const NodeModel m = load_nccl_xml(testdata("handwritten-amd-nested-dualport.xml"));
  check_counts(m, {.gpus = 3,
                   .cpus = 2,
                   .pcie_switches = 3,
                   .nvswitches = 0,
                   .nics = 2,
                   .pcie = 8,
                   .nvlink = 1,
                   .c2c = 0,
                   .inter_socket = 1});
  CHECK(m.cpu_vendor == "amd");
  CHECK(link_between(m, device(m, DeviceKind::Cpu, 0), device(m, DeviceKind::Cpu, 1)).bw_gbps ==
        doctest::Approx(c::kInterSocketAmdGbps));

  // No rank attribute: GPUs numbered by dev. dev 0 is the second in the file (x16), dev 1 the first (x8).
  const Vertex gpu0 = device(m, DeviceKind::Gpu, 0);
  const Vertex gpu1 = device(m, DeviceKind::Gpu, 1);
  CHECK(uplink(m, gpu0).lanes == 16);
  CHECK(uplink(m, gpu0).bw_gbps == doctest::Approx(kGen4x16));  // "16 GT/s", old-kernel spelling
  CHECK(uplink(m, gpu1).lanes == 8);
  CHECK(uplink(m, gpu1).bw_gbps == doctest::Approx(8 * 1.969));
  // The NVLink bridge: 4 links at the SM86 rate.
  const Link bridge = link_between(m, gpu0, gpu1);
  CHECK(bridge.kind == LinkKind::NvLink);
  CHECK(bridge.lanes == 4);
  CHECK(bridge.bw_gbps == doctest::Approx(4 * c::nvlink_gbps_per_link(86)));

  // Two levels of switches: cpu0 - sw0 - sw1 - {gpu0, gpu1}; the NIC hangs off sw0.
  const Vertex sw0 = device(m, DeviceKind::PcieSwitch, 0);
  const Vertex sw1 = device(m, DeviceKind::PcieSwitch, 1);
  CHECK(boost::edge(device(m, DeviceKind::Cpu, 0), sw0, m.graph).second);
  CHECK(boost::edge(sw0, sw1, m.graph).second);
  CHECK(boost::edge(sw1, gpu0, m.graph).second);
  CHECK_FALSE(boost::edge(sw0, gpu0, m.graph).second);

  // The dual-port NIC: one NIC per port, each with the full (width 0 -> x16) PCIe link.
  for (int n = 0; n < 2; ++n) {
    const Vertex nic = device(m, DeviceKind::Nic, n);
    CHECK(m.graph[nic].port_gbps == doctest::Approx(12.5));
    const Link l = link_between(m, sw0, nic);
    CHECK(l.lanes == 16);
    CHECK(l.bw_gbps == doctest::Approx(kGen4x16));
  }
  CHECK(has_note(m, "multi-port NIC"));
  CHECK(has_note(m, "1 PCIe link(s) with link_width 0"));

  // The host bridge with a GPU behind it is a pass-through switch; the NVMe drive is skipped.
  const Vertex gpu2 = device(m, DeviceKind::Gpu, 2);
  CHECK(m.graph[gpu2].numa == 1);
  CHECK(boost::edge(device(m, DeviceKind::PcieSwitch, 2), gpu2, m.graph).second);
  CHECK(has_note(m, "0x060000"));
  CHECK(has_note(m, "skipped: <pci busid=\"0000:45:00.0\"> class 0x010802"));
}

TEST_CASE("nccl_xml: a file with no GPU loads, with a note") {
  const NodeModel m = load_nccl_xml(testdata("handwritten-grace-no-gpu.xml"));
  check_counts(m, {.gpus = 0,
                   .cpus = 2,
                   .pcie_switches = 1,
                   .nvswitches = 0,
                   .nics = 3,
                   .pcie = 4,
                   .nvlink = 0,
                   .c2c = 0,
                   .inter_socket = 1});
  CHECK(has_note(m, "describes no GPU"));
  CHECK(m.cpu_vendor == "arm");
  CHECK(link_between(m, device(m, DeviceKind::Cpu, 0), device(m, DeviceKind::Cpu, 1)).bw_gbps ==
        doctest::Approx(c::kInterSocketArmGbps));
  // No numaid: NUMA nodes in file order.
  CHECK(m.graph[device(m, DeviceKind::Cpu, 1)].numa == 1);
  CHECK(has_note(m, "without numaid"));
  // Skeleton NICs take their PCIe link's rate; the switch with an Unknown speed is taken as Gen3.
  CHECK(m.graph[device(m, DeviceKind::Nic, 0)].port_gbps == doctest::Approx(kGen5x16));
  CHECK(m.graph[device(m, DeviceKind::Nic, 1)].port_gbps == doctest::Approx(8 * 1.969));
  CHECK(link_between(m, device(m, DeviceKind::Cpu, 1), device(m, DeviceKind::PcieSwitch, 0)).bw_gbps ==
        doctest::Approx(kGen3x16));
  CHECK(has_note(m, "Unknown link_speed"));
  CHECK(has_note(m, "nic_gbps"));
  // The <nic> without a PCI path: 400 Gb/s, linked to its CPU at the local rate.
  const Vertex nic2 = device(m, DeviceKind::Nic, 2);
  CHECK(m.graph[nic2].port_gbps == doctest::Approx(50.0));
  CHECK(link_between(m, device(m, DeviceKind::Cpu, 1), nic2).bw_gbps == doctest::Approx(c::kLocalGbps));
  CHECK(has_note(m, "without a PCI path"));
}

// ---------------------------------------------------------------------------------------------
// Small in-memory cases

TEST_CASE("nccl_xml: rank attributes set the local GPU order") {
  const std::string xml = R"(<system version="1">
  <cpu numaid="0" arch="x86_64" vendor="GenuineIntel" modelid="143">
    <pci busid="0000:01:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="8"><gpu dev="0" sm="90" rank="1"/></pci>
    <pci busid="0000:02:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16"><gpu dev="1" sm="90" rank="0"/></pci>
  </cpu>
</system>)";
  const NodeModel m = parse_nccl_xml(xml, "ranks.xml");
  CHECK(uplink(m, device(m, DeviceKind::Gpu, 0)).lanes == 16);
  CHECK(uplink(m, device(m, DeviceKind::Gpu, 1)).lanes == 8);
  // Vertex order follows local order too (Topology::build numbers ranks in vertex order).
  CHECK(device(m, DeviceKind::Gpu, 0) < device(m, DeviceKind::Gpu, 1));
}

TEST_CASE("nccl_xml: NVLink-C2C to the CPU, unknown targets and missing peers") {
  const std::string xml = R"(<system version="1">
  <cpu numaid="0" arch="arm64">
    <pci busid="0009:01:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16">
      <gpu dev="0" sm="90" rank="0">
        <nvlink target="0000:00:00.0" count="18" tclass="0x068001"/>
        <nvlink target="0000:aa:00.0" count="2"/>
        <nvlink target="0000:bb:00.0" count="3" tclass="0x030200"/>
      </gpu>
    </pci>
  </cpu>
</system>)";
  const NodeModel m = parse_nccl_xml(xml, "gh200.xml");
  check_counts(m, {.gpus = 1,
                   .cpus = 1,
                   .pcie_switches = 0,
                   .nvswitches = 1,
                   .nics = 0,
                   .pcie = 1,
                   .nvlink = 1,
                   .c2c = 1,
                   .inter_socket = 0});
  // The GPU reaches its CPU twice: over PCIe and over NVLink-C2C.
  const std::vector<Link> c2c_links = links_at(m, device(m, DeviceKind::Gpu, 0), LinkKind::C2C);
  REQUIRE(c2c_links.size() == 1);
  const Link c2c = c2c_links.front();
  CHECK(c2c.lanes == 18);
  CHECK(c2c.bw_gbps == doctest::Approx(18 * c::kNvlink4GbpsPerLink));
  // An unknown bus id with no tclass is an NVSwitch; a GPU target not in the file is dropped.
  CHECK(link_between(m, device(m, DeviceKind::Gpu, 0), device(m, DeviceKind::NvSwitch, 0)).lanes == 2);
  CHECK(has_note(m, "NVLink(s) to GPUs not in the file ignored: 0000:bb:00.0 (line 7)"));
}

// ---------------------------------------------------------------------------------------------
// Bad input: "FILE:LINE: what was found: expected what"

// A one-socket file around `pci_lines` (which start on line 3).
std::string wrap(const std::string& pci_lines) {
  return "<system version=\"1\">\n  <cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\">\n" + pci_lines +
         "\n  </cpu>\n</system>\n";
}

NodeModel parse_bad(const std::string& xml) {
  return parse_nccl_xml(xml, "bad.xml");
}

TEST_CASE("nccl_xml: unreadable files") {
  const std::string missing = testdata("no-such-file.xml");
  CHECK_THROWS_WITH_AS(load_nccl_xml(missing),
                       doctest::Contains((missing + ": no such file: expected a readable NCCL topology XML").c_str()),
                       InputError);
  const std::string dir = testdata("");
  CHECK_THROWS_WITH_AS(load_nccl_xml(dir), doctest::Contains("is a directory: expected a readable"), InputError);
}

TEST_CASE("nccl_xml: malformed XML and a wrong root") {
  CHECK_THROWS_WITH_AS(
      parse_bad("<system version=\"1\">\n  <cpu>\n</system>\n"),
      doctest::Contains("bad.xml:3: not well-formed XML (Start-end tags mismatch): expected an NCCL topology XML"),
      InputError);
  CHECK_THROWS_WITH_AS(parse_bad(""), doctest::Contains("bad.xml:1: not well-formed XML"), InputError);
  // Windows line ends count as one line each.
  CHECK_THROWS_WITH_AS(parse_bad(wrap("\r\n    <pci busid=\"0000:01:00.0\" class=\"0x0604\"/>\r\n")),
                       doctest::Contains("bad.xml:4: <pci busid=\"0000:01:00.0\"> class=\"0x0604\""), InputError);
  CHECK_THROWS_WITH_AS(parse_bad("<!-- x -->\n<topology version=\"1\"/>\n"),
                       doctest::Contains("bad.xml:2: root element <topology>: expected <system version=\"1\">"),
                       InputError);
  CHECK_THROWS_WITH_AS(
      parse_bad("\n<system>\n</system>"),
      doctest::Contains("bad.xml:2: <system> without a version attribute: expected <system version=\"1\">"),
      InputError);
  CHECK_THROWS_WITH_AS(parse_bad("<system\n  version=\"2\">\n</system>"),
                       doctest::Contains("bad.xml:2: <system version=\"2\">: expected version=\"1\""), InputError);
}

TEST_CASE("nccl_xml: bad PCI attributes") {
  CHECK_THROWS_WITH_AS(
      parse_bad(wrap(R"(    <pci busid="0000:01:00.0" class="0x060400" link_speed="fast" link_width="16"/>)")),
      doctest::Contains("bad.xml:3: <pci busid=\"0000:01:00.0\"> link_speed=\"fast\": expected a PCIe transfer rate"),
      InputError);
  CHECK_THROWS_WITH_AS(
      parse_bad(wrap(R"(    <pci busid="0000:01:00.0" class="0x060400" link_speed="12 GT/s" link_width="16"/>)")),
      doctest::Contains("bad.xml:3: <pci busid=\"0000:01:00.0\"> link_speed=\"12 GT/s\": expected a PCIe"), InputError);
  CHECK_THROWS_WITH_AS(
      parse_bad(wrap(R"(    <pci busid="0000:01:00.0" class="0x060400" link_speed="8 GT/s" link_width="-4"/>)")),
      doctest::Contains("bad.xml:3: <pci busid=\"0000:01:00.0\"> link_width=\"-4\": expected a PCIe lane count"),
      InputError);
  CHECK_THROWS_WITH_AS(
      parse_bad(wrap(R"(    <pci busid="0000:01:00.0" class="0x060400" link_speed="8 GT/s" link_width="x16"/>)")),
      doctest::Contains("bad.xml:3: <pci busid=\"0000:01:00.0\"> link_width=\"x16\": expected a PCIe lane count"),
      InputError);
  // An attribute on its own line is reported at that line.
  CHECK_THROWS_WITH_AS(
      parse_bad(
          wrap("    <pci busid=\"0000:01:00.0\"\n         class=\"GPU\" link_speed=\"8 GT/s\" link_width=\"16\"/>")),
      doctest::Contains("bad.xml:4: <pci busid=\"0000:01:00.0\"> class=\"GPU\": expected a PCI class code"),
      InputError);
  CHECK_THROWS_WITH_AS(
      parse_bad(wrap(R"(    <pci busid="0000:01:00.0" class="0x03" link_speed="8 GT/s" link_width="16"/>)")),
      doctest::Contains("bad.xml:3: <pci busid=\"0000:01:00.0\"> class=\"0x03\": expected a PCI class code"),
      InputError);
  // A <pci> without a class (NCCL reads it from sysfs) is no error: see the g5 test.
  CHECK(parse_bad(wrap(R"(    <pci busid="0000:01:00.0" link_speed="8 GT/s" link_width="16"/>)"))
            .count(DeviceKind::Gpu) == 0);
  CHECK_THROWS_WITH_AS(
      parse_bad(wrap(R"(    <pci busid="0000:01:00.0" class="0x030200" link_speed="8 GT/s" link_width="16">
      <gpu dev="0" sm="90"><c2c count="10"/></gpu></pci>)")),
      doctest::Contains("bad.xml:4: <c2c> without a bw: expected <c2c bw="), InputError);
}

// ---------------------------------------------------------------------------------------------
// What NCCL accepts and the importer once refused or misread

TEST_CASE("nccl_xml: Azure NC A100 v4 (NVLink naming the GPU's own bus id) loads as NCCL reads it") {
  const NodeModel m = load_nccl_xml(testdata("azure-ncv4-a100-self-nvlink.xml"));
  check_counts(m, {.gpus = 4,
                   .cpus = 4,
                   .pcie_switches = 0,
                   .nvswitches = 0,
                   .nics = 1,
                   .pcie = 5,
                   .nvlink = 0,
                   .c2c = 0,
                   .inter_socket = 6});
  CHECK(m.graph[device(m, DeviceKind::Gpu, 3)].numa == 3);
  CHECK(has_note(m, "<nvlink> naming the GPU's own bus id (0001:00:00.0 (line 5)"));
  CHECK(has_note(m, "a loop no transfer uses"));
  // The file has <nvlink> elements: NVLink is not "unknown", it is absent.
  CHECK_FALSE(has_note(m, "NVLink unknown"));
}

TEST_CASE("nccl_xml: AWS g5.48xlarge (<pci> without a class) loads, each inferred or left out with a note") {
  const NodeModel m = load_nccl_xml(testdata("aws-g5-a10g-classless.xml"));
  CHECK(m.count(DeviceKind::Gpu) == 0);
  CHECK(m.count(DeviceKind::Cpu) == 2);
  CHECK(has_note(m, "8 <pci> without a class and with nothing inside"));
  CHECK(has_note(m, "0000:00:16.0"));
  // Children or vendor ids tell what a class-less <pci> is.
  const NodeModel inferred = parse_nccl_xml(R"(<system version="1">
  <cpu numaid="0" arch="x86_64" vendor="AuthenticAMD">
    <pci busid="0000:00:16.0">
      <pci busid="0000:10:00.0" link_speed="16.0 GT/s PCIe" link_width="16"><gpu dev="0" sm="86"/></pci>
      <pci busid="0000:11:00.0" vendor="0x10de" link_speed="16.0 GT/s PCIe" link_width="16"/>
      <pci busid="0000:12:00.0" vendor="0x1d0f" device="0xefa1" link_speed="16.0 GT/s PCIe" link_width="8"/>
    </pci>
  </cpu>
</system>)",
                                            "g5-like.xml");
  CHECK(inferred.count(DeviceKind::Gpu) == 2);
  CHECK(inferred.count(DeviceKind::Nic) == 1);
  CHECK(inferred.count(DeviceKind::PcieSwitch) == 1);
  CHECK(has_note(inferred, "<pci busid=\"0000:00:16.0\"> (line 3) taken as a PCIe switch from <pci> children"));
  CHECK(has_note(inferred, "taken as a GPU from a <gpu> child"));
  CHECK(has_note(inferred, "taken as a GPU from vendor 0x10de (NVIDIA)"));
  CHECK(has_note(inferred, "taken as a NIC from vendor 0x1d0f device 0xefa* (Amazon EFA)"));
}

TEST_CASE("nccl_xml: AWS p5.48xlarge (<gpu> without <nvlink>) says loudly that NVLink is unknown") {
  const NodeModel m = load_nccl_xml(testdata("aws-p5-h100-no-nvlink.xml"));
  check_counts(m, {.gpus = 8,
                   .cpus = 1,
                   .pcie_switches = 8,
                   .nvswitches = 0,
                   .nics = 32,
                   .pcie = 48,
                   .nvlink = 0,
                   .c2c = 0,
                   .inter_socket = 0});
  CHECK(m.graph[device(m, DeviceKind::Gpu, 0)].sm == 90);
  CHECK(has_note(m, "NVLink unknown: 8 GPUs and no <nvlink> element"));
  CHECK(has_note(m, std::string(kNvlinkOverrideKey)));
  CHECK(has_note(m, "PCIe only"));
  // EFA ports: 100 Gb/s each from the file.
  CHECK(m.graph[device(m, DeviceKind::Nic, 31)].port_gbps == doctest::Approx(12.5));
}

TEST_CASE("nccl_xml: <c2c> is a C2C link to the GPU's CPU at bw x count, as NCCL reads it") {
  const NodeModel m = parse_nccl_xml(R"(<system version="1">
  <cpu numaid="0" arch="arm64">
    <pci busid="0009:01:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16">
      <gpu dev="0" sm="90" rank="0">
        <c2c bw="25000" count="18"/>
      </gpu>
    </pci>
  </cpu>
</system>)",
                                     "gh200-c2c.xml");
  const std::vector<Link> c2c = links_at(m, device(m, DeviceKind::Gpu, 0), LinkKind::C2C);
  REQUIRE(c2c.size() == 1);
  CHECK(c2c.front().bw_gbps == doctest::Approx(25000.0 * 18 / 1000.0));
  CHECK(c2c.front().lanes == 18);
  // One GPU: nothing to say about NVLink.
  CHECK_FALSE(has_note(m, "NVLink unknown"));
}

TEST_CASE("nccl_xml: a dump of two hosts (host_hash) is two node models") {
  const std::string host = R"(
  <cpu numaid="0" host_hash="HASH" arch="x86_64" vendor="GenuineIntel" modelid="143">
    <pci busid="0000:1b:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16">
      <gpu dev="0" sm="90" rank="RANK0"><nvlink target="0000:1c:00.0" count="4" tclass="0x030200"/></gpu>
    </pci>
    <pci busid="0000:1c:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16">
      <gpu dev="1" sm="90" rank="RANK1"><nvlink target="0000:1b:00.0" count="4" tclass="0x030200"/></gpu>
    </pci>
  </cpu>)";
  auto with = [&](std::string text, const std::string& hash, int rank) {
    text.replace(text.find("HASH"), 4, hash);
    text.replace(text.find("RANK0"), 5, std::to_string(rank));
    text.replace(text.find("RANK1"), 5, std::to_string(rank + 1));
    return text;
  };
  const std::string xml =
      "<system version=\"1\">" + with(host, "0xaaaa", 0) + with(host, "0xbbbb", 2) + "\n</system>\n";
  const std::vector<NodeModel> hosts = parse_nccl_xml_hosts(xml, "two.xml");
  REQUIRE(hosts.size() == 2);
  for (const NodeModel& m : hosts) {
    CHECK(m.count(DeviceKind::Gpu) == 2);
    CHECK(count_links(m, LinkKind::NvLink) == 1);
  }
  CHECK(hosts[1].name == "two.xml#host1");
  CHECK(has_note(hosts[1], "the file holds 2 hosts (host_hash values); this node is host 1 (host_hash 0xbbbb)"));
  // The same bus ids on both hosts are no duplicate; parse_nccl_xml gives the first host.
  CHECK(parse_nccl_xml(xml, "two.xml").count(DeviceKind::Gpu) == 2);
}

TEST_CASE("nccl_xml: max_link_width / max_link_speed give a PCIe link's full rate") {
  const NodeModel m =
      parse_nccl_xml(wrap(R"(    <pci busid="0000:01:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" link_width="8"
         max_link_speed="32.0 GT/s PCIe" max_link_width="16"><gpu dev="0" sm="90"/></pci>)"),
                     "trained.xml");
  const Link up = uplink(m, device(m, DeviceKind::Gpu, 0));
  CHECK(up.bw_gbps == doctest::Approx(8 * *c::pcie_gbps_per_lane(16.0)));
  CHECK(up.max_bw_gbps == doctest::Approx(16 * *c::pcie_gbps_per_lane(32.0)));
}

TEST_CASE("nccl_xml: bad NVLink counts and NIC speeds") {
  auto gpu_with = [](const std::string& nvlink) {
    return wrap(
        "    <pci busid=\"0000:01:00.0\" class=\"0x030200\" link_speed=\"8 GT/s\" link_width=\"16\">\n"
        "      <gpu dev=\"0\" sm=\"80\" rank=\"0\">\n" +
        nvlink + "\n      </gpu>\n    </pci>");
  };
  for (const std::string count : {"0", "-1", "two", "1.5"}) {
    CAPTURE(count);
    CHECK_THROWS_WITH_AS(
        parse_bad(gpu_with("        <nvlink target=\"0000:f0:00.0\" count=\"" + count + "\" tclass=\"0x068000\"/>")),
        doctest::Contains(("bad.xml:5: <nvlink target=\"0000:f0:00.0\"> count=\"" + count +
                           "\": expected a positive number of NVLinks")
                              .c_str()),
        InputError);
  }
  CHECK_THROWS_WITH_AS(
      parse_bad(gpu_with(R"(        <nvlink target="0000:f0:00.0" count="2" tclass="nvswitch"/>)")),
      doctest::Contains("bad.xml:5: <nvlink target=\"0000:f0:00.0\"> tclass=\"nvswitch\": expected a PCI class code"),
      InputError);
  CHECK_THROWS_WITH_AS(
      parse_bad(wrap("    <pci busid=\"0000:02:00.0\" class=\"0x020000\" link_speed=\"8 GT/s\" link_width=\"16\">\n"
                     "      <nic>\n        <net name=\"mlx5_0\" dev=\"0\" speed=\"fast\"/>\n      </nic>\n    </pci>")),
      doctest::Contains("bad.xml:5: <net name=\"mlx5_0\"> speed=\"fast\": expected the port rate in Mb/s"), InputError);
  CHECK_THROWS_WITH_AS(
      parse_bad(
          wrap("    <pci busid=\"0000:02:00.0\" class=\"0x020000\" link_speed=\"8 GT/s\" link_width=\"16\">\n"
               "      <nic>\n        <net name=\"mlx5_0\" dev=\"0\" speed=\"-100000\"/>\n      </nic>\n    </pci>")),
      doctest::Contains("bad.xml:5: <net name=\"mlx5_0\"> speed=\"-100000\": expected the port rate in Mb/s"),
      InputError);
}

}  // namespace
TEST_CASE("nccl_xml: limits on what one node's file declares, each named") {
  const std::string gpu =
      "    <pci busid=\"0000:01:00.0\" class=\"0x030200\" link_speed=\"16 GT/s\" link_width=\"16\">\n"
      "      <gpu dev=\"0\" sm=\"90\" rank=\"0\">\n";
  const std::string peer =
      "    <pci busid=\"0000:02:00.0\" class=\"0x030200\" link_speed=\"16 GT/s\" link_width=\"16\">"
      "<gpu dev=\"1\" sm=\"90\" rank=\"1\"/></pci>";
  auto nvlinks = [&](const std::string& counts_xml) {
    return wrap(gpu + counts_xml + "      </gpu>\n    </pci>\n" + peer);
  };
  const std::string one = "        <nvlink target=\"0000:02:00.0\" count=\"COUNT\" tclass=\"0x030200\"/>\n";
  auto with = [&](std::string line, const std::string& count) { return line.replace(line.find("COUNT"), 5, count); };
  CHECK(parse_bad(nvlinks(with(one, "18"))).count(DeviceKind::Gpu) == 2);
  CHECK_THROWS_WITH_AS(parse_bad(nvlinks(with(one, "1000000"))), doctest::Contains("the limit kMaxNvlinks"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_bad(nvlinks(with(one, "4294967297"))), doctest::Contains("the limit kMaxNvlinks"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_bad(nvlinks(with(one, "9223372036854775807"))), doctest::Contains("kMaxNvlinks"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_bad(nvlinks(with(one, "40") + with(one, "40"))),
                       doctest::Contains("80 NVLinks of one GPU in all"), InputError);
  CHECK_THROWS_WITH_AS(parse_bad(nvlinks(with(one, "0"))), doctest::Contains("count=\"0\""), InputError);
  // A bus id twice is one device listed twice, not two GPUs.
  const std::string dup =
      "    <pci busid=\"0000:02:00.0\" class=\"0x030200\" link_speed=\"16 GT/s\" link_width=\"16\"/>\n";
  CHECK_THROWS_WITH_AS(parse_bad(wrap(dup + dup)),
                       doctest::Contains("bad.xml:4: <pci busid=\"0000:02:00.0\"> again (first on line 3)"),
                       InputError);
  std::string many;
  for (int i = 0; i < 65; ++i)
    many += fmt::format(
        "    <pci busid=\"0000:{:02x}:00.0\" class=\"0x030200\" link_speed=\"16 GT/s\" link_width=\"16\"/>\n", i);
  CHECK_THROWS_WITH_AS(parse_bad(wrap(many)), doctest::Contains("the limit kMaxNodeGpus"), InputError);
  std::string deep, close;
  for (int i = 0; i < 40; ++i) {
    deep +=
        fmt::format("<pci busid=\"0000:{:02x}:00.0\" class=\"0x060400\" link_speed=\"16 GT/s\" link_width=\"16\">", i);
    close += "</pci>";
  }
  CHECK_THROWS_WITH_AS(parse_bad(wrap(deep + dup + close)), doctest::Contains("the limit kMaxPciDepth"), InputError);
  CHECK_THROWS_WITH_AS(
      parse_bad(wrap("    <pci busid=\"0000:03:00.0\" class=\"0x020000\" link_speed=\"16 GT/s\" link_width=\"16\">"
                     "<nic><net name=\"m\" speed=\"1e300\"/></nic></pci>")),
      doctest::Contains("the limit kMaxNetMbps"), InputError);
  std::string numa = nvlinks("");
  numa.replace(numa.find("numaid=\"0\""), 10, "numaid=\"4294967296\"");
  CHECK_THROWS_WITH_AS(parse_bad(numa), doctest::Contains("the limit kMaxNuma"), InputError);
  std::string big_sm = nvlinks("");
  big_sm.replace(big_sm.find("sm=\"90\""), 7, "sm=\"4294967386\"");
  CHECK_THROWS_WITH_AS(parse_bad(big_sm), doctest::Contains("the limit kMaxSm"), InputError);
}

TEST_CASE("nccl_xml: the fuzzing reproducers are input errors of one line") {
  for (const char* name : {"xml-01-hang.xml", "xml-02-internal-error.xml", "xml-03-sanitizer.xml",
                           "xml-duplicate-busid.xml", "xml-nvlink-count-1e6-accepted.xml",
                           "xml-nvlink-count-over-int-max.xml", "xml-nvlink-count-sum-overflow.xml"}) {
    CAPTURE(name);
    try {
      (void)load_nccl_xml(std::string(TOPOCOLL_SOURCE_DIR) + "/fuzz/repros/" + name);
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
    }
  }
}

}  // namespace topocoll::topo
