#include "topologies/paths.hpp"

#include <doctest/doctest.h>

#include "topologies/bounds.hpp"
#include "topologies/presets.hpp"

using namespace topocoll::topo;

TEST_CASE("paths: every GPU pair in one DGX-H100 node is NVL through one NVSwitch") {
  Topology t = Topology::build(make_dgx_h100_node(), 1, FabricSpec{});
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) {
      const Path p = find_path(t, t.rank(a).gpu, t.rank(b).gpu);
      REQUIRE(p.found);
      if (a == b) {
        CHECK(p.type == PathType::LOC);
        continue;
      }
      CHECK(p.type == PathType::NVL);
      CHECK(p.hops() == 2);
      CHECK(p.bw_gbps == doctest::Approx(125.0));  // the 5-link bundle: widest single path
      CHECK(p.latency_us == doctest::Approx(0.6));
      CHECK(t.graph()[p.vertices[1]].kind == DeviceKind::NvSwitch);
      // All four NVSwitch planes together (450 GB/s) plus the PCIe route through the CPU.
      if (a == 0 && b == 1)
        CHECK(max_flow_gbps(t, {t.rank(a).gpu}, {t.rank(b).gpu}) == doctest::Approx(450.0 + 16 * 3.938));
    }
}

TEST_CASE("paths: GPU to NIC in a DGX-H100 node") {
  Topology t = Topology::build(make_dgx_h100_node(), 1, FabricSpec{});
  // Own NIC: one PCIe switch (PIX). Another socket's NIC: through both CPUs (SYS).
  CHECK(find_path(t, t.rank(0).gpu, *t.find_device("n0/nic0")).type == PathType::PIX);
  CHECK(find_path(t, t.rank(0).gpu, *t.find_device("n0/nic1")).type == PathType::PHB);
  CHECK(find_path(t, t.rank(0).gpu, *t.find_device("n0/nic5")).type == PathType::SYS);
}

TEST_CASE("paths: across nodes every GPU pair is NET, limited by the NIC") {
  Topology t = Topology::build(make_dgx_h100_node(), 2, FabricSpec{FabricKind::RailFatTree});
  for (int a = 0; a < 8; ++a)
    for (int b = 8; b < 16; ++b) {
      const Path p = find_path(t, t.rank(a).gpu, t.rank(b).gpu);
      REQUIRE(p.found);
      CHECK(p.type == PathType::NET);
      CHECK(p.bw_gbps == doctest::Approx(50.0));
    }
  // Same rail, same unit: GPU -> PCIe switch -> NIC -> leaf -> NIC -> PCIe switch -> GPU.
  const Path same_rail = find_path(t, t.rank(2).gpu, t.rank(10).gpu);
  CHECK(same_rail.hops() == 6);
  CHECK(same_rail.latency_us == doctest::Approx(4 * 0.5 + 2 * 0.6));
  // Different rails: through a spine, not through the remote CPU (fewer CPUs win ties).
  const Path cross_rail = find_path(t, t.rank(0).gpu, t.rank(11).gpu);
  CHECK(cross_rail.hops() == 8);
  bool via_spine = false;
  for (Vertex v : cross_rail.vertices) {
    CHECK(t.graph()[v].kind != DeviceKind::Cpu);
    via_spine |= t.graph()[v].kind == DeviceKind::SpineSwitch;
  }
  CHECK(via_spine);
}

TEST_CASE("paths: DGX-A100 and PCIe box path types") {
  Topology a100 = Topology::build(make_dgx_a100_node(), 1, FabricSpec{});
  for (int a = 0; a < 8; ++a)
    for (int b = a + 1; b < 8; ++b) {
      const Path p = find_path(a100, a100.rank(a).gpu, a100.rank(b).gpu);
      CHECK(p.type == PathType::NVL);
      CHECK(p.bw_gbps == doctest::Approx(50.0));  // 2 NVLink3 links to each of 6 NVSwitches
    }
  Topology pcie = Topology::build(make_pcie_8gpu_node(), 1, FabricSpec{});
  for (int a = 0; a < 8; ++a)
    for (int b = a + 1; b < 8; ++b) {
      const Path p = find_path(pcie, pcie.rank(a).gpu, pcie.rank(b).gpu);
      CHECK(p.type == (a / 4 == b / 4 ? PathType::PHB : PathType::SYS));
      CHECK_FALSE(p2p_possible(p.type));
      CHECK(p.bw_gbps == doctest::Approx(a / 4 == b / 4 ? 16 * 1.969 : 16.0));
    }
}

