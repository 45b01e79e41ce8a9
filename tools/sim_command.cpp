#include "tools/sim_command.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "algorithms/registry.hpp"
#include "algorithms/schedule_file.hpp"
#include "common/build_info.hpp"
#include "common/cli_io.hpp"
#include "common/errors.hpp"
#include "common/nccl_tests_table.hpp"
#include "common/ordered_pool.hpp"
#include "common/progress.hpp"
#include "common/records.hpp"
#include "simulator/engine.hpp"
#include "simulator/nccl_model.hpp"
#include "simulator/sweep.hpp"
#include "simulator/trace.hpp"
#include "tools/algo_commands.hpp"
#include "topologies/load.hpp"

namespace topocoll::tools {

namespace {

std::vector<std::uint64_t> size_sweep(const SimArgs& a, std::size_t elem) {
  return cli::size_sweep(a.min_bytes, a.max_bytes, a.factor, elem);
}

// The busbw line of the table header: nccl-tests' factor of the collective, by formula. The
// allreduce line is the one the golden outputs hold.
std::string busbw_line(algo::Collective c, double factor) {
  if (c == algo::Collective::AllReduce)
    return fmt::format("# busbw = algbw * 2(p-1)/p = algbw * {:.4f} (nccl-tests' allreduce factor)\n", factor);
  const bool rooted = c == algo::Collective::Broadcast || c == algo::Collective::Reduce;
  return fmt::format("# busbw = algbw * {} = algbw * {:.4f} (nccl-tests' {} factor)\n", rooted ? "1" : "(p-1)/p",
                     factor, algo::nccl_tests_name(c));
}

// How nccl-tests sizes the collective (algo::nccl_tests_args), for the table header.
std::string sizes_line(algo::Collective c, int root) {
  if (c == algo::Collective::AllToAllV)
    return "# collective alltoallv, one call of the size matrix (--sizes): size = the largest buffer of a rank, "
           "count = 0 (the blocks have the matrix's sizes)\n";
  const bool split =
      c == algo::Collective::AllGather || c == algo::Collective::ReduceScatter || c == algo::Collective::AllToAll;
  const bool rooted = c == algo::Collective::Broadcast || c == algo::Collective::Reduce;
  return fmt::format("# collective {}{}, sizes as nccl-tests' {}: {}\n", algo::to_string(c),
                     rooted ? fmt::format(" (root {})", root) : "", algo::nccl_tests_name(c),
                     split ? "size = the larger buffer of a rank (count x p elements), count = elements per rank "
                             "and peer block (-b / p, rounded down)"
                           : "size = the buffer of a rank, count = its elements");
}

// A simulated point as an nccl-tests row: both placements the simulated time, #wrong N/A.
nccl_tests::Row nccl_tests_row(const records::Record& rec, std::uint64_t bytes, std::uint64_t count, algo::Collective c,
                               int root) {
  const nccl_tests::Placement p{.time_us = rec.time_us, .algbw = rec.algbw_gbps, .busbw = rec.busbw_gbps};
  return {.bytes = bytes,
          .count = count,
          .type = rec.dtype,
          .redop = algo::reduces(c) ? rec.op : std::string("none"),
          .root = root,
          .out_of_place = p,
          .in_place = p};
}

// The device lines of a simulated job: nccl-tests prints one per rank; a simulated rank has no
// process, host or PCI address, so those are placeholders (pid 0, host nN, bus 0) and the name
// says what the rank models.
std::string simulated_devices(nccl_tests::Layout layout, const algo::Layout& l, const std::string& topology) {
  std::string out;
  std::vector<int> local(static_cast<std::size_t>(l.nodes), 0);
  for (int r = 0; r < l.ranks; ++r) {
    const int node = l.node_of[static_cast<std::size_t>(r)];
    out += nccl_tests::device_line(layout, {.rank = r,
                                            .host = fmt::format("n{}", node),
                                            .device = local[static_cast<std::size_t>(node)]++,
                                            .name = fmt::format("simulated GPU of {}", topology)});
  }
  return out;
}

// --format nccl-tests: one nccl-tests table per algorithm (common/nccl_tests_table.hpp), each
// preceded by a "# topocoll algorithm: NAME" line, in one stream; or, when -O holds {algorithm},
// one file per algorithm, each a complete nccl-tests log (run header, devices, table, footer), for
// the parsers that read one table per file (SuperBench's takes the last table of a file).
class NcclTestsTables {
 public:
  NcclTestsTables(nccl_tests::Layout layout, std::string header, const std::string& pattern, std::ostream& stream,
                  std::optional<double> min_bw, std::string program)
      : layout_(layout),
        header_(std::move(header)),
        pattern_(pattern.find("{algorithm}") != std::string::npos ? pattern : ""),
        stream_(stream),
        min_bw_(min_bw),
        program_(std::move(program)) {
    if (pattern_.empty()) stream_ << header_;
  }

