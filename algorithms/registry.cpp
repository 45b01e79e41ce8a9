#include "algorithms/registry.hpp"

#include <fmt/format.h>

#include "algorithms/registry_internal.hpp"
#include "common/errors.hpp"

namespace topocoll::algo {

const std::vector<Algorithm>& registry() {
  static const std::vector<Algorithm> kAll = [] {
    std::vector<Algorithm> all;
    register_allreduce(all);
    register_blocks(all);
    return all;
  }();
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
    out.push_back(&find_algorithm(name));
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
      return ranks > 0 ? (p - 1) / p : 0.0;
    case Collective::Broadcast:
    case Collective::Reduce:
      return 1.0;
  }
  return 1.0;
}

}  // namespace topocoll::algo
