#include "topologies/load.hpp"

#include <doctest/doctest.h>

#include "common/errors.hpp"
#include "topologies/test_helpers.hpp"

using namespace topocoll::topo;
using topocoll::InputError;
using topocoll::topo::testing::source_path;

TEST_CASE("load: presets take --nodes, --fabric and --oversubscription") {
  TopologyOptions o{"dgx-a100"};
  o.nodes = 4;
  o.fabric = FabricKind::SingleSwitch;
  Topology t = load_topology(o);
  CHECK(t.nodes() == 4);
  CHECK(t.num_ranks() == 32);
  REQUIRE(t.fabric().has_value());
  CHECK(t.fabric()->kind == FabricKind::SingleSwitch);
}

TEST_CASE("load: a YAML spec over an NCCL XML file") {
  Topology t = load_topology(TopologyOptions{source_path("topologies/testdata/cluster-xml.yaml")});
  CHECK(t.nodes() == 16);
  CHECK(t.num_ranks() == 128);
  CHECK(t.fabric()->oversubscription == doctest::Approx(2.0));
  CHECK(t.graph()[t.rank(0).nic].port_gbps == doctest::Approx(25.0));
  // Command-line flags override the spec.
  TopologyOptions o{source_path("topologies/testdata/cluster-xml.yaml")};
  o.nodes = 2;
  CHECK(load_topology(o).nodes() == 2);
}

namespace {

void check_spec_error(const std::string& yaml, const std::string& expected) {
  CHECK_THROWS_WITH_AS(parse_cluster_spec(yaml, "spec.yaml", "."), doctest::Contains(expected.c_str()), InputError);
}

}  // namespace

TEST_CASE("load: bad YAML specs name the file, the line and the expectation") {
  check_spec_error("node: dgx-h100\nnodes: [1\n", "spec.yaml:");
  check_spec_error("node: dgx-h100\nnodes: 0\n", "spec.yaml:2: 'nodes: 0' must be an integer from 1 to 16384");
  check_spec_error("node: dgx-h100\nnodes: -4\n", "spec.yaml:2: 'nodes: -4'");
  check_spec_error("node: dgx-h100\nnodes: many\n", "spec.yaml:2: 'nodes' must be an integer from 1 to 16384");
  check_spec_error("node: dgx-h100\nnodez: 4\n", "spec.yaml:2: unknown key 'nodez'");
  check_spec_error("nodes: 4\n", "missing 'node'");
  check_spec_error("node: dgx-z9\n", "spec.yaml:1: 'node: dgx-z9' is neither a preset");
  check_spec_error("node: dgx-h100\nfabric: torus\n", "spec.yaml:2: unknown fabric 'torus'");
  check_spec_error("node: dgx-h100\nfabric: {kind: fat-tree, oversubscription: 0.5}\n",
                   "spec.yaml:2: 'oversubscription' must be a number >= 1, got 0.5");
  check_spec_error("node: dgx-h100\nfabric: {kind: fat-tree, switch_radix: x}\n",
                   "'switch_radix' must be an integer >= 2");
  check_spec_error("node: dgx-h100\noverrides: {nic_gbps: -1}\n", "spec.yaml:2: 'nic_gbps' must be a positive number");
  check_spec_error("node: dgx-h100\nnodes: 2\nnode_overrides:\n  - {nodes: [5], nic_gbps: 1}\n",
                   "spec.yaml:4: node index 5 is outside 0..1");
  check_spec_error("- a\n- b\n", "expected a YAML map");
}

TEST_CASE("load: bad command-line values") {
  TopologyOptions o{"dgx-h100"};
  o.nodes = 0;
  CHECK_THROWS_WITH_AS(load_topology(o), doctest::Contains("--nodes 0: expected a node count from 1 to 16384"),
                       InputError);
  o.nodes = 2;
  o.oversubscription = 0.9;
  CHECK_THROWS_WITH_AS(load_topology(o), doctest::Contains("--oversubscription 0.9: expected a ratio >= 1"),
                       InputError);
  CHECK_THROWS_WITH_AS(load_topology(TopologyOptions{"nvl72"}), doctest::Contains("unknown topology preset 'nvl72'"),
                       InputError);
  CHECK_THROWS_WITH_AS(load_topology(TopologyOptions{"/nonexistent/file.xml"}),
                       doctest::Contains("/nonexistent/file.xml"), InputError);
  CHECK_THROWS_WITH_AS(load_topology(TopologyOptions{"/nonexistent/spec.yaml"}),
                       doctest::Contains("/nonexistent/spec.yaml: no such file: expected a YAML cluster spec"),
                       InputError);
  CHECK_THROWS_WITH_AS(load_topology(TopologyOptions{""}), doctest::Contains("--topology is required"), InputError);
}

TEST_CASE("load: rates, latencies and counts of a spec within their limits (named)") {
  check_spec_error("node: dgx-h100\noverrides: {nic_gbps: 1e300}\n",
                   "'nic_gbps' 1e+300 is more than 100000 (the limit kMaxSpecGbps)");
  check_spec_error("node: dgx-h100\nfabric: {link_gbps: .inf}\n", "the limit kMaxSpecGbps");
  check_spec_error("node: dgx-h100\nfabric: {latency_us: 1e12}\n", "the limit kMaxSpecLatencyUs");
  check_spec_error("node: dgx-h100\nfabric: {oversubscription: 1e9}\n", "the limit kMaxOversubscription");
  check_spec_error("node: dgx-h100\nfabric: {switch_radix: 1000000}\n", "the limit kMaxSwitchRadix");
  check_spec_error("node: dgx-h100\nfabric: {switch_radix: 99999999999}\n", "'switch_radix' must be an integer >= 2");
  check_spec_error("node: dgx-h100\n[a]: 1\n", "spec.yaml:2: a key of the cluster spec is not a name");
  check_spec_error("node: dgx-h100\n\"ra\\nil\": 1\n", "unknown key 'ra\\nil'");
  std::string many = "node: dgx-h100\nnodes: 2\nnode_overrides:\n";
  for (int i = 0; i <= Topology::kMaxNodes; ++i) many += "  - {nodes: [0], nic_gbps: 25}\n";
  check_spec_error(many, "16385 node overrides: expected at most one per node, 16384 (the limit kMaxNodes)");
  TopologyOptions o{"dgx-a100"};
  o.oversubscription = 1e9;
  CHECK_THROWS_WITH_AS(load_topology(o), doctest::Contains("the limit kMaxOversubscription"), InputError);
}
