// `topocoll tune`'s pure pieces (tools/tune_command.hpp): the ranges of the table rows, the NCCL
// counterparts and when NCCL runs them, and their channels.
#include "tools/tune_command.hpp"

#include <doctest/doctest.h>

#include <limits>

#include "simulator/sweep.hpp"

using namespace topocoll;
using tools::TunedPoint;
using tuner::Algorithm;
using tuner::Protocol;

namespace {

TunedPoint point(std::uint64_t bytes, Algorithm a, Protocol p, int channels) {
  return TunedPoint{bytes, "x", a, p, channels, 1.0};
}

}  // namespace

TEST_CASE("table_rows: each point from its size to the next's, the first from 0, the last to 2^64 - 1") {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  const std::vector<TunedPoint> points = {
      point(1024, Algorithm::Tree, Protocol::LL, 16),      point(4096, Algorithm::Tree, Protocol::LL, 16),
      point(16384, Algorithm::Ring, Protocol::LL, 16),     point(65536, Algorithm::Ring, Protocol::LL, 8),
      point(262144, Algorithm::Ring, Protocol::Simple, 8),
  };
  const std::vector<tuner::Row> rows = tools::table_rows(points, tuner::Collective::AllReduce, 2, 16);
  REQUIRE(rows.size() == 4);
  // consecutive equal choices merge; a change of channels alone is a new row
  CHECK(rows[0] == tuner::Row{tuner::Collective::AllReduce, 0, 16383, Algorithm::Tree, Protocol::LL, 16, 2, 16});
  CHECK(rows[1] == tuner::Row{tuner::Collective::AllReduce, 16384, 65535, Algorithm::Ring, Protocol::LL, 16, 2, 16});
  CHECK(rows[2] == tuner::Row{tuner::Collective::AllReduce, 65536, 262143, Algorithm::Ring, Protocol::LL, 8, 2, 16});
  CHECK(rows[3] == tuner::Row{tuner::Collective::AllReduce, 262144, kMax, Algorithm::Ring, Protocol::Simple, 8, 2, 16});
  const std::vector<tuner::Row> one =
      tools::table_rows({point(8, Algorithm::Nvls, Protocol::Simple, 24)}, tuner::Collective::AllReduce, 1, 8);
  REQUIRE(one.size() == 1);
  CHECK(one[0].min_bytes == 0);
  CHECK(one[0].max_bytes == kMax);
  CHECK(tools::table_rows({}, tuner::Collective::AllReduce, 1, 8).empty());
}

TEST_CASE("NCCL counterparts, and when NCCL would run them") {
  CHECK(tools::nccl_counterpart("ring") == Algorithm::Ring);
  CHECK(tools::nccl_counterpart("dbt") == Algorithm::Tree);
  CHECK(tools::nccl_counterpart("nvls") == Algorithm::Nvls);
  CHECK(tools::nccl_counterpart("nvls-tree") == Algorithm::NvlsTree);
  CHECK(tools::nccl_counterpart("collnet") == Algorithm::CollNetDirect);
  CHECK_FALSE(tools::nccl_counterpart("hierarchical").has_value());
  sim::NcclGraphEstimate g;
  g.comm_channels = 32;
  g.nvls_channels = 16;
  g.collnet_direct_channels = 8;
  CHECK(tools::nccl_disables(Algorithm::Ring, g).empty());
  CHECK(tools::nccl_disables(Algorithm::Nvls, g).find("nvlsSupport is off") != std::string::npos);
  CHECK(tools::nccl_disables(Algorithm::CollNetDirect, g).find("collNetSupport is off") != std::string::npos);
  g.nvls_support = true;
  g.collnet_support = true;
  CHECK(tools::nccl_disables(Algorithm::NvlsTree, g).empty());
  CHECK(tools::nccl_disables(Algorithm::CollNetDirect, g).find("NVSwitch") != std::string::npos);
  g.nvswitch = true;
  CHECK(tools::nccl_disables(Algorithm::CollNetDirect, g).empty());
  CHECK(tools::nccl_channels_for(Algorithm::Ring, g) == sim::nccl_channels(g));
  CHECK(tools::nccl_channels_for(Algorithm::Tree, g) == sim::nccl_channels(g));
  CHECK(tools::nccl_channels_for(Algorithm::Nvls, g) == 16);
  CHECK(tools::nccl_channels_for(Algorithm::NvlsTree, g) == 16);
  CHECK(tools::nccl_channels_for(Algorithm::CollNetDirect, g) == 8);
}
