#include "tools/bench_command.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>

#include "algorithms/registry.hpp"
#include "algorithms/schedule_file.hpp"
#include "common/cli_io.hpp"
#include "common/errors.hpp"
#include "common/records.hpp"
#include "runtime/bench/nccl_baselines.hpp"

namespace topocoll::tools {

namespace {

// The bench does not link the simulator library or the `topocoll` tool library (SimGrid defines
// MPI_Init & co. for SMPI and would shadow the real MPI); the shared command-line pieces live
// in common/cli_io.hpp for that reason.
using cli::parse_size;
using runtime::BenchBackend;
using runtime::BenchEntry;

// The registry's algorithms of collective c, for error messages: "ring, dbt, ..., mpi or all".
std::string algorithm_names(algo::Collective c) {
  std::string names;
  for (const algo::Algorithm* a : algo::select_algorithms("all", c)) names += a->name + ", ";
  return names + "mpi or all";
}

// What the NCCL baselines call, for a block's header.
std::string_view nccl_call(algo::Collective c) {
  switch (c) {
    case algo::Collective::AllReduce:
      return "ncclAllReduce";
    case algo::Collective::AllGather:
      return "ncclAllGather";
    case algo::Collective::ReduceScatter:
      return "ncclReduceScatter";
    case algo::Collective::Broadcast:
      return "ncclBroadcast";
    case algo::Collective::Reduce:
      return "ncclReduce";
    case algo::Collective::AllToAll:
      return "ncclAlltoAll";
    case algo::Collective::AllToAllV:
      return "ncclSend / ncclRecv (NCCL has no alltoallv)";
  }
  return "?";
}

// nccl-tests' busbw factor, as a formula.
std::string_view factor_formula(algo::Collective c) {
  switch (c) {
    case algo::Collective::AllReduce:
      return "2(p-1)/p";
    case algo::Collective::AllGather:
    case algo::Collective::ReduceScatter:
    case algo::Collective::AllToAll:
    case algo::Collective::AllToAllV:
      return "(p-1)/p";
    case algo::Collective::Broadcast:
    case algo::Collective::Reduce:
      return "1";
  }
  return "?";
}

// nccl-tests' time column: fewer decimals for larger times.
std::string time_str(double us) {
  if (us >= 10000.0) return fmt::format("{:7.0f}", us);
  if (us >= 100.0) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.2f}", us);
}

// --algorithm when not given: allreduce's three main algorithms and mpi; for the other
// collectives every algorithm of theirs and mpi.
std::string default_algorithms(algo::Collective c) {
  return c == algo::Collective::AllReduce ? "ring,dbt,hierarchical,mpi" : "all";
}

// The blocks of --algorithm for collective c: registered algorithms of c, mpi, NCCL baselines
// (--backend nccl), or all (c's algorithms, then mpi).
std::vector<BenchEntry> parse_algorithms(const std::string& list, algo::Collective c, const std::string& backend) {
  std::vector<BenchEntry> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    const std::string name = list.substr(start, end - start);
    start = end + 1;
    if (name.empty()) throw InputError(fmt::format("--algorithm '{}': empty name in the list", list));
    if (name == "mpi" || runtime::is_nccl_baseline(name)) {  // stock baselines: nullptr, named by the bench
      if (runtime::is_nccl_baseline(name) && backend != "nccl")
        throw InputError(fmt::format("--algorithm {}: an NCCL baseline; it runs with --backend nccl", name));
      out.push_back({nullptr, name});
      continue;
    }
    if (name == "all") {
      for (const algo::Algorithm* alg : algo::select_algorithms("all", c)) out.push_back({alg, alg->name});
      out.push_back({nullptr, "mpi"});
      continue;
    }
    const algo::Algorithm* found = nullptr;
    for (const algo::Algorithm& alg : algo::registry())
      if (alg.name == name && alg.collective == c) found = &alg;
    if (!found) {
      for (const algo::Algorithm& alg : algo::registry())
        if (alg.name == name)
          throw InputError(fmt::format("--algorithm {} is an algorithm of {}; --collective {} expects {}", name,
                                       algo::to_string(alg.collective), algo::to_string(c), algorithm_names(c)));
      throw InputError(fmt::format("--algorithm: unknown {} algorithm '{}': expected {}", algo::to_string(c), name,
                                   algorithm_names(c)));
    }
    out.push_back({found, name});
  }
  return out;
}