  // A pattern's file name for an algorithm: {algorithm} replaced, '/' in the name written '_'.
  static std::string file_name(std::string pattern, std::string name) {
    std::replace(name.begin(), name.end(), '/', '_');
    for (std::size_t at = pattern.find("{algorithm}"); at != std::string::npos; at = pattern.find("{algorithm}"))
      pattern.replace(at, std::string("{algorithm}").size(), name);
    return pattern;
  }

  void begin(const std::string& name, const std::string& description) {
    if (!pattern_.empty()) {
      file_.emplace(file_name(pattern_, name), stream_, "-O");
      file_->stream() << header_;
    }
    out() << fmt::format("# topocoll algorithm: {} ({})\n", name, description) << nccl_tests::column_header(layout_);
    busbw_sum_ = 0;
    rows_ = 0;
  }
  void note(const std::string& line) { out() << "# " << line << "\n"; }
  void row(const nccl_tests::Row& r) {
    out() << nccl_tests::row_line(layout_, r);
    busbw_sum_ += r.out_of_place.busbw + r.in_place.busbw;
    rows_ += 2;
  }
  void end() {
    const nccl_tests::Footer f{
        .program = program_, .failed_checks = 0, .avg_busbw = rows_ ? busbw_sum_ / rows_ : 0.0, .min_bw = min_bw_};
    failed_ = failed_ || nccl_tests::footer_failed(f);
    out() << nccl_tests::footer(layout_, f);
    if (file_) file_->close();
    file_.reset();
  }
  bool failed() const { return failed_; }

 private:
  std::ostream& out() { return file_ ? file_->stream() : stream_; }

  nccl_tests::Layout layout_;
  std::string header_, pattern_;
  std::ostream& stream_;
  std::optional<double> min_bw_;
  std::string program_;
  std::optional<cli::Output> file_;
  double busbw_sum_ = 0;
  int rows_ = 0;
  bool failed_ = false;
};

}  // namespace

int channels_option(const std::string& value, const sim::NcclGraphEstimate& nccl) {
  if (value == "nccl") return sim::nccl_channels(nccl);
  int n = 0;
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, n);
  if (value.empty() || ec != std::errc() || ptr != end || n < 1 || n > 64)
    throw InputError(
        fmt::format("--channels {}: expected nccl (what stock NCCL runs with here) or 1 to 64", cli::one_line(value)));
  return n;
}

