#include "simulator/routes.hpp"

#include <fmt/format.h>

#include "common/errors.hpp"
#include "topologies/paths.hpp"

namespace topocoll::sim {

using topo::DeviceKind;
using topo::LinkKind;
using topo::Vertex;

namespace {
// Vertices inside a node are stored as offsets from the node's first vertex, tagged; vertices
// outside it (a fabric switch on an odd intra-node route) are stored absolute.
constexpr Vertex kAbsolute = Vertex(1) << (sizeof(Vertex) * 8 - 1);
}  // namespace

Router::Router(const topo::Topology& t) : t_(t) {
  const auto& g = t.graph();
  leaf_of_nic_.assign(boost::num_vertices(g), Vertex(-1));
  for (auto v : boost::make_iterator_range(boost::vertices(g))) {
    if (g[v].kind == DeviceKind::SpineSwitch) spines_.push_back(v);
    if (g[v].kind != DeviceKind::Nic) continue;
    for (auto e : boost::make_iterator_range(boost::out_edges(v, g)))
      if (g[e].kind == LinkKind::Network) leaf_of_nic_[v] = boost::target(e, g);
  }
}

const std::vector<Vertex>& Router::local_gpu_gpu(int node, int i, int j) {
  LocalPaths& lp = local_[t_.node_model_name(node)];
  const std::uint64_t key = static_cast<std::uint64_t>(i) * 4096 + static_cast<std::uint64_t>(j);
  auto it = lp.gpu_gpu.find(key);
  if (it != lp.gpu_gpu.end()) return it->second;
  const Vertex first = t_.node_vertices(node).first, last = t_.node_vertices(node).second;
  int ra = -1, rb = -1;
  for (const topo::RankInfo& r : t_.ranks())
    if (r.node == node && (r.local == i || r.local == j)) (r.local == i ? ra : rb) = r.rank;
  const topo::Path p = topo::find_path(t_, t_.rank(ra).gpu, t_.rank(rb).gpu);
  if (!p.found)
    throw InputError(
        fmt::format("no path between {} and {}", t_.device_name(t_.rank(ra).gpu), t_.device_name(t_.rank(rb).gpu)));
  std::vector<Vertex> stored;
  for (Vertex v : p.vertices) stored.push_back(v >= first && v < last ? v - first : (v | kAbsolute));
  return lp.gpu_gpu.emplace(key, std::move(stored)).first->second;
}

const std::vector<Vertex>& Router::local_gpu_nic(int node, int i) {
  LocalPaths& lp = local_[t_.node_model_name(node)];
  auto it = lp.gpu_nic.find(i);
  if (it != lp.gpu_nic.end()) return it->second;
  const Vertex first = t_.node_vertices(node).first, last = t_.node_vertices(node).second;
  const topo::RankInfo* info = nullptr;
  for (const topo::RankInfo& r : t_.ranks())
    if (r.node == node && r.local == i) info = &r;
  if (info->rail < 0)
    throw InputError(fmt::format("{} has no NIC: it cannot reach other nodes", t_.device_name(info->gpu)));
  const topo::Path p = topo::find_path(t_, info->gpu, info->nic);
  std::vector<Vertex> stored;
  for (Vertex v : p.vertices) stored.push_back(v >= first && v < last ? v - first : (v | kAbsolute));
  return lp.gpu_nic.emplace(i, std::move(stored)).first->second;
}

void Router::append(Route& r, Vertex from, Vertex to) {
  const auto& g = t_.graph();
  auto [e, ok] = boost::edge(from, to, g);
  TOPOCOLL_ASSERT(ok, fmt::format("no link {} - {}", t_.device_name(from), t_.device_name(to)));
  r.links.push_back(e);
  // Undirected edge descriptors report the queried order as source(), so the direction is
  // canonical by vertex number: "forward" is from the lower to the higher vertex.
  r.forward.push_back(from < to);
  r.latency_us += g[e].latency_us;
  r.bottleneck_gbps = r.links.size() == 1 ? g[e].bw_gbps : std::min(r.bottleneck_gbps, g[e].bw_gbps);
}

const Route& Router::route(int a, int b) {
  const std::uint64_t key =
      static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(t_.num_ranks()) + static_cast<std::uint64_t>(b);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  const topo::RankInfo& ra = t_.rank(a);
  const topo::RankInfo& rb = t_.rank(b);
  Route r;
  auto walk = [&](const std::vector<Vertex>& stored, Vertex first, bool reverse) {
    std::vector<Vertex> vs;
    for (Vertex v : stored) vs.push_back(v & kAbsolute ? (v & ~kAbsolute) : v + first);
    if (reverse) std::reverse(vs.begin(), vs.end());
    for (std::size_t k = 0; k + 1 < vs.size(); ++k) append(r, vs[k], vs[k + 1]);
  };
  if (ra.node == rb.node) {
    walk(local_gpu_gpu(ra.node, ra.local, rb.local), t_.node_vertices(ra.node).first, false);
  } else {
    // The sender's side: its own NIC when it is on the receiver's rail; otherwise, as NCCL's
    // PXN does, over NVLink to the node's GPU on the receiver's rail and out through that
    // GPU's NIC, so the transfer stays on one rail. Without an NVLink way there, its own NIC.
    const topo::RankInfo* relay = nullptr;
    if (ra.rail != rb.rail && rb.rail >= 0) {
      for (const topo::RankInfo& x : t_.ranks())
        if (x.node == ra.node && x.rail == rb.rail) {
          relay = &x;
          break;
        }
      if (relay) {
        const auto& hop = local_gpu_gpu(ra.node, ra.local, relay->local);
        bool nvlink = hop.size() >= 2;
        for (std::size_t k = 1; k + 1 < hop.size(); ++k)
          nvlink &= !(hop[k] & kAbsolute) &&
                    t_.graph()[hop[k] + t_.node_vertices(ra.node).first].kind == DeviceKind::NvSwitch;
        if (!nvlink) relay = nullptr;
      }
    }
    const topo::RankInfo& out = relay ? *relay : ra;
    if (relay) walk(local_gpu_gpu(ra.node, ra.local, relay->local), t_.node_vertices(ra.node).first, false);
    walk(local_gpu_nic(ra.node, out.local), t_.node_vertices(ra.node).first, false);
    const Vertex la = leaf_of_nic_[out.nic], lb = leaf_of_nic_[rb.nic];
    if (la == Vertex(-1) || lb == Vertex(-1))
      throw InputError(fmt::format("{} and {} are on different nodes but the cluster has no fabric between them",
                                   t_.device_name(ra.gpu), t_.device_name(rb.gpu)));
    append(r, out.nic, la);
    if (la != lb) {
      if (spines_.empty()) throw InputError("the fabric has several leaves but no spine");
      // ECMP per flow: a deterministic hash of the two NICs picks the spine, so the flows
      // between two leaves spread over the spines (and may collide, as hashed ECMP does).
      const std::size_t h =
          (static_cast<std::size_t>(out.nic) * 2654435761u) ^ (static_cast<std::size_t>(rb.nic) * 40503u);
      const Vertex spine = spines_[h % spines_.size()];
      append(r, la, spine);
      append(r, spine, lb);
    }
    append(r, lb, rb.nic);
    walk(local_gpu_nic(rb.node, rb.local), t_.node_vertices(rb.node).first, true);
  }
  return cache_.emplace(key, std::move(r)).first->second;
}

}  // namespace topocoll::sim
