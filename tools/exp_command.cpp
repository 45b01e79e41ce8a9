#include "tools/exp_command.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "common/errors.hpp"
#include "common/progress.hpp"
#include "experiments/runner/grid.hpp"
#include "experiments/runner/provenance.hpp"
#include "experiments/runner/run.hpp"
#include "experiments/runner/spec.hpp"
#include "experiments/runner/store.hpp"

namespace fs = std::filesystem;

namespace topocoll::tools {

namespace ex = experiments;

int exp_run(const ExpArgs& a, std::ostream& out) {
  const ex::ExpSpec s = ex::load_exp_spec(a.spec);
  const std::string dir = a.output_dir.empty() ? s.dir : a.output_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir)) throw InputError(fmt::format("-o {}: cannot create the output folder", dir));
  const std::string file = ex::records_file(s, dir);
  if (a.fresh) fs::remove(file);
  const ex::Existing done = ex::read_existing(file, s);
  if (done.dropped_partial)
    std::fprintf(stderr, "exp: %s: discarded a partial last line (%zu bytes) from an interrupted run\n", file.c_str(),
                 done.dropped_partial);
  const std::size_t total = ex::count_points(s);
  const std::string commit = ex::git_commit(s.dir);
  cli::Progress progress("exp", "points", total, std::min(total, done.points.size()), a.quiet);
  ex::RecordWriter w(file);
  ex::RunCallbacks cb;
  cb.start = [&] {
    if (!a.quiet)
      std::fprintf(stderr, "exp: %s (%s, spec sha256:%s): %zu points, %zu already in %s\n", s.name.c_str(),
                   s.engine.c_str(), s.sha256.substr(0, 12).c_str(), total, done.points.size(), file.c_str());
    progress.start();
  };
  cb.advance = [&](std::size_t n) { progress.add(n); };
  cb.note = [](const std::string& note) { std::fprintf(stderr, "exp: note: %s\n", note.c_str()); };
  if (s.engine == "real")
    ex::run_real(s, commit, done, w, dir, cb);
  else
    ex::run_simulated(s, commit, done, w, cb);
  progress.finish();
  out << fmt::format("exp: {}: {} points in {:.1f} s -> {}\n", s.name, total, progress.elapsed(), file);
  return 0;
}

// --- compare ----------------------------------------------------------------------------------

int exp_compare(const ExpArgs& a, std::ostream& out) {
  if (a.compare.size() != 2) throw InputError("exp compare: expected two records files");
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
