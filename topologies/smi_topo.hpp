// Importer for the matrix `nvidia-smi topo -m` prints (what users paste into bug reports):
//
//           GPU0  GPU1  ...  NIC0  NIC1  CPU Affinity   NUMA Affinity  GPU NUMA ID
//   GPU0     X    NV18  ...  PXB   SYS   0-47,96-143    0              N/A
//   ...
//   NIC0    PXB   NODE  ...   X    SYS
//
//   Legend: X = self, SYS = across NUMA nodes, NODE = same NUMA node, different host bridges,
//   PHB = same host bridge, PXB = several PCIe switches, PIX = one PCIe switch,
//   NV# = a bonded set of # NVLinks.
//   NIC Legend:
//     NIC0: mlx5_0
//
// The model: one Cpu per NUMA node (devices joined by anything but SYS); within it one PCIe
// tree rebuilt from the relations (PIX groups share a switch; PXB groups hang their switches
// under one upper switch; PHB and NODE meet at the CPU); NV# between every pair of GPUs with the
// same # -> one NVSwitch (# lanes per GPU), else direct GPU-to-GPU NVLinks of # lanes. The matrix
// does not give the GPU model, link generations or NIC speeds: what is assumed for them is in
// NodeModel::notes, naming the fields that set them. Vertices: CPUs, GPUs in order, then the rest.
#pragma once

#include <string>
#include <string_view>

#include "topologies/topology.hpp"

namespace topocoll::topo {

// True when the text's first non-blank line is the matrix header (its first word is GPU0).
bool looks_like_smi_topo(std::string_view text);

// Throws InputError "FILE:LINE: what was found: expected what" for a ragged row, an unknown
// cell, a matrix that is not symmetric or a missing header.
NodeModel parse_smi_topo(std::string_view text, const std::string& source_name);
NodeModel load_smi_topo(const std::string& path);

}  // namespace topocoll::topo
