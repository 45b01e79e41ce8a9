// Routes between ranks, shared by every engine so they simulate the same paths.
//
// A transfer from rank a to rank b follows:
//   same node:    topo::find_path between the two GPUs (widest, then shortest), computed once
//                 per node model and pair of local indices;
//   other nodes:  on the receiver's rail: GPU a -> a's NIC when a is on b's rail; otherwise, as
//                 NCCL's PXN, GPU a -> NVLink -> the GPU of a's node on b's rail -> its NIC
//                 (when there is no NVLink way, a's own NIC). Then NIC -> fabric -> b's NIC ->
//                 GPU b. In the fabric: NIC - leaf - NIC when both NICs share a leaf, else NIC -
//                 leaf - spine - leaf - NIC, the spine picked by a hash of the two NICs (ECMP).
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
  // The route from rank a's GPU to rank b's GPU (a != b). Cached per pair.
  const Route& route(int a, int b);
  const topo::Topology& topology() const { return t_; }

 private:
  const topo::Topology& t_;
  // Per node-model name: local GPU i -> local GPU j vertex paths (offsets from the node's first
  // vertex), and local GPU i -> its NIC.
  struct LocalPaths {
    std::unordered_map<std::uint64_t, std::vector<topo::Vertex>> gpu_gpu;  // key i * 4096 + j
    std::unordered_map<int, std::vector<topo::Vertex>> gpu_nic;            // key i
  };
  std::unordered_map<std::string, LocalPaths> local_;
  std::unordered_map<std::uint64_t, Route> cache_;
  std::vector<topo::Vertex> leaf_of_nic_;  // indexed by vertex (only NICs set)
  std::vector<topo::Vertex> spines_;

  const std::vector<topo::Vertex>& local_gpu_gpu(int node, int i, int j);
  const std::vector<topo::Vertex>& local_gpu_nic(int node, int i);
  void append(Route& r, topo::Vertex from, topo::Vertex to);
};

}  // namespace topocoll::sim
