// Shared by the simulator's test suites: a topology from a preset, as the simulator sees it.
#pragma once

#include <string>

#include "topologies/load.hpp"

namespace topocoll::sim::testing {

// `nodes` copies of `preset` on `fabric`, NVSwitch planes merged (the simulator's view).
inline topo::Topology load(const std::string& preset, int nodes,
                           topo::FabricKind fabric = topo::FabricKind::SingleSwitch) {
  topo::TopologyOptions o{preset};
  o.nodes = nodes;
  o.fabric = fabric;
  o.merge_nvswitch_planes = true;
  return topo::load_topology(o);
}

}  // namespace topocoll::sim::testing
