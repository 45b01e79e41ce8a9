// Shared by the conformance suites (symbolic in algorithms/, real data in runtime/).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace topocoll::algo::testing {

// The awkward element counts for p ranks: 0, 1, p-1, p, p+1 and a prime (1009), deduplicated.
inline std::vector<std::uint64_t> awkward_counts(int p) {
  const std::uint64_t up = static_cast<std::uint64_t>(p);
  std::vector<std::uint64_t> c = {0, 1, up - 1, up, up + 1, 1009};
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  return c;
}

}  // namespace topocoll::algo::testing
