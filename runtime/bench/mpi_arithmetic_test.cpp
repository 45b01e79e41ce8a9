// saturating_sum_range against every order and association, enumerated; probe_mpi_sum and
// count_wrong_mpi_sum need MPI and run in tools/bench_honest_test.sh.
#include "runtime/bench/mpi_arithmetic.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

using topocoll::runtime::saturating_sum_range;

namespace {

// Every result of adding the values of `mask` with saturation, over every binary tree and order:
// a subset's results are those of sat(x + y) for x, y results of a split into two non-empty parts.
std::set<std::int64_t> all_results(const std::vector<std::int64_t>& v, unsigned mask, std::int64_t lo, std::int64_t hi,
                                   std::vector<std::set<std::int64_t>>& memo) {
  if (!memo[mask].empty()) return memo[mask];
  std::set<std::int64_t> out;
  if ((mask & (mask - 1)) == 0) {
    out.insert(v[static_cast<std::size_t>(__builtin_ctz(mask))]);
  } else {
    for (unsigned part = (mask - 1) & mask; part > 0; part = (part - 1) & mask) {
      const unsigned rest = mask & ~part;
      if (part < rest) continue;  // each split once
      for (const std::int64_t x : all_results(v, part, lo, hi, memo))
        for (const std::int64_t y : all_results(v, rest, lo, hi, memo)) out.insert(std::clamp(x + y, lo, hi));
    }
  }
  return memo[mask] = out;
}

}  // namespace

TEST_CASE("saturating_sum_range: the least and the greatest result of any order and association") {
  std::mt19937 gen(12345);
  for (const auto& [lo, hi] : {std::pair<std::int64_t, std::int64_t>{-128, 127}, {0, 255}}) {
    std::uniform_int_distribution<std::int64_t> value(lo, hi);
    for (int p = 1; p <= 5; ++p) {
      for (int trial = 0; trial < 200; ++trial) {
        std::vector<std::int64_t> v(static_cast<std::size_t>(p));
        for (std::int64_t& x : v) x = value(gen);
        std::vector<std::set<std::int64_t>> memo(std::size_t{1} << p);
        const std::set<std::int64_t> every = all_results(v, (1u << p) - 1, lo, hi, memo);
        const auto range = saturating_sum_range(v, lo, hi);
        CAPTURE(p);
        CAPTURE(trial);
        CHECK(range.least == *every.begin());
        CHECK(range.greatest == *every.rbegin());
      }
    }
  }
}

TEST_CASE("saturating_sum_range: one sign or two values: one result") {
  CHECK(saturating_sum_range(std::vector<std::int64_t>{100, 100}, -128, 127).least == 127);
  CHECK(saturating_sum_range(std::vector<std::int64_t>{100, 100}, -128, 127).greatest == 127);
  CHECK(saturating_sum_range(std::vector<std::int64_t>{-100, 27}, -128, 127).least == -73);
  CHECK(saturating_sum_range(std::vector<std::int64_t>{-100, 27}, -128, 127).greatest == -73);
  // 127 + 127 - 128: -1 when the positives meet first (saturated at 127), 126 otherwise.
  const auto r = saturating_sum_range(std::vector<std::int64_t>{127, 127, -128}, -128, 127);
  CHECK(r.least == -1);
  CHECK(r.greatest == 126);
}
