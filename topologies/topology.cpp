#include "topologies/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/errors.hpp"
#include "topologies/constants.hpp"
#include "topologies/transports.hpp"

namespace topocoll::topo {

std::string_view to_string(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::Gpu:
      return "gpu";
    case DeviceKind::Cpu:
      return "cpu";
    case DeviceKind::PcieSwitch:
      return "pcie_switch";
    case DeviceKind::NvSwitch:
      return "nvswitch";
    case DeviceKind::Nic:
      return "nic";
    case DeviceKind::LeafSwitch:
      return "leaf";
    case DeviceKind::SpineSwitch:
      return "spine";
  }
  return "?";
}

std::string_view to_string(LinkKind kind) {
  switch (kind) {
    case LinkKind::NvLink:
      return "nvlink";
    case LinkKind::Pcie:
      return "pcie";
    case LinkKind::C2C:
      return "c2c";
    case LinkKind::InterSocket:
      return "inter_socket";
    case LinkKind::Network:
      return "network";
  }
  return "?";
}

std::string_view to_string(FabricKind kind) {
  switch (kind) {
    case FabricKind::SingleSwitch:
      return "single-switch";
    case FabricKind::RailFatTree:
      return "rail-fat-tree";
    case FabricKind::FatTree:
      return "fat-tree";
    case FabricKind::MultiPlane:
      return "multi-plane";
    case FabricKind::Dragonfly:
      return "dragonfly";
  }
  return "?";
}

FabricKind parse_fabric(std::string_view name) {
  for (FabricKind k : {FabricKind::SingleSwitch, FabricKind::RailFatTree, FabricKind::FatTree, FabricKind::MultiPlane,
                       FabricKind::Dragonfly})
    if (to_string(k) == name) return k;
  throw InputError(fmt::format(
      "unknown fabric '{}': expected one of single-switch, rail-fat-tree, fat-tree, multi-plane, dragonfly", name));
}

std::string_view to_string(EcmpMode mode) {
  return mode == EcmpMode::Hash ? "hash" : "ideal";
}

EcmpMode parse_ecmp(std::string_view name) {
  if (name == "hash") return EcmpMode::Hash;
  if (name == "ideal") return EcmpMode::Ideal;
  throw InputError(fmt::format("unknown ECMP mode '{}': expected hash or ideal", name));
}

// ---------------------------------------------------------------------------------------------
// NodeModel

Vertex NodeModel::add_device(DeviceKind kind, int numa, int model) {
  Device d;
  d.kind = kind;
  d.node = 0;
  d.local_index = static_cast<std::int32_t>(count(kind));
  d.numa = numa;
  d.model = model;
  return boost::add_vertex(d, graph);
}

Vertex NodeModel::add_nic(int numa, double port_gbps, int model) {
  Vertex v = add_device(DeviceKind::Nic, numa, model);
  graph[v].port_gbps = port_gbps;
  return v;
}

Vertex NodeModel::add_gpu(int numa, int sm, int model) {
  Vertex v = add_device(DeviceKind::Gpu, numa, model);
  graph[v].sm = sm;
  return v;
}

void NodeModel::add_link(Vertex a, Vertex b, LinkKind kind, double bw_gbps, double latency_us, int lanes) {
  TOPOCOLL_ASSERT(a != b, fmt::format("self link on vertex {}", a));
  TOPOCOLL_ASSERT(bw_gbps > 0.0, fmt::format("link bandwidth {} <= 0", bw_gbps));
  Link l;
  l.kind = kind;
  l.bw_gbps = bw_gbps;
  l.latency_us = latency_us;
  l.lanes = lanes;
  boost::add_edge(a, b, l, graph);
}

int NodeModel::label(std::string_view name) {
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (labels[i] == name) return static_cast<int>(i);
  labels.emplace_back(name);
  return static_cast<int>(labels.size() - 1);
}

std::size_t NodeModel::count(DeviceKind kind) const {
  std::size_t n = 0;
  for (auto v : boost::make_iterator_range(boost::vertices(graph)))
    if (graph[v].kind == kind) ++n;
  return n;
}

