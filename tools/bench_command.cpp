#include "tools/bench_command.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
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

// Rank 0's output: nccl-tests' table, or one JSONL record per size and placement.
class Printer final : public runtime::BenchReport {
 public:
  Printer(const BenchCommand& c, std::ostream& fallback) : c_(c), fallback_(fallback) {}

  void start(const runtime::BenchStart& s) override {
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
    collective_ = s.collective;
  }

  void device(const std::string& description) override {
    if (!c_.jsonl) sink_->stream() << "# " << description << "\n";
  }

  void block_start(const BenchEntry& e) override {
    if (c_.jsonl) return;
    const algo::Algorithm* alg = e.alg;
    const std::string& name = e.name;
    sink_->stream() << fmt::format(
        "#\n# {}: {}\n", name,
        e.file ? fmt::format("{} (channels and slices as the file gives them)", alg->description)
        : alg
            ? fmt::format("{} (channels {}, slice {} B)", alg->description, c_.options.channels, c_.options.slice_bytes)
        : runtime::is_nccl_baseline(name)
            ? fmt::format("{} on GPU buffers{}", nccl_call(collective_),
                          name == "nccl"        ? ""
                          : name == "nccl-ring" ? ", NCCL_ALGO=Ring"
                                                : ", NCCL_ALGO=Tree")
            : fmt::format("{} of the MPI library, same buffers", runtime::mpi_baseline_call(collective_)));
    sink_->stream()
        << "#                                                              out-of-place                       "
           "in-place          \n"
           "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw  "
           " busbw #wrong\n"
           "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
           "(GB/s)       \n";
  }

  void unsupported(const BenchEntry& e, std::uint64_t bytes, const std::string& reason) override {
    if (!c_.jsonl)
      sink_->stream() << (e.file ? fmt::format(" {:>12} {}\n", bytes, reason)
                                 : fmt::format(" {:>12} not supported: {}\n", bytes, reason));
  }

  void row(const BenchEntry&, const runtime::BenchRow& r) override {
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
    out << line << "\n" << std::flush;
  }

  void block_end(const BenchEntry&, std::uint64_t wrong, double avg_busbw) override {
    if (c_.jsonl) return;
    sink_->stream() << fmt::format("# Out of bounds values : {} {}\n", wrong, wrong ? "FAILED" : "OK");
    sink_->stream() << fmt::format("# Avg bus bandwidth    : {:g} \n", avg_busbw);
  }

  void finish() override {
    if (!c_.jsonl) sink_->stream() << "#\n";
  }

  // After the run's closing barrier: flushes -O and reports a failed write.
  void close() {
    if (sink_) sink_->close();
  }

 private:
  const BenchCommand& c_;
  std::ostream& fallback_;
  std::optional<cli::Output> sink_;  // rank 0, from start()
  algo::Collective collective_ = algo::Collective::AllReduce;
};

}  // namespace

BenchCommand parse_bench_flags(const BenchFlags& a) {
  const bool ucx = runtime::bench_backend_built(BenchBackend::Ucx);
  const bool nccl = runtime::bench_backend_built(BenchBackend::Nccl);
  const std::string backends = std::string(ucx ? "mpi, ucx" : "mpi") + (nccl ? " or nccl" : "");
  if (a.backend == "nccl" && !nccl)
    throw InputError(
        fmt::format("--backend nccl: this topocoll-bench was built without CUDA + NCCL: expected {}", backends));
  if (a.backend == "ucx" && !ucx)
    throw InputError(
        "--backend ucx: this topocoll-bench was built without UCX (pkg-config ucx not found): expected mpi");
  if (a.backend != "mpi" && a.backend != "ucx" && a.backend != "nccl")
    throw InputError(fmt::format("--backend {}: expected {}", a.backend, backends));
  if (a.format != "table" && a.format != "jsonl")
    throw InputError(fmt::format("--format {}: expected table or jsonl", a.format));
  if (a.iters < 1) throw InputError(fmt::format("-n {}: expected at least 1 iteration", a.iters));
  if (a.warmup < 0) throw InputError(fmt::format("-w {}: expected 0 or more warmup iterations", a.warmup));
  if (a.channels < 1 || a.channels > 64) throw InputError(fmt::format("--channels {}: expected 1 to 64", a.channels));
  const std::chrono::milliseconds timeout = cli::timeout_ms(a.timeout_s, "--timeout");
  const std::uint64_t slice = parse_size(a.slice, "--slice");
  if (slice == 0) throw InputError("--slice 0: expected at least 1 byte");
  const std::uint64_t ucx_bulk = parse_size(a.ucx_bulk, "--ucx-bulk");
  if (a.rounds && a.backend != "mpi")
    throw InputError(fmt::format(
        "--rounds with --backend {}: expected --backend mpi (--backend nccl always runs schedules in rounds)",
        a.backend));
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
  o.backend = a.backend == "ucx" ? BenchBackend::Ucx : a.backend == "nccl" ? BenchBackend::Nccl : BenchBackend::Mpi;
  // An all-to-allv runs one call, its size matrix's (ranks checked against the job by run_bench).
  o.alltoallv_sizes = algo::run_alltoallv_sizes(collective, a.sizes_file, files->files, 0);
  if (o.alltoallv_sizes) {
    if (a.sizes_given)
      throw InputError(fmt::format("-b/-e: an alltoallv runs at the sizes of its matrix ({}), not over a sweep",
                                   o.alltoallv_sizes->describe()));
    o.sizes = {algo::nccl_tests_bytes(algo::alltoallv_args(o.alltoallv_sizes, dtype))};
  } else {
    o.sizes = algo::sweep_with_files(*files, cli::size_sweep(a.min_bytes, a.max_bytes, a.factor, algo::size_of(dtype)),
                                     a.sizes_given, dtype);
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
  o.channels = a.channels;
  o.slice_bytes = slice;
  o.rounds = a.rounds;
  o.ucx_bulk_bytes = ucx_bulk;
  o.progress_timeout = timeout;
  o.topology = runtime::BenchTopology{a.topology, a.nodes > 0 ? std::optional<int>(a.nodes) : std::nullopt, a.fabric};
  c.jsonl = a.format == "jsonl";
  c.output = a.output;
  return c;
}

int bench_command(const BenchCommand& c, std::ostream& out) {
  Printer printer(c, out);
  const std::uint64_t wrong = runtime::run_bench(c.options, printer);
  printer.close();
  return wrong ? 1 : 0;
}

}  // namespace topocoll::tools
