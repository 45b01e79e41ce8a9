#include "experiments/runner/shard.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "experiments/runner/grid.hpp"
#include "experiments/runner/test_support.hpp"

using namespace topocoll;

namespace {

experiments::ExpSpec simulated() {
  experiments::ExpSpec s;
  s.engine = "analytic";
  s.repetitions = 2;
  s.topologies = {"pcie-8gpu", "dgx-h100"};
  s.nodes = {std::nullopt, 4};
  s.fabrics = {std::nullopt};
  s.algorithms = {"ring", "dbt"};
  s.min_bytes = "8";
  s.max_bytes = "1M";
  s.factor = "4";  // 8, 32, ... 512K
  s.dtypes = {"float", "half"};
  s.channels = {"1", "2"};
  return s;
}

// An environment of the given variables only.
std::function<const char*(const char*)> env_of(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

}  // namespace

TEST_CASE("shard: point_order lists count_points keys, unique, in the walk's order") {
  const experiments::ExpSpec s = simulated();
  const std::vector<std::string> order = experiments::point_order(s);
  CHECK(order.size() == experiments::count_points(s));
  CHECK(std::set<std::string>(order.begin(), order.end()).size() == order.size());
  CHECK(order.front() == "pcie-8gpu|nodes=-|fabric=-|dtype=float|channels=1|ring|8|rep=0");
  CHECK(order[1] == "pcie-8gpu|nodes=-|fabric=-|dtype=float|channels=1|ring|8|rep=1");
  // The last of a dtype are its model rows, after every channels x algorithm point.
  CHECK(order.back() == "dgx-h100|nodes=4|fabric=-|dtype=half|nccl-model|524288");
}

TEST_CASE("shard: --shard I/N is 0-based; anything else is one clear error") {
  const experiments::Shard a = experiments::parse_shard("1/3");
  CHECK(a.index == 1);
  CHECK(a.count == 3);
  CHECK(a.sharded());
  CHECK_FALSE(experiments::parse_shard("0/1").sharded());
  for (const char* bad : {"3/3", "1/0", "-1/2", "1", "a/b", "0/2/3", "", "1/", "/2", " 0/2", "0/99999999999"}) {
    CAPTURE(bad);
    const std::string want = std::string("--shard ") + bad + ": expected I/N with 0 <= I < N";
    CHECK_THROWS_WITH_AS(experiments::parse_shard(bad), doctest::Contains(want.c_str()), InputError);
  }
}

TEST_CASE("shard: from the launcher's environment") {
  using experiments::shard_from_environment;
  CHECK_FALSE(shard_from_environment(env_of({})).sharded());
  experiments::Shard o = shard_from_environment(env_of({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"}}));
  CHECK(o.index == 2);
  CHECK(o.count == 4);
  CHECK(o.source == "OMPI_COMM_WORLD_RANK/SIZE");
  // Open MPI first, when a job also has PMI or Slurm variables.
  o = shard_from_environment(
      env_of({{"PMI_RANK", "0"}, {"PMI_SIZE", "8"}, {"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}}));
  CHECK(o.index == 1);
  CHECK(o.count == 2);
  o = shard_from_environment(env_of({{"PMI_RANK", "5"}, {"PMI_SIZE", "8"}}));
  CHECK(o.index == 5);
  CHECK(o.source == "PMI_RANK/PMI_SIZE");
  o = shard_from_environment(env_of({{"SLURM_PROCID", "3"}, {"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_NTASKS", "4"}}));
  CHECK(o.index == 3);
  CHECK(o.count == 4);
  // A batch script (SLURM_PROCID=0, the job's SLURM_NTASKS, no step) is one process.
  CHECK_FALSE(shard_from_environment(env_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}})).sharded());
  // A job array --array=10-16:2 (4 tasks): task 14 is position 2.
  o = shard_from_environment(env_of({{"SLURM_ARRAY_TASK_ID", "14"},
                                     {"SLURM_ARRAY_TASK_MIN", "10"},
                                     {"SLURM_ARRAY_TASK_STEP", "2"},
                                     {"SLURM_ARRAY_TASK_COUNT", "4"}}));
  CHECK(o.index == 2);
  CHECK(o.count == 4);
  CHECK(o.source == "SLURM_ARRAY_TASK_ID");
  // An array of srun steps: the array's position times the step's size, plus the rank.
  o = shard_from_environment(env_of({{"SLURM_ARRAY_TASK_ID", "1"},
                                     {"SLURM_ARRAY_TASK_MIN", "0"},
                                     {"SLURM_ARRAY_TASK_COUNT", "3"},
                                     {"SLURM_PROCID", "1"},
                                     {"SLURM_STEP_NUM_TASKS", "2"}}));
  CHECK(o.index == 3);
  CHECK(o.count == 6);
  CHECK(o.source == "SLURM_ARRAY_TASK_ID x SLURM_PROCID/SLURM_STEP_NUM_TASKS");

  CHECK_THROWS_WITH_AS(
      shard_from_environment(env_of({{"OMPI_COMM_WORLD_RANK", "4"}, {"OMPI_COMM_WORLD_SIZE", "4"}})),
      "OMPI_COMM_WORLD_RANK=4 with OMPI_COMM_WORLD_SIZE=4: expected 0 <= rank < size (or give --shard I/N)",
      InputError);
  CHECK_THROWS_WITH_AS(shard_from_environment(env_of({{"PMI_RANK", "x"}, {"PMI_SIZE", "2"}})),
                       "PMI_RANK=x: expected a non-negative integer (or give --shard I/N)", InputError);
  CHECK_THROWS_WITH_AS(shard_from_environment(env_of({{"PMI_RANK", "1"}})),
                       "PMI_RANK=1 without PMI_SIZE: cannot tell how many shards (give --shard I/N)", InputError);
  CHECK_THROWS_WITH_AS(
      shard_from_environment(
          env_of({{"SLURM_ARRAY_TASK_ID", "7"}, {"SLURM_ARRAY_TASK_MIN", "1"}, {"SLURM_ARRAY_TASK_COUNT", "3"}})),
      doctest::Contains("SLURM_ARRAY_TASK_ID=7 (SLURM_ARRAY_TASK_MIN=1, SLURM_ARRAY_TASK_STEP=1, "
                        "SLURM_ARRAY_TASK_COUNT=3): not a position in an evenly spaced array"),
      InputError);
}

TEST_CASE("shard: points are dealt in a snake, repetitions together, each cluster evenly") {
  const experiments::ExpSpec s = simulated();
  const std::vector<std::string> order = experiments::point_order(s);
  for (int n : {1, 2, 3, 7}) {
    CAPTURE(n);
    const std::vector<int> dealt = experiments::deal_points(order, n);
    REQUIRE(dealt.size() == order.size());
    // Each shard's units: within one of each other over the grid, within two per cluster (the
    // key's first two fields: a cluster may begin and end in the middle of a round).
    std::map<std::string, std::vector<std::size_t>> per;
    std::vector<std::size_t> all(n);
    for (std::size_t p = 0; p < order.size(); ++p) {
      REQUIRE(dealt[p] >= 0);
      REQUIRE(dealt[p] < n);
      if (order[p].ends_with("|rep=1")) {  // the repetition goes with its rep=0
        CHECK(dealt[p] == dealt[p - 1]);
        continue;
      }
      const std::string cluster = order[p].substr(0, order[p].find("|fabric="));
      auto& c = per[cluster];
      c.resize(n);
      ++c[dealt[p]];
      ++all[dealt[p]];
    }
    const auto spread = [](const std::vector<std::size_t>& c) {
      return *std::max_element(c.begin(), c.end()) - *std::min_element(c.begin(), c.end());
    };
    CHECK(spread(all) <= 1);
    CHECK(per.size() == 4);
    for (const auto& [cluster, c] : per) {
      CAPTURE(cluster);
      CHECK(spread(c) <= 2);
    }
  }
  // 0 1 2 2 1 0 0 1 ... over units.
  const std::vector<std::string> keys = {"a|rep=0", "a|rep=1", "b", "c|rep=0", "d", "e", "f", "g", "h|nodes=2"};
  CHECK(experiments::deal_points(keys, 3) == std::vector<int>{0, 0, 1, 2, 2, 1, 0, 0, 1});
}

TEST_CASE("shard: skip_other_shards leaves each shard its own points, all of them once") {
  const experiments::ExpSpec s = simulated();
  const std::vector<std::string> order = experiments::point_order(s);
  std::size_t owned = 0;
  std::map<std::string, int> runs;
  for (int i = 0; i < 3; ++i) {
    experiments::Existing ex;
    ex.points.insert(order.front());  // written already, whoever's it is
    const experiments::ShardPoints n = experiments::skip_other_shards(ex, s, {i, 3, "test"});
    owned += n.owned;
    CHECK(n.written == (experiments::deal_points(order, 3).front() == i ? 1u : 0u));
    for (const std::string& k : order)
      if (!ex.points.count(k)) ++runs[k];
  }
  CHECK(owned == order.size());
  CHECK(runs.size() == order.size() - 1);
  for (const auto& [k, n] : runs) CHECK(n == 1);
}

TEST_CASE("shard: file names beside the records file") {
  CHECK(experiments::shard_part_file("out/records.jsonl", 1, 4) == "out/records.shard-1-of-4.jsonl");
  CHECK(experiments::shard_done_file("out/records-ucx.jsonl", 0, 2) == "out/records-ucx.shard-0-of-2.done");
}

TEST_CASE("shard: a shard that finds the merge done by another ends well; exp merge says it is not done") {
  // Two shards that finish together both see both markers; the second to take the merge lock
  // finds the first one's merge done (markers and parts gone). It must not fail on that.
  experiments::testing::TempDir dir;
  const std::string records = dir.path() + "/records.jsonl";
  experiments::ExpSpec s = simulated();
  s.path = dir.write("spec.yaml", "description: merge race\n");
  s.sha256 = std::string(64, 'a');
  for (int i = 0; i < 2; ++i) experiments::write_done(records, s, {i, 2, "--shard"}, false, 0);
  const experiments::MergeResult first = experiments::merge_shards(s, records, 2, /*lock_is_error=*/false);
  CHECK(first.merged);
  CHECK(first.shards == 2);
  CHECK(experiments::find_shard_files(records).empty());
  const experiments::MergeResult late = experiments::merge_shards(s, records, 2, /*lock_is_error=*/false);
  CHECK_FALSE(late.merged);
  CHECK_THROWS_WITH_AS(experiments::merge_shards(s, records, 2, /*lock_is_error=*/true), doctest::Contains("not done"),
                       InputError);
}
