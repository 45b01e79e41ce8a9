// A sweep spread over processes (docs/experiments.md, "Sweeps over processes"): which shard this
// process is (`--shard I/N`, or the launcher's environment), which points are its own, its part
// of the store, and the merge of the parts into the one records file a single process writes.
//
//   DIR/records.shard-I-of-N.jsonl   shard I's records (it alone writes the file; resumable)
//   DIR/records.shard-I-of-N.done    written when shard I has run all its points
//   DIR/records.merge.lock           held while the parts are merged into DIR/records.jsonl
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "experiments/runner/spec.hpp"
#include "experiments/runner/store.hpp"

namespace topocoll::experiments {

struct Shard {
  int index = 0;       // 0-based
  int count = 1;       // 1: the whole grid in one process
  std::string source;  // where it came from: "--shard", "OMPI_COMM_WORLD_RANK/SIZE", ...
  bool sharded() const { return count > 1; }
};

// `--shard I/N`: 0-based I, 0 <= I < N. InputError naming the value and what was expected.
Shard parse_shard(const std::string& text);

// The shard a launcher gives this process, read from its environment (`env`: getenv by default):
// Open MPI's OMPI_COMM_WORLD_RANK/SIZE, else PMI_RANK/PMI_SIZE (MPICH, Intel MPI), else srun's
// SLURM_PROCID/SLURM_STEP_NUM_TASKS; and a Slurm job array's SLURM_ARRAY_TASK_ID (with
// SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_COUNT and SLURM_ARRAY_TASK_STEP), shards of its own
// multiplied with the launcher's. None of them: count 1. InputError on a value that is not a rank.
Shard shard_from_environment(const std::function<const char*(const char*)>& env = {});

// The shard of each point of `order` (point_order: the grid in the single-process order) out of
// `count`. A point with its repetitions is one unit (simulated engines run the repetitions once);
// units are dealt in that order like cards in a snake, 0 1 .. N-1 N-1 .. 1 0 0 1 ..: the shards'
// counts are within one of each other over the grid and within two in each cluster (a cluster's
// points are consecutive), and small and large sizes alternate between the shards. A function of the spec alone: not of
// what is written nor of the order shards run.
std::vector<int> deal_points(const std::vector<std::string>& order, int count);

// Marks every point of the grid that is not `shard`'s as written, so that a run skips it (a
// cluster without a point of this shard is not loaded): the one place a run is filtered.
// Returns how many points are the shard's, and how many of them were written already.
struct ShardPoints {
  std::size_t owned = 0, written = 0;
};
ShardPoints skip_other_shards(Existing& existing, const ExpSpec& s, const Shard& shard);

// Where shard I of N keeps its records and its done marker, beside `records` (records_file).
std::string shard_part_file(const std::string& records, int index, int count);
std::string shard_done_file(const std::string& records, int index, int count);

// The shard files beside `records`, by shard count: which shards have a part (a file not empty:
// records not merged yet), which are done. Done markers without any part are leftovers (a shard
// rerun alone over a merged store): nothing to merge.
struct ShardFiles {
  std::set<int> parts, done;
  std::string done_spec;  // the spec a done marker names (its absolute path), for `exp compare`
};
std::map<int, ShardFiles> find_shard_files(const std::string& records);

// Shard `shard` has run all its points: its done marker (the spec, its hash, whether the run
// was --fresh, how many records its part holds).
void write_done(const std::string& records, const ExpSpec& s, const Shard& shard, bool fresh,
                std::size_t records_written);
void remove_done(const std::string& records, const Shard& shard);
// Removes the shard files of a `count`-shard run beside `records` (parts and markers).
void remove_shard_files(const std::string& records, int count);

struct MergeResult {
  bool merged = false;  // false: another process holds the merge lock
  std::size_t records = 0;
  int shards = 0;
};
// Merges the parts of a `count`-shard run of `s` (every shard done) and the records file's own
// records (unless the shards ran --fresh) into `records`, in point_order, each line as its shard
// wrote it; then removes the parts and markers. The file is replaced in one rename. InputError
// when a shard is not done, the markers disagree with the spec or with each other, a record is
// not a point of the grid, or a point appears twice with different values. A held lock:
// merged false (a shard finishing, `exp compare`), or with `lock_is_error` (`exp merge`) an
// InputError naming the lock file.
MergeResult merge_shards(const ExpSpec& s, const std::string& records, int count, bool lock_is_error);

}  // namespace topocoll::experiments
