// The algorithm registry: every algorithm describes itself (name, one line, what it supports,
// its cost sheet) and generates schedules. `topocoll algorithms` prints it; one conformance test
// iterates it, so a new algorithm is tested by being registered.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/ir/layout.hpp"
#include "algorithms/ir/schedule.hpp"

namespace topocoll::algo {

// "Can I run this?" is a value (style rule 5).
struct Support {
  bool ok = true;
  std::string reason;  // empty when ok
  static Support yes() { return {}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
};

// What a schedule costs, in the variables of docs/algorithms.md. Bytes are per rank, the
// maximum over ranks; steps is the longest chain of dependent transfers with one slice.
struct CostSheet {
  std::uint64_t steps = 0;
  std::uint64_t bytes_sent = 0;        // all links
  std::uint64_t inter_bytes_sent = 0;  // to other nodes
  double busbw_factor = 1.0;           // nccl-tests: busbw = algbw * factor
};

struct Algorithm {
  std::string name;
  std::string description;
  Collective collective;
  std::function<Support(const Layout&, const CollectiveArgs&, const Tuning&)> supports;
  // Exact for counts divisible by ranks x channels; an upper bound otherwise.
  std::function<CostSheet(const Layout&, const CollectiveArgs&, const Tuning&)> cost;
  std::function<Schedule(const Layout&, const CollectiveArgs&, const Tuning&)> generate;
};

const std::vector<Algorithm>& registry();
// Throws InputError naming the known algorithms.
const Algorithm& find_algorithm(const std::string& name);
// "all" or a comma list -> algorithms. With `collective` set, "all" is that collective's
// algorithms and a listed algorithm of another collective throws InputError naming the valid ones.
std::vector<const Algorithm*> select_algorithms(const std::string& list, std::optional<Collective> collective);

// nccl-tests' bus bandwidth factor for a collective over p ranks.
double busbw_factor(Collective c, int ranks);

}  // namespace topocoll::algo
