// The view of a topology an algorithm needs: which ranks share a node, the order to visit a
// node's GPUs (along the fastest paths), and each rank's rail. Pure data: algorithms and their
// tests can build one without a Topology.
#pragma once

#include <vector>

namespace topocoll::topo {
class Topology;
}

namespace topocoll::algo {

struct Layout {
  int ranks = 0;
  int nodes = 0;
  std::vector<int> node_of;                  // per rank
  std::vector<std::vector<int>> node_ranks;  // per node: its ranks in intra-node ring order
  std::vector<int> rail_of;                  // per rank: NIC rail, -1 none
  int rails = 0;                             // NICs per node (max)

  // Same number of ranks on every node.
  bool uniform() const;
  int ranks_per_node() const { return nodes == 0 ? 0 : static_cast<int>(node_ranks.front().size()); }
};

// `nodes` nodes of `per_node` ranks each, rank = node * per_node + local, identity order, one
// rail per local rank.
Layout uniform_layout(int nodes, int per_node);

// From a topology: ranks as the topology numbers them; inside each node the ring order is a
// greedy walk from local GPU 0 to the unvisited GPU with the widest path (ties: lowest index),
// so GPUs sharing NVLink or a PCIe switch are neighbours and a socket is crossed once.
Layout layout_of(const topo::Topology& t);

}  // namespace topocoll::algo
