// Shared by the conformance suites (symbolic in algorithms/, real data in runtime/).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "algorithms/ir/types.hpp"

namespace topocoll::algo::testing {

// TOPOCOLL_CONFORMANCE_SAMPLE=k (k >= 1; scripts/test-sanitizers sets it under ASan and TSan,
// where the whole matrix is the suite's long pole): the conformance suites run every k-th
// combination of the matrix (the symbolic one: each (algorithm, p, shape) proves every k-th of its
// counts, each combination starting at another, so every combination is still proven and every
// count proven somewhere; the real-data one: every k-th combination, without its coverage
// checks). Unset, 1 or not a number: the whole matrix (the plain suite).
inline std::size_t conformance_sample() {
  const char* v = std::getenv("TOPOCOLL_CONFORMANCE_SAMPLE");
  if (v == nullptr) return 1;
  char* end = nullptr;
  const unsigned long k = std::strtoul(v, &end, 10);
  return end != v && *end == '\0' && k >= 1 && k <= 16 ? k : 1;
}

// The awkward element counts for p ranks: 0, 1, p-1, p, p+1 and a prime (1009), deduplicated.
inline std::vector<std::uint64_t> awkward_counts(int p) {
  const std::uint64_t up = static_cast<std::uint64_t>(p);
  std::vector<std::uint64_t> c = {0, 1, up - 1, up, up + 1, 1009};
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  return c;
}

// A skewed all-to-allv size matrix for p ranks around `n` elements per block: count(i, j) =
// n * w / 2 with w in 0..3 varying over the pairs, so blocks are empty, smaller, equal and larger
// than n (MoE-like imbalance). `symmetric`: count(i, j) == count(j, i) (may run in place).
inline std::shared_ptr<const AllToAllVSizes> skewed_alltoallv_sizes(int p, std::uint64_t n, bool symmetric) {
  std::vector<std::uint64_t> c(static_cast<std::size_t>(p) * static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i)
    for (int j = 0; j < p; ++j) {
      const int w = symmetric ? (i + j + 1) % 4 : (i + 2 * j + 1) % 4;
      c[static_cast<std::size_t>(i) * static_cast<std::size_t>(p) + static_cast<std::size_t>(j)] =
          n * static_cast<std::uint64_t>(w) / 2;
    }
  return AllToAllVSizes::make(p, std::move(c));
}

// The call a conformance suite makes of collective `c` at `n` elements (per rank or per block as
// the collective counts them; all-to-allv: a skewed size matrix around n, symmetric when in place).
inline CollectiveArgs conformance_args(Collective c, int p, std::uint64_t n, int root, bool in_place,
                                       DataType dtype = DataType::Float32) {
  CollectiveArgs a;
  a.collective = c;
  a.count = n;
  a.ranks = p;
  a.root = root;
  a.dtype = dtype;
  if (c == Collective::AllToAllV) {
    a.count = 0;
    a.sizes = skewed_alltoallv_sizes(p, n, in_place);
  }
  return a;
}

}  // namespace topocoll::algo::testing
