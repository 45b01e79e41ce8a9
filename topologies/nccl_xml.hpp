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
#include <vector>

#include "topologies/topology.hpp"

namespace topocoll::topo {

// The YAML field that gives a node NVLink an XML file leaves unknown (named by the importers'
// notes; docs/topologies.md).
inline constexpr std::string_view kNvlinkOverrideKey = "overrides.nvlink";

// The one note for GPUs whose NVLink the file leaves unknown (skeleton files, AWS p5's file with
// <gpu> but no <nvlink>): what the model assumes and the field that fixes it.
// `missing` says what the source lacks.
std::string nvlink_unknown_note(const std::string& file, int gpus,
                                std::string_view missing = "no <nvlink> element (NCCL detects NVLink at run time)");

// Reads an NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE into one node's model.
// Throws InputError ("FILE:LINE: what was found: what was expected") for an unreadable file,
// malformed XML or attribute values that are not of NCCL's form.
NodeModel load_nccl_xml(const std::string& path);

// The same, from text in memory; `source_name` names it in errors and becomes NodeModel::name.
NodeModel parse_nccl_xml(std::string_view text, const std::string& source_name);

// A dump may hold several hosts (NCCL writes host_hash on each <cpu>, e.g. a multi-node NVLink
// dump): one NodeModel per distinct host_hash, in file order, each named "FILE#hostN" and noting
// it. A file of one host gives one model, the same as load_nccl_xml. parse_nccl_xml /
// load_nccl_xml return the first host's model.
std::vector<NodeModel> load_nccl_xml_hosts(const std::string& path);
std::vector<NodeModel> parse_nccl_xml_hosts(std::string_view text, const std::string& source_name);

}  // namespace topocoll::topo
