// Transformations of node models.
#pragma once

#include "topologies/topology.hpp"

namespace topocoll::topo {

// The NVSwitch planes of a node as one switch: each GPU's NVLink bundles to the node's
// NVSwitches become one bundle to a single NVSwitch, with the lanes and bandwidth summed. The
// hardware stripes a GPU's NVLink traffic over all planes, and NCCL models an NVSwitch system
// the same way; single-path routing over separate planes would see one plane (125 GB/s of an
// H100's 450). GPU-to-GPU NVLinks and everything else are kept. Devices keep their order, the
// merged switch comes last.
NodeModel merge_nvswitch_planes(const NodeModel& m);

}  // namespace topocoll::topo
