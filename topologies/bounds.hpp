// Physical limits of a cluster for allreduce, from cuts of the graph (max-flow = min-cut).
//
// For an allreduce of S bytes over p ranks with no in-network reduction (no SHARP / NVLS):
//  - every rank must send and receive 2(p-1)/p * S (Patarasuk & Yuan 2009), so with a
//    per-direction injection capacity B_gpu (max-flow from one GPU to all others):
//        T >= 2(p-1)/p * S / B_gpu            =>  busbw <= B_gpu
//  - a node is a participant of an n-node allreduce: with B_node the max-flow from one node's
//    GPUs to all other nodes' GPUs,
//        T >= 2(n-1)/n * S / B_node           =>  busbw <= B_node * n(p-1) / (p(n-1))
//  - splitting the ranks in two halves A | B, each half must receive S bytes derived from the
//    other (two participants): T >= S / C(A->B)  =>  busbw <= C(A->B) * 2(p-1)/p
// busbw is nccl-tests' bus bandwidth, algbw * 2(p-1)/p. The bound is the minimum of the three.
#pragma once

#include <string>
#include <vector>

#include "topologies/topology.hpp"

namespace topocoll::topo {

struct AllreduceBound {
  double gpu_injection_gbps = 0.0;   // B_gpu: min over the representative node's GPUs
  double node_injection_gbps = 0.0;  // B_node (0 when one node)
  double bisection_gbps = 0.0;       // C(A->B) for the halves (nodes when n >= 2, GPUs of the node when n == 1)
  double busbw_gbps = 0.0;           // the bound on nccl-tests busbw
  std::string limited_by;            // "gpu injection", "node injection" or "bisection"
};

// Max-flow in GB/s from the set `sources` to the set `sinks`, each link carrying bw_gbps in each
// direction independently (full duplex). Any device may relay: a relaxation, so a valid bound.
double max_flow_gbps(const Topology& t, const std::vector<Vertex>& sources, const std::vector<Vertex>& sinks);

// Bounds computed on node 0 as the representative node (all nodes of one model are identical;
// heterogeneous clusters take the minimum over one node of each model). Needs >= 2 GPUs.
AllreduceBound allreduce_bound(const Topology& t);

}  // namespace topocoll::topo