// A name with {algorithm} replaced by the algorithm's ('/' written '_').
std::string per_algorithm(std::string pattern, std::string name) {
  std::replace(name.begin(), name.end(), '/', '_');
  const std::string key = "{algorithm}";
  for (std::size_t at = pattern.find(key); at != std::string::npos; at = pattern.find(key))
    pattern.replace(at, key.size(), name);
  return pattern;
}

bool is_pattern(const std::string& name) {
  return name.find("{algorithm}") != std::string::npos;
}

// The device lines of the job: one per rank, as nccl-tests prints them. Rank 0 does not gather
// the others' processes, so pid and PCI address are placeholders (0); the host is rank 0's
// machine on one node, else nN (node N, ranks numbered node by node).
std::vector<nccl_tests::Device> job_devices(const runtime::BenchStart& s, const std::string& backend) {
  std::vector<nccl_tests::Device> out;
  const int per_node = s.ranks_per_node > 0 ? s.ranks_per_node : s.ranks;
  for (int r = 0; r < s.ranks; ++r)
    out.push_back({.rank = r,
                   .pid = r == 0 ? static_cast<long>(::getpid()) : 0,
                   .host = s.nodes == 1 ? s.base.machine : fmt::format("n{}", r / per_node),
                   .device = r % per_node,
                   .name = backend == "nccl" ? std::string("GPU (backend nccl)")
                                             : fmt::format("CPU rank (backend {})", backend)});
  return out;
}

nccl_tests::Placement placement_of(const records::Record& p) {
  return {.time_us = p.time_us,
          .algbw = p.algbw_gbps,
          .busbw = p.busbw_gbps,
          .wrong = p.wrong ? std::optional<std::int64_t>(static_cast<std::int64_t>(*p.wrong)) : std::nullopt};
}

// Rank 0's output: nccl-tests' table, or one JSONL record per size and placement.
class Printer final : public runtime::BenchReport {
 public:
  Printer(const BenchCommand& c, std::ostream& fallback) : c_(c), fallback_(fallback) {}

  void start(const runtime::BenchStart& s) override {
    collective_ = s.collective;
    devices_ = job_devices(s, std::string(runtime::to_string(c_.options.backend)));
    start_time_ = nccl_tests::now_string();
    if (c_.nccl_tests) {
      // nccl-tests' run header and device lines, then the bench's own notes as comments.
      header_ = nccl_tests::run_header(*c_.nccl_tests, c_.run_header);
      for (const nccl_tests::Device& d : devices_) header_ += nccl_tests::device_line(*c_.nccl_tests, d);
      header_ += fmt::format(
          "# topocoll-bench: {}, backend {}, {} ranks on {} node{}, host {}; {}\n", algo::to_string(s.collective),
          s.base.engine, s.ranks, s.nodes, s.nodes == 1 ? "" : "s", s.base.machine,
          c_.options.average >= 0 ? "time = each rank's mean over iterations, combined over ranks as -a says"
                                  : "time = median over iterations of the max over ranks");
      if (!s.transport_note.empty()) header_ += "# " + s.transport_note + "\n";
      if (!is_pattern(c_.output)) {
        sink_.emplace(c_.output, fallback_, "-O");
        sink_->stream() << header_;
      }
      return;
    }
    sink_.emplace(c_.output, fallback_, "-O");
    if (c_.jsonl) return;
    std::ostream& out = sink_->stream();
    out << fmt::format("# topocoll-bench: {} ({}), backend {}, {} ranks on {} node{} ({} per node), host {}\n",
                       algo::to_string(s.collective), algo::nccl_tests_name(s.collective), s.base.engine, s.ranks,
                       s.nodes, s.nodes == 1 ? "" : "s", s.ranks_per_node, s.base.machine);
    out << fmt::format("# topology: {}\n", s.topology);
    out << fmt::format("# iters {} warmup {} check {}; time = median over iterations of the max over ranks\n",
                       c_.options.iters, c_.options.warmup, c_.options.check);
    out << fmt::format("# busbw = algbw * {} = algbw * {:.4f} (nccl-tests' {} factor)\n", factor_formula(s.collective),
                       s.busbw_factor, algo::to_string(s.collective));
    if (!s.transport_note.empty()) out << "# " << s.transport_note << "\n";
    out << fmt::format("# {} ranks on this node, {} cores: {}\n", s.local_ranks, s.cores,
                       s.oversubscribed ? "oversubscribed, a stalled rank yields at once"
                                        : fmt::format("a stalled rank polls {} us before it yields", s.spin_us));
    out << "# MPI (the mpi algorithm, and the bootstrap): PML " << s.mpi_pml << "\n";
  }

