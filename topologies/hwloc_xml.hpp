// Importer for hwloc's XML (`lstopo --of xml`, `hwloc-gather-topology`): the <topology> root,
// <object type="Package|NUMANode|Bridge|PCIDev|OSDev"> with pci_busid, pci_type (class, vendor,
// device ids) and pci_link_speed attributes. hwloc's own XML backend loads it and the walk of
// the `local` preset (topologies/local.hpp) builds the node: sockets, PCIe switches (bridges),
// GPUs (class 0x0300 / 0x0302 of NVIDIA or AMD) and NICs (class 0x02xx). What hwloc does not
// know (NVLink, GPU compute capability, NIC port rates) is named in NodeModel::notes.
#pragma once

#include <string>
#include <string_view>

#include "topologies/topology.hpp"

namespace topocoll::topo {

// Throws InputError "FILE:LINE: ..." for malformed XML and "FILE: ..." when hwloc refuses it.
NodeModel parse_hwloc_xml(std::string_view text, const std::string& source_name);
NodeModel load_hwloc_xml(const std::string& path);

}  // namespace topocoll::topo
