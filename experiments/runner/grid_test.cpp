#include "experiments/runner/grid.hpp"

#include <doctest/doctest.h>

#include "common/errors.hpp"

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

experiments::GridSize bytes(std::uint64_t b) {
  return {.bytes = b, .matrix = -1, .key = std::to_string(b)};
}

std::vector<std::uint64_t> swept(const experiments::ExpSpec& s, const std::string& dtype) {
  std::vector<std::uint64_t> out;
  for (const experiments::GridSize& z : experiments::sizes_of(s, dtype, 0)) out.push_back(z.bytes);
  return out;
}

}  // namespace

TEST_CASE("grid: sizes and point counts") {
  experiments::ExpSpec s = simulated();
  CHECK(swept(s, "float") == std::vector<std::uint64_t>{8, 32, 128, 512});
  CHECK(swept(s, "double") == std::vector<std::uint64_t>{8, 32, 128, 512});
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
  CHECK(experiments::sim_point(s, 0, std::nullopt, std::nullopt, "float", "2", "ring", bytes(512), 1) ==
        "pcie-8gpu|nodes=-|fabric=-|dtype=float|channels=2|ring|512|rep=1");
  CHECK(experiments::sim_point(s, 1, 16, std::string("fat-tree"), "half", "nccl", "dbt", bytes(8), 0) ==
        "dgx-h100|nodes=16|fabric=fat-tree|dtype=half|channels=nccl|dbt|8|rep=0");
  CHECK(experiments::model_point(s, 1, 2, std::nullopt, "float", bytes(1024)) ==
        "dgx-h100|nodes=2|fabric=-|dtype=float|nccl-model|1024");
  CHECK(experiments::real_point(s, 4, "float", "2", "mpi", bytes(64), true, 2) ==
        "local|ranks=4|backend=mpi|dtype=float|channels=2|mpi|64|in-place|rep=2");
  CHECK(experiments::real_point(s, 4, "float", "2", "ring", bytes(64), false, 0) ==
        "local|ranks=4|backend=mpi|dtype=float|channels=2|ring|64|out-of-place|rep=0");
}

TEST_CASE("grid: an alltoallv's size axis is its matrices, each on the jobs of its rank count") {
  experiments::ExpSpec s = simulated();
  s.collective = algo::Collective::AllToAllV;
  s.nccl_model = false;
  s.algorithms = {"alltoallv-pairwise"};
  s.min_bytes = s.max_bytes = s.factor = "";
  s.matrices = {"a-8.csv", "b-8.csv", "c-16.csv"};
  s.matrix_sizes = {algo::AllToAllVSizes::make(8, std::vector<std::uint64_t>(64, 3)),
                    algo::AllToAllVSizes::make(8, std::vector<std::uint64_t>(64, 5)),
                    algo::AllToAllVSizes::make(16, std::vector<std::uint64_t>(256, 1))};
  s.cluster_ranks = {{"pcie-8gpu|-", 8}, {"dgx-h100|-", 16}};
  const std::vector<experiments::GridSize> on8 = experiments::sizes_of(s, "float", 8);
  REQUIRE(on8.size() == 2);
  CHECK(on8[1].matrix == 1);
  CHECK(on8[1].key == "sizes=b-8.csv");
  CHECK(experiments::sizes_of(s, "float", 16).size() == 1);
  CHECK(experiments::sizes_of(s, "float", 4).empty());
  // pcie-8gpu: 2 matrices, dgx-h100: 1; x 2 channels x 1 algorithm x 2 repetitions
  CHECK(experiments::count_points(s) == (2 + 1) * 2 * 1 * 2);
  CHECK(experiments::sim_point(s, 1, std::nullopt, std::nullopt, "float", "2", "alltoallv-pairwise", on8[0], 0) ==
        "dgx-h100|nodes=-|fabric=-|dtype=float|channels=2|alltoallv-pairwise|sizes=a-8.csv|rep=0");
  const algo::CollectiveArgs call = experiments::call_of(s, on8[1], algo::DataType::Float32, algo::ReduceOp::Sum, 8);
  CHECK(call.collective == algo::Collective::AllToAllV);
  CHECK(call.sizes->count(2, 3) == 5);
  CHECK_THROWS_AS(experiments::call_of(s, on8[1], algo::DataType::Float32, algo::ReduceOp::Sum, 16), InputError);

  // Engine real: in and out of place, but an asymmetric matrix out of place only.
  s.engine = "real";
  s.ranks = {8, 16};
  std::vector<std::uint64_t> skew(64, 1);
  skew[1] = 9;  // count(0, 1) != count(1, 0)
  s.matrix_sizes[1] = algo::AllToAllVSizes::make(8, skew);
  CHECK(experiments::measured_in_place(s, on8[0]));
  CHECK_FALSE(experiments::measured_in_place(s, on8[1]));
  // (a-8: 2, b-8: 1, c-16: 2) x 2 channels x 2 repetitions
  CHECK(experiments::count_points(s) == (2 + 1 + 2) * 2 * 2);
}
