#include "tools/sim_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "algorithms/registry.hpp"
#include "algorithms/schedule_file.hpp"
#include "common/cli_io.hpp"
#include "common/errors.hpp"
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
  if (a.format != "table" && a.format != "csv" && a.format != "jsonl")
    throw InputError(fmt::format("--format {}: expected table, csv or jsonl", a.format));
  // Schedule files (algorithms/schedule_file.hpp): each one an algorithm of the run, asked for by
  // name; alone they replace --algorithm's default, and give the dtype, op and (fixed-count
  // files) the sizes the command line leaves out.
  const algo::ScheduleFileSet files = algo::load_schedule_files(a.schedules, {.verify = !a.no_verify});
  const algo::DataType dtype =
      a.dtype_given || files.files.empty() ? algo::parse_dtype(a.dtype) : files.files[0]->dtype;
  const algo::ReduceOp op = a.op_given || files.files.empty() ? algo::parse_op(a.op) : files.files[0]->op;
  const std::size_t elem = algo::size_of(dtype);
  const std::vector<std::uint64_t> sizes = algo::sweep_with_files(files, size_sweep(a, elem), a.sizes_given, dtype);
  std::vector<const algo::Algorithm*> algorithms;
  if (files.files.empty() || a.algorithm_given)
    algorithms = algo::select_algorithms(a.algorithm, algo::Collective::AllReduce);
  for (const algo::Algorithm& f : files.algorithms) algorithms.push_back(&f);
  // Named by the user (a list, or a file): unsupported is an error; part of "all": a table line.
  auto file_of = [&](const algo::Algorithm* alg) -> const algo::ScheduleFile* {
    for (std::size_t i = 0; i < files.algorithms.size(); ++i)
      if (&files.algorithms[i] == alg) return files.files[i].get();
    return nullptr;
  };
  auto named = [&](const algo::Algorithm* alg) { return a.algorithm != "all" || file_of(alg) != nullptr; };
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
  // The NCCL model's release and environment: the process environment as NCCL reads it, then
  // each --nccl-env KEY=VALUE.
  sim::NcclModelOptions nccl_options;
  nccl_options.version = sim::parse_nccl_version(a.nccl_version, "--nccl-version");
  nccl_options = sim::nccl_options_from_env(sim::nccl_process_env(), nccl_options);
  for (const std::string& kv : a.nccl_env) sim::set_nccl_env(nccl_options, kv, "--nccl-env");
  std::optional<sim::NcclGraphEstimate> nccl;
  if (!a.no_nccl_model) nccl = sim::estimate_nccl_graph(t, nccl_options);
  const sim::NcclGraphEstimate nccl_estimate = nccl ? *nccl : sim::estimate_nccl_graph(t, nccl_options);
  tuning.channels = channels_option(a.channels, nccl_estimate);

  // Protocols: --protocol, else the calibration file's "protocol", else "auto": every protocol
  // NCCL would enable on this topology (LL and Simple always; LL128 by NCCL's own rule, see
  // nccl_model.cpp), each schedule run under each, the fastest reported with its protocol.
  const sim::ProtocolSet protocols = sim::protocol_set(nccl_estimate, calib, a.protocol, "--protocol");
  std::string protocol_note;
  for (sim::Protocol p : protocols.protocols)
    protocol_note += (protocol_note.empty() ? "" : ", ") + std::string(sim::to_string(p));

  // A schedule file for another job is refused before anything is printed.
  for (const auto& f : files.files) {
    if (f->ranks != t.num_ranks())
      throw InputError(fmt::format("{}: written for {} ranks; {} x {} has {} GPUs", f->path, f->ranks, a.topo.topology,
                                   t.nodes(), t.num_ranks()));
    if (f->collective != algo::Collective::AllReduce)
      throw InputError(fmt::format("{}: a {} schedule; sim runs allreduce", f->path, to_string(f->collective)));
  }

  Output output(a.output, out);
  std::ostream* sink = &output.stream();

  records::Record base = sim::simulated_base(t, engine->name(), a.topo.topology, op, tuning.slice_bytes, calib.source);
  base.dtype = std::string(algo::to_string(dtype));
  base.date = records::now_iso8601();
  const double factor = algo::busbw_factor(algo::Collective::AllReduce, t.num_ranks());

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
    *sink << fmt::format("# busbw = algbw * 2(p-1)/p = algbw * {:.4f} (nccl-tests' allreduce factor)\n", factor);
    if (calib.host_call_us > 0)
      *sink << fmt::format(
          "# per-call host floor {:g} us: time = max(floor, simulated device time) (docs/simulator.md)\n",
          calib.host_call_us);
  } else if (a.format == "csv") {
    *sink << "engine,algorithm,nodes,ranks,size_bytes,count,dtype,op,channels,time_us,algbw_gbps,busbw_gbps,protocol\n";
  }

  std::map<std::uint64_t, std::pair<std::string, double>> best;  // size -> (algorithm, time)
  std::vector<sim::TraceEvent> trace;
  bool traced = false;
  for (const algo::Algorithm* alg : algorithms) {
    if (a.format == "table")
      *sink << fmt::format("#\n# {}: {} ({})\n#{:>12} {:>12} {:>8} {:>6} {:>12} {:>10} {:>10} {:>7}\n", alg->name,
                           alg->description,
                           file_of(alg) ? std::string("channels and slices as the file gives them")
                                        : fmt::format("channels {}, slice {} B", tuning.channels, tuning.slice_bytes),
                           "size", "count", "type", "redop", "time(us)", "algbw", "busbw", "proto");
    for (std::uint64_t bytes : sizes) {
      const algo::CollectiveArgs args = algo::CollectiveArgs::allreduce(bytes / elem, dtype, op, t.num_ranks());
      const algo::Support s = alg->supports(layout, args, tuning);
      const algo::ScheduleFile* file = file_of(alg);
      const bool own_size_elsewhere = file && file->sits_out(bytes, dtype);
      if (!s.ok) {
        // Asked for by name: the user must hear it. Part of "all", or a fixed-count schedule
        // file at another size of the sweep: say so in the table.
        if (named(alg) && !own_size_elsewhere)
          throw InputError(fmt::format("{} is not supported on {}: {}", alg->name, a.topo.topology, s.reason));
        if (a.format == "table")
          *sink << (own_size_elsewhere
                        ? fmt::format(" {:>12} not run: the schedule is for {} B only\n", bytes, *file->bytes(dtype))
                        : fmt::format(" {:>12} not supported: {}\n", bytes, s.reason));
        continue;
      }
      const algo::Schedule sched = alg->generate(layout, args, tuning);
      sim::SimOptions so;
      // The trace covers one run: the first algorithm at the largest size.
      so.trace = !a.trace.empty() && !traced && bytes == sizes.back();
      so.simgrid_fast_paths = !a.simgrid_plain;
      sim::SimulatedPoint p =
          sim::simulate_point(*engine, t, sched, protocols, base, alg->name, bytes, args.count, dtype, so);
      if (file) p.record.slice_bytes = 0;  // a schedule file slices as it says, not by --slice
      if (so.trace) {
        trace = std::move(p.result.trace);
        traced = true;
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
      else
        *sink << to_json(rec).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    }
  }

  // The NCCL reference model: what stock NCCL would pick and how long it predicts.
  if (nccl) {
    for (std::uint64_t bytes : sizes) {
      const records::Record rec = sim::nccl_model_point(*nccl, base, bytes, dtype);
      if (a.format == "jsonl")
        *sink << to_json(rec).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      else if (a.format == "csv")
        *sink << fmt::format("{},{},{},{},{},{},{},{},{},{:.3f},{:.4f},{:.4f},{}\n", rec.engine, rec.algorithm,
                             rec.nodes, rec.ranks, bytes, rec.count, rec.dtype, rec.op, rec.channels, rec.time_us,
                             rec.algbw_gbps, rec.busbw_gbps, *rec.protocol);
    }
  }
  if (a.format == "table") {
    *sink << (nccl ? fmt::format(
                         "#\n# fastest per size, and stock NCCL's choice by its own tuning model (nccl-model, NCCL {}, "
                         "{} channels)\n",
                         sim::to_string(nccl_options.version), sim::nccl_channels(*nccl))
                   : std::string("#\n# fastest per size\n"));
    if (nccl && calib.host_call_us > 0)
      *sink << fmt::format(
          "# nccl-model time is NCCL's own prediction; speedup = max(it, host floor {:g} us) / fastest\n",
          calib.host_call_us);
    *sink << fmt::format("#{:>12} {:>24} {:>12} {:>22} {:>12} {:>9}\n", "size", "fastest", "time(us)",
                         "nccl-model choice x ch", "time(us)", "speedup");
    for (std::uint64_t bytes : sizes) {
      auto it = best.find(bytes);
      if (it == best.end()) continue;
      if (nccl) {
        const sim::NcclPrediction pick = sim::nccl_choice(*nccl, bytes);
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
    sim::write_chrome_trace(trace, t.num_ranks(), channels, tf);
  }
  output.close();
  // What the topology assumed (an importer's notes: NVLink unknown, a NIC rate assumed, a PCI
  // class inferred), each naming the field that sets it: on stderr, so that the table and the
  // golden outputs stay as they are; last, so that a run that fails prints its one error line.
  write_topology_notes(t, std::cerr);
  return 0;
}

}  // namespace topocoll::tools
