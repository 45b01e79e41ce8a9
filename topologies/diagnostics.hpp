// Diagnostics: what in a cluster's topology will cost collective performance.
//   - GPUs whose nearest NIC sits on another NUMA node (traffic crosses the socket link);
//   - GPU pairs without a P2P path (their traffic goes through a CPU: PHB or SYS);
//   - nodes that differ from the others (a degraded or miswired node);
//   - GPUs behind the wrong root port (GPU-to-NIC through the CPU while others share a switch);
//   - fewer NICs than GPUs (how many GPUs share each NIC);
//   - links slower than their peers (same kind, same kinds of endpoints), and PCIe links trained
//     below their maximum width or speed (Link::max_bw_gbps);
//   - what an importer assumed (Topology::notes).
// Per-node checks run once per node model, not once per node: a 2048-node cluster of one model
// costs one node's checks.
#pragma once

#include <string>
#include <vector>

#include "topologies/topology.hpp"

namespace topocoll::topo {

enum class Severity { Info, Warning };

struct Finding {
  Severity severity = Severity::Warning;
  std::string check;    // "nic-numa", "root-port", "no-p2p", "nic-shared", "node-differs", "slow-link",
                        // "link-degraded", "import"
  std::string message;  // one line, naming the devices
};

std::vector<Finding> diagnose(const Topology& t);

}  // namespace topocoll::topo
