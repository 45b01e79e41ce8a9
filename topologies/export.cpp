// Exports: Graphviz DOT, SimGrid platform XML, JSON.
//
// ============================ The SimGrid platform and what it simplifies =====================
//
//   <zone id="cluster" routing="DijkstraCache">     top zone
//     <zone id="links">      every <link> of the platform (see write_links_zone: load time)
//     <zone id="group0" routing="DijkstraCache">    the nodes whose first NIC is on one leaf
//       <zone id="n0" routing="Full">               one zone per node, routes written out:
//         <host>    GPUs and CPUs
//         <router>  PCIe switches, NVSwitches, NICs, and "n0/fabric" (the node's gateway)
//         <route>   every pair of hosts; every host to "n0/fabric"
//       </zone> ...
//       <zone id="group0/leaf"> <router id="leaf0"/> </zone>     the group's hub
//       <zoneRoute src="n0" dst="group0/leaf" gw_src="n0/fabric" gw_dst="leaf0"> n0/attach
//     </zone> ...
//     <zone id="spine-layer"> <router id="spines"/> </zone>
//     <zoneRoute src="group0" dst="spine-layer" gw_src="leaf0" gw_dst="spines"> leaf0--spines
//   </zone>
//
//             spines                     the spine layer, one router
//            /      \         <leaf>--spines: the summed uplinks of the leaves a group uses
//        leaf0      leaf2                hubs: each group's home leaf
//        /   \        |       n<i>/attach (latency 0)
//  n0/fabric n1/fabric n4/fabric         node gateways
//   /  |  \                   host -> gateway: the model path to the host's NIC, then that
//  nic0 nic1 ...              NIC's own link to its leaf: the rail is chosen inside the node
//
// Why this shape. SimGrid routes between two zones through ONE gateway pair per zone pair, so
// whatever nests inside a node zone, all its traffic to other nodes leaves through a single
// gateway; but a node has several NICs (rails), and which one a GPU uses depends on the GPU.
// So the rail stays inside the node zone: the route from a host to the node's gateway router
// "n<i>/fabric" is the model path to the host's NIC (a GPU's RankInfo::nic, a CPU's nearest NIC)
// followed by that NIC's link to its leaf. The gateway stands for "the fabric side of this
// node's NIC ports"; per-rail NIC links, their bandwidth and their contention are exact.
// Groups and hubs exist for SimGrid 3.32's routing: Dijkstra zones compose routes through a
// middle zone only when both routes meet it at the same gateway (a one-router hub), Floyd zones
// cost zones³ to set up (minutes at 2048 nodes), Full zones need every pair written out, and
// Star zones cannot be written in XML.
//
// What is simplified:
//  1. Each node has one link that is not in the model, "n<i>/attach", between its gateway and
//     its group's hub: SimGrid forbids an empty zone route. Its latency is 0 and its bandwidth
//     the sum of the node's NIC-to-leaf links, so it never limits more than the NICs do.
//  2. Fabric routing is per node, not per rail. Nodes are grouped by their home leaf (the leaf
//     of their first NIC). Two nodes of one group exchange traffic without crossing any
//     switch-to-switch link; two nodes of different groups cross the spine layer. That is
//     exact for same-rail traffic in a rail-fat-tree (one leaf inside a scalable unit, through
//     the spines across units), for single-switch, and for fat-tree when a node's NICs share a
//     leaf. It is NOT exact for cross-rail traffic inside one scalable unit of a rail-fat-tree:
//     the model goes leaf -> spine -> leaf (two more links, two fabric latencies more), the
//     platform stays on the leaves. Nodes with no NIC on the fabric are in no group: SimGrid
//     reports "No route" to them, as the model finds no path.
//  3. The spine layer is aggregated: one router, "spines"; each home leaf has one link
//     "<leaf>--spines" whose bandwidth is the sum of the spine uplinks of the leaves its group's
//     NICs use (a leaf shared by several groups is split in proportion to their NICs on it),
//     and whose latency is the leaf-spine latency. Flows between groups share the whole uplink
//     capacity (perfect ECMP / adaptive routing) over as many links as in the model, instead of
//     SimGrid pinning each leaf pair to one logical spine link. Other leaves, the spines and the
//     single leaf-spine edges are not in the platform (write_dot and to_json keep them).
//  4. NVSwitch planes are aggregated per GPU. A SimGrid route is a single path, while NVLink
//     hardware stripes a GPU pair's traffic over every NVSwitch plane (DGX-H100: 4 planes, a
//     path through one carries 125 of the GPU's 450 GB/s). So each GPU's NVLinks to NVSwitches
//     become one link "n<i>/gpu<k>--n<i>/nvswitches" (bandwidth: their sum; latency: theirs),
//     and every step GPU -> NVSwitch -> GPU of a route uses the two GPUs' ports. The single
//     GPU-NVSwitch edges are not in the platform; NVSwitch-NVSwitch and GPU-GPU NVLinks are.
//  5. Routes inside a node are the model's paths (find_path: widest, then fewest links, then
//     lowest latency) computed on the node alone, so that they never leave it through the
//     network. A route is declared once per pair of hosts, symmetrical: the way back uses the
//     same links with UP and DOWN swapped.
//  6. Host speeds are placeholders ("1Gf"): the simulator times reductions from its
//     calibration data, not from the platform.
//
// Cost with SimGrid 3.32, 2048 x DGX-H100 (20480 hosts, 38 MB of XML): load and seal take
// 4-20 s on a 2-core VM, 0.5 s at 512 nodes. Node zones are Full (tables the size of a node),
// groups and the top zone Dijkstra with cached shortest-path trees; nothing grows with ranks².
// What remains superlinear is SimGrid's own: sealing a zone scans every host of the platform
// (zones x hosts), and a link name is searched zone by zone from the top (hence the "links"
// zone first).

