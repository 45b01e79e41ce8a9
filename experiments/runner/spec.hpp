// An experiment spec (experiments/NAME/experiment.yaml, docs/experiments.md): read, checked and
// typed. Errors are InputError naming the file, the line, the key and what was expected.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/schedule_file.hpp"
#include "simulator/nccl_model.hpp"

namespace topocoll::experiments {

// How `real` runs: mpirun and topocoll-bench's flags.
struct ExpRealOptions {
  std::string backend = "mpi";
  std::vector<std::string> mpirun = {"mpirun", "--oversubscribe", "--allow-run-as-root"};
  int iters = 20, warmup = 5, check = 1;
  double timeout_s = 60.0;
  std::string bench;  // topocoll-bench path; default: beside this executable
};

// A parsed, validated experiment spec (experiment.yaml). Values are kept as written where they
// name a point (so the resume key does not depend on what a topology file resolves to).
struct ExpSpec {
  std::string path;    // the spec file
  std::string dir;     // its folder
  std::string name;    // its folder's name: the experiment's name
  std::string sha256;  // of the file's bytes, hex
  std::string description;
  std::string engine;  // analytic | simgrid | real
  // The collective every point runs (key `collective`, default allreduce); sizes and counts are
  // nccl-tests' for it (algo::nccl_tests_args), the algorithms must be its.
  algo::Collective collective = algo::Collective::AllReduce;
  int repetitions = 1;
  std::string calibration;       // as written ("" = defaults)
  std::string calibration_path;  // resolved against the spec's folder
  std::string protocol;          // "" (the calibration's, else auto) | auto | LL | LL128 | Simple
  bool nccl_model = true;
  // The NCCL model's release and NCCL environment (keys nccl_version, nccl_env); a spec does not
  // read the process environment, so that its records depend on the spec only.
  sim::NcclModelOptions nccl;
  std::vector<std::string> topologies;      // as written
  std::vector<std::string> topology_paths;  // resolved (files against the spec's folder)
  std::vector<std::optional<int>> nodes;    // nullopt: the topology's own
  std::vector<std::optional<std::string>> fabrics;
  std::optional<double> oversubscription;
  std::optional<std::string> transport;  // topologies/transports.hpp; one value, like oversubscription
  std::vector<std::string> algorithms;
  // Schedule files (grid.schedules, algorithms/schedule_file.hpp): as written, and loaded (paths
  // against the spec's folder; proven at load). Each runs as an algorithm named
  // schedule_set->algorithms[i].name; a fixed-count file only at its own size.
  std::vector<std::string> schedules;
  std::shared_ptr<const algo::ScheduleFileSet> schedule_set;
  // Every algorithm of the grid by its point name: `algorithms`, then the files' names.
  std::vector<std::string> run_names() const;
  // The schedule file named `name`, or nullptr for a registered algorithm (or mpi).
  const algo::ScheduleFile* file_named(const std::string& name) const;
  const algo::Algorithm* file_algorithm(const std::string& name) const;
  std::string min_bytes, max_bytes, factor;  // -b / -e / -f (empty for alltoallv)
  // collective alltoallv: its size axis is grid.matrices in place of grid.sizes, size matrix files
  // (algo::load_alltoallv_sizes) as written, their paths (against the spec's folder) and loaded. A
  // matrix runs on the clusters (engine real: the rank counts) whose rank count is its own.
  std::vector<std::string> matrices;
  std::vector<std::string> matrix_paths;
  std::vector<std::shared_ptr<const algo::AllToAllVSizes>> matrix_sizes;
  // alltoallv, simulated engines: the rank count of each cluster, by "topology|nodes" as the grid
  // writes them (grid_value), so that points are counted and matched without loading a topology.
  std::map<std::string, int> cluster_ranks;
  std::vector<std::string> dtypes;
  std::vector<std::string> channels;  // integers, or "nccl": what stock NCCL would run with
  std::string slice = "512K";
  std::string op = "sum";
  std::vector<int> ranks;  // engine real: mpirun -np values
  ExpRealOptions real;
};

// Reads and checks a spec; InputError (one line: the file, the key, the value, what was expected).
ExpSpec load_exp_spec(const std::string& path);

// A file's bytes; InputError "PATH: cannot read the experiment spec" when it cannot be read.
std::string read_spec_file(const std::string& path);

}  // namespace topocoll::experiments
