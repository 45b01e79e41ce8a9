#include "topologies/paths.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <queue>

#include "common/errors.hpp"
#include "topologies/constants.hpp"

namespace topocoll::topo {

std::string_view to_string(PathType type) {
  switch (type) {
    case PathType::LOC:
      return "LOC";
    case PathType::NVL:
      return "NVL";
    case PathType::NVB:
      return "NVB";
    case PathType::PIX:
      return "PIX";
    case PathType::PXB:
      return "PXB";
    case PathType::PHB:
      return "PHB";
    case PathType::SYS:
      return "SYS";
    case PathType::NET:
      return "NET";
  }
  return "?";
}

bool p2p_possible(PathType type) {
  return type <= PathType::PXB;
}

namespace {

// The search runs over states (vertex, arrived over NVLink, GPUs relayed so far) because a
// GPU may relay traffic only from NVLink to NVLink and only once (NVB), as NCCL allows.
struct StateSpace {
  std::size_t n;
  bool same_node = false;
  std::size_t size() const { return 4 * n; }
  std::size_t index(Vertex v, bool via_nvlink, int relays) const {
    return static_cast<std::size_t>(v) +
           n * (static_cast<std::size_t>(via_nvlink) + 2 * static_cast<std::size_t>(relays));
  }
  Vertex vertex(std::size_t si) const { return static_cast<Vertex>(si % n); }
  bool via_nvlink(std::size_t si) const { return (si / n) % 2 == 1; }
  int relays(std::size_t si) const { return static_cast<int>(si / (2 * n)); }
};

// Follows edge e out of state si; returns the next state, or size() when the rules forbid it.
// Two devices of one node talk inside the node: the network is not a way between them.
std::size_t step(const Graph& g, const StateSpace& ss, Vertex from, std::size_t si, const Edge& e) {
  if (ss.same_node && g[e].kind == LinkKind::Network) return ss.size();
  const Vertex u = ss.vertex(si);
  const bool relaying_gpu = u != from && g[u].kind == DeviceKind::Gpu;
  const bool nvlink = g[e].kind == LinkKind::NvLink;
  if (relaying_gpu && !(ss.via_nvlink(si) && nvlink && ss.relays(si) == 0)) return ss.size();
  return ss.index(boost::target(e, g), nvlink, ss.relays(si) + (relaying_gpu ? 1 : 0));
}

// The search's per-state arrays, kept from call to call on each thread. A search touches the
// states it reaches (inside one node, a few dozen), but the arrays span every state of the
// graph: filled afresh at each call they cost 32 bytes x 4 states per vertex, most of it page
// faults, and a 131,072-GPU cluster asks for hundreds of thousands of paths. Only the touched
// entries are put back, when the next search starts.
struct Workspace {
  std::vector<double> best;     // pass 1: widest bottleneck found to each state (-1: not reached)
  std::vector<int> hops;        // pass 2: links from `from` (-1: not reached)
  std::vector<double> latency;  // pass 2: the chosen path's latency
  std::vector<int> cpus;        // pass 2: CPUs crossed: a path through a root complex loses ties
  std::vector<std::size_t> parent;
  std::vector<std::size_t> touched;  // states whose entries differ from the reset values

