#include "topologies/hwloc_xml.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <pugixml.hpp>
#include <sstream>

#include "common/errors.hpp"
#include "topologies/local.hpp"
#include "topologies/nccl_xml.hpp"

namespace topocoll::topo {

namespace {

int line_at(std::string_view text, std::ptrdiff_t offset) {
  const auto end = text.begin() + std::clamp<std::ptrdiff_t>(offset, 0, static_cast<std::ptrdiff_t>(text.size()));
  return 1 + static_cast<int>(std::count(text.begin(), end, '\n'));
}

}  // namespace

NodeModel parse_hwloc_xml(std::string_view text, const std::string& source_name) {
  // Well-formedness first: hwloc's own message has no line.
  pugi::xml_document doc;
  const pugi::xml_parse_result parsed = doc.load_buffer(text.data(), text.size());
  if (!parsed)
    throw InputError(fmt::format("{}:{}: not well-formed XML ({}): expected hwloc XML (lstopo --of xml)", source_name,
                                 line_at(text, parsed.offset), parsed.description()));
  if (std::string_view(doc.document_element().name()) != "topology")
    throw InputError(fmt::format("{}: root element <{}>: expected <topology> (hwloc XML, lstopo --of xml)", source_name,
                                 doc.document_element().name()));
  const std::optional<LocalInventory> inventory = hwloc_xml_inventory(text);
  if (!inventory)
    throw InputError(
        fmt::format("{}: hwloc could not load the XML: expected a topology written by lstopo --of xml", source_name));
  NodeModel m = build_local_node(*inventory);
  m.name = source_name;
  const std::size_t gpus = m.count(DeviceKind::Gpu);
  m.description =
      fmt::format("hwloc XML {}{}: CPU socket x{}, GPU x{}, PCIe switch x{}, NIC x{}", source_name,
                  inventory->hostname.empty() ? "" : fmt::format(" ({})", inventory->hostname),
                  m.count(DeviceKind::Cpu), gpus, m.count(DeviceKind::PcieSwitch), m.count(DeviceKind::Nic));
  // The local preset's notes speak of "this machine"; here the machine is the file's.
  std::vector<std::string> notes;
  for (const std::string& note : m.notes) {
    if (note.starts_with("NVLink is not detected by hwloc")) continue;
    std::string n = note;
    if (const auto at = n.find("on this machine"); at != std::string::npos) n.replace(at, 15, "in the file");
    if (n.find("port speed not reported") != std::string::npos)
      n += "; set it with `overrides: {nic_gbps: ...}` in a YAML cluster spec";
    notes.push_back(fmt::format("{}: {}", source_name, n));
  }
  if (gpus > 1) notes.push_back(nvlink_unknown_note(source_name, static_cast<int>(gpus), "hwloc sees no NVLink"));
  m.notes = std::move(notes);
  return m;
}

NodeModel load_hwloc_xml(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read the file: expected hwloc XML (lstopo --of xml)", path));
  std::ostringstream text;
  text << in.rdbuf();
  return parse_hwloc_xml(text.str(), path);
}

}  // namespace topocoll::topo
