// The reference model of stock NCCL (see nccl_model.hpp). Every NCCL fact below names its file;
// "2.22.3" facts are NCCL 2.22.3-1 (commit 178b6b759074597777ce13438efb0e0ba625e429), "2.28" facts
// NCCL 2.28.3-1 as stored in zhanglin496/nccl-2.28.3-1 (commit 850a18f5a2d15a77525bb671b12ee03bc1d4b951),
// the nearest stored release to the toolkit's 2.28.9 (nccl_tables.cpp). Unmarked: both.
#include "simulator/nccl_model.hpp"

#include <fmt/format.h>
#include <strings.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "algorithms/registry.hpp"
#include "common/errors.hpp"
#include "topologies/constants.hpp"

namespace topocoll::sim {

namespace {

using topo::DeviceKind;
using topo::Graph;
using topo::LinkKind;
using topo::PathType;
using topo::Vertex;

constexpr int kTree = static_cast<int>(NcclAlgo::Tree);
constexpr int kRing = static_cast<int>(NcclAlgo::Ring);
constexpr int kLL = static_cast<int>(NcclProto::LL);
constexpr int kLL128 = static_cast<int>(NcclProto::LL128);
constexpr int kSimple = static_cast<int>(NcclProto::Simple);
constexpr int kNvls = static_cast<int>(NcclAlgo::Nvls);
constexpr int kNvlsTree = static_cast<int>(NcclAlgo::NvlsTree);
constexpr int kPat = static_cast<int>(NcclAlgo::Pat);

// --- src/graph/search.cc (NCCL 2.22.3) ----------------------------------------------------------
// Per-channel speeds the search tries, fastest first (GB/s). Intra: no NET in the system (one
// node: ncclTopoTrimSystem removes the NICs when every rank is local); inter: with NETs.
constexpr double kSpeedIntra[] = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
constexpr double kSpeedInter[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                  7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr double kSm90SpeedIntra[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
constexpr double kSm90SpeedInter[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                      15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
// 2.28 (search.cc): Blackwell arrays, used for SM >= 100 (2.22.3 uses the SM90 arrays there).
constexpr double kSm100SpeedIntra[] = {90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
constexpr double kSm100SpeedInter[] = {96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0,
                                       17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
// MAXCHANNELS (src/include/device.h) is 32 in 2.22.3 and 64 in 2.28 (NcclTuningTables::max_channels);
// init.cc searches rings with maxChannels = MAXCHANNELS/2 and trees with min = max = the ring's
// channel count. kMaxChannels is the larger, for validating hand-made estimates.
constexpr int kMaxChannels = 64;
// NCCL_MAX_NVLS_ARITY (src/include/device.h, 2.28): the NVLS graph has at most this many heads.
constexpr int kMaxNvlsArity = 32;

// log2i of NCCL (src/include/utils.h): floor(log2(n)), 0 for n <= 1.
int log2i(std::uint64_t n) {
  int l = 0;
  while (n >>= 1) ++l;
  return l;
}

// compCapIndex: HOPPER_COMPCAP_IDX 2 (SM >= 90), AMPERE 1 (SM >= 80), VOLTA 0.
int arch_index(int sm) {
  return sm >= 90 ? 2 : sm >= 80 ? 1 : 0;
}
// index2: N1, N2, N4 (three nodes and more).
int scale_index(int nodes) {
  return nodes <= 2 ? nodes - 1 : 2;
}

// ---------------------------------------------------------------------------------------------
// Link bandwidths in NCCL's units (what ncclTopoGetSystem puts on its links).

// NVLink: NCCL counts the links between two devices and gives the bundle count * per-link rate
// (src/graph/topo.cc ncclTopoAddNvLinks; topo.h SM90_NVLINK_BW 20.6 etc., kept in
// constants::nccl_nvlink_gbps_per_link). Our links carry the lane count; when they do not, it is
// recovered from the physical rate.
double nccl_nvlink_gbps(const topo::Link& l, int sm) {
  int lanes = l.lanes;
  if (lanes <= 0) lanes = static_cast<int>(std::lround(l.bw_gbps / topo::constants::nvlink_gbps_per_link(sm)));
  if (lanes <= 0)
    return l.bw_gbps * topo::constants::nccl_nvlink_gbps_per_link(sm) / topo::constants::nvlink_gbps_per_link(sm);
  return lanes * topo::constants::nccl_nvlink_gbps_per_link(sm);
}

// PCIe: NCCL uses width * speed / 80 GB/s with speed from kvDictPciGen (src/graph/topo.cc):
// 2.5 GT/s -> 15, 5 -> 30, 8 -> 60, 16 -> 120, 32 -> 240, 64 -> 480; i.e. 75% of the 8b/10b
// rate for Gen1-2 and 76% of the 128b/130b rate for Gen3+ (Gen4 x16 = 24 GB/s, Gen5 x16 = 48).
// Our link stores the encoded rate and the width, so the generation is recovered from the rate
// per lane; without a width, the Gen3+ ratio is applied.
double nccl_pcie_gbps(const topo::Link& l) {
  struct Gen {
    double gts;
    double nccl_speed;
  };
  static constexpr Gen kGens[] = {{2.5, 15}, {5.0, 30}, {8.0, 60}, {16.0, 120}, {32.0, 240}, {64.0, 480}};
  if (l.lanes > 0) {
    const double per_lane = l.bw_gbps / l.lanes;
    for (const Gen& g : kGens) {
      const double ours = *topo::constants::pcie_gbps_per_lane(g.gts);
      if (std::fabs(per_lane - ours) <= 0.02 * ours) return l.lanes * g.nccl_speed / 80.0;
    }
  }
  return l.bw_gbps * (60.0 / 80.0) / *topo::constants::pcie_gbps_per_lane(8.0);
}

// One link as NCCL would see it. Inter-socket links already carry NCCL's figures
// (constants.hpp: BDW/SKL/SRP_QPI, AMD, ARM); C2C and network links keep their rate.
double nccl_link_gbps(const Graph& g, topo::Edge e, int sm) {
  const topo::Link& l = g[e];
  switch (l.kind) {
    case LinkKind::NvLink:
      return nccl_nvlink_gbps(l, sm);
    case LinkKind::Pcie:
      return nccl_pcie_gbps(l);
    case LinkKind::C2C:
    case LinkKind::InterSocket:
    case LinkKind::Network:
      return l.bw_gbps;
  }
  return l.bw_gbps;
}

// NCCL merges parallel links of one kind into one (a bundle); so do we.
double bundle_gbps(const Graph& g, Vertex u, Vertex v, LinkKind kind, int sm) {
  double bw = 0.0;
  for (auto e : boost::make_iterator_range(boost::out_edges(u, g)))
    if (boost::target(e, g) == v && g[e].kind == kind) bw += nccl_link_gbps(g, e, sm);
  return bw;
}

// The widest link kind between two adjacent vertices (the one find_path took).
LinkKind link_kind_between(const Graph& g, Vertex u, Vertex v) {
  double best = -1.0;
  LinkKind kind = LinkKind::Pcie;
  for (auto e : boost::make_iterator_range(boost::out_edges(u, g)))
    if (boost::target(e, g) == v && g[e].bw_gbps > best) {
      best = g[e].bw_gbps;
      kind = g[e].kind;
    }
  return kind;
}

// ---------------------------------------------------------------------------------------------
// What one node offers to NCCL's search.
//
// A ring channel crosses every GPU of the node once: GPU i sends to GPU i+1. We lay the ring in
// local-index order (NCCL's search tries neighbours first on NVSwitch systems and follows PCI
// order elsewhere) and charge every hop's route to the resources it crosses:
//   - each direction of each link (bundle), at NCCL's rate for it;
//   - on NVSwitch systems, NCCL merges all NVSwitches into one NVS node: a GPU's links to the
//     switches form one bundle (GPU -> NVS out, NVS -> GPU in), whichever switch our widest path
//     happened to pick;
//   - Intel CPUs: a PHB path costs 6/5 of the bandwidth on PCIe links (INTEL_P2P_OVERHEAD,
//     topo.h; search.cc followPath).
// ring_capacity is the bandwidth per direction the busiest resource can give to ring channels:
// channels * speed must stay within it.
struct NicOffer {
  double gbps = 0.0;              // NCCL's GPU -> NET path bandwidth: min(PCIe path, NIC port)
  PathType path = PathType::PIX;  // GPU -> NIC path type
};

struct NodeOffer {
  int gpus = 0;
  int sm_min = std::numeric_limits<int>::max();
  int sm_max = 0;
  double ring_capacity = 0.0;           // GB/s per direction on the busiest resource of the ring
  double max_bw = 0.0;                  // system->maxBw for one node: widest GPU -> GPU path
  double total_bw = 0.0;                // system->totalBw: per GPU max(PCIe link, sum of NVLinks)
  PathType intra_path = PathType::LOC;  // worst path type along the ring
  std::vector<NicOffer> nics;           // distinct NICs used by the node's GPUs
  bool nvswitch = false;                // the node has NVSwitches (NCCL's NVS node)
  double nvs_bundle_min = 0.0;          // narrowest GPU <-> NVS NVLink bundle (GB/s per direction)
};

using Resource = std::tuple<int, Vertex, Vertex>;  // (kind, from, to); kind 0 = link, 1 = NVS out, 2 = NVS in

// NCCL's system for one node: the node's own devices and links (ncclTopoTrimSystem drops the
// other hosts and, on one node, the NICs; NCCL's intra-node paths never leave the node, while
// our widest path between two GPUs could go out through a NIC and back).
topo::Topology node_topology(const topo::Topology& t, int node) {
  const Graph& g = t.graph();
  topo::NodeModel m;
  m.name = t.node_model_name(node);
  m.cpu_vendor = std::string(t.cpu_vendor());
  m.labels = t.labels();
  const auto [first, last] = t.node_vertices(node);
  for (Vertex v = first; v < last; ++v) {
    topo::Device d = g[v];
    d.node = 0;
    boost::add_vertex(d, m.graph);
  }
  for (Vertex u = first; u < last; ++u)
    for (auto e : boost::make_iterator_range(boost::out_edges(u, g))) {
      const Vertex v = boost::target(e, g);
      if (v > u && v < last) boost::add_edge(u - first, v - first, g[e], m.graph);
    }
  return topo::Topology::build(m, 1, topo::FabricSpec{});
}

NodeOffer analyse_node(const topo::Topology& t, int node) {
  const Graph& g = t.graph();
  NodeOffer offer;
  std::vector<Vertex> gpus;
  std::vector<const topo::RankInfo*> ranks;
  for (const topo::RankInfo& r : t.ranks())
    if (r.node == node) {
      gpus.push_back(r.gpu);
      ranks.push_back(&r);
    }
  offer.gpus = static_cast<int>(gpus.size());
  for (Vertex v : gpus) {
    offer.sm_min = std::min(offer.sm_min, g[v].sm);
    offer.sm_max = std::max(offer.sm_max, g[v].sm);
  }
  const int sm = offer.sm_min;

  // Per GPU: NVLink bundle to the NVSwitches, NVLink total and PCIe link (getTotalBw in search.cc).
  std::map<Vertex, double> nvs_bundle;
  for (Vertex v : gpus) {
    double nvlink = 0.0, pcie = 0.0, to_nvs = 0.0;
    for (auto e : boost::make_iterator_range(boost::out_edges(v, g))) {
      const double bw = nccl_link_gbps(g, e, sm);
      if (g[e].kind == LinkKind::NvLink) {
        nvlink += bw;
        if (g[boost::target(e, g)].kind == DeviceKind::NvSwitch) to_nvs += bw;
      }
      if (g[e].kind == LinkKind::Pcie) pcie = std::max(pcie, bw);
    }
    nvs_bundle[v] = to_nvs;
    offer.total_bw = std::max(offer.total_bw, std::max(pcie, nvlink));
  }
  for (auto v : boost::make_iterator_range(boost::vertices(g)))
    if (g[v].kind == DeviceKind::NvSwitch) offer.nvswitch = true;
  if (offer.nvswitch && !gpus.empty()) {
    offer.nvs_bundle_min = std::numeric_limits<double>::infinity();
    for (Vertex v : gpus) offer.nvs_bundle_min = std::min(offer.nvs_bundle_min, nvs_bundle[v]);
  }

  // Ring hops in local order; charge each route (see above).
  const bool intel = t.cpu_vendor() == "intel";
  std::map<Resource, double> usage;
  std::map<Resource, double> capacity;
  const int k = offer.gpus;
  for (int i = 0; k > 1 && i < k; ++i) {
    const Vertex from = gpus[static_cast<std::size_t>(i)];
    const Vertex to = gpus[static_cast<std::size_t>((i + 1) % k)];
    const topo::Path p = topo::find_path(t, from, to);
    if (!p.found)
      throw InputError(
          fmt::format("NCCL model: {} and {} are not connected; NCCL needs a path between every pair of GPUs of a node",
                      t.device_name(from), t.device_name(to)));
    offer.intra_path = std::max(offer.intra_path, p.type);
    const double pcie_weight = (intel && p.type == PathType::PHB) ? 6.0 / 5.0 : 1.0;
    double path_bw = std::numeric_limits<double>::infinity();
    for (std::size_t h = 0; h + 1 < p.vertices.size(); ++h) {
      const Vertex u = p.vertices[h], v = p.vertices[h + 1];
      const LinkKind kind = link_kind_between(g, u, v);
      const bool u_nvs = g[u].kind == DeviceKind::NvSwitch, v_nvs = g[v].kind == DeviceKind::NvSwitch;
      Resource r;
      double cap = 0.0, weight = 1.0;
      if (kind == LinkKind::NvLink && u_nvs && v_nvs) continue;  // inside the merged NVS node
      if (kind == LinkKind::NvLink && v_nvs && g[u].kind == DeviceKind::Gpu) {
        r = {1, u, u};
        cap = nvs_bundle[u];
      } else if (kind == LinkKind::NvLink && u_nvs && g[v].kind == DeviceKind::Gpu) {
        r = {2, v, v};
        cap = nvs_bundle[v];
      } else {
        r = {0, u, v};
        cap = bundle_gbps(g, u, v, kind, sm);
        if (kind == LinkKind::Pcie) weight = pcie_weight;
      }
      usage[r] += weight;
      capacity[r] = cap;
      path_bw = std::min(path_bw, cap / weight);
    }
    offer.max_bw = std::max(offer.max_bw, path_bw);
  }
  offer.ring_capacity = std::numeric_limits<double>::infinity();
  for (const auto& [r, used] : usage) offer.ring_capacity = std::min(offer.ring_capacity, capacity[r] / used);
  if (k <= 1) {
    offer.ring_capacity = std::numeric_limits<double>::infinity();
    offer.intra_path = PathType::LOC;
  }

  // NICs: NCCL's GPU -> NET path bandwidth is the narrowest link of the PCIe route and the NIC's
  // own speed (net speed in Mb/s / 8000 = our port_gbps).
  std::set<Vertex> seen;
  for (const topo::RankInfo* r : ranks) {
    if (r->rail < 0 || !seen.insert(r->nic).second) continue;
    const topo::Path p = topo::find_path(t, r->gpu, r->nic);
    if (!p.found) continue;
    NicOffer nic;
    nic.gbps = g[r->nic].port_gbps;
    for (std::size_t h = 0; h + 1 < p.vertices.size(); ++h) {
      const Vertex u = p.vertices[h], v = p.vertices[h + 1];
      nic.gbps = std::min(nic.gbps, bundle_gbps(g, u, v, link_kind_between(g, u, v), sm));
    }
    nic.path = p.type;
    offer.nics.push_back(nic);
  }
  return offer;
}

// ---------------------------------------------------------------------------------------------
// NCCL's search (ncclTopoCompute, search.cc), on the offers above instead of a channel-by-channel
// path search. A channel at speed (intra, inter) fits when:
//   intra: channels * intra <= ring_capacity on one node (every GPU sends in every channel; the
//          search tries identical channels first, sameChannels = 1). With a network, each
//          channel enters at one GPU and leaves from another, so a GPU sends over the node's
//          fabric in (gpus-1)/gpus of the channels: channels * intra * (gpus-1)/gpus <= capacity;
//   inter: every channel enters and leaves through a NIC (crossNic off: the same NIC), so a NIC
//          carries floor(nic_gbps / inter) channels.
// Then the two passes of ncclTopoCompute:
//   pass 1: from the fastest speed <= maxBw (and speed * minChannels <= totalBw), keep the best
//           nChannels * bw; stop when all channels are found, when nChannels * bw >= totalBw, or
//           when the next speed is below 0.49 of the best one. ncclTopoDupChannels then doubles
//           the channels at half the speed when bw >= 25 (not for SM > 80 with bw < 50 and more
//           than 4 channels);
//   pass 2: try faster speeds keeping at least those channels (rings: both speeds; trees: bwIntra
//           only, while it stays below twice bwInter).
// Simplifications: no time-out, no PXN / crossNic / typeIntra relaxation, balanced-tree pattern
// kept (so the 0.85 tree-pattern factor of tuning.cc never applies).
struct SearchInput {
  const double* speeds = nullptr;
  int nspeeds = 0;
  double max_bw = 0.0;
  double total_bw = 0.0;
  int min_channels = 1;
  int max_channels = 16;
  bool ring = true;
  int sm = 0;
};
struct SearchResult {
  int channels = 0;
  double bw_intra = 0.0;
  double bw_inter = 0.0;
};

template <typename ChannelsAt>
SearchResult nccl_search(const SearchInput& in, ChannelsAt channels_at) {
  SearchResult best;
  auto try_speed = [&](double intra, double inter) {
    const int n = std::min(channels_at(intra, inter), in.max_channels);
    if (n >= in.min_channels && n * intra > best.channels * best.bw_intra) best = {n, intra, inter};
    return n;
  };
  const int last = in.nspeeds - 1;
  // Pass 1.
  int idx = 0;
  while ((in.speeds[idx] > in.max_bw || in.speeds[idx] * in.min_channels > in.total_bw) && idx < last) ++idx;
  for (;;) {
    const int n = try_speed(in.speeds[idx], in.speeds[idx]);
    if (n >= in.max_channels) break;  // every channel found ("time == -1")
    if (best.channels > 0 && best.channels * best.bw_inter >= in.total_bw) break;
    if (idx < last && (best.channels == 0 || in.speeds[idx + 1] / best.bw_inter > 0.49)) {
      ++idx;
      continue;
    }
    break;
  }
  if (best.channels == 0) return {1, 0.1, 0.1};  // "Could not find a path": simple order, bw 0.1
  // ncclTopoDupChannels.
  if (best.bw_intra >= 25.0 && !(in.sm > 80 && best.bw_intra < 50.0 && best.channels > 4)) {
    const int dup = std::min(best.channels * 2, in.max_channels);
    const int div = (dup + best.channels - 1) / best.channels;
    best = {dup, best.bw_intra / div, best.bw_inter / div};
  }
  // Pass 2.
  const int pass2_min_channels = best.channels;
  idx = 0;
  while (in.speeds[idx] > best.bw_inter && idx < last) ++idx;
  double tmp_intra = in.speeds[idx], tmp_inter = in.speeds[idx];
  while (idx > 0) {
    if (in.ring) {
      tmp_intra = tmp_inter = in.speeds[--idx];
    } else if (tmp_intra == best.bw_intra && tmp_intra < tmp_inter * 2) {
      tmp_intra = in.speeds[--idx];
    } else {
      break;
    }
    const int n = std::min(channels_at(tmp_intra, tmp_inter), in.max_channels);
    if (n >= pass2_min_channels && n * tmp_intra > best.channels * best.bw_intra) best = {n, tmp_intra, tmp_inter};
  }
  return best;
}

// The two graphs (ring, tree) of one node model, as ncclTopoCompute would find them.
struct NodeGraphs {
  SearchResult ring, tree;
};

// The speed array ncclTopoCompute searches (search.cc): intra without NET, inter with NETs.
std::pair<const double*, int> speed_array(bool net, int sm, const NcclTuningTables& tb) {
  if (sm >= 100 && tb.arch_rows == 4) {
    if (net) return {kSm100SpeedInter, static_cast<int>(std::size(kSm100SpeedInter))};
    return {kSm100SpeedIntra, static_cast<int>(std::size(kSm100SpeedIntra))};
  }
  if (sm >= 90) {
    if (net) return {kSm90SpeedInter, static_cast<int>(std::size(kSm90SpeedInter))};
    return {kSm90SpeedIntra, static_cast<int>(std::size(kSm90SpeedIntra))};
  }
  if (net) return {kSpeedInter, static_cast<int>(std::size(kSpeedInter))};
  return {kSpeedIntra, static_cast<int>(std::size(kSpeedIntra))};
}

NodeGraphs search_node(const NodeOffer& o, int nodes, int sm, const NcclTuningTables& tb) {
  const bool net = nodes > 1;
  const auto [speeds, nspeeds] = speed_array(net, sm, tb);
  double max_net = 0.0;
  for (const NicOffer& n : o.nics) max_net = std::max(max_net, n.gbps);
  const int k = o.gpus;
  constexpr double kEps = 1e-6;  // NCCL rounds link budgets to 1/1000 (SUB_ROUND)
  auto channels_at = [&](double intra, double inter) {
    int n = kMaxChannels;
    if (k > 1) {
      const double share = net ? static_cast<double>(k - 1) / k : 1.0;
      n = std::min<double>(n, std::floor(o.ring_capacity / (intra * share) + kEps));
    }
    if (net) {
      int via_nics = 0;
      for (const NicOffer& nic : o.nics) via_nics += static_cast<int>(std::floor(nic.gbps / inter + kEps));
      n = std::min(n, via_nics);
    }
    return n;
  };
  SearchInput in;
  in.speeds = speeds;
  in.nspeeds = nspeeds;
  // getMaxBw: GPU -> GPU paths on one node, GPU -> NET paths with a network.
  in.max_bw = net ? max_net : o.max_bw;
  in.total_bw = o.total_bw;
  if (!net && k <= 1) in.max_bw = in.total_bw = 5000.0;  // one GPU alone: LOC_BW (topo.h)
  in.sm = sm;
  NodeGraphs out;
  in.ring = true;
  in.min_channels = 1;
  in.max_channels = tb.max_channels / 2;  // init.cc: ringGraph->maxChannels = MAXCHANNELS/2
  out.ring = nccl_search(in, channels_at);
  // Trees: min = max = the ring's channels; totalBw *= ngpus/(ngpus-1) for non-ring patterns.
  in.ring = false;
  in.min_channels = in.max_channels = out.ring.channels;
  if (k > 1) in.total_bw *= static_cast<double>(k) / (k - 1);
  out.tree = nccl_search(in, channels_at);
  return out;
}

// The NVLS graph (2.28 search.cc, NCCL_TOPO_PATTERN_NVLS), on the offer instead of a path search:
//   - no graph without an NVSwitch or with SM < 90 ("system->nodes[NVS].count == 0 || ccMin < 90");
//   - maxChannels = min(NCCL_MAX_NVLS_ARITY, ngpus); one node: minChannels = maxChannels ("Force
//     intra-node NVLS algorithm to pull evenly from all GPUs");
//   - a channel has one head GPU; ncclTopoSearchTryNvls charges every GPU's NVS link once and the
//     head's twice (both directions), at bwIntra: after n channels with distinct heads a head GPU
//     carries (n + 1) * bwIntra, so n = floor(bundle / bwIntra) - 1; with a network each channel
//     also takes one NIC at bwInter (a NIC carries floor(nic / bwInter) channels);
//   - ncclTopoCompareGraphs for NVLS: more channels (up to ngpus) is better, else a larger
//     nChannels * bwInter; pass 1 decreases the speed as for rings; pass 2 raises bwInter only,
//     channels fixed, while bwInter < 2 * bwIntra (bwIntra is not raised).
// Channel duplication is not applied (ncclTopoDupChannels cannot exceed maxChannels = ngpus heads).
// Worked example, 1 DGX H100 node: bundle 370.8, minChannels 8, totalBw * 8/7 = 423.8: start at
// 50 (8 * 50 <= 423.8): 6 channels < 8; 40: floor(370.8/40) - 1 = 8 channels, done; pass 2:
// bwInter 50, 60. NVLS graph 8 x 40/60 GB/s.
SearchResult search_nvls(const NodeOffer& o, int nodes, int sm, const NcclTuningTables& tb) {
  if (!o.nvswitch || sm < 90 || o.gpus < 1) return {};
  const bool net = nodes > 1;
  const auto [speeds, nspeeds] = speed_array(net, sm, tb);
  const int k = o.gpus;
  const int max_ch = std::min(kMaxNvlsArity, k);
  const int min_ch = net ? 1 : max_ch;
  constexpr double kEps = 1e-6;
  double max_net = 0.0;
  for (const NicOffer& n : o.nics) max_net = std::max(max_net, n.gbps);
  auto channels_at = [&](double intra, double inter) {
    int n = std::min(max_ch, static_cast<int>(std::floor(o.nvs_bundle_min / intra + kEps)) - 1);
    if (net) {
      int via_nics = 0;
      for (const NicOffer& nic : o.nics) via_nics += static_cast<int>(std::floor(nic.gbps / inter + kEps));
      n = std::min(n, via_nics);
    }
    return std::max(n, 0);
  };
  const double max_bw = net ? max_net : o.max_bw;
  const double total_bw = o.total_bw * (k > 1 ? static_cast<double>(k) / (k - 1) : 1.0);
  SearchResult best;
  auto better = [&](int n, double inter) {
    return n >= min_ch && (n > best.channels || n * inter > best.channels * best.bw_inter);
  };
  const int last = nspeeds - 1;
  int idx = 0;
  while ((speeds[idx] > max_bw || speeds[idx] * min_ch > total_bw) && idx < last) ++idx;
  for (;;) {
    const int n = channels_at(speeds[idx], speeds[idx]);
    if (better(n, speeds[idx])) best = {std::min(n, max_ch), speeds[idx], speeds[idx]};
    if (best.channels >= max_ch) break;
    if (best.channels > 0 && best.channels * best.bw_inter >= o.total_bw) break;
    if (idx < last && (best.channels == 0 || speeds[idx + 1] / best.bw_inter > 0.49)) {
      ++idx;
      continue;
    }
    break;
  }
  if (best.channels == 0) return {};
  idx = 0;
  while (speeds[idx] > best.bw_inter && idx < last) ++idx;
  double tmp_inter = speeds[idx];
  const double tmp_intra = best.bw_intra;
  while (idx > 0 && tmp_inter == best.bw_inter && tmp_inter < tmp_intra * 2) {
    tmp_inter = speeds[--idx];
    if (channels_at(tmp_intra, tmp_inter) >= best.channels) best.bw_inter = tmp_inter;
  }
  return best;
}

void require(bool ok, const std::string& what) {
  if (!ok) throw InputError("NCCL model: " + what);
}

void validate(const NcclGraphEstimate& g) {
  require(g.nodes >= 1, fmt::format("nodes {}: expected >= 1", g.nodes));
  require(g.ranks >= g.nodes, fmt::format("ranks {}: expected >= nodes ({})", g.ranks, g.nodes));
  require(g.gpus_per_node >= 1, fmt::format("gpus_per_node {}: expected >= 1", g.gpus_per_node));
  if (g.ranks == 1) return;
  const int max_ch = nccl_tuning_tables(g.options.version).max_channels;
  require(g.channels >= 1 && g.channels <= max_ch, fmt::format("channels {}: expected 1 to {}", g.channels, max_ch));
  require(g.tree_channels >= 0 && g.tree_channels <= max_ch,
          fmt::format("tree_channels {}: expected 0 (same as channels) to {}", g.tree_channels, max_ch));
  require(std::isfinite(g.bw_intra_gbps) && g.bw_intra_gbps > 0.0,
          fmt::format("bw_intra_gbps {}: expected a bandwidth > 0 GB/s", g.bw_intra_gbps));
  require(std::isfinite(g.bw_inter_gbps) && g.bw_inter_gbps >= 0.0 && (g.nodes == 1 || g.bw_inter_gbps > 0.0),
          fmt::format("bw_inter_gbps {}: expected a bandwidth > 0 GB/s with {} nodes", g.bw_inter_gbps, g.nodes));
  require(g.intra_link == kNcclHwNvlink || g.intra_link == kNcclHwPci,
          fmt::format("intra_link {}: expected {} (NVLINK) or {} (PCI)", g.intra_link, kNcclHwNvlink, kNcclHwPci));
  require(g.nvls_graph_channels >= 0 && g.nvls_graph_channels <= kMaxNvlsArity,
          fmt::format("nvls_graph_channels {}: expected 0 to {}", g.nvls_graph_channels, kMaxNvlsArity));
}

// ---------------------------------------------------------------------------------------------
// NCCL_ALGO / NCCL_PROTO: tuning.cc parseList, over NCCL's function names (ncclFuncStr:
// Broadcast, Reduce, AllGather, ReduceScatter, AllReduce) and element names (ncclAlgoStr /
// ncclProtoStr, compared without case as strcasecmp does). Entries are ';'-separated; each is
// "[function:]elem,elem" or "[function:]^elem,elem" (everything but those); only the first may
// lack the function prefix, which then applies to every function. Each entry resets its
// functions' list. Returns the row of `func` (an index into kNcclFuncs). NCCL fails with
// ncclInvalidUsage on an unknown token; so do we, with an InputError naming the value and the
// accepted names.
constexpr std::array<std::string_view, 5> kNcclFuncs = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                                        "AllReduce"};

// ncclFunc_t of a collective (src/include/device.h: ncclFuncBroadcast 0, ncclFuncReduce 1,
// ncclFuncAllGather 2, ncclFuncReduceScatter 3, ncclFuncAllReduce 4). All-to-all has none: NCCL
// runs it as grouped send/recv, outside the tuner (callers refuse it first).
std::size_t nccl_func(algo::Collective c) {
  switch (c) {
    case algo::Collective::Broadcast:
      return 0;
    case algo::Collective::Reduce:
      return 1;
    case algo::Collective::AllGather:
      return 2;
    case algo::Collective::ReduceScatter:
      return 3;
    case algo::Collective::AllReduce:
    case algo::Collective::AllToAll:
    case algo::Collective::AllToAllV:
      return 4;
  }
  return 4;
}

std::vector<std::string> split_nonempty(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string join_names(const std::vector<std::string_view>& names) {
  std::string s;
  for (std::string_view n : names) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

std::vector<int> parse_nccl_list(const std::string& var, const std::string& str,
                                 const std::vector<std::string_view>& elems, const std::vector<int>& init,
                                 std::size_t func) {
  const int ne = static_cast<int>(elems.size());
  std::vector<std::vector<int>> list(kNcclFuncs.size(), init);
  const std::vector<std::string> entries = split_nonempty(str, ';');
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::vector<std::string> parts = split_nonempty(entries[i], ':');
    std::optional<std::string> prefix;
    std::string elem_list;
    if (parts.size() < 2) {
      if (i != 0)
        throw InputError(fmt::format("{} '{}': all entries except the first must have a prefix (one of {})", var, str,
                                     join_names({kNcclFuncs.begin(), kNcclFuncs.end()})));
      elem_list = parts.empty() ? "" : parts[0];
    } else {
      prefix = parts[0];
      elem_list = parts[1];
    }
    int set = 1, unset = 0;
    if (!elem_list.empty() && elem_list[0] == '^') {
      set = 0;
      unset = 1;
      elem_list.erase(0, 1);
    }
    bool found_prefix = false;
    for (std::size_t f = 0; f < kNcclFuncs.size(); ++f) {
      if (prefix && strcasecmp(prefix->c_str(), std::string(kNcclFuncs[f]).c_str()) != 0) continue;
      found_prefix = true;
      std::fill(list[f].begin(), list[f].end(), unset);
      for (const std::string& e : split_nonempty(elem_list, ',')) {
        int k = 0;
        while (k < ne && strcasecmp(e.c_str(), std::string(elems[static_cast<std::size_t>(k)]).c_str()) != 0) ++k;
        if (k == ne)
          throw InputError(fmt::format("{} '{}': unknown name '{}': expected {} (NCCL's names, any case; '^' excludes)",
                                       var, str, e, join_names(elems)));
        list[f][static_cast<std::size_t>(k)] = set;
      }
    }
    if (!found_prefix)
      throw InputError(fmt::format("{} '{}': unknown prefix '{}': expected one of {}", var, str, *prefix,
                                   join_names({kNcclFuncs.begin(), kNcclFuncs.end()})));
  }
  return list[func];
}

// The algorithm names of a release (ncclAlgoStr): 2.22.3 has no PAT.
std::vector<std::string_view> algo_names(const NcclTuningTables& tb) {
  std::vector<std::string_view> names;
  for (int a = 0; a < (tb.has_pat ? kNcclNumAlgos : kNcclNumAlgos - 1); ++a) names.push_back(to_string(NcclAlgo(a)));
  return names;
}

struct Enables {
  std::array<int, kNcclNumAlgos> algo{};    // algoEnable, the collective's row
  std::array<int, kNcclNumProtos> proto{};  // protoEnable, the collective's row: 2 = LL128 by NCCL's rule
};

Enables nccl_enables(const NcclModelOptions& o, algo::Collective c = algo::Collective::AllReduce) {
  const NcclTuningTables& tb = nccl_tuning_tables(o.version);
  Enables en;
  const std::vector<std::string_view> names = algo_names(tb);
  std::vector<int> algo(names.size(), 1);
  if (!o.algo.empty()) algo = parse_nccl_list("NCCL_ALGO", o.algo, names, algo, nccl_func(c));
  for (std::size_t a = 0; a < algo.size(); ++a) en.algo[a] = algo[a];
  std::vector<int> proto = {1, 2, 1};
  if (!o.proto.empty()) proto = parse_nccl_list("NCCL_PROTO", o.proto, {"LL", "LL128", "Simple"}, proto, nccl_func(c));
  for (std::size_t p = 0; p < proto.size(); ++p) en.proto[p] = proto[p];
  return en;
}

// ncclMinNchannels / ncclMaxNchannels (connect.cc): -2 = unset; min clamped to [0, MAXCHANNELS],
// max to [1, MAXCHANNELS] (NCCL warns and clamps).
int min_nchannels(const NcclModelOptions& o, int max_channels) {
  if (o.min_channels == -2) return 0;
  return std::clamp(o.min_channels, 0, max_channels);
}
int max_nchannels(const NcclModelOptions& o, int max_channels) {
  if (o.max_channels == -2) return max_channels;
  return std::clamp(o.max_channels, 1, max_channels);
}

int parse_int(const std::string& key, const std::string& value, const std::string& what) {
  // NCCL_PARAM reads with strtoll(base 0) and falls back to the default on garbage; a simulator
  // that silently used the default would mislead, so garbage is an input error here.
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(value.c_str(), &end, 0);
  if (value.empty() || end == value.c_str() || *end != '\0' || errno != 0 || v < std::numeric_limits<int>::min() ||
      v > std::numeric_limits<int>::max())
    throw InputError(fmt::format("{} {}={}: expected an integer", what, key, value));
  return static_cast<int>(v);
}

}  // namespace

std::string_view to_string(NcclAlgo a) {
  switch (a) {
    case NcclAlgo::Tree:
      return "Tree";
    case NcclAlgo::Ring:
      return "Ring";
    case NcclAlgo::CollNetDirect:
      return "CollNetDirect";
    case NcclAlgo::CollNetChain:
      return "CollNetChain";
    case NcclAlgo::Nvls:
      return "NVLS";
    case NcclAlgo::NvlsTree:
      return "NVLSTree";
    case NcclAlgo::Pat:
      return "PAT";
  }
  return "?";
}
std::string_view to_string(NcclProto p) {
  switch (p) {
    case NcclProto::LL:
      return "LL";
    case NcclProto::LL128:
      return "LL128";
    case NcclProto::Simple:
      return "Simple";
  }
  return "?";
}

std::string_view to_string(NcclVersion v) {
  return nccl_tuning_tables(v).name;
}

NcclVersion parse_nccl_version(const std::string& s, const std::string& what) {
  for (NcclVersion v : {NcclVersion::V2_22_3, NcclVersion::V2_28_9})
    if (s == to_string(v)) return v;
  throw InputError(fmt::format("{} {}: expected 2.22.3 or 2.28.9", what, s));
}

void set_nccl_env(NcclModelOptions& o, const std::string& key, const std::string& value, const std::string& what) {
  if (key == "NCCL_ALGO") {
    o.algo = value;
  } else if (key == "NCCL_PROTO") {
    o.proto = value;
  } else if (key == "NCCL_MIN_NCHANNELS") {
    o.min_channels = parse_int(key, value, what);
  } else if (key == "NCCL_MAX_NCHANNELS") {
    o.max_channels = parse_int(key, value, what);
  } else if (key == "NCCL_NVLS_ENABLE") {
    o.nvls_enable = parse_int(key, value, what);
  } else if (key == "NCCL_COLLNET_ENABLE") {
    // NCCL reads it as a boolean-like integer (NCCL_PARAM CollNetEnable, default 0); CollNet then
    // runs where the network reduces (the fabric's sharp).
    o.collnet_enable = parse_int(key, value, what);
    if (o.collnet_enable != 0 && o.collnet_enable != 1)
      throw InputError(
          fmt::format("{} {}={}: expected 0 (CollNet off) or 1 (on where the fabric has SHARP)", what, key, value));
  } else {
    std::string keys;
    for (std::string_view k : kNcclEnvKeys) keys += (keys.empty() ? "" : ", ") + std::string(k);
    throw InputError(fmt::format("{} {}={}: unknown variable; the NCCL model honours {}", what, key, value, keys));
  }
}

void set_nccl_env(NcclModelOptions& o, const std::string& assignment, const std::string& what) {
  const std::size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError(fmt::format("{} {}: expected KEY=VALUE, e.g. NCCL_ALGO=Ring", what, assignment));
  set_nccl_env(o, assignment.substr(0, eq), assignment.substr(eq + 1), what);
}

void check_nccl_options(const NcclModelOptions& o) {
  (void)nccl_enables(o);
}

NcclModelOptions nccl_options_from_env(const std::map<std::string, std::string>& env, NcclModelOptions o) {
  for (std::string_view k : kNcclEnvKeys) {
    auto it = env.find(std::string(k));
    if (it != env.end()) set_nccl_env(o, it->first, it->second, "environment variable");
  }
  return o;
}

std::map<std::string, std::string> nccl_process_env() {
  std::map<std::string, std::string> env;
  for (std::string_view k : kNcclEnvKeys)
    if (const char* v = std::getenv(std::string(k).c_str())) env[std::string(k)] = v;
  return env;
}

// ---------------------------------------------------------------------------------------------
// From our topology to NCCL's graphs:
//   1. ranks, nodes, GPUs per node from the topology; sm = the smallest compute capability;
//   2. per distinct node model (NCCL searches each node's own system): the ring offer
//      (analyse_node) in NCCL's units: NVLink = links * nccl_nvlink_gbps_per_link(sm) (H100:
//      18 * 20.6 = 370.8 GB/s per GPU into the merged NVSwitch), PCIe = width * speed / 80
//      (Gen5 x16 = 48), NIC = min(its PCIe route, port rate) (NDR behind Gen5: 48);
//   3. ncclTopoCompute on that offer (search_node) for the ring, then for the tree;
//   4. nodes combine as init.cc does after its all-gather: channels and bandwidths are the
//      minimum over nodes, path types the maximum;
//   5. comm->nChannels (connect.cc ncclTopoPostset): min(MAXCHANNELS, 2 * min(ring, tree
//      channels)); 2.28: doubled again on SM90+ with several nodes when the ring's bwIntra > 45
//      and fewer than 16 channels; then NCCL_MAX_NCHANNELS caps it and NCCL_MIN_NCHANNELS raises
//      it (copyChannels). The tuning model's bandwidths use the graphs' channels, not these;
//   6. 2.28: the NVLS graph (search_nvls) and ncclNvlsInit: nvlsSupport when NCCL_NVLS_ENABLE is
//      not 0, the node has more than 2 GPUs and (NCCL_NVLS_ENABLE = 2) the GPUs report multicast,
//      which we take as SM >= 90 with NVSwitches; nvlsChannels = NVLS_NCHANNELS_SM90 (16), SM100:
//      32 (several nodes) or 24 (one node).
// Worked example, 1 DGX H100 node: capacity 370.8, speeds (SM90 intra) from 60: 6 channels * 60
// = 360; 50 -> 7*50 = 350, 40 -> 9*40 = 360, 30 -> 12*30 = 360 are not better; 24/60 < 0.49
// stops. Duplication (60 >= 50): 12 channels * 30. Pass 2: 40, 50, 60 cannot hold 12 channels.
// Ring = 12 x 30 GB/s (busBw 360), tree = 12 x 30, comm channels 24.
// With 2+ DGX H100 nodes: NIC path 48 GB/s, SM90 inter speeds from 48: 8 NICs -> 8 channels,
// NVLink 8 * 48 * 7/8 = 336 <= 370.8 fits; 8 * 48 = 384 >= totalBw 370.8 stops; no duplication
// (SM90, 48 < 50, 8 > 4). Ring = 8 x 48, comm channels 16 (NVIDIA/nccl#1453 logs "16 coll
// channels" for 3 DGX-class H100 nodes).
NcclGraphEstimate estimate_nccl_graph(const topo::Topology& t, const NcclModelOptions& options) {
  NcclGraphEstimate est;
  est.options = options;
  (void)nccl_enables(options);  // a bad NCCL_ALGO / NCCL_PROTO fails here, before any simulation
  const NcclTuningTables& tb = nccl_tuning_tables(options.version);
  est.nodes = t.nodes();
  est.ranks = t.num_ranks();
  if (est.ranks == 0)
    throw InputError("NCCL model: the topology has no GPUs; stock NCCL needs at least one GPU per node");
  const Graph& g = t.graph();
  for (const topo::RankInfo& r : t.ranks())
    if (g[r.gpu].kind != DeviceKind::Gpu)
      throw InputError(fmt::format("NCCL model: rank {} runs on {}, not on a GPU; stock NCCL needs GPUs", r.rank,
                                   t.device_name(r.gpu)));
  est.gpus_per_node = est.ranks / est.nodes;
  est.cpu_vendor = std::string(t.cpu_vendor());

  // Distinct node models, one representative node each.
  std::map<std::string, int> representative;
  int min_gpus = std::numeric_limits<int>::max(), max_gpus = 0;
  for (int n = 0; n < t.nodes(); ++n) {
    representative.emplace(t.node_model_name(n), n);
    min_gpus = std::min(min_gpus, t.gpus_per_node(n));
    max_gpus = std::max(max_gpus, t.gpus_per_node(n));
  }
  if (min_gpus == 0) throw InputError("NCCL model: a node has no GPU; stock NCCL needs at least one GPU per node");
  if (min_gpus != max_gpus)
    est.notes.push_back(fmt::format("nodes have {} to {} GPUs; NCCL's model uses ranks/nodes = {}", min_gpus, max_gpus,
                                    est.gpus_per_node));

  std::vector<NodeOffer> offers;
  int sm_min = std::numeric_limits<int>::max(), sm_max = 0;
  for (const auto& [name, n] : representative) {
    offers.push_back(analyse_node(node_topology(t, n), 0));
    sm_min = std::min(sm_min, offers.back().sm_min);
    sm_max = std::max(sm_max, offers.back().sm_max);
  }
  est.sm = sm_min;
  est.sm_max = sm_max;
  if (est.sm == 0) est.notes.push_back("GPU compute capability unknown (0): Volta-class tables, LL128 off");

  bool first = true;
  int nics_min = std::numeric_limits<int>::max();
  est.nvswitch = true;
  bool nvls_hw = tb.models_nvls;  // every node: NVSwitches, SM >= 90, more than 2 GPUs (ncclNvlsInit)
  for (const NodeOffer& o : offers) {
    const NodeGraphs ng = search_node(o, est.nodes, est.sm, tb);
    const SearchResult nvls = tb.models_nvls ? search_nvls(o, est.nodes, est.sm, tb) : SearchResult{};
    nvls_hw = nvls_hw && o.nvswitch && o.sm_min >= 90 && o.gpus > 2;
    est.nvswitch = est.nvswitch && o.nvswitch;
    nics_min = std::min(nics_min, static_cast<int>(o.nics.size()));
    PathType inter = PathType::PIX;  // graph->typeInter starts at PIX; no NET on one node
    if (est.nodes > 1) {
      if (o.nics.empty())
        throw InputError(
            "NCCL model: a node of a multi-node topology has no NIC; NCCL needs a network device per node");
      inter = PathType::LOC;
      for (const NicOffer& nic : o.nics) inter = std::max(inter, nic.path);
    }
    if (first) {
      est.channels = ng.ring.channels;
      est.bw_intra_gbps = ng.ring.bw_intra;
      est.bw_inter_gbps = ng.ring.bw_inter;
      est.tree_channels = ng.tree.channels;
      est.tree_bw_intra_gbps = ng.tree.bw_intra;
      est.tree_bw_inter_gbps = ng.tree.bw_inter;
      est.intra_path = o.intra_path;
      est.inter_path = inter;
      est.nvls_graph_channels = nvls.channels;
      est.nvls_bw_intra_gbps = nvls.bw_intra;
      est.nvls_bw_inter_gbps = nvls.bw_inter;
      first = false;
    } else {
      est.channels = std::min(est.channels, ng.ring.channels);
      est.bw_intra_gbps = std::min(est.bw_intra_gbps, ng.ring.bw_intra);
      est.bw_inter_gbps = std::min(est.bw_inter_gbps, ng.ring.bw_inter);
      est.tree_channels = std::min(est.tree_channels, ng.tree.channels);
      est.tree_bw_intra_gbps = std::min(est.tree_bw_intra_gbps, ng.tree.bw_intra);
      est.tree_bw_inter_gbps = std::min(est.tree_bw_inter_gbps, ng.tree.bw_inter);
      est.intra_path = std::max(est.intra_path, o.intra_path);
      est.inter_path = std::max(est.inter_path, inter);
      est.nvls_graph_channels = std::min(est.nvls_graph_channels, nvls.channels);
      est.nvls_bw_intra_gbps = std::min(est.nvls_bw_intra_gbps, nvls.bw_intra);
      est.nvls_bw_inter_gbps = std::min(est.nvls_bw_inter_gbps, nvls.bw_inter);
    }
  }
  // graph->typeIntra is PATH_NVL only when every hop is NVLink through NVSwitches or direct;
  // tuning.cc uses NVLINK latencies for exactly LINK_NVL, PCI latencies for anything else
  // (including NVB, and LOC with one GPU per node).
  est.intra_link = est.intra_path == PathType::NVL ? kNcclHwNvlink : kNcclHwPci;
  // ncclTopoPostset (connect.cc).
  int comm = std::min(tb.max_channels, 2 * std::min(est.channels, est.tree_channels));
  if (tb.postset_sm90_doubling && est.sm >= 90 && est.nodes > 1 && est.bw_intra_gbps > 45.0 && comm < 16)
    comm = std::min(tb.max_channels, 2 * comm);
  comm = std::min(max_nchannels(options, tb.max_channels), comm);
  comm = std::max(min_nchannels(options, tb.max_channels), comm);
  est.comm_channels = comm;
  // ncclNvlsInit (src/transport/nvls.cc).
  if (tb.models_nvls && options.nvls_enable != 0 && est.gpus_per_node > 2 && (options.nvls_enable != 2 || nvls_hw)) {
    est.nvls_support = true;
    est.nvls_channels = est.sm >= 100 && tb.arch_rows == 4
                            ? (est.nodes > 1 ? tb.nvls_channels_sm100 : tb.nvls_channels_sm100_nvl)
                            : tb.nvls_channels_sm90;
  }
  est.notes.push_back(fmt::format(
      "NCCL {} graph estimate: ring {} x {:.1f}/{:.1f} GB/s, tree {} x {:.1f}/{:.1f} GB/s, type {}/{}, {} comm "
      "channels",
      tb.name, est.channels, est.bw_intra_gbps, est.bw_inter_gbps, est.tree_channels, est.tree_bw_intra_gbps,
      est.tree_bw_inter_gbps, topo::to_string(est.intra_path), topo::to_string(est.inter_path), est.comm_channels));
  // CollNet: comm->collNetSupport needs NCCL_COLLNET_ENABLE=1 and a collective network (the
  // SHARP plugin: our fabric's `sharp`) on more than one node (init.cc computes the CollNet graphs
  // only then). The graphs' searches (Chain: NCCL_TOPO_PATTERN_TREE with collNet, min = max =
  // the ring's channels; Direct: NCCL_TOPO_PATTERN_COLLNET_DIRECT, one channel per head NIC) are
  // not transcribed: both take the tree graph's bandwidths, Chain the ring's channels and Direct
  // one channel per NIC of a node (at most its GPUs).
  if (options.collnet_enable == 1 && est.nodes > 1 && t.fabric() && t.fabric()->sharp && tb.models_nvls) {
    est.collnet_support = true;
    est.collnet_chain_channels = est.channels;
    est.collnet_direct_channels = std::max(1, std::min(nics_min, est.gpus_per_node));
    est.collnet_bw_intra_gbps = est.tree_bw_intra_gbps;
    est.collnet_bw_inter_gbps = est.tree_bw_inter_gbps;
    est.notes.push_back(fmt::format("CollNet (SHARP): Chain {} x {:.1f}/{:.1f} GB/s, Direct {} channels{}",
                                    est.collnet_chain_channels, est.collnet_bw_intra_gbps, est.collnet_bw_inter_gbps,
                                    est.collnet_direct_channels, est.nvswitch ? "" : " (off: no NVSwitch)"));
  } else if (options.collnet_enable == 1) {
    est.notes.push_back(est.nodes == 1 ? "NCCL_COLLNET_ENABLE=1: one node, no CollNet"
                                       : "NCCL_COLLNET_ENABLE=1: the fabric has no SHARP (--sharp), no CollNet");
  }
  if (tb.models_nvls)
    est.notes.push_back(fmt::format("NVLS graph {} x {:.1f}/{:.1f} GB/s, NVLS {} ({} channels)",
                                    est.nvls_graph_channels, est.nvls_bw_intra_gbps, est.nvls_bw_inter_gbps,
                                    est.nvls_support ? "supported" : "off", est.nvls_channels));
  return est;
}

// ---------------------------------------------------------------------------------------------
// ncclTopoTuneModel (tuning.cc), per collective. Which algorithms each collective gets:
//   allreduce          Tree, Ring, NVLS, NVLSTree, CollNet Direct / Chain ("if (coll ==
//                      ncclFuncAllReduce && a == NCCL_ALGO_PAT) continue;");
//   allgather,         Ring, PAT, NVLS, CollNet Direct ("a != NCCL_ALGO_PAT && a != NCCL_ALGO_RING
//   reduce_scatter     && a != NCCL_ALGO_NVLS && a != NCCL_ALGO_COLLNET_DIRECT) continue;");
//   broadcast, reduce  Ring only ("(coll == ncclFuncBroadcast || coll == ncclFuncReduce) && a !=
//                      NCCL_ALGO_RING) continue;").
// CollNet needs collNetSupport (NCCL_COLLNET_ENABLE=1 and SHARP), NVLS nvlsSupport; 2.22.3 is
// modelled for allreduce only (its Tree and Ring rows), and all-to-all has no tuning model.
namespace {

bool is_ag_rs(algo::Collective c) {
  return c == algo::Collective::AllGather || c == algo::Collective::ReduceScatter;
}
bool is_rooted(algo::Collective c) {
  return c == algo::Collective::Broadcast || c == algo::Collective::Reduce;
}

void require_modelled(const NcclGraphEstimate& g, algo::Collective c) {
  if (c == algo::Collective::AllToAll || c == algo::Collective::AllToAllV)
    throw InputError(fmt::format(
        "NCCL model: NCCL's tuner has no model for {} (an all-to-all in NCCL is grouped send/recv, not a tuned "
        "collective)",
        algo::to_string(c)));
  if (c != algo::Collective::AllReduce && !nccl_tuning_tables(g.options.version).models_nvls)
    throw InputError(fmt::format("NCCL model: NCCL {} is modelled for allreduce only; {} needs --nccl-version 2.28.9",
                                 to_string(g.options.version), algo::to_string(c)));
}

// The algorithms tuning.cc computes for `coll` on this release and estimate (before enables).
bool algorithm_considered(int a, algo::Collective coll, const NcclTuningTables& tb, const NcclGraphEstimate& g) {
  const bool nvls_algo = a == kNvls || a == kNvlsTree;
  const bool collnet = a == static_cast<int>(NcclAlgo::CollNetDirect) || a == static_cast<int>(NcclAlgo::CollNetChain);
  if (is_rooted(coll)) return a == kRing;
  if (is_ag_rs(coll))
    return a == kRing || (a == kPat && tb.has_pat) || (a == kNvls && tb.models_nvls) ||
           (a == static_cast<int>(NcclAlgo::CollNetDirect) && g.collnet_support);
  return a == kTree || a == kRing || (nvls_algo && tb.models_nvls) || (collnet && g.collnet_support);
}

// ncclPatEnable (tuning.cc, NCCL_PAT_ENABLE unset = 2): SM 60 or later ("Need SM60 or higher for
// CUDA atomics"), one GPU per node ("PAT only supports 1 GPU per node"); the network device is
// taken as host memory (no device offload is modelled).
bool pat_enabled(const NcclGraphEstimate& g) {
  return g.sm >= 60 && g.nodes == g.ranks;
}

}  // namespace

NcclTuneResult nccl_tune_model(const NcclGraphEstimate& g, algo::Collective coll, algo::ReduceOp op) {
  validate(g);
  require_modelled(g, coll);
  NcclTuneResult m;
  m.collective = coll;
  if (g.ranks <= 1) return m;  // "if (nRanks <= 1) return ncclSuccess;"
  const NcclTuningTables& tb = nccl_tuning_tables(g.options.version);
  const Enables en = nccl_enables(g.options, coll);
  const bool allreduce = coll == algo::Collective::AllReduce, ag_rs = is_ag_rs(coll), rooted = is_rooted(coll);
  const int n_nodes = g.nodes, n_ranks = g.ranks;
  const int arch = g.sm >= 100 && tb.arch_rows == 4 ? 3 : arch_index(g.sm);
  const int index2 = scale_index(n_nodes);
  // LL: on one node the GPU generation picks the llMaxBws row; on several, the CPU vendor
  // (AMD -> row 1, else row 0).
  const int index1 = n_nodes == 1 ? arch : (g.cpu_vendor == "amd" ? 1 : 0);
  const double ll_max_bw = tb.ll_max_bws[index1][index2];
  const double per_ch_max_tree_bw = tb.per_ch_max_tree_bws[arch][index2];
  const double per_ch_max_ring_ll128_bw = tb.per_ch_max_ring_ll128_bws[arch][index2];
  const double per_ch_max_tree_ll128_bw = tb.per_ch_max_tree_ll128_bws[arch][index2];
  const double per_ch_max_nvls_tree_bw = tb.per_ch_max_nvls_tree_bws[arch][index2];
  const double nvls_efficiency = tb.nvls_efficiency[arch];
  const double ppn = static_cast<double>(n_ranks) / n_nodes;

  // Ring steps: allreduce 2(nRanks-1), reduce-scatter and allgather nRanks-1, broadcast and
  // reduce nRanks ("int nsteps = coll == ncclFuncAllReduce ? 2*(nRanks-1) : ... : nRanks").
  // Network steps: allreduce 2*nNodes in 2.22.3 as written, 2*(nNodes-1) in 2.28 (with one GPU
  // per node the intra count nsteps - nInterSteps is -2 in 2.22.3, which this model keeps);
  // the others nNodes-1.
  const int nsteps = allreduce ? 2 * (n_ranks - 1) : ag_rs ? n_ranks - 1 : n_ranks;
  const int n_inter_steps = n_nodes == 1 ? 0
                            : allreduce  ? (tb.inter_steps_minus_one ? 2 * (n_nodes - 1) : 2 * n_nodes)
                                         : n_nodes - 1;

  // The graph each algorithm reads (comm->graphs[a], init.cc: { treeGraph, ringGraph,
  // collNetDirectGraph, collNetChainGraph, nvlsGraph, nvlsGraph, treeGraph }): NVLS and NVLSTree
  // share the NVLS graph, PAT reads the tree graph.
  struct GraphInfo {
    int channels = 0;
    double bw_intra = 0.0, bw_inter = 0.0;
    int intra_hw = kNcclHwPci;
  };
  std::array<GraphInfo, kNcclNumAlgos> gi{};
  gi[kTree] = {g.tree_channels > 0 ? g.tree_channels : g.channels,
               g.tree_bw_intra_gbps > 0 ? g.tree_bw_intra_gbps : g.bw_intra_gbps,
               g.tree_bw_inter_gbps > 0 ? g.tree_bw_inter_gbps : g.bw_inter_gbps, g.intra_link};
  gi[kRing] = {g.channels, g.bw_intra_gbps, g.bw_inter_gbps, g.intra_link};
  gi[kPat] = gi[kTree];
  // The NVLS graph's GPU -> NVS -> GPU paths are NVLink: typeIntra LINK_NVL.
  gi[kNvls] = gi[kNvlsTree] = {g.nvls_graph_channels, g.nvls_bw_intra_gbps, g.nvls_bw_inter_gbps, kNcclHwNvlink};
  constexpr int kCollNetDirect = static_cast<int>(NcclAlgo::CollNetDirect),
                kCollNetChain = static_cast<int>(NcclAlgo::CollNetChain);
  gi[kCollNetChain] = {g.collnet_chain_channels, g.collnet_bw_intra_gbps, g.collnet_bw_inter_gbps, g.intra_link};
  gi[kCollNetDirect] = {g.collnet_direct_channels, g.collnet_bw_intra_gbps, g.collnet_bw_inter_gbps, g.intra_link};

  // Network post overhead (getNetOverhead): 1 us on Intel, 2 us on AMD, 1 us otherwise.
  const double net_overhead_base = g.cpu_vendor == "amd" ? 2.0 : 1.0;

  for (int a = 0; a < kNcclNumAlgos; ++a) {
    if (!algorithm_considered(a, coll, tb, g)) continue;
    const bool nvls_algo = a == kNvls || a == kNvlsTree;
    const bool collnet = a == kCollNetDirect || a == kCollNetChain;
    for (int p : {kLL, kLL128, kSimple}) {
      // NVLS / NVLSTree / CollNet: Simple only ("Not used"); PAT: Simple only, when ncclPatEnable.
      if ((nvls_algo || collnet) && p != kSimple) continue;
      if (a == kPat && (p != kSimple || !pat_enabled(g))) continue;
      const GraphInfo& gr = gi[static_cast<std::size_t>(a)];
      // Bandwidth: nChannels * per-channel bw (bwIntra up to 2 nodes or for CollNet, bwInter beyond).
      double bw = n_nodes <= 2 || collnet ? gr.bw_intra : gr.bw_inter;
      if (nvls_algo) {
        if (gr.channels < 2) continue;  // "NVLS/NVLStree needs at least 2 channels"
        // NVLS bus bandwidth per channel: allreduce pipelines two operations (x2); the other
        // collectives move (ppn-1)/ppn of the data through the switch.
        const double intra_bw =
            gr.bw_intra * nvls_efficiency * (gr.channels - 1) / gr.channels * (allreduce ? 2.0 : (ppn - 1) / ppn);
        const double inter_bw = gr.bw_inter * ((n_nodes <= 2 && a == kNvlsTree) ? 2 : 1);
        bw = std::min(
            {intra_bw, inter_bw, a == kNvlsTree ? per_ch_max_nvls_tree_bw : std::numeric_limits<double>::max()});
      }
      double bus_bw = gr.channels * bw;
      if (a == kRing && p == kLL) bus_bw = std::min(ll_max_bw, bus_bw * 0.5);
      if (a == kRing && p == kLL128)
        bus_bw = std::min(bus_bw * (tb.ring_ll128_ppn1_factor && ppn < 2 ? 0.7 : 0.92),
                          gr.channels * per_ch_max_ring_ll128_bw);
      if (a == kTree && allreduce) bus_bw = std::min(bus_bw * 0.92, gr.channels * per_ch_max_tree_bw);
      if (a == kTree && p == kLL) bus_bw = std::min(bus_bw * 1.0 / 3.8, ll_max_bw);
      if (a == kTree && p == kLL128)
        bus_bw = std::min(bus_bw * (n_nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), gr.channels * per_ch_max_tree_ll128_bw);
      if (a == kPat) bus_bw *= .75;
      if (a == kCollNetDirect && ag_rs) {
        bus_bw = ppn * std::min(gr.bw_intra, gr.bw_inter * 0.9);
      } else if (a == kCollNetDirect) {
        // "Collnet+Direct requires all GPUs to have a local NIC to work at full speed".
        double factor = ppn / gr.channels;  // GPU/NIC ratio
        factor -= (factor - 1) / 2;
        bus_bw /= factor;
        if (g.sm >= 90) bus_bw *= .85;
      }
      // AllGather / ReduceScatter by NVLS or CollNet Direct across nodes need the CollNet plugin's
      // iallgather / ireducescatter (taken as present with SHARP), collnetEnable, and no more
      // local ranks than CollNet heads ("AllGather/ReduceScatter requires 1:1 GPU:NIC").
      if ((a == kNvls || a == kCollNetDirect) && ag_rs && n_nodes > 1 &&
          (!g.collnet_support || g.gpus_per_node > g.collnet_direct_channels))
        bus_bw = 0.0;
      // Bus bandwidth to algorithm bandwidth: ring, NVLS, NVLSTree nRanks/nsteps; tree, CollNet
      // 0.5; allgather and reduce-scatter by another algorithm than the ring: none.
      if (!(a != kRing && ag_rs)) {
        const double ratio = a == kRing || nvls_algo ? static_cast<double>(n_ranks) / nsteps : 0.5;
        bus_bw *= ratio;
      }
      m.algbw_gbps[a][p] = bus_bw;

      // Latency.
      double lat = tb.base_lat_us[a][p];
      double intra_lat = tb.hw_lat_us[gr.intra_hw][a][p];
      // 2.28: "With ppn=1 latencies are fully exposed, use the Tree network latency".
      double inter_lat =
          (tb.ppn1_tree_net_latency && ppn == 1 ? tb.hw_lat_us[kNcclHwNet][kTree][p] : tb.hw_lat_us[kNcclHwNet][a][p]) +
          g.latency_inter_us;
      if (p == kSimple) inter_lat += g.latency_inter_us;  // the flush
      if (a == kRing && rooted) {
        // Broadcast / reduce: one hop's latency on the ring's hardware (hw[a]: NET with several
        // nodes) when every channel is the same ring, else nsteps of them (Simple: Tree's
        // latency, "Add some chunk latency, waiting for proper chunk modeling").
        const int hw = n_nodes == 1 ? gr.intra_hw : kNcclHwNet;
        double hop = tb.hw_lat_us[hw][kRing][p];
        if (g.ring_same_channels) {
          lat += hop;
        } else {
          if (p == kSimple) hop = tb.hw_lat_us[hw][kTree][p];
          lat += nsteps * hop;
        }
      } else if (a == kRing) {
        // "Inter-node rings still have to launch nsteps * net overhead."
        double net_overhead = 0.0;
        if (n_nodes > 1) net_overhead = net_overhead_base * (p == kSimple ? 3.0 : 1.0);
        intra_lat = std::max(intra_lat, net_overhead);
        lat += (nsteps - n_inter_steps) * intra_lat + n_inter_steps * inter_lat;
      } else if (a == kTree) {
        lat += 2 * ((n_ranks / n_nodes - 1) * intra_lat + log2i(static_cast<std::uint64_t>(n_nodes)) * inter_lat);
      } else if (a == kNvls) {
        lat = intra_lat + (n_nodes > 1 ? inter_lat : 0.0);  // replaces the base latency
      } else if (a == kCollNetDirect) {                     // "Add 0.4 us arity serialization latency"
        const int local = n_ranks / n_nodes - 1;
        lat += 2 * (std::min(1, local) * intra_lat + local * 0.4) + inter_lat;
      } else if (a == kCollNetChain) {
        lat += 2 * (n_ranks / n_nodes - 1) * intra_lat + inter_lat;
      } else if (a == kPat) {
        // "Log latency" over the nodes, plus "a linear part" of 2.8 us per rank.
        lat += log2i(static_cast<std::uint64_t>(n_nodes)) * (inter_lat / 3.5) + n_ranks * 2.8;
      } else {
        lat += intra_lat + 2 * log2i(static_cast<std::uint64_t>(n_nodes)) * inter_lat;
      }
      m.latency_us[a][p] = lat;

      // Enabled: NCCL_ALGO's row of the collective, less NVLSTree on one node and NVLS on several
      // (no CollNet); NVLS and NVLSTree need nvlsSupport and, but for allreduce, at most
      // NCCL_MAX_NVLS_ARITY local ranks (enqueue.cc updateCollCostTable); PAT reduce-scatter
      // does not take the scaling reductions (avg: ncclDevPreMulSum / ncclDevSumPostDiv).
      bool on = en.algo[static_cast<std::size_t>(a)] != 0;
      if (a == kNvlsTree && n_nodes == 1) on = false;
      // With CollNet (config.collnetEnable) NVLS runs across nodes too (NVLS + CollNet), and
      // CollNet Direct needs NVSwitches (nvsCount > 0).
      if (a == kNvls && n_nodes > 1 && !g.collnet_support) on = false;
      if (nvls_algo && !g.nvls_support) on = false;
      if (nvls_algo && !allreduce && g.gpus_per_node > kMaxNvlsArity) on = false;
      if (a == kCollNetDirect && !g.nvswitch) on = false;
      if (a == kPat && coll == algo::Collective::ReduceScatter && op == algo::ReduceOp::Avg) on = false;
      // NCCL_PROTO's row; LL128 left at 2 ("auto") by NCCL's rule: Volta or later (2.22.3: SM 70,
      // 80 or 90 only) with NVLink inside the node and the NIC close to the GPU: typeInter <= PXB
      // (<= PXN on SM90+: we accept any NIC path on NVLink SM90 nodes, as NCCL can route through a
      // peer GPU), typeIntra <= NVB, one compute capability.
      int p_enable = en.proto[static_cast<std::size_t>(p)];
      if (p == kLL128 && p_enable == 2) {
        const int sm_max = g.sm_max > 0 ? g.sm_max : g.sm;
        const bool nic_ok = g.inter_path <= PathType::PXB || (g.sm >= 90 && g.intra_path <= PathType::NVB);
        const bool arch_ok = tb.ll128_any_sm70_plus ? g.sm >= 70 : (g.sm == 70 || g.sm == 80 || g.sm == 90);
        p_enable = nic_ok && g.intra_path <= PathType::NVB && g.sm == sm_max && arch_ok ? 1 : 0;
      }
      on = on && p_enable != 0;
      m.enabled[a][p] = on && m.algbw_gbps[a][p] > 0.0;
    }
  }
  return m;
}

// ncclTopoGetAlgoTime (tuning.cc), numPipeOps = 1.
double nccl_algo_time_us(const NcclGraphEstimate& g, const NcclTuneResult& m, NcclAlgo algo, NcclProto proto,
                         std::uint64_t bytes) {
  const int a = static_cast<int>(algo), p = static_cast<int>(proto);
  if (g.ranks <= 1) return a == kRing && p == kSimple ? 0.0 : -1.0;
  if (!m.enabled[a][p]) return -1.0;
  const NcclTuningTables& tb = nccl_tuning_tables(g.options.version);
  const bool allreduce = m.collective == algo::Collective::AllReduce;
  double bw = m.algbw_gbps[a][p];
  double lat = m.latency_us[a][p];
  const int log_size = log2i(bytes >> 6);
  if (a == kTree && allreduce && log_size < 23) bw *= tb.tree_correction[p][log_size];
  // Plateau effect of ring: multi-node ring/Simple allreduce with >= 64 bytes per channel and rank.
  const int comm_channels = g.comm_channels > 0 ? g.comm_channels : std::min(tb.max_channels, 2 * g.channels);
  if (a == kRing && p == kSimple && allreduce && g.nodes > 1 &&
      bytes / (static_cast<std::uint64_t>(comm_channels) * static_cast<std::uint64_t>(g.ranks)) >= 64)
    lat *= g.sm < 80 ? 1.9 : 1.4;
  return lat + static_cast<double>(bytes) / (1000.0 * bw);
}

namespace {

// comm->nChannels: ncclTopoPostset's doubled ring channels, at most MAXCHANNELS.
int comm_channels_of(const NcclGraphEstimate& g) {
  return g.comm_channels > 0 ? g.comm_channels
                             : std::min(nccl_tuning_tables(g.options.version).max_channels, 2 * g.channels);
}

// comm->maxThreads[a][p] as ncclTopoTuneModel sets it without NCCL_NTHREADS / NCCL_LL128_NTHREADS:
// NCCL_SIMPLE_MAX_NTHREADS 512 for Tree/Simple, and for Ring/Simple unless the ring graph's
// bwIntra * nChannels <= PCI_BW (12 GB/s, topo.h), then 256; NCCL_LL_MAX_NTHREADS 512 and
// NCCL_LL128_MAX_NTHREADS 640 for Ring and Tree; NCCL_MAX_NTHREADS 640 for CollNet and NVLS
// Simple; 0 where tuning.cc sets nothing (PAT, LL / LL128 of the others; comm is zeroed).
int nccl_max_threads(const NcclGraphEstimate& g, NcclAlgo a, NcclProto p) {
  const bool ring_or_tree = a == NcclAlgo::Ring || a == NcclAlgo::Tree;
  switch (p) {
    case NcclProto::LL:
      return ring_or_tree ? 512 : 0;
    case NcclProto::LL128:
      return ring_or_tree ? 640 : 0;
    case NcclProto::Simple:
      if (a == NcclAlgo::Ring) return g.bw_intra_gbps * g.channels <= 12.0 ? 256 : 512;
      if (a == NcclAlgo::Tree) return 512;
      return a == NcclAlgo::Pat ? 0 : 640;
  }
  return 0;
}

// comm->threadThresholds[a][p]: NCCL_LL_THREAD_THRESHOLD 8 (times nRanks for Ring/LL),
// NCCL_LL128_THREAD_THRESHOLD 8, NCCL_SIMPLE_THREAD_THRESHOLD 64 (comm.h); 512 for CollNet
// Direct and Chain Simple (tuning.cc).
std::int64_t nccl_thread_threshold(const NcclGraphEstimate& g, NcclAlgo a, NcclProto p) {
  if (p == NcclProto::LL) return a == NcclAlgo::Ring ? 8 * static_cast<std::int64_t>(g.ranks) : 8;
  if (p == NcclProto::LL128) return 8;
  return a == NcclAlgo::CollNetDirect || a == NcclAlgo::CollNetChain ? 512 : 64;
}

}  // namespace

int nccl_call_channels(const NcclGraphEstimate& g, NcclAlgo a, NcclProto p, std::uint64_t bytes) {
  if (g.ranks <= 1) return 1;
  if (a == NcclAlgo::Nvls || a == NcclAlgo::NvlsTree) return g.nvls_channels;
  // NCCL multiplies in int; 64 bits here, which NCCL's int matches wherever it does not overflow.
  const std::int64_t nt = nccl_max_threads(g, a, p);
  std::int64_t threshold = nccl_thread_threshold(g, a, p);
  const auto n = static_cast<std::int64_t>(std::min<std::uint64_t>(bytes, std::uint64_t{1} << 62));
  int nc = comm_channels_of(g);
  if (a == NcclAlgo::CollNetDirect) {
    // CollNet channel tuning: steps of 16, 8, 4, 2, 1; the threshold halves at 1.5 x a step.
    const std::int64_t heads = std::max(1, g.collnet_direct_channels);
    bool more = true;
    for (int step = 16; step >= 1 && more; step /= 2) {
      while ((more = n < nc * nt * heads * threshold) && nc > step) {
        if (nc == step + step / 2) threshold /= 2;
        --nc;
      }
    }
    return nc;
  }
  while (nc >= 2 && n < nc * nt * threshold) --nc;
  return nc;
}

std::vector<NcclPrediction> nccl_predictions(const NcclGraphEstimate& g, std::uint64_t bytes, algo::Collective coll,
                                             algo::ReduceOp op) {
  const NcclTuneResult m = nccl_tune_model(g, coll, op);
  std::vector<NcclPrediction> out;
  // nccl-tests busbw: algbw * the collective's factor, algbw = bytes / time.
  const double factor = algo::busbw_factor(coll, g.ranks);
  auto busbw = [&](double time_us) {
    if (time_us <= 0.0 || g.ranks <= 1) return 0.0;
    return static_cast<double>(bytes) / (time_us * 1e3) * factor;
  };
  for (int ai = 0; ai < kNcclNumAlgos; ++ai)
    for (NcclProto p : {NcclProto::LL, NcclProto::LL128, NcclProto::Simple}) {
      const NcclAlgo a = static_cast<NcclAlgo>(ai);
      const double time = nccl_algo_time_us(g, m, a, p, bytes);
      if (time < 0.0) continue;
      // The time is NCCL's prediction, made for the full width; the call then runs on fewer
      // channels when it is small (topoGetAlgoInfo, after the choice).
      out.push_back({std::string(to_string(a)), std::string(to_string(p)), time, busbw(time),
                     nccl_call_channels(g, a, p, bytes)});
    }
  return out;
}

NcclPrediction nccl_choice(const NcclGraphEstimate& g, std::uint64_t bytes, algo::Collective coll, algo::ReduceOp op) {
  const std::vector<NcclPrediction> all = nccl_predictions(g, bytes, coll, op);
  if (all.empty())
    throw InputError(
        fmt::format("NCCL model: no algorithm/protocol available for {} (NCCL {}{}{}); NCCL fails the same way",
                    algo::to_string(coll), to_string(g.options.version),
                    g.options.algo.empty() ? "" : ", NCCL_ALGO=" + g.options.algo,
                    g.options.proto.empty() ? "" : ", NCCL_PROTO=" + g.options.proto));
  // Strictly smaller wins, so the first in NCCL's order wins a tie (topoGetAlgoInfo).
  const NcclPrediction* best = &all.front();
  for (const NcclPrediction& p : all)
    if (p.time_us < best->time_us) best = &p;
  return *best;
}

std::vector<Protocol> select_protocols(const NcclGraphEstimate& nccl, const Calibration& calib,
                                       const std::string& requested, const std::string& what) {
  std::optional<Protocol> only = calib.only_protocol;
  if (!requested.empty() && requested != "auto") {
    only = parse_protocol(requested);
    if (!only) throw InputError(fmt::format("{} {}: expected auto, LL, LL128 or Simple", what, requested));
  } else if (requested == "auto") {
    only.reset();
  }
  if (only) return {*only};
  const bool ll128 =
      nccl.ranks > 1 &&
      nccl_tune_model(nccl).enabled[static_cast<int>(NcclAlgo::Ring)][static_cast<int>(NcclProto::LL128)];
  std::vector<Protocol> protocols{Protocol::LL};
  if (ll128) protocols.push_back(Protocol::LL128);
  protocols.push_back(Protocol::Simple);
  return protocols;
}

}  // namespace topocoll::sim