  void device(const std::string& description) override {
    if (c_.nccl_tests) {
      header_ += "# " + description + "\n";
      if (sink_) sink_->stream() << "# " << description << "\n";
    } else if (!c_.jsonl) {
      sink_->stream() << "# " << description << "\n";
    }
  }

  // What a block runs, one line.
  std::string block_description(const BenchEntry& e) const {
    const algo::Algorithm* alg = e.alg;
    const std::string& name = e.name;
    return e.file ? fmt::format("{} (channels and slices as the file gives them)", alg->description)
           : alg  ? fmt::format("{} (channels {}, slice {} B)", alg->description, c_.options.channels,
                                c_.options.slice_bytes)
           : runtime::is_nccl_baseline(name)
               ? fmt::format("{} on GPU buffers{}", nccl_call(collective_),
                             name == "nccl"        ? ""
                             : name == "nccl-ring" ? ", NCCL_ALGO=Ring"
                                                   : ", NCCL_ALGO=Tree")
               : fmt::format("{} of the MPI library, same buffers", runtime::mpi_baseline_call(collective_));
  }

  void block_start(const BenchEntry& e) override {
    rows_.clear();
    if (c_.nccl_tests) {
      if (is_pattern(c_.output)) {
        table_file_.emplace(per_algorithm(c_.output, e.name), fallback_, "-O");
        table_file_->stream() << header_;
      }
      table() << fmt::format("# topocoll algorithm: {} ({})\n", e.name, block_description(e))
              << nccl_tests::column_header(*c_.nccl_tests);
      return;
    }
    if (c_.jsonl) return;
    sink_->stream() << fmt::format("#\n# {}: {}\n", e.name, block_description(e));
    sink_->stream()
        << "#                                                              out-of-place                       "
           "in-place          \n"
           "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw  "
           " busbw #wrong\n"
           "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
           "(GB/s)       \n";
  }

  void note(const BenchEntry&, const std::string& line) override {
    if (c_.nccl_tests)
      table() << "# " << line << "\n";
    else if (!c_.jsonl)
      sink_->stream() << "# " << line << "\n";
  }

  void unsupported(const BenchEntry& e, std::uint64_t bytes, const std::string& reason) override {
    if (c_.nccl_tests)
      table() << (e.file ? fmt::format("# {} B {}\n", bytes, reason)
                         : fmt::format("# {} B not supported: {}\n", bytes, reason));
    else if (!c_.jsonl)
      sink_->stream() << (e.file ? fmt::format(" {:>12} {}\n", bytes, reason)
                                 : fmt::format(" {:>12} not supported: {}\n", bytes, reason));
  }