// ---------------------------------------------------------------------------------------------
// Fabric construction.
//
// The fabric joins the NICs of all nodes. Switches have `switch_radix` ports. A leaf gives
// `down` ports to NICs and down/R of port bandwidth to the spines (R = oversubscription):
// down = floor(radix * R / (R + 1)). Spines are modelled as `spines = ceil(down / R)` logical
// switches, each linked to every leaf by one aggregated link of (down * port_rate / R) / spines.
// A logical spine may stand for a group of physical switches: no radix limit is enforced on
// spines, so the core is non-blocking and R alone sets the oversubscription.
//
//   single-switch   every NIC -> one switch (an ideal non-blocking network)
//
//   rail-fat-tree   nodes are grouped into scalable units of `down` nodes; in each unit,
//                   rail r's NICs share leaf (unit, r). Traffic between nodes of one unit on
//                   the same rail never leaves its leaf.
//
//        spine0    spine1   ...
//        /  |  \   /  |  \
//   leaf(u0,r0) leaf(u0,r1) ... leaf(u1,r0) ...
//     |  |  |      |  |  |
//   n0.nic0 … n31.nic0   n0.nic1 … n31.nic1
//
//   fat-tree        NICs in node order fill leaves `down` ports at a time, regardless of rail
//                   (a node's NICs share a leaf when they fit).
//
//   multi-plane     one rail-fat-tree per rail ("plane"), each with spines of its own: NIC r of
//                   every node is on plane r, and planes never meet (a transfer between rails
//                   must change rail inside a node, over NVLink: PXN). Switches carry their
//                   plane in Device::group.
//
//   dragonfly       switches of `nics_per_switch` NIC ports (filled in node order like a
//                   fat-tree's leaves) in groups of `group_switches`; the switches of a group are
//                   joined all-to-all by one link each, and every pair of groups by
//                   `global_links` links, each between its own pair of switches (link k of groups
//                   (g, h) leaves g's switch (h + k) mod |g| and lands on h's switch (g + k) mod
//                   |h|). Switches are LeafSwitch devices with their group in Device::group; no
//                   spines. Routing is minimal (simulator/routes.cpp): local, global, local.
//
// ECMP ideal (FabricSpec::ecmp) aggregates every set of equal-cost links into one of their summed
// rate: the spine layer becomes one logical spine, and a group pair's global links one link.
namespace {

Link make_link(LinkKind kind, double bw, double lat, int lanes = 0, double efficiency = 0.0) {
  Link l;
  l.kind = kind;
  l.bw_gbps = bw;
  l.latency_us = lat;
  l.lanes = lanes;
  l.efficiency = efficiency;
  return l;
}

Vertex add_switch(Graph& g, DeviceKind kind, int index, int group = -1) {
  Device d;
  d.kind = kind;
  d.node = -1;
  d.local_index = index;
  d.group = group;
  return boost::add_vertex(d, g);
}

void build_fabric(Graph& g, const FabricSpec& spec, const std::vector<std::vector<Vertex>>& nics_by_node) {
  const TransportProfile* transport = spec.transport.empty() ? nullptr : &find_transport(spec.transport);
  const double latency = spec.latency_us > 0.0 ? spec.latency_us
                         : transport           ? transport->hop_latency_us
                                               : constants::kNetworkLinkLatencyUs;
  const double efficiency = transport ? transport->efficiency : 0.0;  // 0: the calibration's
  auto network = [&](double bw) { return make_link(LinkKind::Network, bw, latency, 0, efficiency); };
  std::size_t total_nics = 0;
  double max_port = 0.0;
  for (const auto& nics : nics_by_node) {
    total_nics += nics.size();
    for (Vertex nic : nics) max_port = std::max(max_port, g[nic].port_gbps);
  }
  if (total_nics == 0) return;
  const double port_rate = spec.link_gbps > 0.0 ? spec.link_gbps : max_port;

  auto connect_nic = [&](Vertex nic, Vertex leaf) {
    // A NIC runs at its own port rate; a faster switch port does not speed it up.
    boost::add_edge(nic, leaf, network(std::min(g[nic].port_gbps, port_rate)), g);
  };

  if (spec.kind == FabricKind::SingleSwitch) {
    Vertex sw = add_switch(g, DeviceKind::LeafSwitch, 0);
    for (const auto& nics : nics_by_node)
      for (Vertex nic : nics) connect_nic(nic, sw);
    return;
  }

  std::vector<Vertex> leaves;
  auto leaf_at = [&](std::size_t index, int group = -1) {
    while (leaves.size() <= index)
      leaves.push_back(add_switch(g, DeviceKind::LeafSwitch, static_cast<int>(leaves.size()), group));
    return leaves[index];
  };
  // NICs in node order, `per` ports a switch; a node's NICs share a switch when they fit.
  auto fill = [&](std::size_t per) {
    std::size_t port = 0;
    for (const auto& nics : nics_by_node) {
      const std::size_t left = per - port % per;
      if (nics.size() <= per && nics.size() > left) port += left;
      for (Vertex nic : nics) {
        connect_nic(nic, leaf_at(port / per));
        ++port;
      }
    }
  };

  if (spec.kind == FabricKind::Dragonfly) {
    const int radix = spec.switch_radix;
    const std::size_t per =
        static_cast<std::size_t>(spec.nics_per_switch > 0 ? spec.nics_per_switch : std::max(1, radix / 4));
    const std::size_t a =
        static_cast<std::size_t>(spec.group_switches > 0 ? spec.group_switches : std::max(1, radix / 2));
    fill(per);
    const std::size_t groups = (leaves.size() + a - 1) / a;
    auto size_of = [&](std::size_t grp) { return std::min(a, leaves.size() - grp * a); };
    for (std::size_t i = 0; i < leaves.size(); ++i) g[leaves[i]].group = static_cast<std::int32_t>(i / a);
    for (std::size_t grp = 0; grp < groups; ++grp)
      for (std::size_t i = 0; i < size_of(grp); ++i)
        for (std::size_t j = i + 1; j < size_of(grp); ++j)
          boost::add_edge(leaves[grp * a + i], leaves[grp * a + j], network(port_rate), g);
    const int links = spec.ecmp == EcmpMode::Ideal ? 1 : spec.global_links;
    const double rate = spec.ecmp == EcmpMode::Ideal ? spec.global_links * port_rate : port_rate;
    for (std::size_t x = 0; x < groups; ++x)
      for (std::size_t y = x + 1; y < groups; ++y)
        for (int k = 0; k < links; ++k) {
          const Vertex u = leaves[x * a + (y + static_cast<std::size_t>(k)) % size_of(x)];
          const Vertex v = leaves[y * a + (x + static_cast<std::size_t>(k)) % size_of(y)];
          // A group smaller than global_links puts two global links on one switch pair: one
          // link of their summed rate (a bundle), as routing sees one edge per switch pair.
          if (auto [e, found] = boost::edge(u, v, g); found)
            g[e].bw_gbps += rate;
          else
            boost::add_edge(u, v, network(rate), g);
        }
    return;
  }

  const double r = spec.oversubscription;
  const int down = std::max(1, static_cast<int>(std::floor(spec.switch_radix * r / (r + 1.0))));

  std::size_t rails = 0;
  for (const auto& nics : nics_by_node) rails = std::max(rails, nics.size());
  const std::size_t units = (nics_by_node.size() + static_cast<std::size_t>(down) - 1) / static_cast<std::size_t>(down);
  if (spec.kind == FabricKind::RailFatTree || spec.kind == FabricKind::MultiPlane) {
    const bool planes = spec.kind == FabricKind::MultiPlane;
    for (std::size_t n = 0; n < nics_by_node.size(); ++n) {
      const std::size_t unit = n / static_cast<std::size_t>(down);
      for (std::size_t rail = 0; rail < nics_by_node[n].size(); ++rail) {
        // Multi-plane: plane by plane (rail-major), so a plane's leaves are consecutive.
        const std::size_t index = planes ? rail * units + unit : unit * rails + rail;
        connect_nic(nics_by_node[n][rail], leaf_at(index, planes ? static_cast<int>(rail) : -1));
      }
    }
    if (planes)
      for (std::size_t i = 0; i < leaves.size(); ++i) g[leaves[i]].group = static_cast<std::int32_t>(i / units);
  } else {  // FatTree
    fill(static_cast<std::size_t>(down));
  }

  const int spines = spec.ecmp == EcmpMode::Ideal ? 1 : std::max(1, static_cast<int>(std::ceil(down / r)));
  const double uplink_total = down * port_rate / r;
  const double per_spine = uplink_total / spines;
  auto spine_layer = [&](const std::vector<Vertex>& of_leaves, int group) {
    if (of_leaves.size() < 2) return;  // one leaf: no spine layer needed
    std::vector<Vertex> spine_vertices;
    for (int s = 0; s < spines; ++s) spine_vertices.push_back(add_switch(g, DeviceKind::SpineSwitch, s, group));
    for (Vertex leaf : of_leaves)
      for (Vertex spine : spine_vertices) boost::add_edge(leaf, spine, network(per_spine), g);
  };
  if (spec.kind == FabricKind::MultiPlane) {
    int spine_index = 0;
    for (std::size_t plane = 0; plane < rails; ++plane) {
      std::vector<Vertex> of_plane;
      for (Vertex leaf : leaves)
        if (g[leaf].group == static_cast<int>(plane)) of_plane.push_back(leaf);
      const std::size_t before = boost::num_vertices(g);
      spine_layer(of_plane, static_cast<int>(plane));
      for (Vertex v = before; v < boost::num_vertices(g); ++v) g[v].local_index = spine_index++;
    }
  } else {
    const std::size_t before = boost::num_vertices(g);
    spine_layer(leaves, -1);
    for (Vertex v = before; v < boost::num_vertices(g); ++v) g[v].local_index = static_cast<int>(v - before);
  }
}

// The NICs of every GPU in one node, by rounds: in each round every GPU takes the NIC with the
// fewest PCIe hops (same switch first) that it does not have yet, ties broken by the NIC serving
// the fewest GPUs so far (rails balance). floor(NICs / GPUs) rounds, at least one: a node with one
// NIC per GPU gives each its nearest, one with 16 NICs on 8 GPUs two each. Returns the NIC lists
// indexed by local GPU (the first round's NIC first), or empty lists when the node has no NIC.
std::vector<std::vector<Vertex>> nearest_nics(const Graph& g, const std::vector<Vertex>& gpus,
                                              const std::vector<Vertex>& nics, Vertex first, Vertex last) {
  std::vector<std::vector<Vertex>> result(gpus.size());
  if (nics.empty()) return result;
  // BFS from each GPU over non-NVLink links inside the node, not crossing other GPUs.
  const std::size_t n = last - first;
  std::vector<std::vector<int>> dist(gpus.size(), std::vector<int>(n, -1));
  std::vector<Vertex> queue;
  for (std::size_t gi = 0; gi < gpus.size(); ++gi) {
    const Vertex gpu = gpus[gi];
    std::vector<int>& d = dist[gi];
    queue.clear();
    queue.push_back(gpu);
    d[gpu - first] = 0;
    for (std::size_t head = 0; head < queue.size(); ++head) {
      Vertex u = queue[head];
      if (u != gpu && g[u].kind == DeviceKind::Gpu) continue;
      for (auto e : boost::make_iterator_range(boost::out_edges(u, g))) {
        if (g[e].kind == LinkKind::NvLink || g[e].kind == LinkKind::Network) continue;
        Vertex w = boost::target(e, g);
        if (w < first || w >= last || d[w - first] >= 0) continue;
        d[w - first] = d[u - first] + 1;
        queue.push_back(w);
      }
    }
  }
  std::vector<int> load(nics.size(), 0);
  const std::size_t rounds = gpus.empty() ? 1 : std::max<std::size_t>(1, nics.size() / gpus.size());
  for (std::size_t round = 0; round < rounds; ++round)
    for (std::size_t gi = 0; gi < gpus.size(); ++gi) {
      auto taken = [&](std::size_t i) {
        return std::find(result[gi].begin(), result[gi].end(), nics[i]) != result[gi].end();
      };
      std::size_t best = nics.size();
      for (std::size_t i = 0; i < nics.size(); ++i) {
        int d = dist[gi][nics[i] - first];
        if (d < 0 || taken(i)) continue;
        if (best == nics.size()) {
          best = i;
          continue;
        }
        int bd = dist[gi][nics[best] - first];
        if (d < bd || (d == bd && load[i] < load[best])) best = i;
      }
      if (best == nics.size()) {
        if (round > 0) continue;  // no further NIC reachable
        best = 0;                 // no PCIe route: use NIC 0 (diagnostics report it)
      }
      ++load[best];
      result[gi].push_back(nics[best]);
    }
  return result;
}

}  // namespace

