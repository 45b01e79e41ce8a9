// NCCL topology XML (`--topology FILE.xml`): the importer, then the cluster built from it, as
// `topocoll topo show` does (without the bounds, a summary step of their own). Inputs that read
// as hwloc XML are left out: hwloc's own parser reads those, and it leaks on some malformed
// files (hwloc_alloc_setup_object), which is not ours to fix.
#include "fuzz/harness.hpp"
#include "topologies/load.hpp"
#include "topologies/nccl_xml.hpp"
#include "topologies/node_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return topocoll::fuzz::guarded([&] {
    const std::string path = topocoll::fuzz::write_input(data, size, "node.xml");
    try {
      if (topocoll::topo::node_file_format(topocoll::fuzz::as_text(data, size), path) ==
          topocoll::topo::NodeFileFormat::HwlocXml)
        return;
    } catch (const topocoll::InputError&) {
      // none of the formats: load_topology says so below
    }
    topocoll::topo::TopologyOptions o;
    o.topology = path;
    o.nodes = 2;  // the inter-node part as well
    (void)topocoll::topo::load_topology(o);
  });
}
