#include "algorithms/registry.hpp"

#include <fmt/format.h>

#include "algorithms/generators/generators.hpp"
#include "common/errors.hpp"

namespace topocoll::algo {

// The registry: one line per generator, in the order `topocoll algorithms` lists them (and
// `--algorithm all` runs them). Explicit on purpose: static registration objects in a static
// library are dropped by the linker when nothing names them.
const std::vector<Algorithm>& registry() {
  static const std::vector<Algorithm> kAll = {
      ring_allreduce(),                            // generators/ring.cpp
      dbt_allreduce(),                             // generators/dbt.cpp
      hierarchical(ring_group(), "hierarchical"),  // generators/hierarchical.cpp (inner ring)
      hierarchical(dbt_group()),                   // hierarchical-dbt
      recursive_doubling_allreduce(),              // generators/recursive_doubling.cpp
      hierarchical(recursive_doubling_group()),    // hierarchical-recursive-doubling
      two_shot_allreduce(),                        // generators/two_shot.cpp
      reduce_scatter_ring(),                       // generators/ring_blocks.cpp
      allgather_ring(),                            // generators/ring_blocks.cpp
      broadcast_chain(),                           // generators/rooted.cpp
      broadcast_tree(),                            // generators/rooted.cpp
      reduce_chain(),                              // generators/rooted.cpp
      reduce_tree(),                               // generators/rooted.cpp
      alltoall_pairwise(),                         // generators/alltoall.cpp
      alltoall_hierarchical(),                     // generators/alltoall.cpp
      alltoallv_pairwise(),                        // generators/alltoall.cpp
      nvls_allreduce(),                            // generators/nvls.cpp
      hierarchical(HierarchicalStages{
          // generators/hierarchical.cpp
          "hierarchical-nvls",
          "NVLS reduce-scatter in each node (the NVSwitch reduces), ring allreduce across nodes per rail, NVLS "
          "multicast allgather in each node",
          true, &ring_group(), ChannelPattern::Pipeline}),
      hierarchical(HierarchicalStages{
          "nvls-tree",
          "NCCL's NVLSTree: NVLS reduce-scatter in each node, double-binary-tree allreduce across nodes per rail, "
          "NVLS multicast allgather in each node",
          true, &dbt_group(), ChannelPattern::Tree}),
      hierarchical(HierarchicalStages{
          "collnet",
          "NCCL's CollNet: ring reduce-scatter in each node, SHARP allreduce across nodes in the network switches "
          "per rail, ring allgather in each node",
          false, nullptr, ChannelPattern::Pipeline}),
  };
  return kAll;
}

// The group allreduce stages hierarchical composes; each has its hierarchical-<name> above
// (the ring's is plain `hierarchical`), which the conformance test checks.
const std::vector<const GroupAllreduce*>& group_allreduces() {
  static const std::vector<const GroupAllreduce*> kAll = {&ring_group(), &dbt_group(), &recursive_doubling_group()};
  return kAll;
}

const Algorithm& find_algorithm(const std::string& name) {
  for (const Algorithm& a : registry())
    if (a.name == name) return a;
  std::string known;
  for (const Algorithm& a : registry()) known += (known.empty() ? "" : ", ") + a.name;
  throw InputError(fmt::format("unknown algorithm '{}': expected one of {} (or 'all')", name, known));
}

std::vector<const Algorithm*> select_algorithms(const std::string& list, std::optional<Collective> collective) {
  std::vector<const Algorithm*> out;
  if (list == "all") {
    for (const Algorithm& a : registry())
      if (!collective || a.collective == *collective) out.push_back(&a);
    return out;
  }
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    const std::string name = list.substr(start, end - start);
    if (name.empty()) throw InputError(fmt::format("--algorithm '{}': empty name in the list", list));
    const Algorithm& alg = find_algorithm(name);
    if (collective && alg.collective != *collective) {
      std::string valid;
      for (const Algorithm& a : registry())
        if (a.collective == *collective) valid += (valid.empty() ? "" : ", ") + a.name;
      throw InputError(
          fmt::format("--algorithm {}: {} is an algorithm for {}, not {}; the {} algorithms are {} (or 'all')", list,
                      name, to_string(alg.collective), to_string(*collective), to_string(*collective),
                      valid.empty() ? "none yet" : valid));
    }
    out.push_back(&alg);
    start = end + 1;
  }
  return out;
}

double busbw_factor(Collective c, int ranks) {
  const double p = ranks;
  switch (c) {
    case Collective::AllReduce:
      return ranks > 0 ? 2.0 * (p - 1) / p : 0.0;
    case Collective::ReduceScatter:
    case Collective::AllGather:
    case Collective::AllToAll:
    case Collective::AllToAllV:
      return ranks > 0 ? (p - 1) / p : 0.0;
    case Collective::Broadcast:
    case Collective::Reduce:
      return 1.0;
  }
  return 1.0;
}

}  // namespace topocoll::algo