  void row(const BenchEntry& e, const runtime::BenchRow& r) override {
    const records::Record& p0 = r.points[0];
    remember(e, r);
    rows_.push_back({.bytes = r.bytes,
                     .count = r.count,
                     .type = p0.dtype,
                     .redop = algo::reduces(collective_) ? p0.op : std::string("none"),
                     .root = r.root,
                     .out_of_place = placement_of(r.points[0]),
                     .in_place = placement_of(r.points[1])});
    if (c_.nccl_tests) {
      table() << nccl_tests::row_line(*c_.nccl_tests, rows_.back()) << std::flush;
      return;
    }
    std::ostream& out = sink_->stream();
    if (c_.jsonl) {
      for (int ip = 0; ip < (r.in_place_run ? 2 : 1); ++ip)
        out << to_json(r.points[ip]).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      return;
    }
    const records::Record& first = r.points[0];
    // nccl-tests prints "none" for the collectives that do not reduce.
    std::string line = fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", r.bytes, r.count, first.dtype,
                                   algo::reduces(collective_) ? first.op : std::string("none"), r.root);
    for (int ip = 0; ip < 2; ++ip) {
      const records::Record& p = r.points[ip];
      if (ip == 1 && !r.in_place_run) {  // not run (an asymmetric alltoallv has no in-place form)
        line += fmt::format("  {:>7}  {:>6}  {:>6}  {:>5}", "N/A", "N/A", "N/A", "N/A");
        continue;
      }
      line += fmt::format("  {}  {:6.2f}  {:6.2f}  {:>5}", time_str(p.time_us), p.algbw_gbps, p.busbw_gbps,
                          p.wrong ? fmt::format("{}", *p.wrong) : std::string("N/A"));
    }
    out << line << "\n";
    if (r.in_place_run) out << in_place_note(e, r);
    out << std::flush;
  }

  void block_end(const BenchEntry& e, std::uint64_t wrong, double avg_busbw) override {
    // nccl-tests' errors[0]: the checks (size and placement) that found a wrong element.
    int failed_checks = 0;
    for (const nccl_tests::Row& r : rows_)
      for (const nccl_tests::Placement* p : {&r.out_of_place, &r.in_place}) failed_checks += p->wrong && *p->wrong > 0;
    const nccl_tests::Footer f{
        .program = c_.run_header.program, .failed_checks = failed_checks, .avg_busbw = avg_busbw, .min_bw = c_.min_bw};
    failed_ = failed_ || nccl_tests::footer_failed(f);
    if (!c_.json.empty()) write_json(e, f);
    if (c_.nccl_tests) {
      table() << nccl_tests::footer(*c_.nccl_tests, f);
      if (table_file_) table_file_->close();
      table_file_.reset();
      return;
    }
    if (c_.jsonl) return;
    sink_->stream() << fmt::format("# Out of bounds values : {} {}\n", wrong, wrong ? "FAILED" : "OK");
    sink_->stream() << fmt::format("# Avg bus bandwidth    : {:g} \n", avg_busbw);
  }

  void overlap(const BenchEntry& e, std::uint64_t bytes, const runtime::OverlapTimes& t) override {
    overlaps_.push_back(fmt::format("# {:>20} {:>12} {:>14.1f} {:>12.1f} {:>14.1f} {:>10.3f}", e.name, bytes,
                                    t.collective_us, t.compute_us, t.overlapped_us, t.efficiency()));
  }

  void finish() override {
    if (c_.jsonl || c_.nccl_tests) return;
    if (!overlaps_.empty()) {
      std::ostream& out = sink_->stream();
      out << fmt::format(
          "#\n# Overlap (--overlap): out of place, the collective started, then a compute loop sized to the "
          "collective's time on each rank, with a test() after each of its {} slices, then completed. Times: "
          "median over iterations of the max over ranks; efficiency = (compute + collective - overlapped) / "
          "min(compute, collective): 1 all hidden, 0 none\n",
          runtime::kOverlapSlices);
      out << fmt::format("# {:>20} {:>12} {:>14} {:>12} {:>14} {:>10}\n", "algorithm", "size (B)", "collective(us)",
                         "compute(us)", "overlapped(us)", "efficiency");
      for (const std::string& line : overlaps_) out << line << "\n";
    }
    sink_->stream() << "#\n" << summary();
  }

  // A table below NCCL_TESTS_MIN_BW or with a failed check (--format nccl-tests, -J).
  bool failed() const { return failed_; }

  // After the run's closing barrier: flushes -O and reports a failed write.
  void close() {
    if (sink_) sink_->close();
  }

 private:
  std::ostream& table() { return table_file_ ? table_file_->stream() : sink_->stream(); }
  std::vector<std::string> overlaps_;  // --overlap: one line per (algorithm, size), printed at the end

  // In place and out of place more than 10 % apart: one line saying so and whether the spread of
  // the iterations covers it (the quartiles of the per-iteration maximum over ranks overlap).
  std::string in_place_note(const BenchEntry& e, const runtime::BenchRow& r) const {
    const double out_us = r.points[0].time_us, in_us = r.points[1].time_us;
    if (out_us <= 0 || in_us <= 0 || std::abs(in_us / out_us - 1.0) <= kInPlaceTolerance) return {};
    const double(&q)[2][2] = r.quartiles_us;
    const bool overlap = q[0][0] <= q[1][1] && q[1][0] <= q[0][1];
    std::string why = c_.options.iters < kSpreadIters
                          ? fmt::format("{} iteration{}: too few to tell a difference from noise", c_.options.iters,
                                        c_.options.iters == 1 ? "" : "s")
                      : overlap ? std::string("within the iterations' spread, noise of this machine")
                                : std::string("outside the iterations' spread");
    if (!e.alg && e.name == "mpi" && collective_ == algo::Collective::ReduceScatter)
      why +=
          "; in place MPI_Ireduce_scatter_block leaves the result at the buffer's start, and the move to the "
          "rank's block is timed";
    return fmt::format(
        "#   {} B: in place {:.2f}x the out-of-place time ({:.2f} vs {:.2f} us): {} (25-75 %: out "
        "of place {:.2f}-{:.2f} us, in place {:.2f}-{:.2f} us)\n",
        r.bytes, in_us / out_us, in_us, out_us, why, q[0][0], q[0][1], q[1][0], q[1][1]);
  }

  // The summary against mpi: every row's busbw per (size, block), the best over -N's cycles.
  void remember(const BenchEntry& e, const runtime::BenchRow& r) {
    SummaryPoint& s = summary_[r.bytes][e.name];
    s.is_mpi = !e.alg && e.name == "mpi";
    s.is_ours = e.alg != nullptr;
    repeated_ = repeated_ || s.busbw[0] >= 0;
    for (int ip = 0; ip < 2; ++ip)
      if (ip == 0 || r.in_place_run) s.busbw[ip] = std::max(s.busbw[ip], r.points[ip].busbw_gbps);
  }

  // Per size, the best topocoll algorithm's busbw against mpi's, out of place and in place, as
  // comment lines (readers of the table take no summary line for one of its rows); only when mpi
  // and an algorithm of topocoll ran.
  std::string summary() const {
    bool mpi = false, ours = false;
    for (const auto& [bytes, blocks] : summary_)
      for (const auto& [name, s] : blocks) {
        mpi = mpi || s.is_mpi;
        ours = ours || s.is_ours;
      }
    if (!mpi || !ours) return {};
    std::string out = fmt::format(
        "# summary against mpi ({}): per size the topocoll algorithm with the highest busbw (GB/s), its busbw and "
        "mpi's; ratio = topocoll / mpi{}\n",
        runtime::mpi_baseline_call(collective_), repeated_ ? "; -N cycles: the best of each" : "");
    out += fmt::format("# {:>11}  {:>18} {:>8} {:>8} {:>6}  {:>18} {:>8} {:>8} {:>6}\n", "", "out-of-place", "", "", "",
                       "in-place", "", "", "");
    out += fmt::format("# {:>11}  {:>18} {:>8} {:>8} {:>6}  {:>18} {:>8} {:>8} {:>6}\n", "size (B)", "best topocoll",
                       "busbw", "mpi", "ratio", "best topocoll", "busbw", "mpi", "ratio");
    for (const auto& [bytes, blocks] : summary_) {
      std::string line = fmt::format("# {:>11}", bytes);
      for (int ip = 0; ip < 2; ++ip) {
        const std::string* best = nullptr;
        double best_bw = -1, mpi_bw = -1;
        for (const auto& [name, s] : blocks) {
          if (s.is_mpi) mpi_bw = s.busbw[ip];
          if (s.is_ours && s.busbw[ip] > best_bw) {
            best = &name;
            best_bw = s.busbw[ip];
          }
        }
        const auto bw = [](double v) { return v < 0 ? std::string("-") : fmt::format("{:.3g}", v); };
        const std::string ratio = best_bw >= 0 && mpi_bw > 0 ? fmt::format("{:.2f}", best_bw / mpi_bw) : "-";
        line +=
            fmt::format("  {:>18} {:>8} {:>8} {:>6}", best ? *best : std::string("-"), bw(best_bw), bw(mpi_bw), ratio);
      }
      out += line + "\n";
    }
    return out + "#\n";
  }

  // More apart than this, a row's in-place and out-of-place times get a line (issue 19's 10 %).
  static constexpr double kInPlaceTolerance = 0.10;
  // Fewer timed iterations than this have no quartiles worth comparing.
  static constexpr int kSpreadIters = 4;
  struct SummaryPoint {
    bool is_mpi = false, is_ours = false;
    double busbw[2] = {-1, -1};  // -1: not run
  };
  std::map<std::uint64_t, std::map<std::string, SummaryPoint>> summary_;
  bool repeated_ = false;  // a size met twice in a block (-N)

  // -J: nccl-tests' JSON document of the block (common/nccl_tests_table.hpp).
  void write_json(const BenchEntry& e, const nccl_tests::Footer& f) {
    nccl_tests::JsonRun run{.start_time = start_time_,
                            .end_time = nccl_tests::now_string(),
                            .args = c_.argv,
                            .env = {},
                            .nccl_version = 0,
                            .header = c_.run_header,
                            .devices = devices_,
                            .experiment_name = e.name};
    // nccl-tests writes the whole environment; here the variables that change a run only.
    for (char** v = environ; v && *v; ++v) {
      const std::string kv = *v;
      if (kv.rfind("NCCL_", 0) == 0 || kv.rfind("TOPOCOLL_", 0) == 0 || kv.rfind("UCX_", 0) == 0) run.env.push_back(kv);
    }
    const std::string path = is_pattern(c_.json) ? per_algorithm(c_.json, e.name) : c_.json;
    std::ofstream file(path);
    file << nccl_tests::json_document(run, rows_, f).dump() << "\n";
    file.close();
    if (!file) throw InputError(fmt::format("-J {}: cannot write the file", path));
  }

  const BenchCommand& c_;
  std::ostream& fallback_;
  std::optional<cli::Output> sink_;        // rank 0, from start()
  std::optional<cli::Output> table_file_;  // --format nccl-tests with -O {algorithm}: the block's file
  algo::Collective collective_ = algo::Collective::AllReduce;
  std::string header_, start_time_;
  std::vector<nccl_tests::Device> devices_;
  std::vector<nccl_tests::Row> rows_;  // the block's, for -J and the footer
  bool failed_ = false;
};

}  // namespace

