#include "tools/tune_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <limits>
#include <memory>

#include "algorithms/registry.hpp"
#include "common/cli_io.hpp"
#include "common/errors.hpp"
#include "simulator/engine.hpp"
#include "simulator/sweep.hpp"
#include "tools/sim_command.hpp"
#include "topologies/load.hpp"

namespace topocoll::tools {

namespace {

// The collectives a table covers, each with NCCL's name for it. The simulator runs allreduce;
// a collective it learns is one more entry here (and its candidates in nccl_counterparts).
struct TunedCollective {
  algo::Collective collective;
  tuner::Collective nccl;
};
constexpr TunedCollective kTunedCollectives[] = {{algo::Collective::AllReduce, tuner::Collective::AllReduce}};

struct Candidate {
  const algo::Algorithm* algorithm;
  tuner::Algorithm nccl;
  int channels;
};

std::string counterpart_names() {
  std::string out;
  for (const NcclCounterpart& c : nccl_counterparts())
    out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", c.algorithm, tuner::to_string(c.nccl));
  return out;
}

// --algorithm as candidates, with the channels each is simulated with. "all": those NCCL would
// run here, the others named in `skipped`; a list: each must be one NCCL would run here.
std::vector<Candidate> select_candidates(const TuneArgs& a, const sim::NcclGraphEstimate& nccl,
                                         algo::Collective collective, int fixed_channels, std::string& skipped) {
  std::vector<const algo::Algorithm*> chosen;
  if (a.algorithm == "all") {
    for (const NcclCounterpart& c : nccl_counterparts())
      chosen.push_back(&algo::find_algorithm(std::string(c.algorithm)));
  } else {
    chosen = algo::select_algorithms(a.algorithm, collective);
  }
  std::vector<Candidate> out;
  for (const algo::Algorithm* alg : chosen) {
    const std::optional<tuner::Algorithm> n = nccl_counterpart(alg->name);
    if (!n)
      throw InputError(fmt::format("--algorithm {}: {} has no NCCL counterpart; expected some of {}", a.algorithm,
                                   alg->name, counterpart_names()));
    if (alg->collective != collective) continue;
    if (const std::string why = nccl_disables(*n, nccl); !why.empty()) {
      if (a.algorithm != "all")
        throw InputError(fmt::format("--algorithm {}: NCCL would not run {} ({}) on {}: {}", a.algorithm, alg->name,
                                     tuner::to_string(*n), a.topo.topology, why));
      skipped += fmt::format("{}{} ({})", skipped.empty() ? "" : "; ", alg->name, why);
      continue;
    }
    out.push_back({alg, *n, fixed_channels > 0 ? fixed_channels : nccl_channels_for(*n, nccl)});
  }
  return out;
}

// Everything one sweep needs: the topology, the engine, the protocols, the record base.
struct TuneSetup {
  const topo::Topology& t;
  algo::Layout layout;
  sim::Engine& engine;
  sim::ProtocolSet protocols;
  records::Record base;
  algo::Tuning tuning;
};

// What every tune of `a` on `t` shares: the engine, the sizes, the channels (0: NCCL's per
// algorithm) and the setup, from the flags.
struct TuneRun {
  std::unique_ptr<sim::Engine> engine;
  std::vector<std::uint64_t> sizes;
  int fixed_channels = 0;
  std::unique_ptr<TuneSetup> setup;
};

TuneRun tune_run(const TuneArgs& a, const topo::Topology& t, const sim::NcclGraphEstimate& nccl,
                 const sim::Calibration& calib) {
  TuneRun run;
  run.engine = sim::make_engine(a.engine);
  algo::Tuning tuning;
  tuning.slice_bytes = cli::parse_size(a.slice, "--slice");
  if (tuning.slice_bytes == 0) throw InputError("--slice 0: expected at least 1 byte");
  run.sizes = cli::size_sweep(a.min_bytes, a.max_bytes, a.factor, algo::size_of(algo::DataType::Float32));
  run.fixed_channels = a.channels == "nccl" ? 0 : channels_option(a.channels, nccl);
  run.setup = std::make_unique<TuneSetup>(
      TuneSetup{t, algo::layout_of(t), *run.engine, sim::protocol_set(nccl, calib, a.protocol, "--protocol"),
                sim::simulated_base(t, run.engine->name(), a.topo.topology, algo::ReduceOp::Sum, tuning.slice_bytes,
                                    calib.source),
                tuning});
  return run;
}

// The fastest candidate at each size (the first in candidate order on a tie). Candidates that
// do not support the layout at a size sit it out; when none does, an InputError names them.
// Every candidate's simulated point, each size's chosen one first (`every`, when given: the rows
// of --format nccl-csv).
std::vector<TunedPoint> tune_sizes(TuneSetup& s, const std::vector<Candidate>& candidates,
                                   const std::vector<std::uint64_t>& sizes, const std::string& topology,
                                   std::vector<TunedPoint>* every = nullptr) {
  constexpr algo::DataType kDtype = algo::DataType::Float32;  // the table is by bytes; any type will do
  const std::size_t elem = algo::size_of(kDtype);
  std::vector<TunedPoint> points;
  for (std::uint64_t bytes : sizes) {
    const algo::CollectiveArgs args =
        algo::CollectiveArgs::allreduce(bytes / elem, kDtype, algo::ReduceOp::Sum, s.t.num_ranks());
    std::optional<TunedPoint> best;
    double best_device_us = 0.0;
    std::string reasons;
    std::vector<TunedPoint> tried;
    for (const Candidate& c : candidates) {
      algo::Tuning tuning = s.tuning;
      tuning.channels = c.channels;
      if (const algo::Support sup = c.algorithm->supports(s.layout, args, tuning); !sup.ok) {
        reasons += fmt::format("; {}: {}", c.algorithm->name, sup.reason);
        continue;
      }
      const algo::Schedule sched = c.algorithm->generate(s.layout, args, tuning);
      const sim::SimulatedPoint p =
          sim::simulate_point(s.engine, s.t, sched, s.protocols, s.base, c.algorithm->name, bytes, args.count, kDtype);
      // Faster by the call's time; at the host floor (every candidate max(floor, device) = the
      // floor), by the device time, which still tells the algorithms apart.
      const double device_us = p.record.device_time_us.value_or(p.record.time_us);
      const std::optional<sim::Protocol> tried_proto = sim::parse_protocol(*p.record.protocol);
      tried.push_back(
          TunedPoint{bytes, c.algorithm->name, c.nccl, nccl_protocol(*tried_proto), c.channels, p.record.time_us});
      if (best &&
          (p.record.time_us > best->time_us || (p.record.time_us == best->time_us && device_us >= best_device_us)))
        continue;
      best_device_us = device_us;
      const std::optional<sim::Protocol> proto = sim::parse_protocol(*p.record.protocol);
      best = TunedPoint{bytes, c.algorithm->name, c.nccl, nccl_protocol(*proto), c.channels, p.record.time_us};
    }
    if (!best) throw InputError(fmt::format("no candidate runs on {} at {} B{}", topology, bytes, reasons));
    points.push_back(*best);
    if (every) {  // the chosen point first: a reader that keeps the first of equal times keeps it
      every->push_back(*best);
      for (const TunedPoint& t : tried)
        if (t.algorithm != best->algorithm || t.channels != best->channels) every->push_back(t);
    }
  }
  return points;
}

std::vector<std::string> table_comments(const TuneArgs& a, const topo::Topology& t, const sim::Engine& engine,
                                        const std::string& calibration, const std::vector<Candidate>& candidates,
                                        const std::string& skipped, const std::string& output) {
  std::vector<std::string> c;
  c.push_back(fmt::format("topocoll tune: {} x {} node{} ({} GPUs){}, engine {}, calibration {}, NCCL model {}",
                          a.topo.topology, t.nodes(), t.nodes() == 1 ? "" : "s", t.num_ranks(),
                          t.fabric() ? fmt::format(", {}", topo::to_string(t.fabric()->kind)) : "", engine.name(),
                          calibration, a.nccl_version));
  std::string names;
  for (const Candidate& k : candidates)
    names += fmt::format("{}{} ({} x{})", names.empty() ? "" : ", ", k.algorithm->name, tuner::to_string(k.nccl),
                         k.channels);
  c.push_back(fmt::format("the fastest of {} at each size {} to {} (x{}); a row holds from its size to the next's",
                          names, a.min_bytes, a.max_bytes, a.factor));
  if (!skipped.empty()) c.push_back("not candidates: " + skipped);
  const std::string file = output.empty() || output == "-" ? "FILE" : output;
  c.push_back(a.format == "nccl-example"
                  ? fmt::format("use: NCCL_TUNER_PLUGIN=<NCCL's example tuner> NCCL_TUNER_CONFIG_FILE={}", file)
                  : fmt::format("use: NCCL_TUNER_PLUGIN=topocoll TOPOCOLL_TUNER_TABLE={} (docs/tuner.md)", file));
  return c;
}

void write_summary(const std::vector<TunedPoint>& points, std::size_t rows, const TuneArgs& a, std::ostream& out) {
  out << fmt::format("#{:>12} {:>18} {:>20} {:>12}\n", "size", "fastest", "nccl x channels", "time(us)");
  for (const TunedPoint& p : points)
    out << fmt::format(
        " {:>12} {:>18} {:>20} {:>12.2f}\n", p.bytes, p.algorithm,
        fmt::format("{}/{} x{}", tuner::to_string(p.nccl_algorithm), tuner::to_string(p.protocol), p.channels),
        p.time_us);
  out << fmt::format("# {} row{} written to {} (format {})\n", rows, rows == 1 ? "" : "s", a.output, a.format);
}

}  // namespace

const std::vector<NcclCounterpart>& nccl_counterparts() {
  static const std::vector<NcclCounterpart> kAll = {
      {"ring", tuner::Algorithm::Ring},
      {"dbt", tuner::Algorithm::Tree},
      {"nvls", tuner::Algorithm::Nvls},
      {"nvls-tree", tuner::Algorithm::NvlsTree},
      {"collnet", tuner::Algorithm::CollNetDirect},
  };
  return kAll;
}

std::optional<tuner::Algorithm> nccl_counterpart(std::string_view algorithm) {
  for (const NcclCounterpart& c : nccl_counterparts())
    if (c.algorithm == algorithm) return c.nccl;
  return std::nullopt;
}

std::string nccl_disables(tuner::Algorithm a, const sim::NcclGraphEstimate& nccl) {
  switch (a) {
    case tuner::Algorithm::Nvls:
    case tuner::Algorithm::NvlsTree:
      return nccl.nvls_support ? ""
                               : "NCCL's nvlsSupport is off (NVSwitch multicast, more than 2 GPUs a node, "
                                 "NCCL_NVLS_ENABLE)";
    case tuner::Algorithm::CollNetDirect:
    case tuner::Algorithm::CollNetChain:
      if (!nccl.collnet_support)
        return "NCCL's collNetSupport is off (NCCL_COLLNET_ENABLE=1, several nodes and a fabric whose switches reduce, "
               "--sharp)";
      return a == tuner::Algorithm::CollNetDirect && !nccl.nvswitch ? "CollNet Direct needs an NVSwitch in the node"
                                                                    : "";
    default:
      return "";
  }
}

int nccl_channels_for(tuner::Algorithm a, const sim::NcclGraphEstimate& nccl) {
  switch (a) {
    case tuner::Algorithm::Nvls:
    case tuner::Algorithm::NvlsTree:
      return std::max(1, nccl.nvls_channels);
    case tuner::Algorithm::CollNetDirect:
      return std::max(1, nccl.collnet_direct_channels);
    case tuner::Algorithm::CollNetChain:
      return std::max(1, nccl.collnet_chain_channels);
    default:
      return sim::nccl_channels(nccl);
  }
}

tuner::Protocol nccl_protocol(sim::Protocol p) {
  switch (p) {
    case sim::Protocol::LL:
      return tuner::Protocol::LL;
    case sim::Protocol::LL128:
      return tuner::Protocol::LL128;
    default:
      return tuner::Protocol::Simple;
  }
}

std::vector<tuner::Row> table_rows(const std::vector<TunedPoint>& points, tuner::Collective collective, int nodes,
                                   int ranks) {
  std::vector<tuner::Row> rows;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const TunedPoint& p = points[i];
    const std::uint64_t lo = i == 0 ? 0 : p.bytes;
    const std::uint64_t hi =
        i + 1 == points.size() ? std::numeric_limits<std::uint64_t>::max() : points[i + 1].bytes - 1;
    if (!rows.empty() && rows.back().algorithm == p.nccl_algorithm && rows.back().protocol == p.protocol &&
        rows.back().channels == p.channels) {
      rows.back().max_bytes = hi;
      continue;
    }
    rows.push_back({collective, lo, hi, p.nccl_algorithm, p.protocol, p.channels, nodes, ranks});
  }
  return rows;
}

