#include "topologies/node_file.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/errors.hpp"
#include "common/files.hpp"
#include "topologies/hwloc_xml.hpp"
#include "topologies/nccl_xml.hpp"
#include "topologies/smi_topo.hpp"

namespace topocoll::topo {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The name of the first element of an XML text, skipping the declaration, comments and DOCTYPE.
std::string_view root_element(std::string_view text) {
  std::size_t at = 0;
  while ((at = text.find('<', at)) != std::string_view::npos) {
    const std::string_view rest = text.substr(at + 1);
    if (rest.starts_with("?") || rest.starts_with("!")) {
      const std::size_t end = text.find(rest.starts_with("!--") ? "-->" : ">", at);
      if (end == std::string_view::npos) return {};
      at = end + 1;
      continue;
    }
    std::size_t len = 0;
    while (len < rest.size() && rest[len] != ' ' && rest[len] != '>' && rest[len] != '/' && rest[len] != '\t' &&
           rest[len] != '\n' && rest[len] != '\r')
      ++len;
    return rest.substr(0, len);
  }
  return {};
}

std::string read_text(const std::string& path) {
  return read_input_file(
      path, "a readable node file (NCCL topology XML, hwloc XML from lstopo, or the text of nvidia-smi topo -m)");
}

}  // namespace

bool is_node_file_name(std::string_view name) {
  return ends_with(name, ".xml") || ends_with(name, ".txt");
}

NodeFileFormat node_file_format(std::string_view text, const std::string& path) {
  if (looks_like_smi_topo(text)) return NodeFileFormat::SmiTopo;
  const std::string_view root = root_element(text);
  if (root == "topology") return NodeFileFormat::HwlocXml;
  if (root == "system" || ends_with(path, ".xml"))
    return NodeFileFormat::NcclXml;  // the NCCL importer names a wrong root
  throw InputError(fmt::format(
      "{}:1: neither XML nor a matrix: expected NCCL topology XML (<system>), hwloc XML (<topology>, lstopo --of "
      "xml) or the text of nvidia-smi topo -m (a first line starting GPU0)",
      path));
}

std::vector<NodeModel> load_node_file(const std::string& path) {
  const std::string text = read_text(path);
  switch (node_file_format(text, path)) {
    case NodeFileFormat::SmiTopo: {
      std::vector<NodeModel> out;
      out.push_back(parse_smi_topo(text, path));
      return out;
    }
    case NodeFileFormat::HwlocXml: {
      std::vector<NodeModel> out;
      out.push_back(parse_hwloc_xml(text, path));
      return out;
    }
    case NodeFileFormat::NcclXml:
      break;
  }
  return parse_nccl_xml_hosts(text, path);
}

}  // namespace topocoll::topo
