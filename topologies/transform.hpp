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

// Every NIC of the node made `copies` NICs: the copies have the NIC's rate, NUMA node and model
// and the same PCIe links (to the same switch or root port), and come after every device, so the
// node's first NICs keep their local indices (rails). 16 x 200 G on 8 GPUs: a DGX with 8 NICs,
// copies = 2, at a 200 G transport. copies = 1 returns the node unchanged; InputError outside
// 1..16.
NodeModel multiply_nics(const NodeModel& m, int copies);

}  // namespace topocoll::topo
