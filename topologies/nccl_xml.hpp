// Importer for NCCL topology XML: the NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE format.
//
//   <system version="1">
//     <cpu numaid="0" arch="x86_64" vendor="GenuineIntel" modelid="143">     -> Cpu (numa 0)
//       <pci busid="..." class="0x060400" link_speed=".." link_width="..">    -> PcieSwitch
//         <pci class="0x030200" ...>                                           -> Gpu
//           <gpu dev="0" sm="90" rank="0">
//             <nvlink target="0000:f5:00.0" count="5" tclass="0x068000"/>   -> NvSwitch (per busid)
//           </gpu>
//         </pci>
//         <pci class="0x020000" ...> <nic> <net speed="200000" .../> </nic>   -> Nic (per <net>)
//       </pci>
//     </cpu>
//     <cpu numaid="1" ...> ... </cpu>                                          inter-socket link
//   </system>
//
// Both kinds of file are read: full dumps (`<gpu>`, `<nvlink>`, `<nic>`/`<net>` elements) and the
// skeleton files cloud vendors ship (PCI classes only). Whatever the importer had to assume (a NIC
// port rate not in the file, a skipped device, a PCIe width of 0 taken as x16) is written to
// NodeModel::notes. Vertices are added CPUs first, then GPUs in local-index order, then the rest.
#pragma once

#include <string>
#include <string_view>

#include "topologies/topology.hpp"

namespace topocoll::topo {

// Reads an NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE into one node's model.
// Throws InputError ("FILE:LINE: what was found: what was expected") for an unreadable file,
// malformed XML or attribute values that are not of NCCL's form.
NodeModel load_nccl_xml(const std::string& path);

// The same, from text in memory; `source_name` names it in errors and becomes NodeModel::name.
NodeModel parse_nccl_xml(std::string_view text, const std::string& source_name);

}  // namespace topocoll::topo
