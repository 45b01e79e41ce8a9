// Engine real: mpirun ... topocoll-bench, its JSONL records taken in with this run's provenance.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>

#include "common/cli_io.hpp"
#include "common/errors.hpp"
#include "common/records.hpp"
#include "experiments/runner/grid.hpp"
#include "experiments/runner/process.hpp"
#include "experiments/runner/provenance.hpp"
#include "experiments/runner/run.hpp"

namespace fs = std::filesystem;

namespace topocoll::experiments {

namespace {

std::string self_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

int run_logged(const std::vector<std::string>& argv, const std::string& log) {
  return run_process(argv, log).status;
}

// The line of a failed run's log to quote: the first "error:" line (ours, topocoll-bench's), else
// the first that names an error or a sanitizer's report (ASan, LSan, mpirun's "ERROR"), else the
// last line that is not one of mpirun's rules of dashes.
std::string error_line(const std::string& log) {
  std::ifstream f(log);
  std::string line, found, named, last;
  while (std::getline(f, line)) {
    if (line.find_first_not_of("- \t") == std::string::npos) continue;
    last = line;
    if (found.empty() && line.find("error:") != std::string::npos) found = line;
    if (named.empty() && (line.find("ERROR") != std::string::npos || line.find("Sanitizer") != std::string::npos ||
                          line.find("error") != std::string::npos))
      named = line;
  }
  return !found.empty() ? found : !named.empty() ? named : last;
}

}  // namespace

void run_real(const ExpSpec& s, const std::string& commit, const Existing& ex, RecordWriter& w,
              const std::string& out_dir, const RunCallbacks& cb) {
  const std::string bench = !s.real.bench.empty()           ? s.real.bench
                            : std::getenv("TOPOCOLL_BENCH") ? std::string(std::getenv("TOPOCOLL_BENCH"))
                                                            : (fs::path(self_dir()) / "topocoll-bench").string();
  if (!fs::exists(bench))
    throw InputError(
        fmt::format("{}: engine real needs topocoll-bench (built with MPI): {} does not exist (set real.bench or "
                    "TOPOCOLL_BENCH)",
                    s.path, bench));
  const std::string tmp = (fs::path(out_dir) / ".exp-real.jsonl").string();
  const std::string log = (fs::path(out_dir) / ".exp-real.log").string();
  // The sizes of one mpirun: -b / -e / -f of the sweep (`smallest`: its first size only, for the
  // check run), or an alltoallv's --sizes FILE.
  const auto size_argv = [&](const GridSize* matrix, bool smallest) -> std::vector<std::string> {
    if (matrix) return {"--sizes", s.matrix_paths[static_cast<std::size_t>(matrix->matrix)]};
    return {"-b", s.min_bytes, "-e", smallest ? s.min_bytes : s.max_bytes, "-f", s.factor};
  };
  const auto bench_argv = [&](int ranks, const std::string& dtype, const std::string& ch,
                              const std::vector<std::string>& sizes, int iters, int warmup, int check,
                              const std::string& output, bool with_files) {
    std::vector<std::string> argv = s.real.mpirun;
    for (const std::string& x :
         {std::string("-np"),
          std::to_string(ranks),
          bench,
          std::string("--backend"),
          s.real.backend,
          std::string("--algorithm"),
          s.algorithms.empty() ? std::string("mpi") : fmt::format("{}", fmt::join(s.algorithms, ",")),
          std::string("-d"),
          dtype,
          std::string("-o"),
          s.op,
          std::string("--channels"),
          ch,
          std::string("--slice"),
          s.slice,
          std::string("-n"),
          std::to_string(iters),
          std::string("-w"),
          std::to_string(warmup),
          std::string("-c"),
          std::to_string(check),
          std::string("--timeout"),
          fmt::format("{:g}", s.real.timeout_s),
          std::string("--format"),
          std::string("jsonl"),
          std::string("-O"),
          output})
      argv.push_back(x);
    argv.insert(argv.end(), sizes.begin(), sizes.end());
    // Schedule files (grid.schedules): the bench runs them beside the algorithms. Without
    // registered algorithms it runs them with the mpi baseline, whose records the grid skips.
    if (with_files && s.schedule_set)
      for (const auto& f : s.schedule_set->files) {
        argv.push_back("--schedule");
        argv.push_back(f->path);
      }
    // Another collective than allreduce: topocoll-bench is told which (its check run below
    // reports it if that bench does not measure it).
    if (s.collective != algo::Collective::AllReduce)
      for (const std::string& x : {std::string("--collective"), std::string(algo::to_string(s.collective))})
        argv.push_back(x);
    return argv;
  };
  // The mpiruns of a (ranks, dtype): one for the sweep, or one per matrix of that rank count
  // (alltoallv); a run's points are those of its sizes.
  const auto runs_of = [&](int ranks, const std::string& dtype) {
    std::vector<std::optional<GridSize>> runs;
    if (s.collective != algo::Collective::AllToAllV) return std::vector<std::optional<GridSize>>{std::nullopt};
    for (const GridSize& z : sizes_of(s, dtype, ranks)) runs.emplace_back(z);
    return runs;
  };
  const auto in_run = [](const std::optional<GridSize>& run, const GridSize& z) { return !run || run->key == z.key; };
  const auto todo_of = [&](int ranks, const std::string& dtype, const std::string& ch, int rep,
                           const std::optional<GridSize>& run) {
    std::size_t todo = 0;
    for (const std::string& a : s.run_names())
      for (const GridSize& z : sizes_for(s, a, dtype, ranks))
        if (in_run(run, z))
          for (bool ip : {false, true})
            if (!ip || measured_in_place(s, z))
              todo += !ex.points.count(real_point(s, ranks, dtype, ch, a, z, ip, rep));
    return todo;
  };
  // Before the first point: topocoll-bench itself checks what it accepts (backend, algorithms on
  // this many ranks, dtype), with one iteration of the smallest size per (ranks, dtype, channels)
  // that has points left to run.
  for (int ranks : s.ranks)
    for (const std::string& dtype : s.dtypes)
      for (const std::string& ch : s.channels)
        for (const std::optional<GridSize>& run : runs_of(ranks, dtype)) {
          std::size_t left = 0;
          for (int rep = 0; rep < s.repetitions; ++rep) left += todo_of(ranks, dtype, ch, rep, run);
          if (left == 0) continue;
          const int rc = run_logged(
              bench_argv(ranks, dtype, ch, size_argv(run ? &*run : nullptr, true), 1, 1, 0, "/dev/null", false), log);
          if (rc == 2)
            throw InputError(
                fmt::format("{}: topocoll-bench rejected the grid (ranks {}, dtype {}, channels {}, backend {}): {}",
                            s.path, ranks, dtype, ch, s.real.backend, error_line(log)));
          if (rc != 0)  // the launcher as the spec gives it (real.mpirun, real.bench) does not run
            throw InputError(
                fmt::format("{}: {} -np {} topocoll-bench (a check run of one size) exited {}: {} (full log: {}): "
                            "check real.mpirun "
                            "and real.bench",
                            s.path, s.real.mpirun.front(), ranks, rc, error_line(log), log));
        }
  if (cb.start) cb.start();
  for (int ranks : s.ranks)
    for (const std::string& dtype : s.dtypes)
      for (const std::string& ch : s.channels)
        for (const std::optional<GridSize>& run : runs_of(ranks, dtype))
          for (int rep = 0; rep < s.repetitions; ++rep) {
            // One mpirun per (ranks, dtype, channels, repetition) covers every algorithm and size
            // (an alltoallv: one per matrix), in and out of place; it is skipped when all of its
            // points are written.
            const std::size_t todo = todo_of(ranks, dtype, ch, rep, run);
            if (todo == 0) continue;
            fs::remove(tmp);
            const int rc = run_logged(bench_argv(ranks, dtype, ch, size_argv(run ? &*run : nullptr, false),
                                                 s.real.iters, s.real.warmup, s.real.check, tmp, true),
                                      log);
            if (rc == 2)
              throw InputError(
                  fmt::format("{}: topocoll-bench rejected the grid (ranks {}, dtype {}, channels {}, backend {}): {}",
                              s.path, ranks, dtype, ch, s.real.backend, error_line(log)));
            if (rc != 0 && rc != 1)
              throw std::runtime_error(fmt::format("mpirun -np {} topocoll-bench exited {}: {} (full log: {})", ranks,
                                                   rc, error_line(log), log));
            std::ifstream in(tmp);
            std::string line;
            std::size_t written = 0;
            while (std::getline(in, line)) {
              if (line.empty()) continue;
              // The bench's own output: a line that is not a record (a bench killed mid-write) is a
              // failure of the run, not of the user's input.
              records::Record rec;
              try {
                rec = records::record_from_json(nlohmann::json::parse(line));
              } catch (const std::exception& e) {
                throw RuntimeFailure(
                    fmt::format("mpirun -np {} topocoll-bench wrote a line that is not a record ({}): {} "
                                "(full log: {})",
                                ranks, cli::one_line(e.what()), tmp, log));
              }
              const GridSize size =
                  run ? *run : GridSize{.bytes = rec.size_bytes, .matrix = -1, .key = std::to_string(rec.size_bytes)};
              const std::string point = real_point(s, ranks, dtype, ch, rec.algorithm, size, rec.in_place, rep);
              if (ex.points.count(point)) continue;
              const std::vector<std::string> names = s.run_names();
              if (std::find(names.begin(), names.end(), rec.algorithm) == names.end()) continue;  // not of the grid
              const records::Record p = provenance(s, commit);
              rec.topology = "local";
              rec.calibration = "";
              rec.experiment = p.experiment;
              rec.spec_hash = p.spec_hash;
              rec.commit = p.commit;
              rec.repetition = rep;
              rec.point = point;
              w.write(rec);
              ++written;
            }
            fs::remove(tmp);
            if (rc == 1)
              throw std::runtime_error(
                  fmt::format("mpirun -np {} topocoll-bench: a result was wrong or the run failed: {} (log: {})", ranks,
                              error_line(log), log));
            if (cb.advance) cb.advance(std::min(written, todo));
          }
  fs::remove(log);
}

}  // namespace topocoll::experiments
