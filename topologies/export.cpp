// Exports: Graphviz DOT and JSON. The SimGrid platform XML is written by the SimGrid engine's
// library (simulator/simgrid/platform_xml.hpp), from the routes the engine simulates.
#include "topologies/export.hpp"

#include <fmt/format.h>

#include <ostream>

#include "common/errors.hpp"

namespace topocoll::topo {

namespace {

// Shortest text that reads back as the same double: "25", "0.3", "14.0625".
std::string number(double v) {
  return fmt::format("{}", v);
}

bool inside_node(const Graph& g, Edge e) {
  const int a = g[boost::source(e, g)].node;
  return a >= 0 && a == g[boost::target(e, g)].node;
}

// ---------------------------------------------------------------------------------------------
// Graphviz

std::string dot_quoted(std::string_view text) {
  std::string quoted = "\"";
  for (char ch : text) {
    if (ch == '"' || ch == '\\') quoted += '\\';
    quoted += ch;
  }
  return quoted + '"';
}

std::string_view dot_shape(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::Gpu:
      return "box";
    case DeviceKind::Cpu:
      return "box3d";
    case DeviceKind::PcieSwitch:
      return "diamond";
    case DeviceKind::NvSwitch:
      return "hexagon";
    case DeviceKind::Nic:
      return "parallelogram";
    case DeviceKind::LeafSwitch:
      return "trapezium";
    case DeviceKind::SpineSwitch:
      return "invtrapezium";
  }
  return "ellipse";
}

void write_dot_device(const Topology& t, Vertex v, std::string_view indent, std::ostream& out) {
  const std::string name = dot_quoted(t.device_name(v));
  out << fmt::format("{}{} [label={}, shape={}];\n", indent, name, name, dot_shape(t.graph()[v].kind));
}

void write_dot_link(const Topology& t, Edge e, std::string_view indent, std::ostream& out) {
  const Graph& g = t.graph();
  const Link& l = g[e];
  out << fmt::format("{}{} -- {} [label={}];\n", indent, dot_quoted(t.device_name(boost::source(e, g))),
                     dot_quoted(t.device_name(boost::target(e, g))),
                     dot_quoted(fmt::format("{} {} GB/s", to_string(l.kind), number(l.bw_gbps))));
}

}  // namespace

void write_dot(const Topology& t, std::ostream& out) {
  const Graph& g = t.graph();
  // Links inside a node go into its cluster, the others (network) after the clusters.
  std::vector<std::vector<Edge>> node_links(static_cast<std::size_t>(t.nodes()));
  std::vector<Edge> fabric_links;
  for (auto e : boost::make_iterator_range(boost::edges(g))) {
    if (inside_node(g, e))
      node_links[static_cast<std::size_t>(g[boost::source(e, g)].node)].push_back(e);
    else
      fabric_links.push_back(e);
  }
  out << "graph topocoll {\n"
         "  node [fontname=\"Helvetica\", fontsize=10];\n"
         "  edge [fontname=\"Helvetica\", fontsize=8];\n";
  // One cluster per node: its devices, then the links between them.
  for (int n = 0; n < t.nodes(); ++n) {
    out << fmt::format("  subgraph cluster_n{} {{\n    label={};\n", n,
                       dot_quoted(fmt::format("n{} ({})", n, t.node_model_name(n))));
    auto [first, last] = t.node_vertices(n);
    for (Vertex v = first; v < last; ++v) write_dot_device(t, v, "    ", out);
    for (Edge e : node_links[static_cast<std::size_t>(n)]) write_dot_link(t, e, "    ", out);
    out << "  }\n";
  }
  for (auto v : boost::make_iterator_range(boost::vertices(g)))
    if (g[v].node < 0) write_dot_device(t, v, "  ", out);
  for (Edge e : fabric_links) write_dot_link(t, e, "  ", out);
  out << "}\n";
}

nlohmann::json to_json(const Topology& t) {
  using nlohmann::json;
  const Graph& g = t.graph();
  json devices = json::array();
  for (auto v : boost::make_iterator_range(boost::vertices(g))) {
    const Device& d = g[v];
    devices.push_back({{"id", v},
                       {"name", t.device_name(v)},
                       {"kind", to_string(d.kind)},
                       {"node", d.node},
                       {"local", d.local_index},
                       {"numa", d.numa},
                       {"model", d.model >= 0 ? json(t.labels()[static_cast<std::size_t>(d.model)]) : json(nullptr)},
                       {"port_gbps", d.port_gbps},
                       {"sm", d.sm}});
  }
  json links = json::array();
  for (auto e : boost::make_iterator_range(boost::edges(g))) {
    const Link& l = g[e];
    links.push_back({{"a", boost::source(e, g)},
                     {"b", boost::target(e, g)},
                     {"kind", to_string(l.kind)},
                     {"bw_gbps", l.bw_gbps},
                     {"latency_us", l.latency_us},
                     {"lanes", l.lanes}});
    if (l.efficiency > 0.0) links.back()["efficiency"] = l.efficiency;  // a named transport's
  }
  json ranks = json::array();
  for (const RankInfo& r : t.ranks())
    ranks.push_back({{"rank", r.rank},
                     {"node", r.node},
                     {"local", r.local},
                     {"gpu", r.gpu},
                     {"nic", r.rail >= 0 ? json(r.nic) : json(nullptr)},
                     {"rail", r.rail}});
  json node_models = json::array();
  for (int n = 0; n < t.nodes(); ++n) node_models.push_back(t.node_model_name(n));
  json fabric = nullptr;
  if (const auto& f = t.fabric())
    fabric = {{"kind", to_string(f->kind)},
              {"oversubscription", f->oversubscription},
              {"radix", f->switch_radix},
              {"link_gbps", f->link_gbps},
              {"latency_us", f->latency_us}};
  // Only when set, so exports without them stay as they were.
  if (const auto& f = t.fabric()) {
    if (!f->transport.empty()) fabric["transport"] = f->transport;
    if (f->ecmp != EcmpMode::Hash) fabric["ecmp"] = std::string(to_string(f->ecmp));
    if (!f->pxn) fabric["pxn"] = false;
    if (f->kind == FabricKind::Dragonfly) {
      fabric["group_switches"] = f->group_switches;
      fabric["nics_per_switch"] = f->nics_per_switch;
      fabric["global_links"] = f->global_links;
    }
  }
  return {{"nodes", t.nodes()},
          {"node_models", node_models},
          {"cpu_vendor", t.cpu_vendor()},
          {"cores_per_node", t.cores_per_node()},
          {"devices", devices},
          {"links", links},
          {"ranks", ranks},
          {"fabric", fabric},
          {"notes", t.notes()}};
}

}  // namespace topocoll::topo
