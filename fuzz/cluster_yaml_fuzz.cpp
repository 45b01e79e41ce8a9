// YAML cluster specs and node descriptions (`--topology FILE.yaml`): the spec, then the cluster
// built from it. A spec
// naming `node: local` (hwloc of this machine) is parsed only: it does not depend on the input.
#include "fuzz/harness.hpp"
#include "topologies/load.hpp"
#include "topologies/node_spec.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  topocoll::fuzz::provide("topologies/testdata", ".", ".xml");  // the fixtures' `node: FILE.xml`
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return topocoll::fuzz::guarded([&] {
    const std::string path = topocoll::fuzz::write_input(data, size, "cluster.yaml");
    // A node description (the presets' language) is a node of its own; anything else a spec.
    if (!topocoll::topo::is_node_spec_text(topocoll::fuzz::as_text(data, size))) {
      const topocoll::topo::ClusterSpec spec = topocoll::topo::load_cluster_spec(path);
      if (spec.node == "local") return;
    }
    topocoll::topo::TopologyOptions o;
    o.topology = path;
    (void)topocoll::topo::load_topology(o);
  });
}
