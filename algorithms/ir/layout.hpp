// The view of a topology an algorithm needs: which ranks share a node, the order to visit a
// node's GPUs (along the fastest paths), each rank's rail, and where a switch can reduce (NVLS
// in a node, SHARP in the fabric). Pure data: algorithms and their tests can build one without a
// Topology.
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
  // Per node: NVLS is possible (NVSwitch multicast / multimem, contract rule 11's SwitchKind::Nvls).
  // NCCL 2.28 src/transport/nvls.cc ncclNvlsInit sets nvlsSupport from the driver's
  // CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, which Hopper (sm 90) and later GPUs report when an
  // NVSwitch connects them, and only with at least 2 GPUs in the node.
  std::vector<bool> nvls;
  // The fabric reduces (SHARP in the InfiniBand switches, NCCL's CollNet): topo::FabricSpec::sharp.
  bool sharp = false;
  // Per node: its NVLink domain, nodes whose GPUs share one NVSwitch fabric (the 18 trays of a
  // GB200 NVL72); empty: every node a domain of its own.
  std::vector<int> nvlink_domain;

  // Same number of ranks on every node.
  bool uniform() const;
  int ranks_per_node() const { return nodes == 0 ? 0 : static_cast<int>(node_ranks.front().size()); }
  // Every node can run NVLS (false for an empty nvls list).
  bool nvls_everywhere() const;
  // The first node without NVLS, -1 when every node has it.
  int first_node_without_nvls() const;
  // The NVLink domain of node n (n itself when nvlink_domain is empty).
  int domain_of_node(int n) const { return nvlink_domain.empty() ? n : nvlink_domain[static_cast<std::size_t>(n)]; }
  // Per rank: its NVLink domain (VerifyOptions::domain_of).
  std::vector<int> domain_of_ranks() const;
  // Every node in one NVLink domain.
  bool one_nvlink_domain() const;
};

// What a test layout's hardware can do in the network (uniform_layout).
struct LayoutFeatures {
  bool nvls = false;   // every node has NVSwitch multicast (NVLS)
  bool sharp = false;  // the fabric reduces (SHARP)
  // Consecutive nodes sharing one NVLink domain (an NVL72 is 18 trays of 4 GPUs); 1: none.
  int nodes_per_nvlink_domain = 1;
};

// `nodes` nodes of `per_node` ranks each, rank = node * per_node + local, identity order, one
// rail per local rank; NVLS and SHARP as `features` say.
Layout uniform_layout(int nodes, int per_node, LayoutFeatures features = {});

// From a topology: ranks as the topology numbers them; inside each node the ring order is a
// greedy walk from local GPU 0 to the unvisited GPU with the widest path (ties: lowest index),
// so GPUs sharing NVLink or a PCIe switch are neighbours and a socket is crossed once. A node
// has NVLS when it holds an NVSwitch, at least 2 GPUs and every GPU is sm 90 or later; the
// layout has SHARP when the fabric says so.
Layout layout_of(const topo::Topology& t);

}  // namespace topocoll::algo
