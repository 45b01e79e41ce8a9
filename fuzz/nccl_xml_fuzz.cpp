// NCCL topology XML (`--topology FILE.xml`): the importer, then the cluster built from it, as
// `topocoll topo show` does (without the bounds, a summary step of their own).
#include "fuzz/harness.hpp"
#include "topologies/load.hpp"
#include "topologies/nccl_xml.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return topocoll::fuzz::guarded([&] {
    const std::string path = topocoll::fuzz::write_input(data, size, "node.xml");
    topocoll::topo::TopologyOptions o;
    o.topology = path;
    o.nodes = 2;  // the inter-node part as well
    (void)topocoll::topo::load_topology(o);
  });
}
