// An allreduce over a group of ranks, as a stage that other algorithms compose: `hierarchical`
// runs one across nodes among the GPUs that hold the same segment, and the flat allreduces are
// one over the whole job. Each stage appends one rank's operations for one channel, like the
// blocks (blocks.hpp), and prices itself in the variables of docs/algorithms.md.
//
//   group = [r0 r1 ... r(n-1)]   (ranks, any order; pos = this rank's index)
//   before: member i holds x_i in `data`      after: every member holds x_0 (op) ... (op) x_(n-1)
//
// The registry derives hierarchical-<name> from every stage in group_allreduces()
// (registry.cpp); a new stage is one more file in generators/ and one line there.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "algorithms/ir/schedule.hpp"

namespace topocoll::algo {

// What one stage costs with one slice: the longest chain of dependent transfers, and the bytes
// the busiest member sends.
struct GroupCost {
  std::uint64_t steps = 0;
  double bytes = 0.0;
};

struct GroupAllreduce {
  std::string name;    // "ring", "dbt", ...: hierarchical-<name>
  std::string phrase;  // the stage in a sentence: "ring", "double-binary-tree", ...
  // The channels a schedule built on this stage runs with (a whole-algorithm rule: dbt wants an
  // even count, one channel per tree; recursive doubling at least 4 KiB per channel).
  std::function<int(const CollectiveArgs&, const Tuning&)> channels;
  // Appends the operations of the member at `pos` of `group` on `channel`: it allreduces `data`
  // (the same chunk on every member) in place. Slices follow `a`'s data type and `t`.
  std::function<void(ProgramBuilder& b, std::span<const int> group, int pos, const Chunk& data, int channel,
                     const CollectiveArgs& a, const Tuning& t)>
      emit;
  // A group of `members` allreducing `bytes` each, spread over channels(a, t) channels.
  std::function<GroupCost(int members, double bytes, const Tuning& t)> cost;
};

// The stages, one per file under generators/.
const GroupAllreduce& ring_group();                // generators/ring.cpp
const GroupAllreduce& dbt_group();                 // generators/dbt.cpp
const GroupAllreduce& recursive_doubling_group();  // generators/recursive_doubling.cpp

// Every stage, in registry order (registry.cpp).
const std::vector<const GroupAllreduce*>& group_allreduces();

}  // namespace topocoll::algo
