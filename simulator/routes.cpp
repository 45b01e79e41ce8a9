#include "simulator/routes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

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

namespace {
std::uint64_t group_pair(int g, int h) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(g)) << 32) | static_cast<std::uint32_t>(h);
}
}  // namespace

Router::Router(const topo::Topology& t) : t_(t) {
  const auto& g = t.graph();
  dragonfly_ = t.fabric() && t.fabric()->kind == topo::FabricKind::Dragonfly;
  leaf_of_nic_.assign(boost::num_vertices(g), Vertex(-1));
  ranks_of_node_.resize(static_cast<std::size_t>(t.nodes()));
  for (const topo::RankInfo& r : t.ranks()) ranks_of_node_[static_cast<std::size_t>(r.node)].push_back(r.rank);
  for (auto v : boost::make_iterator_range(boost::vertices(g))) {
    if (g[v].kind == DeviceKind::SpineSwitch) spines_[g[v].group].push_back(v);
    if (g[v].kind != DeviceKind::Nic) continue;
    for (auto e : boost::make_iterator_range(boost::out_edges(v, g)))
      if (g[e].kind == LinkKind::Network) leaf_of_nic_[v] = boost::target(e, g);
  }
  if (dragonfly_)
    for (auto e : boost::make_iterator_range(boost::edges(g))) {
      const Vertex u = boost::source(e, g), v = boost::target(e, g);
      if (g[u].kind != DeviceKind::LeafSwitch || g[v].kind != DeviceKind::LeafSwitch || g[u].group == g[v].group)
        continue;
      globals_[group_pair(g[u].group, g[v].group)].emplace_back(u, v);
      globals_[group_pair(g[v].group, g[u].group)].emplace_back(v, u);
    }
}

const std::vector<Vertex>& Router::local_gpu_gpu(int node, int i, int j) {
  LocalPaths& lp = local_[t_.node_model_name(node)];
  const std::uint64_t key = static_cast<std::uint64_t>(i) * 4096 + static_cast<std::uint64_t>(j);
  auto it = lp.gpu_gpu.find(key);
  if (it != lp.gpu_gpu.end()) return it->second;
  const Vertex first = t_.node_vertices(node).first, last = t_.node_vertices(node).second;
  int ra = -1, rb = -1;
  for (int q : ranks_of_node_[static_cast<std::size_t>(node)])
    if (const topo::RankInfo& r = t_.rank(q); r.local == i || r.local == j) (r.local == i ? ra : rb) = r.rank;
  const topo::Path p = topo::find_path(t_, t_.rank(ra).gpu, t_.rank(rb).gpu);
  if (!p.found)
    throw InputError(
        fmt::format("no path between {} and {}", t_.device_name(t_.rank(ra).gpu), t_.device_name(t_.rank(rb).gpu)));
  std::vector<Vertex> stored;
  for (Vertex v : p.vertices) stored.push_back(v >= first && v < last ? v - first : (v | kAbsolute));
  return lp.gpu_gpu.emplace(key, std::move(stored)).first->second;
}

const std::vector<Vertex>& Router::local_gpu_nic(int node, int i, Vertex nic) {
  LocalPaths& lp = local_[t_.node_model_name(node)];
  const Vertex first = t_.node_vertices(node).first, last = t_.node_vertices(node).second;
  const std::uint64_t key = (static_cast<std::uint64_t>(i) << 32) | static_cast<std::uint64_t>(nic - first);
  auto it = lp.gpu_nic.find(key);
  if (it != lp.gpu_nic.end()) return it->second;
  const topo::RankInfo* info = nullptr;
  for (int q : ranks_of_node_[static_cast<std::size_t>(node)])
    if (t_.rank(q).local == i) info = &t_.rank(q);
  if (info->rail < 0)
    throw InputError(fmt::format("{} has no NIC: it cannot reach other nodes", t_.device_name(info->gpu)));
  const topo::Path p = topo::find_path(t_, info->gpu, nic);
  std::vector<Vertex> stored;
  for (Vertex v : p.vertices) stored.push_back(v >= first && v < last ? v - first : (v | kAbsolute));
  return lp.gpu_nic.emplace(key, std::move(stored)).first->second;
}