Topology Topology::build(const NodeModel& model, int nodes, const FabricSpec& fabric) {
  if (nodes < 1 || nodes > kMaxNodes)
    throw InputError(fmt::format("--nodes {}: expected a node count from 1 to {}", nodes, kMaxNodes));
  std::vector<const NodeModel*> models(static_cast<std::size_t>(nodes), &model);
  return build(models, fabric);
}

Topology Topology::build(const std::vector<const NodeModel*>& node_models, const FabricSpec& fabric) {
  const int nodes = static_cast<int>(node_models.size());
  if (nodes < 1 || nodes > kMaxNodes)
    throw InputError(fmt::format("--nodes {}: expected a node count from 1 to {}", nodes, kMaxNodes));
  if (!(fabric.oversubscription >= 1.0) || !std::isfinite(fabric.oversubscription))
    throw InputError(
        fmt::format("--oversubscription {}: expected a ratio >= 1 (1 = non-blocking)", fabric.oversubscription));
  if (fabric.switch_radix < 2)
    throw InputError(fmt::format("switch_radix {}: expected at least 2 ports", fabric.switch_radix));
  const TransportProfile* transport = fabric.transport.empty() ? nullptr : &find_transport(fabric.transport);
  if (fabric.group_switches < 0 || fabric.nics_per_switch < 0)
    throw InputError(fmt::format("dragonfly group_switches {} / nics_per_switch {}: expected counts >= 1 (0 = default)",
                                 fabric.group_switches, fabric.nics_per_switch));
  if (fabric.kind == FabricKind::Dragonfly) {
    const int a = fabric.group_switches > 0 ? fabric.group_switches : std::max(1, fabric.switch_radix / 2);
    if (fabric.global_links < 1 || fabric.global_links > a)
      throw InputError(fmt::format(
          "dragonfly global_links {}: expected 1 to {} (the switches of a group: each global link of a group "
          "pair has its own switch)",
          fabric.global_links, a));
  }

  Topology t;
  t.nodes_ = nodes;
  t.cpu_vendor_ = node_models.front()->cpu_vendor;
  t.cores_per_node_ = node_models.front()->cores;

  std::vector<std::vector<Vertex>> nics_by_node(static_cast<std::size_t>(nodes));
  const NodeModel* previous = nullptr;
  std::vector<int> label_map;
  for (int n = 0; n < nodes; ++n) {
    const NodeModel& m = *node_models[static_cast<std::size_t>(n)];
    if (&m != previous) {
      label_map.clear();
      for (const std::string& l : m.labels) {
        auto it = std::find(t.labels_.begin(), t.labels_.end(), l);
        if (it == t.labels_.end()) {
          t.labels_.push_back(l);
          label_map.push_back(static_cast<int>(t.labels_.size() - 1));
        } else
          label_map.push_back(static_cast<int>(it - t.labels_.begin()));
      }
      for (const std::string& note : m.notes)
        if (std::find(t.notes_.begin(), t.notes_.end(), note) == t.notes_.end()) t.notes_.push_back(note);
      previous = &m;
    }
    t.model_names_.push_back(m.name);
    const Vertex base = boost::num_vertices(t.graph_);
    t.node_first_.push_back(base);
    std::vector<Vertex> gpus;
    for (auto v : boost::make_iterator_range(boost::vertices(m.graph))) {
      Device d = m.graph[v];
      d.node = n;
      // A named transport is the NICs' technology: its port rate (0: the node's own).
      if (d.kind == DeviceKind::Nic && transport && transport->port_gbps > 0.0) d.port_gbps = transport->port_gbps;
      if (d.model >= 0) d.model = label_map[static_cast<std::size_t>(d.model)];
      Vertex nv = boost::add_vertex(d, t.graph_);
      if (d.kind == DeviceKind::Gpu) gpus.push_back(nv);
      if (d.kind == DeviceKind::Nic) nics_by_node[static_cast<std::size_t>(n)].push_back(nv);
    }
    for (auto e : boost::make_iterator_range(boost::edges(m.graph)))
      boost::add_edge(base + boost::source(e, m.graph), base + boost::target(e, m.graph), m.graph[e], t.graph_);

    const Vertex last = boost::num_vertices(t.graph_);
    const auto& nics = nics_by_node[static_cast<std::size_t>(n)];
    std::vector<std::vector<Vertex>> nic_of = nearest_nics(t.graph_, gpus, nics, base, last);
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      RankInfo ri;
      ri.rank = static_cast<int>(t.ranks_.size());
      ri.node = n;
      ri.local = static_cast<int>(i);
      ri.gpu = gpus[i];
      if (!nic_of[i].empty()) {
        ri.nic = nic_of[i].front();
        ri.rail = t.graph_[ri.nic].local_index;
        ri.nics = nic_of[i];
      }
      t.ranks_.push_back(ri);
    }
  }
  t.node_first_.push_back(boost::num_vertices(t.graph_));
  if (nodes > 1) {
    build_fabric(t.graph_, fabric, nics_by_node);
    t.fabric_ = fabric;
  }
  return t;
}

