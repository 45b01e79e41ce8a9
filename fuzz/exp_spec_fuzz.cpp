// Experiment specs (`topocoll exp run|plan SPEC`): the spec, then its grid (the size sweep of
// every dtype and the point count), as `exp plan` computes before anything runs.
#include "experiments/runner/grid.hpp"
#include "experiments/runner/spec.hpp"
#include "fuzz/harness.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // What the checked-in specs name relative to their folder: calibrations and topology files.
  topocoll::fuzz::provide("experiments/sim-vs-real-local", ".", ".json");
  topocoll::fuzz::provide("experiments/sim-vs-real-local/topologies", "topologies", ".xml");
  topocoll::fuzz::provide("topologies/testdata", "topologies", ".xml");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return topocoll::fuzz::guarded([&] {
    const std::string path = topocoll::fuzz::write_input(data, size, "experiment.yaml");
    const topocoll::experiments::ExpSpec s = topocoll::experiments::load_exp_spec(path);
    for (const std::string& dtype : s.dtypes) (void)topocoll::experiments::sizes_of(s, dtype, 0);
    (void)topocoll::experiments::count_points(s);
  });
}
