#include "experiments/runner/grid.hpp"

#include <doctest/doctest.h>

using namespace topocoll;

namespace {

experiments::ExpSpec simulated() {
  experiments::ExpSpec s;
  s.engine = "analytic";
  s.repetitions = 2;
  s.topologies = {"pcie-8gpu", "dgx-h100"};
  s.nodes = {std::nullopt};
  s.fabrics = {std::nullopt};
  s.algorithms = {"ring", "dbt"};
  s.min_bytes = "8";
  s.max_bytes = "1K";
  s.factor = "4";  // 8, 32, 128, 512
  s.dtypes = {"float"};
  s.channels = {"1", "2"};
  return s;
}

}  // namespace

TEST_CASE("grid: sizes and point counts") {
  experiments::ExpSpec s = simulated();
  CHECK(experiments::sizes_of(s, "float") == std::vector<std::uint64_t>{8, 32, 128, 512});
  CHECK(experiments::sizes_of(s, "double") == std::vector<std::uint64_t>{8, 32, 128, 512});
  // 2 topologies x 4 sizes x (2 channels x 2 algorithms x 2 repetitions + 1 model row)
  CHECK(experiments::count_points(s) == 2 * 4 * (2 * 2 * 2 + 1));
  s.nccl_model = false;
  CHECK(experiments::count_points(s) == 2 * 4 * (2 * 2 * 2));
  s.nodes = {2, 4, 8};
  s.fabrics = {std::string("rail-fat-tree"), std::string("fat-tree")};
  CHECK(experiments::count_points(s) == 2 * 3 * 2 * 4 * (2 * 2 * 2));

  experiments::ExpSpec r = simulated();
  r.engine = "real";
  r.ranks = {2, 4};
  r.channels = {"2"};
  r.repetitions = 3;
  // ranks x channels x algorithms x sizes x (out of place, in place) x repetitions; no model rows
  CHECK(experiments::count_points(r) == 2 * 1 * 2 * 4 * 2 * 3);
}

TEST_CASE("grid: resume keys are the coordinates as written") {
  experiments::ExpSpec s = simulated();
  CHECK(experiments::sim_point(s, 0, std::nullopt, std::nullopt, "float", "2", "ring", 512, 1) ==
        "pcie-8gpu|nodes=-|fabric=-|dtype=float|channels=2|ring|512|rep=1");
  CHECK(experiments::sim_point(s, 1, 16, std::string("fat-tree"), "half", "nccl", "dbt", 8, 0) ==
        "dgx-h100|nodes=16|fabric=fat-tree|dtype=half|channels=nccl|dbt|8|rep=0");
  CHECK(experiments::model_point(s, 1, 2, std::nullopt, "float", 1024) ==
        "dgx-h100|nodes=2|fabric=-|dtype=float|nccl-model|1024");
  CHECK(experiments::real_point(s, 4, "float", "2", "mpi", 64, true, 2) ==
        "local|ranks=4|backend=mpi|dtype=float|channels=2|mpi|64|in-place|rep=2");
  CHECK(experiments::real_point(s, 4, "float", "2", "ring", 64, false, 0) ==
        "local|ranks=4|backend=mpi|dtype=float|channels=2|ring|64|out-of-place|rep=0");
}
