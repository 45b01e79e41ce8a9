#include "tools/exp_command.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <ranges>
#include <vector>

#include "common/errors.hpp"
#include "common/progress.hpp"
#include "experiments/runner/grid.hpp"
#include "experiments/runner/provenance.hpp"
#include "experiments/runner/run.hpp"
#include "experiments/runner/shard.hpp"
#include "experiments/runner/spec.hpp"
#include "experiments/runner/store.hpp"

namespace fs = std::filesystem;

namespace topocoll::tools {

namespace ex = experiments;

namespace {

// Shard files of another run beside `file` stop a run that would not see them: a single process
// merges a finished sharded run first and refuses an unfinished one; a shard refuses the parts
// of another shard count.
void check_shard_files(const ex::ExpSpec& s, const std::string& file, const ex::Shard& shard, std::ostream& out) {
  const std::map<int, ex::ShardFiles> found = ex::find_shard_files(file);
  for (const auto& [n, f] : found) {
    if (shard.sharded() && n == shard.count) continue;
    if (f.parts.empty()) {  // markers without records: nothing to merge
      ex::remove_shard_files(file, n);
      continue;
    }
    std::vector<int> missing;
    for (int i = 0; i < n; ++i)
      if (!f.done.count(i)) missing.push_back(i);
    if (!shard.sharded() && missing.empty() && found.size() == 1) {
      const ex::MergeResult m = ex::merge_shards(s, file, n, false);
      if (m.merged) out << fmt::format("exp: merged the {} shards' parts: {} records -> {}\n", n, m.records, file);
      continue;
    }
    const std::string what = shard.sharded()
                                 ? fmt::format("this run is shard {}/{} ({})", shard.index, shard.count, shard.source)
                                 : std::string("this run is one process");
    throw InputError(fmt::format(
        "{}: beside it are the parts of a {}-shard run ({}), {}: run it with --shard I/{} ({}), or start over with "
        "--fresh",
        file, n, missing.empty() ? std::string("all done") : fmt::format("shard {} not done", fmt::join(missing, ", ")),
        what, n,
        missing.empty() ? fmt::format("or `topocoll exp merge {}`", s.path)
                        : fmt::format("`topocoll exp run {} --shard {}/{}` finishes it", s.path, missing.front(), n)));
  }
}

}  // namespace

int exp_run(const ExpArgs& a, std::ostream& out) {
  const ex::ExpSpec s = ex::load_exp_spec(a.spec);
  // The shard: --shard, else the launcher's environment (mpirun, srun, a Slurm job array).
  const ex::Shard shard = a.shard_given ? ex::parse_shard(a.shard) : ex::shard_from_environment();
  if (shard.sharded() && s.engine == "real")
    throw InputError(fmt::format(
        "{}: shard {}/{} ({}): engine real is not spread over processes (each of its points is an mpirun of "
        "topocoll-bench on this machine): run `topocoll exp run` as one process, outside mpirun/srun or with --shard "
        "0/1",
        s.path, shard.index, shard.count, shard.source));
  const std::string dir = a.output_dir.empty() ? s.dir : a.output_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir)) throw InputError(fmt::format("-o {}: cannot create the output folder", dir));
  const std::string file = ex::records_file(s, dir);
  // A sharded run writes its own part; it reads the shared records file and never writes it.
  const std::string target = shard.sharded() ? ex::shard_part_file(file, shard.index, shard.count) : file;
  if (a.fresh) {
    // Start over: this run's own file, and the shard files of any other shard count (one
    // process: all of them). The parts of this run's other shards are theirs to remove.
    fs::remove(target);
    for (const auto& [n, f] : ex::find_shard_files(file))
      if (!shard.sharded() || n != shard.count) ex::remove_shard_files(file, n);
  }
  check_shard_files(s, file, shard, out);
  if (shard.sharded()) ex::remove_done(file, shard);  // done again only when this run ends
  ex::Existing done = ex::read_existing(target, s);
  if (done.dropped_partial)
    std::fprintf(stderr, "exp: %s: discarded a partial last line (%zu bytes) from an interrupted run\n", target.c_str(),
                 done.dropped_partial);
  std::size_t total = ex::count_points(s), already = done.points.size();
  if (shard.sharded()) {
    if (!a.fresh) done.points.merge(ex::read_existing(file, s, false).points);
    const ex::ShardPoints mine = ex::skip_other_shards(done, s, shard);
    total = mine.owned;
    already = mine.written;
  }
  const std::string commit = ex::git_commit(s.dir);
  cli::Progress progress("exp", "points", total, std::min(total, already), a.quiet);
  ex::RecordWriter w(target);
  ex::RunCallbacks cb;
  cb.start = [&] {
    if (a.quiet) {
    } else if (shard.sharded()) {
      std::fprintf(stderr, "exp: %s (%s, spec sha256:%s): shard %d/%d (%s): %zu of %zu points, %zu already written\n",
                   s.name.c_str(), s.engine.c_str(), s.sha256.substr(0, 12).c_str(), shard.index, shard.count,
                   shard.source.c_str(), total, ex::count_points(s), already);
    } else {
      std::fprintf(stderr, "exp: %s (%s, spec sha256:%s): %zu points, %zu already in %s\n", s.name.c_str(),
                   s.engine.c_str(), s.sha256.substr(0, 12).c_str(), total, already, file.c_str());
    }
    progress.start();
  };
  cb.advance = [&](std::size_t n) { progress.add(n); };
  cb.note = [](const std::string& note) { std::fprintf(stderr, "exp: note: %s\n", note.c_str()); };
  if (s.engine == "real")
    ex::run_real(s, commit, done, w, dir, cb);
  else
    ex::run_simulated(s, commit, done, w, cb);
  progress.finish();
  out << fmt::format("exp: {}: {} points in {:.1f} s -> {}\n", s.name, total, progress.elapsed(), target);
  if (!shard.sharded()) return 0;

  // This shard is done; the last one to finish (whichever sees every marker) merges.
  ex::write_done(file, s, shard, a.fresh, ex::read_existing(target, s).points.size());
  const std::map<int, ex::ShardFiles> found = ex::find_shard_files(file);
  const auto it = found.find(shard.count);
  if (it == found.end()) {  // another shard saw this one's marker and has merged everything since
    out << fmt::format("exp: {}: shard {}/{} done; another shard merged into {}\n", s.name, shard.index, shard.count,
                       file);
    return 0;
  }
  const ex::ShardFiles& f = it->second;
  if (static_cast<int>(f.done.size()) < shard.count) {
    std::vector<int> waiting;
    for (int i = 0; i < shard.count; ++i)
      if (!f.done.count(i)) waiting.push_back(i);
    out << fmt::format(
        "exp: {}: shard {}/{} done; shard {} not yet: the last to finish merges into {} (or `topocoll "
        "exp merge {}`)\n",
        s.name, shard.index, shard.count, fmt::join(waiting, ", "), file, s.path);
    return 0;
  }
  const ex::MergeResult m = ex::merge_shards(s, file, shard.count, false);
  if (m.merged)
    out << fmt::format("exp: {}: merged {} shards: {} records -> {}\n", s.name, m.shards, m.records, file);
  else
    out << fmt::format("exp: {}: shard {}/{} done; another shard merged or is merging into {}\n", s.name, shard.index,
                       shard.count, file);
  return 0;
}

