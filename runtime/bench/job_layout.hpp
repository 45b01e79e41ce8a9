// The topology of a measured job (BenchOptions::topology; topocoll-bench --topology/--nodes/--fabric):
// the layout the algorithms are generated for, checked against the job MPI started.
//
//   --topology given   the topology's layout (NUMA-aware intra-node ring order, rails); its GPU
//                      count, node count and GPUs per node must equal the job's ranks, nodes
//                      and ranks per node, else an InputError naming both
//   not given          detected: nodes and ranks per node from MPI's shared-memory split,
//                      ranks in their local order (uniform_layout)
#pragma once

#include <optional>
#include <string>

#include "algorithms/ir/layout.hpp"

namespace topocoll::runtime {

struct JobShape {
  int ranks = 1;
  int nodes = 1;
  int per_node = 1;  // -1 when the nodes hold different numbers of ranks
};

struct BenchTopology {
  std::string topology;  // preset, NCCL XML or YAML spec; empty: detect
  std::optional<int> nodes;
  std::string fabric;  // empty: the topology's default
};

struct JobLayout {
  algo::Layout layout;
  std::string name;         // for records: the topology as given, or "detected"
  std::string description;  // one line for the table header
};

// Throws InputError when the topology cannot be loaded or does not match the job.
JobLayout job_layout(const BenchTopology& given, const JobShape& job);

}  // namespace topocoll::runtime