int Topology::gpus_per_node(int node) const {
  auto [first, last] = node_vertices(node);
  int n = 0;
  for (Vertex v = first; v < last; ++v)
    if (graph_[v].kind == DeviceKind::Gpu) ++n;
  return n;
}

const std::string& Topology::node_model_name(int node) const {
  return model_names_.at(static_cast<std::size_t>(node));
}

std::pair<Vertex, Vertex> Topology::node_vertices(int n) const {
  TOPOCOLL_ASSERT(n >= 0 && n < nodes_, fmt::format("node {} of {}", n, nodes_));
  return {node_first_[static_cast<std::size_t>(n)], node_first_[static_cast<std::size_t>(n) + 1]};
}

std::size_t Topology::count(DeviceKind kind) const {
  std::size_t n = 0;
  for (auto v : boost::make_iterator_range(boost::vertices(graph_)))
    if (graph_[v].kind == kind) ++n;
  return n;
}

std::size_t Topology::count(LinkKind kind) const {
  std::size_t n = 0;
  for (auto e : boost::make_iterator_range(boost::edges(graph_)))
    if (graph_[e].kind == kind) ++n;
  return n;
}

std::string Topology::device_name(Vertex v) const {
  const Device& d = graph_[v];
  if (d.node < 0) return fmt::format("{}{}", to_string(d.kind), d.local_index);
  return fmt::format("n{}/{}{}", d.node, to_string(d.kind), d.local_index);
}

std::optional<Vertex> Topology::find_device(std::string_view name) const {
  for (auto v : boost::make_iterator_range(boost::vertices(graph_)))
    if (device_name(v) == name) return v;
  return std::nullopt;
}

}  // namespace topocoll::topo
