// The overlap benchmark's arithmetic and protocol (no timing asserted: the figures are measured by
// topocoll-bench --overlap, docs/performance.md).
#include "runtime/bench/overlap.hpp"

#include <doctest/doctest.h>

using namespace topocoll::runtime;

TEST_CASE("overlap: efficiency = (P + C - W) / min(P, C)") {
  CHECK(OverlapTimes{.collective_us = 100, .compute_us = 100, .overlapped_us = 100}.efficiency() ==
        doctest::Approx(1.0));
  CHECK(OverlapTimes{.collective_us = 100, .compute_us = 100, .overlapped_us = 200}.efficiency() ==
        doctest::Approx(0.0));
  CHECK(OverlapTimes{.collective_us = 50, .compute_us = 200, .overlapped_us = 225}.efficiency() ==
        doctest::Approx(0.5));
  CHECK(OverlapTimes{.collective_us = 100, .compute_us = 100, .overlapped_us = 250}.efficiency() ==
        doctest::Approx(-0.5));
  CHECK(OverlapTimes{.collective_us = 0, .compute_us = 100, .overlapped_us = 100}.efficiency() == 0.0);
}

TEST_CASE("overlap: the compute loop calls back after each slice") {
  int calls = 0;
  const double v = compute_units(1000, 10, [&] { ++calls; });
  CHECK(calls == 10);
  CHECK(v > 0);
  calls = 0;
  (void)compute_units(7, 64, [&] { ++calls; });  // fewer units than slices: one per unit
  CHECK(calls == 7);
}

TEST_CASE("overlap: one start and one end per iteration, no test after the collective finished") {
  int starts = 0, tests = 0, finishes = 0, barriers = 0, maxes = 0, tests_after_done = 0;
  bool done = false;
  OverlapHooks h;
  h.start = [&] {
    ++starts;
    done = false;
  };
  h.test = [&] {
    if (done) ++tests_after_done;
    ++tests;
    done = tests % 3 == 0;  // finishes on every third test
    finishes += done ? 1 : 0;
    return done;
  };
  h.wait = [&] {
    CHECK_FALSE(done);  // only an unfinished collective is waited for
    ++finishes;
    done = true;
  };
  h.barrier = [&] { ++barriers; };
  h.max_over_ranks = [&](std::vector<double>& t) {
    ++maxes;
    CHECK(t.size() == 5);
  };
  const OverlapTimes r = measure_overlap(h, 50.0, 5);
  CHECK(starts == 5);
  CHECK(tests_after_done == 0);
  CHECK(finishes == 5);   // each iteration ends once: a test that finished it, or wait()
  CHECK(barriers == 10);  // compute alone, then overlapped, per iteration
  CHECK(maxes == 2);
  CHECK(r.collective_us == 50.0);
  CHECK(r.compute_us > 0);
  CHECK(r.overlapped_us > 0);
}
