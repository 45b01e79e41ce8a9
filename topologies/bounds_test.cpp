#include "topologies/bounds.hpp"

#include <doctest/doctest.h>

#include <limits>
#include <vector>

#include "common/errors.hpp"
#include "topologies/presets.hpp"

using namespace topocoll::topo;

TEST_CASE("bounds: one DGX-H100 node is limited by GPU injection (NVLink + PCIe)") {
  Topology t = Topology::build(make_dgx_h100_node(), 1, FabricSpec{});
  const AllreduceBound b = allreduce_bound(t);
  // A GPU can push 450 GB/s over NVLink plus its PCIe link (63 GB/s) towards the others.
  CHECK(b.gpu_injection_gbps == doctest::Approx(450.0 + 16 * 3.938));
  CHECK(b.limited_by == "gpu injection");
  CHECK(b.busbw_gbps == doctest::Approx(b.gpu_injection_gbps));
}

TEST_CASE("bounds: many DGX-H100 nodes are limited by the NICs") {
  Topology t = Topology::build(make_dgx_h100_node(), 16, FabricSpec{FabricKind::RailFatTree});
  const AllreduceBound b = allreduce_bound(t);
  CHECK(b.node_injection_gbps == doctest::Approx(8 * 50.0));
  // busbw <= B_node * n(p-1)/(p(n-1)) with n = 16, p = 128: 423.3 GB/s, under the GPU's 513.
  CHECK(b.busbw_gbps == doctest::Approx(400.0 * 16 * 127 / (128.0 * 15)));
  CHECK(b.limited_by == "node injection");
  CHECK(b.bisection_gbps == doctest::Approx(8 * 400.0));
}

TEST_CASE("bounds: with few nodes the GPU's own links bind first") {
  // 4 nodes: the node term allows 400 * 4 * 31 / (32 * 3) = 516.7 GB/s > 513 GB/s per GPU.
  Topology t = Topology::build(make_dgx_h100_node(), 4, FabricSpec{FabricKind::RailFatTree});
  const AllreduceBound b = allreduce_bound(t);
  CHECK(b.limited_by == "gpu injection");
  CHECK(b.busbw_gbps == doctest::Approx(450.0 + 16 * 3.938));
}

TEST_CASE("bounds: oversubscription shows in the bisection") {
  // 128 DGX-H100 nodes on an 8:1 oversubscribed rail fat tree: leaves have 56 down ports, so
  // units of 56 nodes; the halves (64 | 64 nodes) must cross the thin leaf uplinks.
  Topology t = Topology::build(make_dgx_h100_node(), 128, FabricSpec{FabricKind::RailFatTree, 8.0, 64});
  const AllreduceBound b = allreduce_bound(t);
  CHECK(b.bisection_gbps < 64 * 400.0);
  CHECK(b.busbw_gbps <= b.node_injection_gbps * 128 * 1023 / (1024.0 * 127) + 1e-9);
}

TEST_CASE("bounds: the PCIe box is limited by the inter-socket link") {
  Topology t = Topology::build(make_pcie_8gpu_node(), 1, FabricSpec{});
  const AllreduceBound b = allreduce_bound(t);
  CHECK(b.bisection_gbps == doctest::Approx(16.0));  // NCCL's AMD inter-socket figure
  CHECK(b.limited_by == "bisection");
  CHECK(b.busbw_gbps == doctest::Approx(16.0 * 2 * 7 / 8.0));
}

TEST_CASE("bounds: fewer than two GPUs is an input error") {
  NodeModel m;
  Vertex cpu = m.add_device(DeviceKind::Cpu, 0);
  Vertex gpu = m.add_gpu(0, 90);
  m.add_link(cpu, gpu, LinkKind::Pcie, 10.0, 0.5, 16);
  Topology t = Topology::build(m, 1, FabricSpec{});
  CHECK_THROWS_AS(allreduce_bound(t), topocoll::InputError);
}

namespace {

std::vector<Vertex> gpus_of_node(const Topology& t, int node) {
  std::vector<Vertex> out;
  for (const RankInfo& r : t.ranks())
    if (r.node == node) out.push_back(r.gpu);
  return out;
}

}  // namespace

TEST_CASE("bounds: many sources and sinks cannot overflow the max-flow's arithmetic") {
  // 16 GPUs as sources and sinks: with "infinite" arcs of LLONG_MAX / 4 the push-relabel summed
  // past LLONG_MAX (UBSan: signed overflow); the arcs now sum below it. Node 0 to node 1 of two
  // DGX-H100s: the 8 NICs of 50 GB/s.
  Topology t = Topology::build(make_dgx_h100_node(), 2, FabricSpec{FabricKind::RailFatTree});
  CHECK(max_flow_gbps(t, gpus_of_node(t, 0), gpus_of_node(t, 1)) == doctest::Approx(8 * 50.0));
  const AllreduceBound b = allreduce_bound(t);
  CHECK(b.node_injection_gbps == doctest::Approx(8 * 50.0));
  CHECK(b.bisection_gbps == doctest::Approx(8 * 50.0));
}

TEST_CASE("bounds: a device on both sides of the max-flow is unbounded") {
  Topology t = Topology::build(make_dgx_h100_node(), 1, FabricSpec{});
  const Vertex gpu0 = t.rank(0).gpu;
  CHECK(max_flow_gbps(t, {gpu0}, {gpu0}) == std::numeric_limits<double>::infinity());
  CHECK(max_flow_gbps(t, {gpu0}, {}) == 0.0);
}

TEST_CASE("bounds: link bandwidths beyond the max-flow's exact range are input errors") {
  auto two_gpus = [](double bw_a, double bw_b) {
    NodeModel m;
    Vertex cpu = m.add_device(DeviceKind::Cpu, 0);
    m.add_link(cpu, m.add_gpu(0, 90), LinkKind::Pcie, bw_a, 0.5, 16);
    m.add_link(cpu, m.add_gpu(0, 90), LinkKind::Pcie, bw_b, 0.5, 16);
    return Topology::build(m, 1, FabricSpec{});
  };
  const Topology fine = two_gpus(1e6, 1e6);
  CHECK(max_flow_gbps(fine, {fine.rank(0).gpu}, {fine.rank(1).gpu}) == doctest::Approx(1e6));
  // One link above 10^15 GB/s.
  const Topology too_fast = two_gpus(2e15, 1.0);
  CHECK_THROWS_AS(max_flow_gbps(too_fast, {too_fast.rank(0).gpu}, {too_fast.rank(1).gpu}), topocoll::InputError);
  // Each link in range, their sum times the source and sink arcs is not.
  const Topology too_much = two_gpus(1e15, 1e15);
  CHECK_THROWS_WITH_AS(max_flow_gbps(too_much, {too_much.rank(0).gpu}, {too_much.rank(1).gpu}),
                       doctest::Contains("exceeds the limit of exact arithmetic"), topocoll::InputError);
}
