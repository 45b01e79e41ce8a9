#include "topologies/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/errors.hpp"
#include "topologies/constants.hpp"

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
  }
  return "?";
}

FabricKind parse_fabric(std::string_view name) {
  for (FabricKind k : {FabricKind::SingleSwitch, FabricKind::RailFatTree, FabricKind::FatTree})
    if (to_string(k) == name) return k;
  throw InputError(fmt::format("unknown fabric '{}': expected one of single-switch, rail-fat-tree, fat-tree", name));
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
namespace {

Link make_link(LinkKind kind, double bw, double lat, int lanes = 0) {
  Link l;
  l.kind = kind;
  l.bw_gbps = bw;
  l.latency_us = lat;
  l.lanes = lanes;
  return l;
}

Vertex add_switch(Graph& g, DeviceKind kind, int index) {
  Device d;
  d.kind = kind;
  d.node = -1;
  d.local_index = index;
  return boost::add_vertex(d, g);
}

void build_fabric(Graph& g, const FabricSpec& spec, const std::vector<std::vector<Vertex>>& nics_by_node) {
  const double latency = spec.latency_us > 0.0 ? spec.latency_us : constants::kNetworkLinkLatencyUs;
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
    boost::add_edge(nic, leaf, make_link(LinkKind::Network, std::min(g[nic].port_gbps, port_rate), latency), g);
  };

  if (spec.kind == FabricKind::SingleSwitch) {
    Vertex sw = add_switch(g, DeviceKind::LeafSwitch, 0);
    for (const auto& nics : nics_by_node)
      for (Vertex nic : nics) connect_nic(nic, sw);
    return;
  }

  const double r = spec.oversubscription;
  const int down = std::max(1, static_cast<int>(std::floor(spec.switch_radix * r / (r + 1.0))));
  std::vector<Vertex> leaves;
  auto leaf_at = [&](std::size_t index) {
    while (leaves.size() <= index)
      leaves.push_back(add_switch(g, DeviceKind::LeafSwitch, static_cast<int>(leaves.size())));
    return leaves[index];
  };

  if (spec.kind == FabricKind::RailFatTree) {
    std::size_t rails = 0;
    for (const auto& nics : nics_by_node) rails = std::max(rails, nics.size());
    for (std::size_t n = 0; n < nics_by_node.size(); ++n) {
      const std::size_t unit = n / static_cast<std::size_t>(down);
      for (std::size_t rail = 0; rail < nics_by_node[n].size(); ++rail)
        connect_nic(nics_by_node[n][rail], leaf_at(unit * rails + rail));
    }
  } else {  // FatTree
    std::size_t port = 0;
    for (const auto& nics : nics_by_node) {
      // Keep a node's NICs on one leaf when they fit in what is left of it.
      const std::size_t left = static_cast<std::size_t>(down) - port % static_cast<std::size_t>(down);
      if (nics.size() <= static_cast<std::size_t>(down) && nics.size() > left) port += left;
      for (Vertex nic : nics) {
        connect_nic(nic, leaf_at(port / static_cast<std::size_t>(down)));
        ++port;
      }
    }
  }

  if (leaves.size() < 2) return;  // one leaf: no spine layer needed
  const int spines = std::max(1, static_cast<int>(std::ceil(down / r)));
  const double uplink_total = down * port_rate / r;
  const double per_spine = uplink_total / spines;
  std::vector<Vertex> spine_vertices;
  for (int s = 0; s < spines; ++s) spine_vertices.push_back(add_switch(g, DeviceKind::SpineSwitch, s));
  for (Vertex leaf : leaves)
    for (Vertex spine : spine_vertices)
      boost::add_edge(leaf, spine, make_link(LinkKind::Network, per_spine, latency), g);
}

// Nearest NIC of every GPU in one node: the NIC with the fewest PCIe hops (same switch first),
// ties broken by the NIC serving the fewest GPUs so far (rails balance). Returns NIC vertices
// indexed by local GPU, or an empty vector when the node has no NIC.
std::vector<Vertex> nearest_nics(const Graph& g, const std::vector<Vertex>& gpus, const std::vector<Vertex>& nics,
                                 Vertex first, Vertex last) {
  if (nics.empty()) return {};
  // BFS from each GPU over non-NVLink links inside the node, not crossing other GPUs.
  const std::size_t n = last - first;
  std::vector<int> dist(n);
  std::vector<int> load(nics.size(), 0);
  std::vector<Vertex> result;
  std::vector<Vertex> queue;
  for (Vertex gpu : gpus) {
    std::fill(dist.begin(), dist.end(), -1);
    queue.clear();
    queue.push_back(gpu);
    dist[gpu - first] = 0;
    for (std::size_t head = 0; head < queue.size(); ++head) {
      Vertex u = queue[head];
      if (u != gpu && g[u].kind == DeviceKind::Gpu) continue;
      for (auto e : boost::make_iterator_range(boost::out_edges(u, g))) {
        if (g[e].kind == LinkKind::NvLink || g[e].kind == LinkKind::Network) continue;
        Vertex w = boost::target(e, g);
        if (w < first || w >= last || dist[w - first] >= 0) continue;
        dist[w - first] = dist[u - first] + 1;
        queue.push_back(w);
      }
    }
    std::size_t best = nics.size();
    for (std::size_t i = 0; i < nics.size(); ++i) {
      int d = dist[nics[i] - first];
      if (d < 0) continue;
      if (best == nics.size()) {
        best = i;
        continue;
      }
      int bd = dist[nics[best] - first];
      if (d < bd || (d == bd && load[i] < load[best])) best = i;
    }
    if (best == nics.size()) best = 0;  // no PCIe route: use NIC 0 (diagnostics report it)
    ++load[best];
    result.push_back(nics[best]);
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
      if (d.model >= 0) d.model = label_map[static_cast<std::size_t>(d.model)];
      Vertex nv = boost::add_vertex(d, t.graph_);
      if (d.kind == DeviceKind::Gpu) gpus.push_back(nv);
      if (d.kind == DeviceKind::Nic) nics_by_node[static_cast<std::size_t>(n)].push_back(nv);
    }
    for (auto e : boost::make_iterator_range(boost::edges(m.graph)))
      boost::add_edge(base + boost::source(e, m.graph), base + boost::target(e, m.graph), m.graph[e], t.graph_);

    const Vertex last = boost::num_vertices(t.graph_);
    const auto& nics = nics_by_node[static_cast<std::size_t>(n)];
    std::vector<Vertex> nic_of = nearest_nics(t.graph_, gpus, nics, base, last);
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      RankInfo ri;
      ri.rank = static_cast<int>(t.ranks_.size());
      ri.node = n;
      ri.local = static_cast<int>(i);
      ri.gpu = gpus[i];
      if (!nic_of.empty()) {
        ri.nic = nic_of[i];
        ri.rail = t.graph_[nic_of[i]].local_index;
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
