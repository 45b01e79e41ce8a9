// `topocoll exp`: experiments from checked-in specs (docs/experiments.md).
//
//   topocoll exp run experiments/NAME/experiment.yaml [-o DIR] [--fresh]
//   topocoll exp compare A.jsonl B.jsonl
//
// `run` expands the spec's grid (topologies x nodes x fabrics x dtypes x channels x algorithms x
// sizes x repetitions) into points, runs every point not already in DIR/records.jsonl (default
// DIR: the spec's folder; a spec not named experiment.yaml, NAME.yaml, writes records-NAME.jsonl) with the simulator
// (engine analytic | simgrid, plus one stock-NCCL model row per size) or for real (engine real: mpirun ...
// topocoll-bench), and appends one record per point with its provenance. A rerun skips the points already written; a
// partial last line (an interrupted run) is discarded. Progress on stderr.
//
// `compare` says whether two record files hold the same points with the same values, ignoring
// the fields that name when, where and from which checkout they were made (date, machine,
// commit): "reproduces exactly" in docs/experiments.md. Exit 0 same, 1 different.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace topocoll::tools {

struct ExpArgs {
  std::string spec;
  std::string output_dir;            // default: the spec's folder
  bool fresh = false;                // start over: remove the records file first
  bool quiet = false;                // no progress on stderr
  std::vector<std::string> compare;  // exp compare: two files
};

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
  int repetitions = 1;
  std::string calibration;       // as written ("" = defaults)
  std::string calibration_path;  // resolved against the spec's folder
  std::string protocol;          // "" (the calibration's, else auto) | auto | LL | LL128 | Simple
  bool nccl_model = true;
  std::vector<std::string> topologies;      // as written
  std::vector<std::string> topology_paths;  // resolved (files against the spec's folder)
  std::vector<std::optional<int>> nodes;    // nullopt: the topology's own
  std::vector<std::optional<std::string>> fabrics;
  std::optional<double> oversubscription;
  std::vector<std::string> algorithms;
  std::string min_bytes, max_bytes, factor;  // -b / -e / -f
  std::vector<std::string> dtypes;
  std::vector<std::string> channels;  // integers, or "nccl": what stock NCCL would run with
  std::string slice = "512K";
  std::string op = "sum";
  std::vector<int> ranks;  // engine real: mpirun -np values
  ExpRealOptions real;
};

// Reads and checks a spec; InputError (one line: the file, the key, the value, what was expected).
ExpSpec load_exp_spec(const std::string& path);

// SHA-256 of a byte string, lower-case hex (FIPS 180-4).
std::string sha256_hex(const std::string& bytes);

int exp_run(const ExpArgs& a, std::ostream& out);
int exp_compare(const ExpArgs& a, std::ostream& out);

}  // namespace topocoll::tools