#include "topologies/export.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <ostream>
#include <unordered_map>

#include "common/errors.hpp"
#include "topologies/paths.hpp"

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

// Width and latency of a vertex path, over the widest edge between each pair of neighbours.
Path measured(const Graph& g, const std::vector<Vertex>& vertices) {
  Path p;
  if (vertices.empty()) return p;
  p.vertices = vertices;
  p.found = true;
  p.bw_gbps = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i + 1 < vertices.size(); ++i) {
    double widest = 0.0, latency = 0.0;
    for (auto e : boost::make_iterator_range(boost::out_edges(vertices[i], g)))
      if (boost::target(e, g) == vertices[i + 1] && g[e].bw_gbps > widest) {
        widest = g[e].bw_gbps;
        latency = g[e].latency_us;
      }
    p.bw_gbps = std::min(p.bw_gbps, widest);
    p.latency_us += latency;
  }
  return p;
}

// find_path's preference: wider, then fewer links, then lower latency.
bool nearer(const Path& a, const Path& b) {
  if (a.bw_gbps != b.bw_gbps) return a.bw_gbps > b.bw_gbps;
  if (a.hops() != b.hops()) return a.hops() < b.hops();
  return a.latency_us < b.latency_us;
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

// ---------------------------------------------------------------------------------------------
// SimGrid: names and directions of links

std::string xml_escaped(std::string_view text) {
  std::string escaped;
  for (char ch : text) {
    switch (ch) {
      case '&':
        escaped += "&amp;";
        break;
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      default:
        escaped += ch;
    }
  }
  return escaped;
}

struct LinkName {
  std::string id;
  Vertex first = 0;  // "UP" runs from this end
};

// One link of a route: which SimGrid link and which way.
struct RouteStep {
  const std::string* id = nullptr;
  bool up = true;
};

// An aggregated link that replaces several model edges: a GPU's NVLinks to all NVSwitches.
struct NvSwitchPort {
  LinkName name;
  double bw_gbps = 0.0;
  double latency_us = 0.0;
};

bool is_nvswitch_edge(const Graph& g, Edge e) {
  const DeviceKind a = g[boost::source(e, g)].kind, b = g[boost::target(e, g)].kind;
  return g[e].kind == LinkKind::NvLink &&
         ((a == DeviceKind::Gpu && b == DeviceKind::NvSwitch) || (a == DeviceKind::NvSwitch && b == DeviceKind::Gpu));
}

// The SimGrid name of every model edge: "<a>--<b>", "#2", "#3"... for parallel edges; and of
// every GPU's aggregated NVSwitch port, "n<i>/gpu<k>--n<i>/nvswitches".
class LinkNames {
 public:
  explicit LinkNames(const Topology& t) : g_(t.graph()) {
    std::unordered_map<std::string, int> uses;
    for (auto e : boost::make_iterator_range(boost::edges(g_))) {
      const Vertex a = boost::source(e, g_);
      std::string id = fmt::format("{}--{}", t.device_name(a), t.device_name(boost::target(e, g_)));
      const int n = ++uses[id];
      if (n > 1) id += fmt::format("#{}", n);
      names_.emplace(&g_[e], LinkName{std::move(id), a});
    }
    // Each GPU's NVLinks to NVSwitches, summed into one port (export.cpp, point 4).
    for (auto e : boost::make_iterator_range(boost::edges(g_))) {
      if (!is_nvswitch_edge(g_, e)) continue;
      const Vertex gpu = g_[boost::source(e, g_)].kind == DeviceKind::Gpu ? boost::source(e, g_) : boost::target(e, g_);
      auto [it, inserted] = ports_.try_emplace(gpu);
      if (inserted) it->second.name = {fmt::format("{}--n{}/nvswitches", t.device_name(gpu), g_[gpu].node), gpu};
      it->second.bw_gbps += g_[e].bw_gbps;
      it->second.latency_us = std::max(it->second.latency_us, g_[e].latency_us);
    }
  }

  const LinkName& of(Edge e) const { return names_.at(&g_[e]); }
  const NvSwitchPort* nvswitch_port(Vertex gpu) const {
    auto it = ports_.find(gpu);
    return it == ports_.end() ? nullptr : &it->second;
  }

  // Travelling from u to its neighbour w: over the GPU's NVSwitch port between a GPU and an
  // NVSwitch, else over their widest edge.
  RouteStep step(Vertex u, Vertex w) const {
    if (g_[u].kind == DeviceKind::Gpu && g_[w].kind == DeviceKind::NvSwitch) return {&ports_.at(u).name.id, true};
    if (g_[u].kind == DeviceKind::NvSwitch && g_[w].kind == DeviceKind::Gpu) return {&ports_.at(w).name.id, false};
    std::optional<Edge> widest;
    for (auto e : boost::make_iterator_range(boost::out_edges(u, g_)))
      if (boost::target(e, g_) == w && (!widest || g_[e].bw_gbps > g_[*widest].bw_gbps)) widest = e;
    TOPOCOLL_ASSERT(widest.has_value(), fmt::format("no edge between vertices {} and {}", u, w));
    const LinkName& name = of(*widest);
    return {&name.id, name.first == u};
  }

  std::vector<RouteStep> steps(const std::vector<Vertex>& path) const {
    std::vector<RouteStep> result;
    for (std::size_t i = 0; i + 1 < path.size(); ++i) result.push_back(step(path[i], path[i + 1]));
    return result;
  }

 private:
  const Graph& g_;
  std::unordered_map<const Link*, LinkName> names_;
  std::unordered_map<Vertex, NvSwitchPort> ports_;
};

// ---------------------------------------------------------------------------------------------
// SimGrid: paths inside one node

// find_path on a copy of a node standing alone (no fabric), so that a path between two devices
// of a node never leaves it through the network. Paths are found once per distinct node layout
// (nodes built from one NodeModel share them) and kept in node-local vertex numbers.
class NodePaths {
 public:
  explicit NodePaths(const Topology& t) : t_(t) {}

  // The path from a to b, both in node n (vertices of t); empty when the model has none.
  std::vector<Vertex> path(int n, Vertex a, Vertex b) {
    const Vertex first = t_.node_vertices(n).first;
    Layout& layout = layout_of(n);
    auto [it, inserted] = layout.paths.try_emplace({a - first, b - first});
    if (inserted) {
      const Path p = find_path(layout.alone, a - first, b - first);
      if (p.found) it->second = p.vertices;
    }
    std::vector<Vertex> result;
    for (Vertex v : it->second) result.push_back(v + first);
    return result;
  }

 private:
  struct Layout {
    Topology alone;
    std::map<std::pair<Vertex, Vertex>, std::vector<Vertex>> paths;
  };

  const Topology& t_;
  std::map<std::string, Layout> layouts_;  // by signature
  std::map<int, Layout*> layout_of_node_;

  // Everything find_path depends on: device kinds, and each edge's ends, kind, width, latency.
  std::string signature(int n) const {
    const Graph& g = t_.graph();
    auto [first, last] = t_.node_vertices(n);
    std::string s;
    for (Vertex v = first; v < last; ++v) fmt::format_to(std::back_inserter(s), "{},", static_cast<int>(g[v].kind));
    for (Vertex v = first; v < last; ++v)
      for (auto e : boost::make_iterator_range(boost::out_edges(v, g)))
        if (inside_node(g, e) && boost::target(e, g) > v)
          fmt::format_to(std::back_inserter(s), ";{}-{}:{}:{}:{}", v - first, boost::target(e, g) - first,
                         static_cast<int>(g[e].kind), g[e].bw_gbps, g[e].latency_us);
    return s;
  }

  Topology node_alone(int n) const {
    const Graph& g = t_.graph();
    auto [first, last] = t_.node_vertices(n);
    NodeModel m;
    m.name = t_.node_model_name(n);
    m.labels = t_.labels();
    for (Vertex v = first; v < last; ++v) boost::add_vertex(g[v], m.graph);
    for (Vertex v = first; v < last; ++v)
      for (auto e : boost::make_iterator_range(boost::out_edges(v, g)))
        if (inside_node(g, e) && boost::target(e, g) > v)
          boost::add_edge(v - first, boost::target(e, g) - first, g[e], m.graph);
    return Topology::build(m, 1, FabricSpec{});
  }

  Layout& layout_of(int n) {
    if (auto it = layout_of_node_.find(n); it != layout_of_node_.end()) return *it->second;
    std::string key = signature(n);
    auto it = layouts_.find(key);
    if (it == layouts_.end()) it = layouts_.emplace(std::move(key), Layout{node_alone(n), {}}).first;
    layout_of_node_[n] = &it->second;
    return it->second;
  }
};

// ---------------------------------------------------------------------------------------------
// SimGrid: the fabric as the platform sees it (pure)

struct Bundle {
  double bw_gbps = 0.0;
  double latency_us = 0.0;
};

// The nodes whose first NIC hangs on one leaf, their home leaf.
struct NodeGroup {
  Vertex leaf = 0;
  std::vector<int> nodes;
};

struct FabricPlan {
  std::vector<std::optional<Vertex>> home_leaf;  // per node; nullopt: no NIC on the fabric
  std::vector<double> attach_gbps;               // per node: sum of its NIC-to-leaf links
  std::vector<NodeGroup> groups;                 // by first use of their leaf
  std::vector<int> isolated;                     // nodes with no NIC on the fabric
  std::map<Vertex, Bundle> bundles;              // per home leaf; empty with one group
  std::unordered_map<Vertex, Edge> leaf_link_of_nic;
};

FabricPlan plan_fabric(const Topology& t) {
  const Graph& g = t.graph();
  FabricPlan plan;
  plan.home_leaf.resize(static_cast<std::size_t>(t.nodes()));
  plan.attach_gbps.resize(static_cast<std::size_t>(t.nodes()), 0.0);
  std::map<Vertex, int> nics_on_leaf;
  std::map<Vertex, std::map<Vertex, int>> group_nics_on_leaf;  // home leaf -> leaf -> NICs

  // Each NIC's link to its leaf; a node's home leaf is the leaf of its first NIC.
  for (int n = 0; n < t.nodes(); ++n) {
    auto [first, last] = t.node_vertices(n);
    std::vector<std::pair<Vertex, Vertex>> nic_leaves;
    for (Vertex v = first; v < last; ++v) {
      if (g[v].kind != DeviceKind::Nic) continue;
      for (auto e : boost::make_iterator_range(boost::out_edges(v, g))) {
        if (g[e].kind != LinkKind::Network) continue;
        plan.leaf_link_of_nic.emplace(v, e);
        plan.attach_gbps[static_cast<std::size_t>(n)] += g[e].bw_gbps;
        nic_leaves.emplace_back(v, boost::target(e, g));
        break;
      }
    }
    if (nic_leaves.empty()) {
      plan.isolated.push_back(n);
      continue;
    }
    const Vertex home = nic_leaves.front().second;
    plan.home_leaf[static_cast<std::size_t>(n)] = home;
    auto group =
        std::find_if(plan.groups.begin(), plan.groups.end(), [&](const NodeGroup& gr) { return gr.leaf == home; });
    if (group == plan.groups.end()) group = plan.groups.insert(plan.groups.end(), NodeGroup{home, {}});
    group->nodes.push_back(n);
    for (const auto& [nic, leaf] : nic_leaves) {
      ++nics_on_leaf[leaf];
      ++group_nics_on_leaf[home][leaf];
    }
  }
  if (plan.groups.size() < 2) return plan;

  // A group's bundle: its share of the spine uplinks of every leaf its NICs use.
  for (const NodeGroup& group : plan.groups) {
    const Vertex home = group.leaf;
    Bundle bundle;
    for (const auto& [leaf, nics] : group_nics_on_leaf[home]) {
      double uplink = 0.0;
      for (auto e : boost::make_iterator_range(boost::out_edges(leaf, g))) {
        if (g[boost::target(e, g)].kind != DeviceKind::SpineSwitch) continue;
        uplink += g[e].bw_gbps;
        bundle.latency_us = std::max(bundle.latency_us, g[e].latency_us);
      }
      bundle.bw_gbps += uplink * nics / nics_on_leaf[leaf];
    }
    TOPOCOLL_ASSERT(bundle.bw_gbps > 0.0, fmt::format("home leaf {} has no spine uplink", t.device_name(home)));
    plan.bundles.emplace(home, bundle);
  }
  return plan;
}

// ---------------------------------------------------------------------------------------------
// SimGrid: the writer

constexpr std::string_view kSpinesRouter = "spines";
constexpr std::string_view kSpineLayerZone = "spine-layer";
constexpr std::string_view kLinksZone = "links";
constexpr std::string_view kHostSpeed = "1Gf";

class PlatformWriter {
 public:
  PlatformWriter(const Topology& t, std::ostream& out)
      : t_(t), g_(t.graph()), out_(out), links_(t), paths_(t), plan_(plan_fabric(t)) {
    for (const RankInfo& r : t.ranks()) rank_of_gpu_.emplace(r.gpu, r);
  }

  void write() {
    out_ << "<?xml version='1.0'?>\n"
            "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
            "<platform version=\"4.1\">\n";
    out_ << fmt::format(
        "<!-- topocoll: {} nodes, {} ranks. Hosts and routers are topocoll device names; link\n"
        "     \"a--b\" is the model edge between a and b (UP: from a to b). See topologies/export.cpp. -->\n",
        t_.nodes(), t_.num_ranks());
    // The design's network model: CM02 without TCP window bound nor cross-traffic (SimGrid's
    // default LV08 multiplies latencies by ~13). A setting given on the command line wins.
    out_ << "<config>\n"
            "  <prop id=\"network/model\" value=\"CM02\"/>\n"
            "  <prop id=\"network/TCP-gamma\" value=\"0\"/>\n"
            "  <prop id=\"network/crosstraffic\" value=\"0\"/>\n"
            "</config>\n";
    // The top zone joins the groups through the spine layer, whose one router is the gateway of
    // every route there: Dijkstra composes that correctly. Nodes with no NIC on the fabric sit
    // in the top zone unrouted; Dijkstra would crash on them (no vertex), Floyd says "No route".
    open_zone("cluster", plan_.isolated.empty() ? "DijkstraCache" : "Floyd");
    write_links_zone();
    for (std::size_t k = 0; k < plan_.groups.size(); ++k) write_group_zone(k);
    for (int n : plan_.isolated) write_node_zone(n);
    if (!plan_.bundles.empty()) write_spine_layer();
    close_zone();
    out_ << "</platform>\n";
  }

 private:
  const Topology& t_;
  const Graph& g_;
  std::ostream& out_;
  LinkNames links_;
  NodePaths paths_;
  FabricPlan plan_;
  std::unordered_map<Vertex, RankInfo> rank_of_gpu_;
  int depth_ = 0;  // zone nesting, for indentation

  static std::string gateway_name(int n) { return fmt::format("n{}/fabric", n); }
  static std::string attach_name(int n) { return fmt::format("n{}/attach", n); }
  static std::string group_zone(std::size_t k) { return fmt::format("group{}", k); }
  static std::string group_hub_zone(std::size_t k) { return fmt::format("group{}/leaf", k); }
  std::string bundle_name(Vertex leaf) const { return fmt::format("{}--{}", t_.device_name(leaf), kSpinesRouter); }
  bool has_gateway(int n) const { return plan_.home_leaf[static_cast<std::size_t>(n)].has_value(); }
  std::string pad() const { return std::string(static_cast<std::size_t>(2 * depth_), ' '); }

  void open_zone(std::string_view id, std::string_view routing) {
    out_ << fmt::format("{}<zone id=\"{}\" routing=\"{}\">\n", pad(), xml_escaped(id), routing);
    ++depth_;
  }

  void close_zone() {
    --depth_;
    out_ << pad() << "</zone>\n";
  }

  void write_router(std::string_view id) { out_ << fmt::format("{}<router id=\"{}\"/>\n", pad(), xml_escaped(id)); }

  void write_link(std::string_view id, double bw_gbps, double latency_us) {
    out_ << fmt::format("{}<link id=\"{}\" bandwidth=\"{}GBps\" latency=\"{}us\" sharing_policy=\"SPLITDUPLEX\"/>\n",
                        pad(), xml_escaped(id), number(bw_gbps), number(latency_us));
  }

  void write_route(std::string_view src, std::string_view dst, const std::vector<RouteStep>& steps) {
    write_route_element("route", src, dst, steps, "");
  }

  void write_zone_route(std::string_view src, std::string_view dst, std::string_view gw_src, std::string_view gw_dst,
                        const std::string& link) {
    write_route_element("zoneRoute", src, dst, {RouteStep{&link, true}},
                        fmt::format(" gw_src=\"{}\" gw_dst=\"{}\"", xml_escaped(gw_src), xml_escaped(gw_dst)));
  }

  void write_route_element(std::string_view element, std::string_view src, std::string_view dst,
                           const std::vector<RouteStep>& steps, std::string_view gateways) {
    out_ << fmt::format("{}<{} src=\"{}\" dst=\"{}\"{}>", pad(), element, xml_escaped(src), xml_escaped(dst), gateways);
    for (const RouteStep& s : steps)
      out_ << fmt::format("<link_ctn id=\"{}\" direction=\"{}\"/>", xml_escaped(*s.id), s.up ? "UP" : "DOWN");
    out_ << fmt::format("</{}>\n", element);
  }

  void write_host(Vertex v) {
    const Device& d = g_[v];
    out_ << fmt::format("{}<host id=\"{}\" speed=\"{}\">", pad(), xml_escaped(t_.device_name(v)), kHostSpeed);
    auto prop = [&](std::string_view id, const std::string& value) {
      out_ << fmt::format("<prop id=\"{}\" value=\"{}\"/>", id, xml_escaped(value));
    };
    prop("kind", std::string(to_string(d.kind)));
    prop("node", std::to_string(d.node));
    prop("local", std::to_string(d.local_index));
    prop("numa", std::to_string(d.numa));
    if (auto r = rank_of_gpu_.find(v); r != rank_of_gpu_.end()) prop("rank", std::to_string(r->second.rank));
    if (d.model >= 0) prop("model", t_.labels()[static_cast<std::size_t>(d.model)]);
    if (d.sm > 0) prop("sm", std::to_string(d.sm));
    out_ << "</host>\n";
  }

  static bool is_host(const Device& d) { return d.kind == DeviceKind::Gpu || d.kind == DeviceKind::Cpu; }

  // The NIC a host reaches the fabric through: a GPU's rail; for a CPU, its nearest NIC on the
  // fabric (find_path's order: widest, then fewest links, then lowest latency).
  std::optional<Vertex> nic_of_host(int n, Vertex host) {
    if (auto r = rank_of_gpu_.find(host); r != rank_of_gpu_.end())
      return r->second.rail >= 0 ? std::optional<Vertex>(r->second.nic) : std::nullopt;
    std::optional<Vertex> best;
    Path best_path;
    auto [first, last] = t_.node_vertices(n);
    // Every NIC of the node that has a link to a leaf is a candidate.
    for (Vertex v = first; v < last; ++v) {
      if (!plan_.leaf_link_of_nic.contains(v)) continue;
      const Path candidate = measured(g_, paths_.path(n, host, v));
      if (candidate.found && (!best || nearer(candidate, best_path))) {
        best = v;
        best_path = candidate;
      }
    }
    return best;
  }

  // The nodes of one home leaf around a hub zone holding only that leaf: every route of this
  // Dijkstra zone meets the others at the same gateway (the leaf), the one case SimGrid 3.32's
  // Dijkstra zones compose correctly.
  void write_group_zone(std::size_t k) {
    const NodeGroup& group = plan_.groups[k];
    const std::string leaf = t_.device_name(group.leaf);
    open_zone(group_zone(k), "DijkstraCache");
    for (int n : group.nodes) write_node_zone(n);
    open_zone(group_hub_zone(k), "Full");
    write_router(leaf);
    close_zone();
    for (int n : group.nodes)
      write_zone_route(fmt::format("n{}", n), group_hub_zone(k), gateway_name(n), leaf, attach_name(n));
    close_zone();
  }

  // Every link, declared in a zone of its own, the first one, before any other zone: SimGrid
  // 3.32 finds a link by name (and checks a new name is free) by searching the zone tree from
  // the top, zone by zone. With links inside node zones, loading 2048 nodes took 100 s; here
  // every search ends in the first zone searched.
  void write_links_zone() {
    open_zone(kLinksZone, "Full");
    for (int n = 0; n < t_.nodes(); ++n) write_node_links(n);
    write_bundles();
    close_zone();
  }

  // Each home leaf's bundle of uplinks to the aggregated spine layer.
  void write_bundles() {
    for (const NodeGroup& group : plan_.groups) {
      if (!plan_.bundles.contains(group.leaf)) continue;
      const Bundle& b = plan_.bundles.at(group.leaf);
      write_link(bundle_name(group.leaf), b.bw_gbps, b.latency_us);
    }
  }

  // The aggregated spine layer, one router, and each group's route to it.
  void write_spine_layer() {
    open_zone(kSpineLayerZone, "Full");
    write_router(kSpinesRouter);
    close_zone();
    for (std::size_t k = 0; k < plan_.groups.size(); ++k) {
      const Vertex leaf = plan_.groups[k].leaf;
      write_zone_route(group_zone(k), kSpineLayerZone, t_.device_name(leaf), kSpinesRouter, bundle_name(leaf));
    }
  }

  void write_node_zone(int n) {
    auto [first, last] = t_.node_vertices(n);
    open_zone(fmt::format("n{}", n), "Full");
    std::vector<Vertex> hosts;
    // Devices: GPUs and CPUs are hosts, the rest routers.
    for (Vertex v = first; v < last; ++v) {
      if (is_host(g_[v])) {
        write_host(v);
        hosts.push_back(v);
      } else {
        write_router(t_.device_name(v));
      }
    }
    if (has_gateway(n)) write_router(gateway_name(n));
    // Every pair of hosts, once: the reverse direction is the symmetrical route.
    for (std::size_t i = 0; i < hosts.size(); ++i)
      for (std::size_t j = i + 1; j < hosts.size(); ++j) {
        const std::vector<Vertex> p = paths_.path(n, hosts[i], hosts[j]);
        if (p.empty()) {
          out_ << fmt::format("{}<!-- no path in the model from {} to {} -->\n", pad(), t_.device_name(hosts[i]),
                              t_.device_name(hosts[j]));
          continue;
        }
        write_route(t_.device_name(hosts[i]), t_.device_name(hosts[j]), links_.steps(p));
      }
    if (has_gateway(n))
      for (Vertex host : hosts) write_gateway_route(n, host);
    close_zone();
  }

  // Links inside the node (GPU-NVSwitch NVLinks as one port per GPU), its NICs' links to their
  // leaves, and its attach link.
  void write_node_links(int n) {
    auto [first, last] = t_.node_vertices(n);
    for (Vertex v = first; v < last; ++v) {
      if (const NvSwitchPort* port = links_.nvswitch_port(v))
        write_link(port->name.id, port->bw_gbps, port->latency_us);
      for (auto e : boost::make_iterator_range(boost::out_edges(v, g_))) {
        const Vertex w = boost::target(e, g_);
        const bool internal_once = inside_node(g_, e) && links_.of(e).first == v && !is_nvswitch_edge(g_, e);
        const bool to_fabric = g_[w].node < 0;
        if (internal_once || to_fabric) write_link(links_.of(e).id, g_[e].bw_gbps, g_[e].latency_us);
      }
    }
    if (has_gateway(n)) write_link(attach_name(n), plan_.attach_gbps[static_cast<std::size_t>(n)], 0.0);
  }

  void write_gateway_route(int n, Vertex host) {
    const std::optional<Vertex> nic = nic_of_host(n, host);
    std::vector<Vertex> p = nic ? paths_.path(n, host, *nic) : std::vector<Vertex>{};
    if (p.empty()) {
      out_ << fmt::format("{}<!-- {} reaches no NIC: no route to the fabric -->\n", pad(), t_.device_name(host));
      return;
    }
    std::vector<RouteStep> steps = links_.steps(p);
    const LinkName& leaf_link = links_.of(plan_.leaf_link_of_nic.at(*nic));
    steps.push_back({&leaf_link.id, leaf_link.first == *nic});
    write_route(t_.device_name(host), gateway_name(n), steps);
  }
};

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

void write_simgrid_platform(const Topology& t, std::ostream& out) {
  PlatformWriter(t, out).write();
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