  // Ready for a search over `size` states: every entry at its reset value.
  void reset(std::size_t size) {
    if (best.size() != size) {
      best.assign(size, -1.0);
      hops.assign(size, -1);
      latency.assign(size, 0.0);
      cpus.assign(size, 0);
      parent.assign(size, size);
      touched.clear();
      return;
    }
    for (std::size_t si : touched) {
      best[si] = -1.0;
      hops[si] = -1;
      latency[si] = 0.0;
      cpus[si] = 0;
      parent[si] = size;
    }
    touched.clear();
  }
};

Workspace& workspace(std::size_t size) {
  thread_local Workspace ws;
  ws.reset(size);
  return ws;
}

// Pass 1, widest: a Dijkstra-like max-bottleneck search. Pass 2 (find_path), shortest: a
// breadth-first search restricted to links at least that wide, latency breaking ties.
// Lexicographic (width, hops) is not isotone, so a single pass would not be exact.
double widest_bottleneck(const Graph& g, const StateSpace& ss, Vertex from, Vertex to, Workspace& ws) {
  std::vector<double>& best = ws.best;
  using Item = std::pair<double, std::size_t>;  // (bottleneck, state)
  std::priority_queue<Item> heap;
  const std::size_t start = ss.index(from, false, 0);
  best[start] = std::numeric_limits<double>::infinity();
  ws.touched.push_back(start);
  heap.push({best[start], start});
  while (!heap.empty()) {
    auto [bw, si] = heap.top();
    heap.pop();
    if (bw < best[si]) continue;
    if (ss.vertex(si) == to) return bw;
    for (auto e : boost::make_iterator_range(boost::out_edges(ss.vertex(si), g))) {
      const std::size_t wi = step(g, ss, from, si, e);
      if (wi == ss.size()) continue;
      const double nbw = std::min(bw, g[e].bw_gbps);
      if (nbw > best[wi]) {
        if (best[wi] < 0.0) ws.touched.push_back(wi);
        best[wi] = nbw;
        heap.push({nbw, wi});
      }
    }
  }
  return 0.0;
}

}  // namespace

PathType classify(const Graph& g, const std::vector<Vertex>& vertices) {
  if (vertices.size() <= 1) return PathType::LOC;
  bool all_nvlink = true, network = false, inter_socket = false, through_cpu = false, relay_gpu = false;
  int pcie_switches = 0;
  for (std::size_t i = 0; i + 1 < vertices.size(); ++i) {
    auto [e, ok] = boost::edge(vertices[i], vertices[i + 1], g);
    const LinkKind k = g[e].kind;
    if (k != LinkKind::NvLink) all_nvlink = false;
    if (k == LinkKind::Network) network = true;
    if (k == LinkKind::InterSocket) inter_socket = true;
  }
  for (std::size_t i = 1; i + 1 < vertices.size(); ++i) {
    switch (g[vertices[i]].kind) {
      case DeviceKind::Cpu:
        through_cpu = true;
        break;
      case DeviceKind::PcieSwitch:
        ++pcie_switches;
        break;
      case DeviceKind::Gpu:
        relay_gpu = true;
        break;
      default:
        break;
    }
  }
  if (network) return PathType::NET;
  if (all_nvlink) return relay_gpu ? PathType::NVB : PathType::NVL;
  if (inter_socket) return PathType::SYS;
  if (through_cpu) return PathType::PHB;
  return pcie_switches <= 1 ? PathType::PIX : PathType::PXB;
}

Path find_path(const Topology& t, Vertex from, Vertex to) {
  const Graph& g = t.graph();
  Path path;
  if (from == to) {
    path.vertices = {from};
    path.bw_gbps = constants::kLocalGbps;
    path.found = true;
    return path;
  }
  const StateSpace ss{boost::num_vertices(g), g[from].node >= 0 && g[from].node == g[to].node};
  Workspace& ws = workspace(ss.size());
  const double width = widest_bottleneck(g, ss, from, to, ws);
  if (width <= 0.0) return path;

  // Breadth-first over states using only links >= width: the first level that reaches `to`
  // has the fewest links; within a level the path through fewer CPUs, then the lowest latency, wins.
  std::vector<int>& hops = ws.hops;
  std::vector<double>& latency = ws.latency;
  std::vector<int>& cpus = ws.cpus;
  auto better = [&](int c, double lat, std::size_t than) {
    return c < cpus[than] || (c == cpus[than] && lat < latency[than]);
  };
  std::vector<std::size_t>& parent = ws.parent;
  std::vector<std::size_t> frontier = {ss.index(from, false, 0)}, next;
  hops[frontier[0]] = 0;
  std::size_t goal = ss.size();
  for (int level = 0; !frontier.empty() && goal == ss.size(); ++level) {
    next.clear();
    for (std::size_t si : frontier) {
      for (auto e : boost::make_iterator_range(boost::out_edges(ss.vertex(si), g))) {
        if (g[e].bw_gbps < width) continue;
        const std::size_t wi = step(g, ss, from, si, e);
        if (wi == ss.size()) continue;
        const double lat = latency[si] + g[e].latency_us;
        const Vertex u = ss.vertex(si);
        const int c = cpus[si] + (u != from && g[u].kind == DeviceKind::Cpu ? 1 : 0);
        if (hops[wi] < 0) {
          if (ws.best[wi] < 0.0) ws.touched.push_back(wi);  // not reached by pass 1, which stops at `to`
          hops[wi] = level + 1;
          next.push_back(wi);
        } else if (hops[wi] != level + 1 || !better(c, lat, wi)) {
          continue;
        }
        latency[wi] = lat;
        cpus[wi] = c;
        parent[wi] = si;
      }
    }
    for (bool nv : {false, true})
      for (int r : {0, 1}) {
        const std::size_t gi = ss.index(to, nv, r);
        if (hops[gi] == level + 1 && (goal == ss.size() || better(cpus[gi], latency[gi], goal))) goal = gi;
      }
    frontier.swap(next);
  }
  TOPOCOLL_ASSERT(goal != ss.size(), fmt::format("no path of width {} found after the widest pass", width));
  for (std::size_t si = goal; si != ss.size(); si = parent[si]) path.vertices.push_back(ss.vertex(si));
  std::reverse(path.vertices.begin(), path.vertices.end());
  path.bw_gbps = width;
  path.latency_us = latency[goal];
  path.type = classify(g, path.vertices);
  path.found = true;
  return path;
}

}  // namespace topocoll::topo