int sim_command(const SimArgs& a, std::ostream& out) {
  if (a.format != "table" && a.format != "csv" && a.format != "jsonl" && a.format != "nccl-tests")
    throw InputError(fmt::format("--format {}: expected table, csv, jsonl or nccl-tests", a.format));
  const bool nccl_tests_format = a.format == "nccl-tests";
  const nccl_tests::Layout nccl_tests_layout = nccl_tests::parse_layout(a.nccl_tests_layout, "--nccl-tests-layout");
  const std::optional<double> min_bw =
      nccl_tests_format ? nccl_tests::min_bw_from(std::getenv("NCCL_TESTS_MIN_BW")) : std::nullopt;
  // Schedule files (algorithms/schedule_file.hpp): each one an algorithm of the run, asked for by
  // name; alone they replace --algorithm's default, and give the dtype, op and (fixed-count
  // files) the sizes the command line leaves out.
  const algo::ScheduleFileSet files = algo::load_schedule_files(a.schedules, {.verify = !a.no_verify});
  const algo::DataType dtype =
      a.dtype_given || files.files.empty() ? algo::parse_dtype(a.dtype) : files.files[0]->dtype;
  const algo::ReduceOp op = a.op_given || files.files.empty() ? algo::parse_op(a.op) : files.files[0]->op;
  const std::size_t elem = algo::size_of(dtype);
  const std::vector<std::uint64_t> sizes = algo::sweep_with_files(files, size_sweep(a, elem), a.sizes_given, dtype);
  // The collective and root: the flags, else the first schedule file's.
  const algo::Collective collective = a.collective_given || files.files.empty()
                                          ? parse_collective_flag(a.collective, "--collective")
                                          : files.files[0]->collective;
  const int root = a.root_given || files.files.empty() ? a.root : files.files[0]->root;
  const std::string algorithm_list = !a.algorithm.empty()                        ? a.algorithm
                                     : collective == algo::Collective::AllReduce ? "ring,dbt,hierarchical"
                                                                                 : "all";
  std::vector<const algo::Algorithm*> algorithms;
  if (files.files.empty() || a.algorithm_given) algorithms = algo::select_algorithms(algorithm_list, collective);
  if (algorithms.empty() && files.files.empty())
    throw InputError(fmt::format("--collective {}: the registry has no {} algorithm yet (topocoll algorithms)",
                                 a.collective, algo::to_string(collective)));
  for (const algo::Algorithm& f : files.algorithms) algorithms.push_back(&f);
  // Named by the user (a list, or a file): unsupported is an error; part of "all": a table line.
  auto file_of = [&](const algo::Algorithm* alg) -> const algo::ScheduleFile* {
    for (std::size_t i = 0; i < files.algorithms.size(); ++i)
      if (&files.algorithms[i] == alg) return files.files[i].get();
    return nullptr;
  };
  auto named = [&](const algo::Algorithm* alg) { return algorithm_list != "all" || file_of(alg) != nullptr; };
  std::unique_ptr<sim::Engine> engine = sim::make_engine(a.engine);
  // The base calibration (hardware); each protocol derives its own (sim::protocol_calibration).
  const sim::Calibration calib = a.calibration.empty() ? sim::base_calibration() : sim::load_calibration(a.calibration);
  algo::Tuning tuning;
  tuning.slice_bytes = parse_size(a.slice, "--slice");
  if (tuning.slice_bytes == 0) throw InputError("--slice 0: expected at least 1 byte");

  topo::TopologyOptions o = topology_options(a.topo);
  o.merge_nvswitch_planes = true;  // the hardware stripes NVLink traffic over the planes
  const topo::Topology t = topo::load_topology(o);
  const algo::Layout layout = algo::layout_of(t);
  if (root < 0 || root >= t.num_ranks())
    throw InputError(
        fmt::format("--root {}: expected a rank of 0..{} (the root of broadcast / reduce)", root, t.num_ranks() - 1));
  // The NCCL model's release and environment: the process environment as NCCL reads it, then
  // each --nccl-env KEY=VALUE.
  sim::NcclModelOptions nccl_options;
  nccl_options.version = sim::parse_nccl_version(a.nccl_version, "--nccl-version");
  nccl_options = sim::nccl_options_from_env(sim::nccl_process_env(), nccl_options);
  for (const std::string& kv : a.nccl_env) sim::set_nccl_env(nccl_options, kv, "--nccl-env");
  std::optional<sim::NcclGraphEstimate> nccl;
  if (!a.no_nccl_model) nccl = sim::estimate_nccl_graph(t, nccl_options);
  const sim::NcclGraphEstimate nccl_estimate = nccl ? *nccl : sim::estimate_nccl_graph(t, nccl_options);
  // All-to-all has no NCCL tuning model (grouped send/recv): no nccl-model rows, a header line
  // says so. Any other collective the release does not model fails here, before any simulation.
  const bool nccl_rows = nccl && collective != algo::Collective::AllToAll && collective != algo::Collective::AllToAllV;
  if (nccl_rows) (void)sim::nccl_tune_model(*nccl, collective, op);
  tuning.channels = channels_option(a.channels, nccl_estimate);
  // --channels nccl: each call on the channels NCCL gives a call of its size and protocol (at
  // most tuning.channels); a number: that many for every call.
  const sim::ChannelRule channel_rule{tuning.channels, a.channels == "nccl"};
  const std::string channels_note = channel_rule.per_call
                                        ? fmt::format("channels per call as NCCL's, at most {}", tuning.channels)
                                        : fmt::format("channels {}", tuning.channels);

  // Protocols: --protocol, else the calibration file's "protocol", else "auto": every protocol
  // NCCL would enable on this topology (LL and Simple always; LL128 by NCCL's own rule, see
  // nccl_model.cpp), each schedule run under each, the fastest reported with its protocol.
  const sim::ProtocolSet protocols = sim::protocol_set(nccl_estimate, calib, a.protocol, "--protocol");
  std::string protocol_note;
  for (sim::Protocol p : protocols.protocols)
    protocol_note += (protocol_note.empty() ? "" : ", ") + std::string(sim::to_string(p));

  // An all-to-allv's size matrix (--sizes, or its schedule file's).
  const std::shared_ptr<const algo::AllToAllVSizes> matrix =
      algo::run_alltoallv_sizes(collective, a.sizes_file, files.files, t.num_ranks());
  // A schedule file for another job is refused before anything is printed.
  for (const auto& f : files.files) {
    if (f->ranks != t.num_ranks())
      throw InputError(fmt::format("{}: written for {} ranks; {} x {} has {} GPUs", f->path, f->ranks, a.topo.topology,
                                   t.nodes(), t.num_ranks()));
    if (f->collective != collective)
      throw InputError(fmt::format("{}: written for {}; this run is {} (--collective)", f->path,
                                   to_string(f->collective), to_string(collective)));
    if (f->root != root && (collective == algo::Collective::Broadcast || collective == algo::Collective::Reduce))
      throw InputError(fmt::format("{}: written for root {}; this run's is {} (--root)", f->path, f->root, root));
  }

  // A {algorithm} pattern (--format nccl-tests) opens its files per algorithm, not here.
  const bool per_algorithm_files = nccl_tests_format && a.output.find("{algorithm}") != std::string::npos;
  Output output(per_algorithm_files ? std::string() : a.output, out, "-O");
  std::ostream* sink = &output.stream();

  records::Record base = sim::simulated_base(t, engine->name(), a.topo.topology, op, tuning.slice_bytes, calib.source);
  base.dtype = std::string(algo::to_string(dtype));
  base.date = records::now_iso8601();
  base.collective = std::string(algo::to_string(collective));
  const double factor = algo::busbw_factor(collective, t.num_ranks());

  if (a.format == "table") {
    *sink << fmt::format(
        "# topocoll sim: {} x {} node{} ({} GPUs){}, engine {}, calibration {}\n", a.topo.topology, t.nodes(),
        t.nodes() == 1 ? "" : "s", t.num_ranks(),
        t.fabric() ? fmt::format(", {} {:g}:1{}{}", topo::to_string(t.fabric()->kind), t.fabric()->oversubscription,
                                 t.fabric()->transport.empty() ? "" : ", transport " + t.fabric()->transport,
                                 t.fabric()->ecmp == topo::EcmpMode::Hash ? "" : ", ECMP ideal")
                   : "",
        engine->name(), calib.source);
    *sink << (protocols.protocols.size() == 1
                  ? fmt::format("# protocol {} (NCCL's, as a derived calibration)\n", protocol_note)
                  : fmt::format("# protocols {}: each point is the fastest of them, named in column proto\n",
                                protocol_note));
    if (collective != algo::Collective::AllReduce) *sink << sizes_line(collective, root);
    *sink << busbw_line(collective, factor);
    if (nccl && !nccl_rows)
      *sink << fmt::format(
          "# nccl-model: none: NCCL's tuner has no model for {} (NCCL runs all-to-all as grouped send/recv); no "
          "nccl-model rows\n",
          algo::to_string(collective));
    if (matrix) *sink << fmt::format("# sizes: {}\n", matrix->describe());
    if (calib.host_call_us > 0)
      *sink << fmt::format(
          "# per-call host floor {:g} us: time = max(floor, simulated device time) (docs/simulator.md)\n",
          calib.host_call_us);
  } else if (a.format == "csv" && !nccl_tests_format) {
    *sink << "engine,algorithm,nodes,ranks,size_bytes,count,dtype,op,channels,time_us,algbw_gbps,busbw_gbps,protocol\n";
  }

  // The sweep as nccl-tests runs it: each size's call (algo::nccl_tests_args), once per distinct
  // nccl-tests size; sizes that leave no element per rank (allgather, reduce-scatter, alltoall
  // below p elements) are named in the table's header.
  std::vector<algo::CollectiveArgs> points;
  std::vector<std::uint64_t> empty_sizes;
  if (matrix) {  // an all-to-allv: one call, the size matrix's
    if (a.sizes_given)
      throw InputError(fmt::format("-b/-e: an alltoallv runs at the sizes of its matrix ({}), not over a sweep",
                                   matrix->describe()));
    points.push_back(algo::collective_call(collective, 0, matrix, dtype, op, t.num_ranks()));
  }
  for (std::uint64_t swept : matrix ? std::vector<std::uint64_t>{} : sizes) {
    const algo::CollectiveArgs args = algo::collective_call(collective, swept, nullptr, dtype, op, t.num_ranks(), root);
    if (args.count == 0)
      empty_sizes.push_back(swept);
    else if (points.empty() || algo::nccl_tests_bytes(points.back()) != algo::nccl_tests_bytes(args))
      points.push_back(args);
  }
  if (points.empty())
    throw InputError(fmt::format("-e {}: {} over {} ranks needs at least {} bytes of {} (one element per rank)",
                                 a.max_bytes, algo::to_string(collective), t.num_ranks(), t.num_ranks() * elem,
                                 algo::to_string(dtype)));
  if (a.format == "table" && !empty_sizes.empty())
    *sink << fmt::format("# sizes {} B skipped: fewer than {} elements, none per rank\n", fmt::join(empty_sizes, ", "),
                         t.num_ranks());

  std::optional<NcclTestsTables> tables;
  if (nccl_tests_format) {
    const double f = std::stod(a.factor);
    const nccl_tests::RunHeader h{.program = std::string(algo::nccl_tests_name(collective)),
                                  .min_bytes = parse_size(a.min_bytes, "-b"),
                                  .max_bytes = parse_size(a.max_bytes, "-e"),
                                  .step = static_cast<std::uint64_t>(f),
                                  .warmup = 0,
                                  .iters = 1,
                                  .check = 0};
    std::string header =
        nccl_tests::run_header(nccl_tests_layout, h) + simulated_devices(nccl_tests_layout, layout, a.topo.topology);
    header += fmt::format(
        "# topocoll sim: {} x {} node{} ({} GPUs), engine {}, calibration {}; simulated times: #wrong N/A, in place "
        "= out of place\n",
        a.topo.topology, t.nodes(), t.nodes() == 1 ? "" : "s", t.num_ranks(), engine->name(), calib.source);
    if (!empty_sizes.empty())
      header += fmt::format("# sizes {} B skipped: fewer than {} elements, none per rank\n",
                            fmt::join(empty_sizes, ", "), t.num_ranks());
    tables.emplace(nccl_tests_layout, std::move(header), a.output, *sink, min_bw, h.program);
  }
  const int row_root = algo::rooted(collective) ? root : -1;
  std::map<std::uint64_t, std::pair<std::string, double>> best;  // size (nccl-tests') -> (algorithm, time)
  std::vector<sim::TraceEvent> trace;
  std::string trace_run;  // the traced run's protocol and channels: "Simple x16"
  std::string trace_algorithm;
  std::uint64_t trace_bytes = 0;
  if (!a.trace.empty()) {
    std::string names;
    for (const algo::Algorithm* alg : algorithms) {
      if (alg->name == a.trace_algorithm || (a.trace_algorithm.empty() && trace_algorithm.empty()))
        trace_algorithm = alg->name;
      names += (names.empty() ? "" : ", ") + alg->name;
    }
    if (trace_algorithm.empty())
      throw InputError(fmt::format("--trace-algorithm {}: not an algorithm of this run; expected one of {}",
                                   a.trace_algorithm, names));
    std::string sizes_run;
    for (const algo::CollectiveArgs& args : points) {
      const std::uint64_t b = algo::nccl_tests_bytes(args);
      sizes_run += (sizes_run.empty() ? "" : ", ") + std::to_string(b);
      if (!a.trace_size.empty() && b == parse_size(a.trace_size, "--trace-size")) trace_bytes = b;
    }
    if (a.trace_size.empty()) trace_bytes = algo::nccl_tests_bytes(points.back());
    if (trace_bytes == 0)
      throw InputError(
          fmt::format("--trace-size {}: not a size of this run; expected one of {} (bytes)", a.trace_size, sizes_run));
  } else if (!a.trace_algorithm.empty() || !a.trace_size.empty() || !a.trace_ranks.empty()) {
    throw InputError(
        "--trace-algorithm, --trace-size and --trace-ranks choose what --trace FILE writes: expected "
        "--trace FILE with them");
  }
  const std::vector<std::pair<int, int>> trace_ranks = a.trace_ranks.empty()
                                                           ? sim::default_trace_ranks(t.num_ranks())
                                                           : sim::parse_rank_ranges(a.trace_ranks, t.num_ranks());
  // The points to simulate, in the order they are printed: each supported (algorithm, size). The
  // trace covers one run: --trace-algorithm (default the first) at --trace-size (default the
  // largest).
  struct Task {
    const algo::Algorithm* alg;
    const algo::CollectiveArgs* args;
    bool trace;
  };
  std::vector<Task> tasks;
  std::vector<algo::Support> support;  // of every (algorithm, size), in the printing order
  bool trace_taken = false;
  for (const algo::Algorithm* alg : algorithms)
    for (const algo::CollectiveArgs& args : points) {
      support.push_back(alg->supports(layout, args, tuning));
      if (!support.back().ok) continue;
      const bool trace = !a.trace.empty() && !trace_taken && alg->name == trace_algorithm &&
                         algo::nccl_tests_bytes(args) == trace_bytes;
      trace_taken = trace_taken || trace;
      tasks.push_back({alg, &args, trace});
    }
  std::size_t next_support = 0;
  // They run ahead on --jobs workers (the analytic engine; default the machine's hardware
  // threads), each with an engine of its own; the loop below takes each result in order, so the
  // output is the same for any --jobs. SimGrid runs one point at a time (its runs fork).
  if (a.jobs < 0) throw InputError(fmt::format("--jobs {}: expected 0 (the machine's threads) or more", a.jobs));
  const int jobs = a.engine != "analytic" ? 1
                   : a.jobs > 0           ? a.jobs
                                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::unique_ptr<sim::Engine>> engines;
  engines.push_back(std::move(engine));
  for (int w = 1; w < jobs; ++w) engines.push_back(sim::make_engine(a.engine));
  const std::function<sim::SimulatedPoint(std::size_t, int)> simulate_task = [&](std::size_t i, int worker) {
    const Task& k = tasks[i];
    const algo::Algorithm* alg = k.alg;
    const algo::CollectiveArgs& args = *k.args;
    sim::SimOptions so;
    so.trace = k.trace;
    so.trace_ranks = trace_ranks;
    so.simgrid_fast_paths = !a.simgrid_plain;
    so.symmetry = !a.no_symmetry;
    // Workers the sweep leaves idle go to its points (a one-point run of a large cluster uses two
    // threads: analytic.cpp, "Threads").
    so.threads = std::max(1, jobs / static_cast<int>(std::max<std::size_t>(tasks.size(), 1)));
    // A schedule file keeps its channels; a generated algorithm gets channel_rule's.
    const sim::ChannelRule rule = file_of(alg) ? sim::ChannelRule{tuning.channels, false} : channel_rule;
    return sim::simulate_point(*engines[static_cast<std::size_t>(worker)], t,
                               sim::schedule_maker(*alg, layout, args, tuning), rule, nccl_estimate, protocols, base,
                               alg->name, algo::nccl_tests_bytes(args), args.count, dtype, so);
  };
  OrderedPool<sim::SimulatedPoint> pool(tasks.size(), jobs, simulate_task);
  std::size_t next_task = 0;
  // Progress on stderr for a long sweep (nothing for one that ends within 5 s, or
  // TOPOCOLL_PROGRESS_AFTER seconds; --quiet: never).
  cli::Progress progress("sim", "points", algorithms.size() * points.size(), 0, a.quiet, cli::progress_delay());
  progress.start();
  for (const algo::Algorithm* alg : algorithms) {
    if (a.format == "table")
      *sink << fmt::format("#\n# {}: {} ({})\n#{:>12} {:>12} {:>8} {:>6} {:>12} {:>10} {:>10} {:>7}\n", alg->name,
                           alg->description,
                           file_of(alg) ? std::string("channels and slices as the file gives them")
                                        : fmt::format("{}, slice {} B", channels_note, tuning.slice_bytes),
                           "size", "count", "type", "redop", "time(us)", "algbw", "busbw", "proto");
    if (tables)
      tables->begin(alg->name, file_of(alg) ? alg->description + ", channels and slices as the file gives them"
                                            : fmt::format("{}, {}, slice {} B", alg->description, channels_note,
                                                          tuning.slice_bytes));
    for (const algo::CollectiveArgs& args : points) {
      const std::uint64_t bytes = algo::nccl_tests_bytes(args);
      const algo::Support& s = support[next_support++];
      const algo::ScheduleFile* file = file_of(alg);
      const bool own_size_elsewhere = file && file->sits_out(bytes, dtype);
      if (!s.ok) {
        // Asked for by name: the user must hear it. Part of "all", or a fixed-count schedule
        // file at another size of the sweep: say so in the table.
        if (named(alg) && !own_size_elsewhere)
          throw InputError(fmt::format("{} is not supported on {}: {}", alg->name, a.topo.topology, s.reason));
        if (a.format == "table")
          *sink << (own_size_elsewhere ? fmt::format(" {:>12} {}\n", bytes, file->sits_out_line(bytes, dtype))
                                       : fmt::format(" {:>12} not supported: {}\n", bytes, s.reason));
        if (tables)
          tables->note(own_size_elsewhere ? fmt::format("{} B {}", bytes, file->sits_out_line(bytes, dtype))
                                          : fmt::format("{} B not supported: {}", bytes, s.reason));
        progress.add(1);
        continue;
      }
      TOPOCOLL_ASSERT(next_task < tasks.size() && tasks[next_task].alg == alg && tasks[next_task].args == &args,
                      "sim: the points printed and the points simulated differ");
      const bool traced_here = tasks[next_task].trace;
      // A long point (a large cluster) keeps the progress going while it runs.
      while (!pool.wait_for(next_task, std::chrono::milliseconds(200)))
        progress.tick(fmt::format("{} at {} B", alg->name, bytes));
      sim::SimulatedPoint p = pool.get(next_task++);
      if (file) p.record.slice_bytes = 0;  // a schedule file slices as it says, not by --slice
      if (traced_here) {
        trace = std::move(p.result.trace);
        trace_run = fmt::format("{} x{}", *p.record.protocol, p.record.channels);
      }
      const records::Record& rec = p.record;
      auto& b = best[bytes];
      if (b.first.empty() || rec.time_us < b.second) b = {fmt::format("{}/{}", alg->name, *rec.protocol), rec.time_us};
      if (a.format == "table")
        *sink << fmt::format(" {:>12} {:>12} {:>8} {:>6} {:>12.2f} {:>10.2f} {:>10.2f} {:>7}\n", bytes, args.count,
                             rec.dtype, rec.op, rec.time_us, rec.algbw_gbps, rec.busbw_gbps, *rec.protocol);
      else if (a.format == "csv")
        *sink << fmt::format("{},{},{},{},{},{},{},{},{},{:.3f},{:.4f},{:.4f},{}\n", rec.engine, rec.algorithm,
                             rec.nodes, rec.ranks, bytes, args.count, rec.dtype, rec.op, rec.channels, rec.time_us,
                             rec.algbw_gbps, rec.busbw_gbps, *rec.protocol);
      else if (tables)
        tables->row(nccl_tests_row(rec, bytes, args.count, collective, row_root));
      else
        *sink << to_json(rec).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      *sink << std::flush;  // streamed: each row as soon as it is simulated
      progress.add(1);
    }
    if (tables) tables->end();
  }
  progress.finish();

  // The NCCL reference model: what stock NCCL would pick and how long it predicts.
  if (nccl_rows) {
    if (tables)
      tables->begin("nccl-model", fmt::format("stock NCCL's choice and time by its own tuning model, NCCL {}",
                                              sim::to_string(nccl_options.version)));
    for (const algo::CollectiveArgs& args : points) {
      const std::uint64_t bytes = algo::nccl_tests_bytes(args);
      const records::Record rec = sim::nccl_model_point(*nccl, base, bytes, dtype, collective, op);
      if (a.format == "jsonl")
        *sink << to_json(rec).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      else if (a.format == "csv")
        *sink << fmt::format("{},{},{},{},{},{},{},{},{},{:.3f},{:.4f},{:.4f},{}\n", rec.engine, rec.algorithm,
                             rec.nodes, rec.ranks, bytes, rec.count, rec.dtype, rec.op, rec.channels, rec.time_us,
                             rec.algbw_gbps, rec.busbw_gbps, *rec.protocol);
      else if (tables)
        tables->row(nccl_tests_row(rec, bytes, rec.count, collective, row_root));
    }
    if (tables) tables->end();
  }
  if (a.format == "table") {
    *sink << (nccl_rows
                  ? fmt::format(
                        "#\n# fastest per size, and stock NCCL's choice by its own tuning model (nccl-model, NCCL {}, "
                        "{} channels)\n",
                        sim::to_string(nccl_options.version), sim::nccl_channels(*nccl))
                  : std::string("#\n# fastest per size\n"));
    if (nccl_rows && calib.host_call_us > 0)
      *sink << fmt::format(
          "# nccl-model time is NCCL's own prediction; speedup = max(it, host floor {:g} us) / fastest\n",
          calib.host_call_us);
    // The NCCL columns' header, but not for a collective NCCL's tuner does not model (alltoall).
    if (nccl_rows || !nccl)
      *sink << fmt::format("#{:>12} {:>24} {:>12} {:>22} {:>12} {:>9}\n", "size", "fastest", "time(us)",
                           "nccl-model choice x ch", "time(us)", "speedup");
    else
      *sink << fmt::format("#{:>12} {:>24} {:>12}\n", "size", "fastest", "time(us)");
    for (const algo::CollectiveArgs& args : points) {
      const std::uint64_t bytes = algo::nccl_tests_bytes(args);
      auto it = best.find(bytes);
      if (it == best.end()) continue;
      if (nccl_rows) {
        const sim::NcclPrediction pick = sim::nccl_choice(*nccl, bytes, collective, op);
        *sink << fmt::format(" {:>12} {:>24} {:>12.2f} {:>22} {:>12.2f} {:>8.2f}x\n", bytes, it->second.first,
                             it->second.second, fmt::format("{}/{} x{}", pick.algorithm, pick.protocol, pick.channels),
                             pick.time_us, std::max(pick.time_us, calib.host_call_us) / it->second.second);
      } else {
        *sink << fmt::format(" {:>12} {:>24} {:>12.2f}\n", bytes, it->second.first, it->second.second);
      }
    }
  }
  if (!a.trace.empty()) {
    std::ofstream tf(a.trace);
    if (!tf) throw InputError(fmt::format("--trace {}: cannot open the file for writing", a.trace));
    int channels = 1;
    for (const auto& e : trace) channels = std::max(channels, e.channel + 1);
    sim::TraceOptions to;
    to.ranks = trace_ranks;
    to.max_slices = a.trace_max_slices;
    to.metadata = {{"algorithm", trace_algorithm},
                   {"size_bytes", std::to_string(trace_bytes)},
                   {"collective", std::string(algo::to_string(collective))},
                   {"topology", fmt::format("{} x {}", a.topo.topology, t.nodes())},
                   {"ranks", std::to_string(t.num_ranks())},
                   {"engine", engines.front()->name()},
                   {"calibration", calib.source},
                   {"topocoll_version", base.version},
                   {"commit", std::string(build_commit())},
                   {"protocol_channels", trace_run}};
    std::string written;
    for (const auto& [lo, hi] : trace_ranks)
      written += (written.empty() ? "" : ",") + (lo == hi ? std::to_string(lo) : fmt::format("{}-{}", lo, hi));
    to.metadata["trace_ranks"] = written;
    const sim::TraceStats st = sim::write_chrome_trace(trace, t.num_ranks(), channels, tf, to);
    tf.close();
    if (!tf) throw InputError(fmt::format("--trace {}: the write failed", a.trace));
    const std::string merged =
        st.ops_per_slice > 1
            ? fmt::format(
                  " (of {} operations: up to {} consecutive ones of a kind and peer per slice, --trace-max-slices {})",
                  st.ops, st.ops_per_slice, a.trace_max_slices)
            : "";
    std::cerr << fmt::format("topocoll sim: trace {}: {} at {} B, ranks {} of {}, {} events{}, {} flows\n", a.trace,
                             trace_algorithm, trace_bytes, written, t.num_ranks(), st.events, merged, st.flows);
  }
  output.close();
  // What the topology assumed (an importer's notes: NVLink unknown, a NIC rate assumed, a PCI
  // class inferred), each naming the field that sets it: on stderr, so that the table and the
  // golden outputs stay as they are; last, so that a run that fails prints its one error line.
  write_topology_notes(t, std::cerr);
  // NCCL_TESTS_MIN_BW: as nccl-tests, a table below it says FAILED and the run exits 1.
  return tables && tables->failed() ? 1 : 0;
}

}  // namespace topocoll::tools
