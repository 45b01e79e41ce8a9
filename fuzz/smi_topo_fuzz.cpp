// `nvidia-smi topo -m` matrices (`--topology FILE.txt`): the importer, then the cluster built
// from its node (2 nodes, so the NICs meet a fabric). hwloc XML is read by hwloc's own parser
// and is not fuzzed here.
#include "fuzz/harness.hpp"
#include "topologies/load.hpp"
#include "topologies/smi_topo.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return topocoll::fuzz::guarded([&] {
    const std::string text = topocoll::fuzz::as_text(data, size);
    (void)topocoll::topo::parse_smi_topo(text, "smi.txt");
    const std::string path = topocoll::fuzz::write_input(data, size, "smi.txt");
    topocoll::topo::TopologyOptions o;
    o.topology = path;
    o.nodes = 2;
    (void)topocoll::topo::load_topology(o);
  });
}