TEST_CASE("paths: NVB through one GPU when GPUs are wired directly (no NVSwitch)") {
  // gpu0 = gpu1 = gpu2 in a chain of NVLinks, plus PCIe to one CPU: gpu0 -> gpu2 is NVB.
  NodeModel m;
  m.name = "chain";
  Vertex cpu = m.add_device(DeviceKind::Cpu, 0);
  Vertex g0 = m.add_gpu(0, 80), g1 = m.add_gpu(0, 80), g2 = m.add_gpu(0, 80);
  for (Vertex g : {g0, g1, g2}) m.add_link(cpu, g, LinkKind::Pcie, 16.0, 0.5, 16);
  m.add_link(g0, g1, LinkKind::NvLink, 50.0, 0.6, 2);
  m.add_link(g1, g2, LinkKind::NvLink, 50.0, 0.6, 2);
  Topology t = Topology::build(m, 1, FabricSpec{});
  const Path p = find_path(t, t.rank(0).gpu, t.rank(2).gpu);
  CHECK(p.type == PathType::NVB);
  CHECK(p.bw_gbps == doctest::Approx(50.0));
  CHECK(p.hops() == 2);
  // A GPU never relays PCIe traffic: with the NVLinks gone the path is PHB through the CPU.
  NodeModel m2;
  Vertex c2 = m2.add_device(DeviceKind::Cpu, 0);
  Vertex h0 = m2.add_gpu(0, 80), h1 = m2.add_gpu(0, 80);
  m2.add_link(c2, h0, LinkKind::Pcie, 16.0, 0.5, 16);
  m2.add_link(h0, h1, LinkKind::Pcie, 32.0, 0.5, 16);  // odd wiring: would tempt a relay
  Vertex h2 = m2.add_gpu(0, 80);
  m2.add_link(c2, h2, LinkKind::Pcie, 16.0, 0.5, 16);
  Topology t2 = Topology::build(m2, 1, FabricSpec{});
  const Path q = find_path(t2, t2.rank(1).gpu, t2.rank(2).gpu);
  REQUIRE_FALSE(q.found);  // h1 reaches the rest only through h0, which may not relay PCIe
}

TEST_CASE("paths: classify names NCCL's types") {
  CHECK(to_string(PathType::PXB) == "PXB");
  CHECK(p2p_possible(PathType::PXB));
  CHECK_FALSE(p2p_possible(PathType::PHB));
}

TEST_CASE("paths: traffic between two devices of one node never leaves the node") {
  // The p4d-like PCIe box: the NICs (50 GB/s) are wider than the socket link (16 GB/s), yet a
  // GPU pair across sockets goes through the CPUs (SYS), not out through the fabric and back.
  Topology t = Topology::build(make_pcie_8gpu_node(), 2, FabricSpec{FabricKind::SingleSwitch});
  const Path p = find_path(t, t.rank(0).gpu, t.rank(7).gpu);
  CHECK(p.type == PathType::SYS);
  for (Vertex v : p.vertices) CHECK(t.graph()[v].node == 0);
  CHECK(find_path(t, *t.find_device("n0/cpu0"), *t.find_device("n0/cpu1")).hops() == 1);
}

TEST_CASE("paths: a search does not depend on the searches before it (the per-thread arrays are reset)") {
  // Every pair of devices of a two-node cluster and of a PCIe box (graphs of different sizes),
  // asked in one order and again in the reverse order, interleaved across the two graphs: the
  // same vertices, width and latency each time, as a search on arrays filled afresh gives.
  const Topology a = Topology::build(make_dgx_h100_node(), 2, FabricSpec{});
  const Topology b = Topology::build(make_pcie_8gpu_node(), 1, FabricSpec{});
  struct Query {
    const Topology* t;
    Vertex from, to;
  };
  std::vector<Query> queries;
  for (const Topology* t : {&a, &b})
    for (Vertex u = 0; u < boost::num_vertices(t->graph()); ++u)
      for (Vertex v = 0; v < boost::num_vertices(t->graph()); v += 3) queries.push_back({t, u, v});
  std::vector<Path> first;
  for (const Query& q : queries) first.push_back(find_path(*q.t, q.from, q.to));
  int found = 0;
  for (std::size_t i = queries.size(); i-- > 0;) {
    const Query& q = queries[i];
    const Path again = find_path(*q.t, q.from, q.to);
    CAPTURE(i);
    CHECK(again.found == first[i].found);
    CHECK(again.vertices == first[i].vertices);
    CHECK(again.bw_gbps == first[i].bw_gbps);
    CHECK(again.latency_us == first[i].latency_us);
    found += again.found ? 1 : 0;
  }
  CHECK(found > static_cast<int>(queries.size()) / 2);  // the cases are paths, not misses
}