int exp_merge(const ExpArgs& a, std::ostream& out) {
  const ex::ExpSpec s = ex::load_exp_spec(a.spec);
  const std::string file = ex::records_file(s, a.output_dir.empty() ? s.dir : a.output_dir);
  std::map<int, ex::ShardFiles> found = ex::find_shard_files(file);
  std::erase_if(found, [&](const auto& e) {
    if (!e.second.parts.empty()) return false;
    ex::remove_shard_files(file, e.first);  // markers without records: nothing to merge
    return true;
  });
  if (found.empty()) {
    out << fmt::format("exp merge: no shard parts beside {}: nothing to merge\n", file);
    return 0;
  }
  if (found.size() > 1)
    throw InputError(
        fmt::format("{}: beside it are the parts of runs of {} shard counts ({}): remove all but one, or "
                    "start over with `topocoll exp run {} --fresh`",
                    file, found.size(), fmt::join(std::views::keys(found), ", "), s.path));
  const ex::MergeResult m = ex::merge_shards(s, file, found.begin()->first, true);
  out << fmt::format("exp merge: {} shards: {} records -> {}\n", m.shards, m.records, file);
  return 0;
}

// `exp compare` of a records file beside the finished parts of a sharded run merges them first
// (with the spec their done markers name); an unfinished run is an error, not a comparison.
void merge_before_compare(const std::string& file) {
  std::map<int, ex::ShardFiles> found = ex::find_shard_files(file);
  std::erase_if(found, [](const auto& e) { return e.second.parts.empty(); });  // no records to merge
  if (found.empty()) return;
  const auto& [n, f] = *found.begin();
  if (found.size() > 1 || static_cast<int>(f.done.size()) < n || f.done_spec.empty())
    throw InputError(
        fmt::format("{}: beside it are the parts of an unfinished {}-shard run: finish it (`topocoll exp "
                    "run SPEC --shard I/{}`, or `topocoll exp merge SPEC`) before comparing",
                    file, n, n));
  const ex::ExpSpec s = ex::load_exp_spec(f.done_spec);
  const ex::MergeResult m = ex::merge_shards(s, file, n, false);
  if (m.merged)
    std::fprintf(stderr, "exp compare: merged the %d shards' parts into %s (%zu records)\n", n, file.c_str(),
                 m.records);
}

// --- compare ----------------------------------------------------------------------------------

int exp_compare(const ExpArgs& a, std::ostream& out) {
  if (a.compare.size() != 2) throw InputError("exp compare: expected two records files");
  for (const std::string& f : a.compare) merge_before_compare(f);
  const auto x = ex::load_points(a.compare[0]), y = ex::load_points(a.compare[1]);
  std::size_t only_x = 0, only_y = 0, differ = 0, shown = 0;
  for (const auto& [k, j] : x) {
    auto it = y.find(k);
    if (it == y.end()) {
      ++only_x;
      if (shown++ < 10) out << fmt::format("only in {}: {}\n", a.compare[0], k);
    } else if (it->second != j) {
      ++differ;
      if (shown++ < 10) out << fmt::format("differs: {}\n  {}\n  {}\n", k, j.dump(), it->second.dump());
    }
  }
  for (const auto& [k, j] : y)
    if (!x.count(k)) {
      ++only_y;
      if (shown++ < 10) out << fmt::format("only in {}: {}\n", a.compare[1], k);
    }
  const bool same = only_x == 0 && only_y == 0 && differ == 0;
  out << fmt::format(
      "exp compare: {} and {} points; {} differ, {} only in the first, {} only in the second (date, machine, commit "
      "ignored): {}\n",
      x.size(), y.size(), differ, only_x, only_y, same ? "same" : "DIFFERENT");
  return same ? 0 : 1;
}

}  // namespace topocoll::tools
