// Which importer reads a node file: NCCL topology XML (<system>), hwloc XML (<topology>, from
// `lstopo --of xml`) or the matrix of `nvidia-smi topo -m` (text whose first line starts GPU0).
// The content decides; the extension (.xml, .txt) only says that a name is a file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "topologies/topology.hpp"

namespace topocoll::topo {

enum class NodeFileFormat { NcclXml, HwlocXml, SmiTopo };

// True for names a node may be read from: FILE.xml or FILE.txt.
bool is_node_file_name(std::string_view name);

// The format of a file's text. Throws InputError naming the file and the three formats when the
// text is none of them.
NodeFileFormat node_file_format(std::string_view text, const std::string& path);

// The node models a file describes: one, or one per host of an NCCL dump holding several
// (nccl_xml.hpp load_nccl_xml_hosts).
std::vector<NodeModel> load_node_file(const std::string& path);

}  // namespace topocoll::topo
