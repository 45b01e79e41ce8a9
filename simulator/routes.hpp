// Routes between ranks, shared by every engine so they simulate the same paths.
//
// A transfer from rank a to rank b follows:
//   same node:    topo::find_path between the two GPUs (widest, then shortest), computed once
//                 per node model and pair of local indices;
//   other nodes:  channel c lands on b's NIC nics[(c / G) % |nics|], G the GPUs of b's node
//                 (topo::RankInfo::nics; the only one on a node with at most one NIC per GPU;
//                 channels 0 .. G-1 keep the first NICs, as a ring leaving channel c on rail
//                 c mod G expects, the next G the second NICs), and travels on that NIC's rail: GPU a
//                 -> a's NIC on that rail when it has one; otherwise, as NCCL's PXN, GPU a ->
//                 NVLink -> the GPU of a's node with a NIC on that rail -> that NIC (when there is
//                 no NVLink way, or FabricSpec::pxn is off, a's own NIC of the same slot). Then
//                 NIC -> fabric -> b's NIC -> GPU b. In the fabric: NIC - leaf - NIC when both
//                 NICs share a leaf; else on fat trees NIC - leaf - spine - leaf - NIC, the spine
//                 picked by a hash of the two NICs (ECMP; one logical spine under ECMP ideal),
//                 among the spines of the leaves' plane (multi-plane: planes never meet, an
//                 InputError); on a dragonfly, minimal routing: NIC - switch [- switch of the
//                 group pair's global link] - global link - [switch -] switch - NIC, the global
//                 link picked by the same hash among the group pair's, or the one local link
//                 when both switches are in one group.
// Built in O(nodes + fabric) and answering each query in O(route length) after the first query
// of a pair of local indices, so 16,384-GPU clusters route in milliseconds.
#pragma once

#include <unordered_map>
#include <vector>

#include "topologies/topology.hpp"

namespace topocoll::sim {

struct Route {
  std::vector<topo::Edge> links;  // in order from source to destination
  std::vector<bool> forward;      // per link: traversed from its lower-numbered vertex to the higher?
  double latency_us = 0.0;        // sum of link latencies
  double bottleneck_gbps = 0.0;   // smallest link rate
};

class Router {
 public:
  explicit Router(const topo::Topology& t);
  // The route of channel `channel` from rank a's GPU to rank b's GPU (a != b). Cached per pair
  // and NIC of b the channel lands on.
  const Route& route(int a, int b, int channel = 0);
  const topo::Topology& topology() const { return t_; }

 private:
  const topo::Topology& t_;
  // Per node-model name: local GPU i -> local GPU j vertex paths (offsets from the node's first
  // vertex), and local GPU i -> its NIC.
  struct LocalPaths {
    std::unordered_map<std::uint64_t, std::vector<topo::Vertex>> gpu_gpu;  // key i * 4096 + j
    std::unordered_map<std::uint64_t, std::vector<topo::Vertex>> gpu_nic;  // key i * 2^32 + NIC offset
  };
  std::unordered_map<std::string, LocalPaths> local_;
  std::unordered_map<std::uint64_t, Route> cache_;
  std::vector<topo::Vertex> leaf_of_nic_;                      // indexed by vertex (only NICs set)
  std::vector<std::vector<int>> ranks_of_node_;                // each node's ranks, in rank order
  std::unordered_map<int, std::vector<topo::Vertex>> spines_;  // by plane (Device::group; -1: one)
  // Dragonfly: the global links of every ordered group pair (g, h), as (switch of g, switch of h).
  std::unordered_map<std::uint64_t, std::vector<std::pair<topo::Vertex, topo::Vertex>>> globals_;
  bool dragonfly_ = false;

  const std::vector<topo::Vertex>& local_gpu_gpu(int node, int i, int j);
  const std::vector<topo::Vertex>& local_gpu_nic(int node, int i, topo::Vertex nic);
  void append(Route& r, topo::Vertex from, topo::Vertex to);
};

}  // namespace topocoll::sim