int tune_command(const TuneArgs& a, std::ostream& out) {
  if (a.format != "topocoll" && a.format != "nccl-example" && a.format != "nccl-csv")
    throw InputError(fmt::format("--format {}: expected topocoll, nccl-example or nccl-csv", cli::one_line(a.format)));
  const sim::Calibration calib = a.calibration.empty() ? sim::base_calibration() : sim::load_calibration(a.calibration);

  topo::TopologyOptions o = topology_options(a.topo);
  o.merge_nvswitch_planes = true;  // as `topocoll sim`: the hardware stripes NVLink traffic over the planes
  const topo::Topology t = topo::load_topology(o);
  sim::NcclModelOptions nccl_options;
  nccl_options.version = sim::parse_nccl_version(a.nccl_version, "--nccl-version");
  nccl_options = sim::nccl_options_from_env(sim::nccl_process_env(), nccl_options);
  for (const std::string& kv : a.nccl_env) sim::set_nccl_env(nccl_options, kv, "--nccl-env");
  const sim::NcclGraphEstimate nccl = sim::estimate_nccl_graph(t, nccl_options);
  TuneRun run = tune_run(a, t, nccl, calib);
  const std::vector<std::uint64_t>& sizes = run.sizes;
  const int fixed_channels = run.fixed_channels;
  const sim::Engine* engine = run.engine.get();
  TuneSetup& setup = *run.setup;
  std::vector<tuner::Row> rows;
  std::vector<TunedPoint> all_points;
  std::string skipped;
  std::vector<Candidate> all_candidates;
  std::vector<std::pair<tuner::Collective, std::vector<TunedPoint>>> every;  // --format nccl-csv
  for (const TunedCollective& c : kTunedCollectives) {
    const std::vector<Candidate> candidates = select_candidates(a, nccl, c.collective, fixed_channels, skipped);
    if (candidates.empty())
      throw InputError(
          fmt::format("--algorithm {}: no candidate NCCL would run on {} ({})", a.algorithm, a.topo.topology, skipped));
    every.emplace_back(c.nccl, std::vector<TunedPoint>{});
    const std::vector<TunedPoint> points = tune_sizes(setup, candidates, sizes, a.topo.topology, &every.back().second);
    const std::vector<tuner::Row> r = table_rows(points, c.nccl, t.nodes(), t.num_ranks());
    rows.insert(rows.end(), r.begin(), r.end());
    all_points.insert(all_points.end(), points.begin(), points.end());
    all_candidates.insert(all_candidates.end(), candidates.begin(), candidates.end());
  }

  const std::vector<std::string> comments =
      table_comments(a, t, *engine, calib.source, all_candidates, skipped, a.output);
  cli::Output output(a.output, out);
  if (a.format == "nccl-csv") {
    // The input of NCCL's ext-tuner/example/scripts/optimize_config.py: one row per simulated
    // (size, algorithm, protocol, channels), as a measured sweep would give it.
    output.stream() << "collective,size_bytes,algorithm,protocol,channels,nodes,ranks,pipeOps,regBuff,"
                       "bandwidth_gbps,latency_us\n";
    for (const auto& [coll, pts] : every)
      for (const TunedPoint& p : pts)
        output.stream() << fmt::format("{},{},{},{},{},{},{},-1,-1,{:.4f},{:.3f}\n", tuner::to_string(coll), p.bytes,
                                       tuner::lower_case(tuner::to_string(p.nccl_algorithm)),
                                       tuner::lower_case(tuner::to_string(p.protocol)), p.channels, t.nodes(),
                                       t.num_ranks(), static_cast<double>(p.bytes) / (p.time_us * 1e3), p.time_us);
  } else {
    output.stream() << (a.format == "nccl-example" ? tuner::format_nccl_example(rows, comments)
                                                   : tuner::format_table(rows, comments));
  }
  output.close();
  if (!a.output.empty() && a.output != "-") write_summary(all_points, rows.size(), a, out);
  write_topology_notes(t, std::cerr);
  return 0;
}

std::vector<TunedPoint> tune_points(const TuneArgs& a, const topo::Topology& t, const sim::NcclGraphEstimate& nccl,
                                    const sim::Calibration& calib) {
  TuneRun run = tune_run(a, t, nccl, calib);
  std::string skipped;
  const std::vector<Candidate> candidates =
      select_candidates(a, nccl, algo::Collective::AllReduce, run.fixed_channels, skipped);
  if (candidates.empty())
    throw InputError(
        fmt::format("--algorithm {}: no candidate NCCL would run on {} ({})", a.algorithm, a.topo.topology, skipped));
  return tune_sizes(*run.setup, candidates, run.sizes, a.topo.topology);
}

}  // namespace topocoll::tools
