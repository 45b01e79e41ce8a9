// `topocoll import nccl-tests`' and `topocoll calibrate`'s pure pieces: the layouts of the table
// header, rank inference, the binary names, the host-floor fit.
#include "tools/import_command.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "common/errors.hpp"
#include "tools/advise_command.hpp"
#include "tools/calibrate_command.hpp"

using namespace topocoll;
using tools::parse_measured;

TEST_CASE("the oldest layout (bytes N type op ... res) reads, ranks from the busbw factor") {
  // No device lines: 4 ranks from busbw / algbw = 1.5 (allreduce, 2 (p-1) / p).
  const std::string log =
      "# Collective test starting: all_reduce_perf\n"
      "#      bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res\n"
      "     1048576        262144   float     sum   100.00  10.49  15.73    0e+00    99.00  10.59  15.89    0e+00\n";
  const auto t = parse_measured("old.log", log, {});
  REQUIRE(t.size() == 1);
  CHECK(t[0].ranks == 4);
  CHECK(t[0].nodes == 1);
  CHECK(t[0].points.at(0).size_bytes == 1048576);
  CHECK(t[0].points.at(0).in_place.has_value());
  CHECK_FALSE(t[0].points.at(0).out_of_place.wrong.has_value());
}

TEST_CASE("a rank count that no factor gives is an error asking for --ranks, --ranks answers it") {
  const std::string log =
      "# Collective test starting: broadcast_perf\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
      "     1048576        262144     float    none       0    80.00   13.11   13.11      0\n";
  CHECK_THROWS_WITH_AS(parse_measured("b.log", log, {}), doctest::Contains("b.log:2: the log has no device lines"),
                       InputError);
  tools::ImportOptions o;
  o.ranks = 8;
  CHECK(parse_measured("b.log", log, o).at(0).ranks == 8);
}

TEST_CASE("binary names map onto the schema's collectives") {
  CHECK(tools::collective_of_binary("all_reduce_perf") == algo::Collective::AllReduce);
  CHECK(tools::collective_of_binary("reduce_scatter") == algo::Collective::ReduceScatter);
  CHECK(tools::collective_of_binary("alltoall_perf") == algo::Collective::AllToAll);
  CHECK_FALSE(tools::collective_of_binary("sendrecv_perf").has_value());
  CHECK_FALSE(tools::collective_of_binary("hypercube_perf").has_value());
}

TEST_CASE("the host floor fit: the measured floor of flat small sizes, untouched large sizes") {
  // Device times 5, 10, 1000 us; measured 40, 40, 1000: the floor is 40 and the sum 0.
  const auto [h, sse] = tools::best_host_floor({5, 10, 1000}, {40, 40, 1000}, {true, true, true});
  CHECK(h == doctest::Approx(40.0));
  CHECK(sse == doctest::Approx(0.0).epsilon(1e-9));
  // Leaving the small sizes out: no floor is needed, the smallest (0) wins the tie.
  CHECK(tools::best_host_floor({5, 10, 1000}, {40, 40, 1000}, {false, false, true}).first == 0.0);
}

TEST_CASE("median of absolute values") {
  CHECK(tools::median_abs({}) == 0.0);
  CHECK(tools::median_abs({-3, 1, 2}) == 2.0);
  CHECK(tools::median_abs({-4, 1, 2, 10}) == 3.0);
}

TEST_CASE("advice: ranges merge equal choices, the speed-up is the geometric mean, the environment forces them") {
  using tools::TunedPoint;
  const std::vector<TunedPoint> pts = {
      {8, "dbt", tuner::Algorithm::Tree, tuner::Protocol::LL, 16, 10.0},
      {16, "dbt", tuner::Algorithm::Tree, tuner::Protocol::LL, 16, 10.0},
      {32, "ring", tuner::Algorithm::Ring, tuner::Protocol::Simple, 16, 100.0},
  };
  // Stock NCCL: Ring/LL at 40 and 90 us (host floor 20), then Ring/Simple at 100.
  const std::vector<sim::NcclPrediction> stock = {
      {"Ring", "LL", 40.0, 0.0, 16}, {"Ring", "LL", 90.0, 0.0, 16}, {"Ring", "Simple", 100.0, 0.0, 16}};
  const auto r = tools::advice_ranges(pts, stock, 20.0);
  REQUIRE(r.size() == 2);
  CHECK(r[0].from == 8);
  CHECK(r[0].to == 16);
  CHECK(r[0].speedup == doctest::Approx(std::sqrt(4.0 * 9.0)));
  CHECK_FALSE(r[0].same_as_stock);
  CHECK(tools::nccl_environment(r[0], 16) == "NCCL_ALGO=Tree NCCL_PROTO=LL");
  CHECK(tools::nccl_environment(r[0], 32) ==
        "NCCL_ALGO=Tree NCCL_PROTO=LL NCCL_MIN_NCHANNELS=16 NCCL_MAX_NCHANNELS=16");
  CHECK(r[1].same_as_stock);
  CHECK(tools::nccl_environment(r[1], 16).empty());
  // No gain: no environment, even for another choice.
  tools::AdviceRange slow = r[0];
  slow.speedup = 1.01;
  CHECK(tools::nccl_environment(slow, 16).empty());
}
