// The measured bench's pieces that need no MPI job: the job's layout against a given topology,
// and the backends' names.
#include "runtime/bench/job_layout.hpp"

#include <doctest/doctest.h>

#include "common/errors.hpp"
#include "runtime/bench/run.hpp"

using namespace topocoll::runtime;

TEST_CASE("job_layout: detected from the job's shape") {
  const JobLayout j = job_layout(BenchTopology{}, JobShape{4, 2, 2});
  CHECK(j.layout.ranks == 4);
  CHECK(j.layout.nodes == 2);
  CHECK(j.layout.ranks_per_node() == 2);
  CHECK(j.name == "detected");
  CHECK(j.description == "detected from MPI: 4 ranks (2 per node on 2 nodes)");
  CHECK_THROWS_WITH_AS(job_layout(BenchTopology{}, JobShape{3, 2, -1}),
                       "the job has 3 ranks on 2 nodes with different ranks per node: expected the same number of "
                       "ranks on every node (or pass --topology)",
                       topocoll::InputError);
}

TEST_CASE("job_layout: a given topology must match the job") {
  const JobLayout j = job_layout(BenchTopology{"pcie-8gpu", std::nullopt, ""}, JobShape{8, 1, 8});
  CHECK(j.layout.ranks == 8);
  CHECK(j.name == "pcie-8gpu");
  CHECK(j.description == "--topology pcie-8gpu: 8 ranks (8 per node on 1 node)");
  CHECK_THROWS_WITH_AS(job_layout(BenchTopology{"dgx-h100", std::nullopt, ""}, JobShape{2, 1, 2}),
                       doctest::Contains("--topology dgx-h100: 8 ranks (8 per node on 1 node), but the job has 2 ranks "
                                         "(2 per node on 1 node)"),
                       topocoll::InputError);
}

TEST_CASE("bench backends: names, and mpi is always built") {
  CHECK(to_string(BenchBackend::Mpi) == "mpi");
  CHECK(to_string(BenchBackend::Ucx) == "ucx");
  CHECK(to_string(BenchBackend::Nccl) == "nccl");
  CHECK(to_string(BenchBackend::Shm) == "shm");
  CHECK(bench_backend_built(BenchBackend::Mpi));
}
