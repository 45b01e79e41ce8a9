// Paths between devices: the widest path (largest bottleneck bandwidth), and among the widest
// the one with the fewest links, then the lowest latency. Each path carries its NCCL-style type.
#pragma once

#include <string_view>
#include <vector>

#include "topologies/topology.hpp"

namespace topocoll::topo {

// NCCL's path types (src/graph/topo.h), ordered from closest to farthest:
//   LOC same device; NVL NVLink (NVSwitches are transparent); NVB NVLink through one other GPU;
//   PIX at most one PCIe switch; PXB several PCIe switches, no CPU; PHB through a CPU host
//   bridge; SYS across the inter-socket link; NET across the network.
enum class PathType : std::uint8_t { LOC, NVL, NVB, PIX, PXB, PHB, SYS, NET };
std::string_view to_string(PathType type);

struct Path {
  std::vector<Vertex> vertices;  // from source to destination, both included
  double bw_gbps = 0.0;          // bottleneck bandwidth (per direction)
  double latency_us = 0.0;       // sum of link latencies
  PathType type = PathType::LOC;
  bool found = false;  // false when the two devices are not connected
  std::size_t hops() const { return vertices.empty() ? 0 : vertices.size() - 1; }
};

// Rules for intermediates: a GPU may relay only NVLink-to-NVLink traffic (NVB), and only once,
// as NCCL does; NICs and CPUs relay as the hardware does.
Path find_path(const Topology& t, Vertex from, Vertex to);

// The classification of a vertex sequence (exposed for tests and importers).
PathType classify(const Graph& g, const std::vector<Vertex>& vertices);

// P2P between two GPUs is possible when their path does not go through a CPU: type <= PXB
// (NCCL's default P2P level on Intel CPUs; NCCL_P2P_LEVEL can raise it).
bool p2p_possible(PathType type);

}  // namespace topocoll::topo
