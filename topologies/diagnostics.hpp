// Diagnostics: what in a cluster's topology will cost collective performance.
//   - GPUs whose nearest NIC sits on another NUMA node (traffic crosses the socket link);
//   - GPU pairs without a P2P path (their traffic goes through a CPU: PHB or SYS);
//   - nodes that differ from the others (a degraded or miswired node);
//   - links slower than their peers (same kind, same kinds of endpoints);
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
  std::string check;    // "nic-numa", "no-p2p", "node-differs", "slow-link", "import"
  std::string message;  // one line, naming the devices
};

std::vector<Finding> diagnose(const Topology& t);

}  // namespace topocoll::topo