BenchCommand parse_bench_flags(const BenchFlags& a) {
  const bool ucx = runtime::bench_backend_built(BenchBackend::Ucx);
  const bool nccl = runtime::bench_backend_built(BenchBackend::Nccl);
  const std::string backends = std::string(ucx ? "mpi, shm, ucx" : "mpi, shm") + (nccl ? " or nccl" : "");
  if (a.backend == "nccl" && !nccl)
    throw InputError(
        fmt::format("--backend nccl: this topocoll-bench was built without CUDA + NCCL: expected {}", backends));
  if (a.backend == "ucx" && !ucx)
    throw InputError(
        "--backend ucx: this topocoll-bench was built without UCX (pkg-config ucx not found): expected mpi or shm");
  if (a.backend != "mpi" && a.backend != "shm" && a.backend != "ucx" && a.backend != "nccl")
    throw InputError(fmt::format("--backend {}: expected {}", a.backend, backends));
  if (a.format != "table" && a.format != "jsonl" && a.format != "nccl-tests")
    throw InputError(fmt::format("--format {}: expected table, jsonl or nccl-tests", a.format));
  // nccl-tests' flags without a meaning here are refused, each with the reason.
  if (a.ngpus != 1)
    throw InputError(fmt::format(
        "-g {}: expected 1: topocoll-bench runs one rank per process and GPU; start more ranks with mpirun -np",
        a.ngpus));
  if (a.nthreads != 1)
    throw InputError(fmt::format(
        "-t {}: expected 1: topocoll-bench runs one thread per rank; start more ranks with mpirun -np", a.nthreads));
  if (a.blocking != 1)
    throw InputError(fmt::format(
        "-z {}: expected 1: every timed call here waits for its completion and a barrier (nccl-tests' -z 1); "
        "calls back to back are not measured",
        a.blocking));
  if (a.average < -1 || a.average > 3)
    throw InputError(fmt::format(
        "-a {}: expected nccl-tests' average mode 0 (rank 0), 1 (average), 2 (minimum) or 3 (maximum) over ranks; "
        "the algorithms are --algorithm",
        a.average));
  if (a.run_cycles < 1)
    throw InputError(
        fmt::format("-N {}: expected 1 or more cycles (nccl-tests' 0 runs forever; a run here ends)", a.run_cycles));
  if (!a.stepbytes.empty() && a.factor_given)
    throw InputError(fmt::format("-i {} with -f {}: expected one of them (increments in bytes, or a factor)",
                                 a.stepbytes, a.factor));
  if (a.iters < 1) throw InputError(fmt::format("-n {}: expected at least 1 iteration", a.iters));
  if (a.warmup < 0) throw InputError(fmt::format("-w {}: expected 0 or more warmup iterations", a.warmup));
  if (a.channels < 1 || a.channels > 64) throw InputError(fmt::format("--channels {}: expected 1 to 64", a.channels));
  const std::chrono::milliseconds timeout = cli::timeout_ms(a.timeout_s, "--timeout");
  const std::uint64_t slice = parse_size(a.slice, "--slice");
  if (slice == 0) throw InputError("--slice 0: expected at least 1 byte");
  const std::uint64_t ucx_bulk = parse_size(a.ucx_bulk, "--ucx-bulk");
  if (a.shm_copy != "push" && a.shm_copy != "fused" && a.shm_copy != "map" && a.shm_copy != "cma")
    throw InputError(fmt::format(
        "--shm-copy {}: expected push (fused, and reduced results written straight into the receiver's buffer), "
        "fused (buffers in shared memory, receive-reduces read the peer's in place), map "
        "(buffers in shared memory, receive-reduces through staging) or cma (private buffers, process_vm_readv)",
        a.shm_copy));
  if (a.rounds && a.backend != "mpi")
    throw InputError(fmt::format(
        "--rounds with --backend {}: expected --backend mpi (--backend nccl always runs schedules in rounds)",
        a.backend));
  if (a.overlap && (a.rounds || a.backend == "nccl"))
    throw InputError(
        fmt::format("--overlap with {}: expected --backend mpi, ucx or shm without --rounds (the overlap "
                    "benchmark drives runtime::Plan::start / test)",
                    a.rounds ? "--rounds" : "--backend nccl"));
  if (a.overlap && a.format != "table")
    throw InputError(
        fmt::format("--overlap with --format {}: expected --format table (the overlap figures are a "
                    "table of their own, not records)",
                    a.format));
  BenchCommand c;
  // Schedule files: proven in place and out of place (the bench runs both) unless --no-verify.
  auto files = std::make_shared<algo::ScheduleFileSet>(
      algo::load_schedule_files(a.schedules, {.verify = !a.no_verify, .in_place = true}));
  c.files = files;
  const algo::DataType dtype =
      a.dtype_given || files->files.empty() ? algo::parse_dtype(a.dtype) : files->files.front()->dtype;
  const algo::ReduceOp op = a.op_given || files->files.empty() ? algo::parse_op(a.op) : files->files.front()->op;
  // The collective and root: the flags, else the first schedule file's.
  const algo::Collective collective = a.collective_given || files->files.empty() ? algo::parse_collective(a.collective)
                                                                                 : files->files.front()->collective;
  const int root = a.root_given || files->files.empty() ? a.root : files->files.front()->root;
  if (root < 0) throw InputError(fmt::format("--root {}: expected a rank, 0 or more", root));
  if (root != 0 && !algo::rooted(collective))
    throw InputError(
        fmt::format("--root {} with --collective {}: expected broadcast or reduce (the rooted collectives)", root,
                    algo::to_string(collective)));
  for (const auto& f : files->files) {
    if (f->collective != collective)
      throw InputError(fmt::format("{}: written for {}; this run is {} (--collective)", f->path,
                                   algo::to_string(f->collective), algo::to_string(collective)));
    if (algo::rooted(collective) && f->root != root)
      throw InputError(fmt::format("{}: written for root {}; this run's is {} (--root)", f->path, f->root, root));
  }

  runtime::BenchOptions& o = c.options;
  o.backend = a.backend == "ucx"    ? BenchBackend::Ucx
              : a.backend == "nccl" ? BenchBackend::Nccl
              : a.backend == "shm"  ? BenchBackend::Shm
                                    : BenchBackend::Mpi;
  // An all-to-allv runs one call, its size matrix's (ranks checked against the job by run_bench).
  o.alltoallv_sizes = algo::run_alltoallv_sizes(collective, a.sizes_file, files->files, 0);
  if (o.alltoallv_sizes) {
    if (a.sizes_given)
      throw InputError(fmt::format("-b/-e: an alltoallv runs at the sizes of its matrix ({}), not over a sweep",
                                   o.alltoallv_sizes->describe()));
    o.sizes = {algo::nccl_tests_bytes(algo::alltoallv_args(o.alltoallv_sizes, dtype))};
  } else {
    const std::vector<std::uint64_t> sweep =
        a.stepbytes.empty() ? cli::size_sweep(a.min_bytes, a.max_bytes, a.factor, algo::size_of(dtype))
                            : cli::linear_sweep(a.min_bytes, a.max_bytes, a.stepbytes, algo::size_of(dtype));
    const std::vector<std::uint64_t> one_cycle = algo::sweep_with_files(*files, sweep, a.sizes_given, dtype);
    if (one_cycle.size() * static_cast<std::size_t>(a.run_cycles) > cli::kMaxSweepPoints)
      throw InputError(fmt::format("-N {}: {} cycles of {} sizes are more than {} points", a.run_cycles, a.run_cycles,
                                   one_cycle.size(), cli::kMaxSweepPoints));
    for (int cycle = 0; cycle < a.run_cycles; ++cycle)
      o.sizes.insert(o.sizes.end(), one_cycle.begin(), one_cycle.end());
  }
  o.collective = collective;
  o.root = root;
  // Schedule files without --algorithm: the files and the mpi baseline.
  o.entries = parse_algorithms(!files->files.empty() && !a.algorithm_given ? std::string("mpi")
                               : a.algorithm.empty()                       ? default_algorithms(collective)
                                                                           : a.algorithm,
                               collective, a.backend);
  for (std::size_t i = 0; i < files->files.size(); ++i)
    o.entries.push_back({&files->algorithms[i], files->algorithms[i].name, files->files[i].get()});
  o.dtype = dtype;
  o.op = op;
  o.iters = a.iters;
  o.warmup = a.warmup;
  o.check = a.check;
  o.average = a.average;
  o.channels = a.channels;
  o.slice_bytes = slice;
  o.rounds = a.rounds;
  o.overlap = a.overlap;
  o.ucx_bulk_bytes = ucx_bulk;
  o.shm_copy = a.shm_copy == "cma"     ? runtime::ShmCopy::Cma
               : a.shm_copy == "map"   ? runtime::ShmCopy::Map
               : a.shm_copy == "fused" ? runtime::ShmCopy::Fused
                                       : runtime::ShmCopy::Push;
  o.progress_timeout = timeout;
  o.topology = runtime::BenchTopology{a.topology, a.nodes > 0 ? std::optional<int>(a.nodes) : std::nullopt, a.fabric};
  c.jsonl = a.format == "jsonl";
  c.output = a.output;
  if (a.format == "nccl-tests") c.nccl_tests = nccl_tests::parse_layout(a.nccl_tests_layout, "--nccl-tests-layout");
  if (is_pattern(a.output) && a.format != "nccl-tests")
    throw InputError(
        fmt::format("-O {}: {{algorithm}} names one file per algorithm with --format nccl-tests only", a.output));
  if (!a.json.empty() && o.entries.size() > 1 && !is_pattern(a.json))
    throw InputError(fmt::format(
        "-J {}: {} algorithms: expected a name holding {{algorithm}} (one nccl-tests JSON document per algorithm)",
        a.json, o.entries.size()));
  c.json = a.json;
  c.argv = a.argv;
  c.min_bw = nccl_tests::min_bw_from(std::getenv("NCCL_TESTS_MIN_BW"));
  const double factor = a.stepbytes.empty() ? std::stod(a.factor) : 0.0;
  c.run_header = {.program = std::string(algo::nccl_tests_name(collective)),
                  .min_bytes = parse_size(a.min_bytes, "-b"),
                  .max_bytes = parse_size(a.max_bytes, "-e"),
                  .step = a.stepbytes.empty() ? static_cast<std::uint64_t>(factor) : parse_size(a.stepbytes, "-i"),
                  .step_is_factor = a.stepbytes.empty(),
                  .warmup = a.warmup,
                  .iters = a.iters,
                  .check = a.check,
                  .blocking = 1};
  return c;
}

int bench_command(const BenchCommand& c, std::ostream& out) {
  Printer printer(c, out);
  const std::uint64_t wrong = runtime::run_bench(c.options, printer);
  printer.close();
  return wrong || printer.failed() ? 1 : 0;
}

}  // namespace topocoll::tools
