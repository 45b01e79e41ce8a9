// `topocoll exp`: experiments from checked-in specs (docs/experiments.md).
//
//   topocoll exp run experiments/NAME/experiment.yaml [-o DIR] [--fresh]
//   topocoll exp run SPEC --shard I/N      (or under mpirun / srun / a Slurm job array)
//   topocoll exp merge SPEC [-o DIR]
//   topocoll exp compare A.jsonl B.jsonl
//
// `run` expands the spec's grid (topologies x nodes x fabrics x dtypes x channels x algorithms x
// sizes x repetitions) into points, runs every point not already in DIR/records.jsonl (default
// DIR: the spec's folder; a spec not named experiment.yaml, NAME.yaml, writes records-NAME.jsonl) with the simulator
// (engine analytic | simgrid, plus one stock-NCCL model row per size) or for real (engine real: mpirun ...
// topocoll-bench), and appends one record per point with its provenance. A rerun skips the points already written; a
// partial last line (an interrupted run) is discarded. Progress on stderr.
//
// The runner is the library experiments/runner/ (spec, grid, store, provenance, runs); this is
// its command line and the progress printer.
//
// With a shard (--shard I/N, 0-based, or the launcher's environment: experiments/runner/shard.hpp)
// the run does only that shard's points, into DIR/records.shard-I-of-N.jsonl; the last shard to
// finish merges the parts into DIR/records.jsonl in the single-process order. `merge` does that
// merge by hand (a run or a compare does it too, when every shard is done).
//
// `compare` says whether two record files hold the same points with the same values, ignoring
// the fields that name when, where and from which checkout they were made (date, machine,
// commit): "reproduces exactly" in docs/experiments.md. Exit 0 same, 1 different.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace topocoll::tools {

struct ExpArgs {
  std::string spec;
  std::string output_dir;  // default: the spec's folder
  bool fresh = false;      // start over: remove the records file first
  bool quiet = false;      // no progress on stderr
  std::string shard;       // --shard I/N (not given: the launcher's environment, else one process)
  bool shard_given = false;
  std::vector<std::string> compare;  // exp compare: two files
};

int exp_run(const ExpArgs& a, std::ostream& out);
int exp_merge(const ExpArgs& a, std::ostream& out);
int exp_compare(const ExpArgs& a, std::ostream& out);

}  // namespace topocoll::tools