void Router::append(Route& r, Vertex from, Vertex to) {
  const auto& g = t_.graph();
  // boost::edge scans the first vertex's links: from the end with fewer (a spine of a 16,384-node
  // fabric has hundreds), the descriptor then put back in the queried order.
  const bool from_side = boost::out_degree(from, g) <= boost::out_degree(to, g);
  auto [e, ok] = from_side ? boost::edge(from, to, g) : boost::edge(to, from, g);
  TOPOCOLL_ASSERT(ok, fmt::format("no link {} - {}", t_.device_name(from), t_.device_name(to)));
  if (!from_side) e = topo::Edge(from, to, e.get_property());
  r.links.push_back(e);
  // Undirected edge descriptors report the queried order as source(), so the direction is
  // canonical by vertex number: "forward" is from the lower to the higher vertex.
  r.forward.push_back(from < to);
  r.latency_us += g[e].latency_us;
  r.bottleneck_gbps = r.links.size() == 1 ? g[e].bw_gbps : std::min(r.bottleneck_gbps, g[e].bw_gbps);
}

const Route& Router::route(int a, int b, int channel) {
  const topo::RankInfo& ra = t_.rank(a);
  const topo::RankInfo& rb = t_.rank(b);
  const auto& g = t_.graph();
  // The NIC of b this channel lands on (always the first on nodes with one NIC per GPU).
  constexpr std::uint64_t kSlots = 64;
  // Channel c takes NIC (c / G) mod n of the receiver's n, G its node's GPU count: channels
  // 0 .. G-1 keep the first NICs (a ring whose channel c leaves on rail c mod G), the next G take
  // the second NICs, and so on.
  const std::size_t slot = ra.node == rb.node || rb.nics.size() < 2
                               ? 0
                               : static_cast<std::size_t>(channel) /
                                     static_cast<std::size_t>(std::max(1, t_.gpus_per_node(rb.node))) %
                                     std::min<std::size_t>(rb.nics.size(), kSlots);
  const std::uint64_t key =
      (static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(t_.num_ranks()) + static_cast<std::uint64_t>(b)) *
          kSlots +
      slot;
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  Route r;
  auto walk = [&](const std::vector<Vertex>& stored, Vertex first, bool reverse) {
    std::vector<Vertex> vs;
    for (Vertex v : stored) vs.push_back(v & kAbsolute ? (v & ~kAbsolute) : v + first);
    if (reverse) std::reverse(vs.begin(), vs.end());
    for (std::size_t k = 0; k + 1 < vs.size(); ++k) append(r, vs[k], vs[k + 1]);
  };
  if (ra.node == rb.node) {
    walk(local_gpu_gpu(ra.node, ra.local, rb.local), t_.node_vertices(ra.node).first, false);
    return cache_.emplace(key, std::move(r)).first->second;
  }
  if (ra.rail < 0) throw InputError(fmt::format("{} has no NIC: it cannot reach other nodes", t_.device_name(ra.gpu)));
  if (rb.rail < 0) throw InputError(fmt::format("{} has no NIC: it cannot reach other nodes", t_.device_name(rb.gpu)));
  const Vertex dst_nic = rb.nics.empty() ? rb.nic : rb.nics[slot];
  const int rail = g[dst_nic].local_index;
  auto nic_on_rail = [&](const topo::RankInfo& x) -> std::optional<Vertex> {
    for (Vertex n : x.nics)
      if (g[n].local_index == rail) return n;
    return std::nullopt;
  };
  // The sender's side: its own NIC on the receiver's rail when it has one; otherwise, as NCCL's
  // PXN does, over NVLink to the node's GPU with a NIC on that rail and out through that NIC, so
  // the transfer stays on one rail. Without an NVLink way there, or with PXN off, its own NIC.
  const topo::RankInfo* relay = nullptr;
  std::optional<Vertex> out_nic = nic_on_rail(ra);
  const bool pxn = !t_.fabric() || t_.fabric()->pxn;
  if (!out_nic && pxn) {
    for (int q : ranks_of_node_[static_cast<std::size_t>(ra.node)])  // (a scan of every rank was O(ranks) a route)
      if (const topo::RankInfo& x = t_.rank(q); q != ra.rank && nic_on_rail(x)) {
        relay = &x;
        break;
      }
    if (relay) {
      const auto& hop = local_gpu_gpu(ra.node, ra.local, relay->local);
      bool nvlink = hop.size() >= 2;
      for (std::size_t k = 1; k + 1 < hop.size(); ++k)
        nvlink &= !(hop[k] & kAbsolute) && g[hop[k] + t_.node_vertices(ra.node).first].kind == DeviceKind::NvSwitch;
      if (nvlink)
        out_nic = nic_on_rail(*relay);
      else
        relay = nullptr;
    }
  }
  if (!out_nic) out_nic = ra.nics.empty() ? ra.nic : ra.nics[slot % ra.nics.size()];
  const topo::RankInfo& out = relay ? *relay : ra;
  if (relay) walk(local_gpu_gpu(ra.node, ra.local, relay->local), t_.node_vertices(ra.node).first, false);
  walk(local_gpu_nic(ra.node, out.local, *out_nic), t_.node_vertices(ra.node).first, false);
  const Vertex la = leaf_of_nic_[*out_nic], lb = leaf_of_nic_[dst_nic];
  if (la == Vertex(-1) || lb == Vertex(-1))
    throw InputError(fmt::format("{} and {} are on different nodes but the cluster has no fabric between them",
                                 t_.device_name(ra.gpu), t_.device_name(rb.gpu)));
  append(r, *out_nic, la);
  if (la != lb) {
    // ECMP per flow: a deterministic hash of the two NICs picks one of the equal-cost ways, so
    // the flows between two switches spread over them (and may collide, as hashed ECMP does).
    const std::size_t h =
        (static_cast<std::size_t>(*out_nic) * 2654435761u) ^ (static_cast<std::size_t>(dst_nic) * 40503u);
    if (dragonfly_) {
      if (g[la].group == g[lb].group) {
        append(r, la, lb);
      } else {
        const auto found = globals_.find(group_pair(g[la].group, g[lb].group));
        if (found == globals_.end())
          throw InputError(fmt::format("dragonfly groups {} and {} have no global link", g[la].group, g[lb].group));
        const auto [u, v] = found->second[h % found->second.size()];
        if (la != u) append(r, la, u);
        append(r, u, v);
        if (v != lb) append(r, v, lb);
      }
    } else {
      if (g[la].group != g[lb].group)
        throw InputError(fmt::format(
            "{} and {}: their NICs {} and {} are on planes {} and {}, and planes never meet (multi-plane fabric; "
            "no NVLink way to a GPU of the receiver's plane{})",
            t_.device_name(ra.gpu), t_.device_name(rb.gpu), t_.device_name(*out_nic), t_.device_name(dst_nic),
            g[la].group, g[lb].group, pxn ? "" : ", PXN off"));
      const auto spines = spines_.find(g[la].group);
      if (spines == spines_.end() || spines->second.empty())
        throw InputError("the fabric has several leaves but no spine");
      const Vertex spine = spines->second[h % spines->second.size()];
      append(r, la, spine);
      append(r, spine, lb);
    }
  }
  append(r, lb, dst_nic);
  walk(local_gpu_nic(rb.node, rb.local, dst_nic), t_.node_vertices(rb.node).first, true);
  return cache_.emplace(key, std::move(r)).first->second;
}

}  // namespace topocoll::sim
