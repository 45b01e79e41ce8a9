// bench_rank_time: nccl-tests' -a over the ranks' mean times.
#include <doctest/doctest.h>

#include <stdexcept>

#include "runtime/bench/run.hpp"

using topocoll::runtime::bench_rank_time;

TEST_CASE("-a 0 | 1 | 2 | 3: rank 0's, the average, the minimum, the maximum") {
  const std::vector<double> per_rank{4.0, 1.0, 7.0, 4.0};
  CHECK(bench_rank_time(0, per_rank) == 4.0);
  CHECK(bench_rank_time(1, per_rank) == 4.0);
  CHECK(bench_rank_time(2, per_rank) == 1.0);
  CHECK(bench_rank_time(3, per_rank) == 7.0);
  CHECK(bench_rank_time(1, {2.0, 3.0}) == 2.5);
  CHECK(bench_rank_time(0, {9.0, 1.0}) == 9.0);  // rank 0's even when it is the slowest
  CHECK_THROWS_AS(bench_rank_time(4, per_rank), std::invalid_argument);
  CHECK_THROWS_AS(bench_rank_time(1, {}), std::invalid_argument);
}
