#include "tools/calibrate_command.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "algorithms/registry.hpp"
#include "common/cli_io.hpp"
#include "common/errors.hpp"
#include "simulator/calibration.hpp"
#include "simulator/engine.hpp"
#include "simulator/nccl_model.hpp"
#include "simulator/sweep.hpp"
#include "tools/algo_commands.hpp"
#include "tools/import_command.hpp"
#include "tools/sim_command.hpp"
#include "topologies/load.hpp"

namespace topocoll::tools {

namespace {

constexpr std::uint64_t kSmallMax = 64u << 10;  // the size ranges of scripts/validate
constexpr std::uint64_t kLargeMin = 64u << 20;
// A (schedule, protocol) pair within this factor of the fastest under the defaults is simulated
// at every grid point; the others are taken to stay slower.
constexpr double kCandidateSlack = 1.25;

struct Measured {
  std::uint64_t size = 0;
  double time_us = 0.0;
};

// The first table of a log, out-of-place: the run a calibration uses.
struct MeasuredRun {
  MeasuredTable table;
  std::vector<Measured> points;
};

MeasuredRun first_run(const std::string& path, const ImportOptions& o) {
  std::vector<MeasuredTable> tables = load_measured(path, o);
  MeasuredRun r{tables.front(), {}};
  for (const MeasuredPoint& p : r.table.points) r.points.push_back({p.size_bytes, p.out_of_place.time_us});
  return r;
}

// One simulation candidate of a size: a schedule and a protocol.
struct Candidate {
  std::size_t schedule = 0;
  sim::Protocol protocol = sim::Protocol::Simple;
};

// A topology ready to simulate at the measured sizes: the schedules of every candidate
// algorithm, generated once (they do not depend on the calibration).
class Cluster {
 public:
  Cluster(const TopoArgs& ta, int nodes, algo::Collective c, const std::string& algorithm_list,
          const std::string& channels, const std::string& slice, const std::vector<std::uint64_t>& sizes)
      : collective_(c), sizes_(sizes) {
    TopoArgs a = ta;
    a.nodes = nodes;
    topo::TopologyOptions o = topology_options(a);
    o.merge_nvswitch_planes = true;
    t_ = std::make_unique<topo::Topology>(topo::load_topology(o));
    nccl_ = sim::estimate_nccl_graph(*t_, sim::NcclModelOptions{});
    tuning_.slice_bytes = cli::parse_size(slice, "--slice");
    if (tuning_.slice_bytes == 0) throw InputError("--slice 0: expected at least 1 byte");
    tuning_.channels = channels_option(channels, nccl_);
    // As `sim`: --channels nccl gives each call and protocol NCCL's count for it.
    rule_ = sim::ChannelRule{tuning_.channels, channels == "nccl"};
    const sim::ProtocolSet ps = sim::protocol_set(nccl_, sim::base_calibration(), "auto", "--protocol");
    engine_ = sim::make_engine("analytic");
    const algo::Layout layout = algo::layout_of(*t_);
    const std::string list = !algorithm_list.empty()            ? algorithm_list
                             : c == algo::Collective::AllReduce ? "ring,dbt,hierarchical"
                                                                : "all";
    base_ = sim::simulated_base(*t_, engine_->name(), ta.topology, algo::ReduceOp::Sum, tuning_.slice_bytes, "");
    base_.dtype = "float";
    base_.collective = std::string(algo::to_string(c));
    for (const algo::Algorithm* alg : algo::select_algorithms(list, c)) names_.push_back(alg->name);
    schedules_.resize(sizes.size());
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const algo::CollectiveArgs args =
          algo::nccl_tests_args(c, sizes[i], algo::DataType::Float32, algo::ReduceOp::Sum, t_->num_ranks());
      counts_.push_back(args.count);
      for (const algo::Algorithm* alg : algo::select_algorithms(list, c)) {
        if (args.count == 0 || !alg->supports(layout, args, tuning_).ok) continue;
        Generated g{alg->name, {}, {}};
        const algo::Schedule full = alg->generate(layout, args, tuning_);
        const std::vector<int> per = sim::protocol_channels(nccl_, ps, full, rule_, sizes[i]);
        g.by_channels.emplace(tuning_.channels, full);  // simulate_point reads the full width's pattern
        for (std::size_t j = 0; j < ps.protocols.size(); ++j) {
          g.channels[static_cast<std::size_t>(ps.protocols[j])] = per[j];
          if (!g.by_channels.count(per[j])) {
            algo::Tuning at = tuning_;
            at.channels = per[j];
            g.by_channels.emplace(per[j], alg->generate(layout, args, at));
          }
        }
        schedules_[i].push_back(std::move(g));
      }
      if (schedules_[i].empty())
        throw InputError(
            fmt::format("size {} B: none of {} runs on {} x {} at this size", sizes[i], list, ta.topology, nodes));
    }
  }

  const topo::Topology& topology() const { return *t_; }
  const std::vector<std::string>& algorithm_names() const { return names_; }
  int channels() const { return tuning_.channels; }
  bool has_network() const { return t_->nodes() > 1; }

  // The time of every size as `sim` reports it: the fastest candidate under every protocol NCCL
  // would enable, with the calibration's host floor. Also the winner "algorithm/protocol".
  std::vector<double> full(const sim::Calibration& base, std::vector<std::string>* winner = nullptr) {
    const sim::ProtocolSet ps = sim::protocol_set(nccl_, base, "auto", "--protocol");
    std::vector<double> out(sizes_.size(), std::numeric_limits<double>::infinity());
    if (winner) winner->assign(sizes_.size(), "");
    for (std::size_t i = 0; i < sizes_.size(); ++i)
      for (const Generated& g : schedules_[i]) {
        const sim::ScheduleMaker make = [&](int c) { return g.by_channels.at(c); };
        const sim::SimulatedPoint p = sim::simulate_point(*engine_, *t_, make, rule_, nccl_, ps, base_, g.name,
                                                          sizes_[i], counts_[i], algo::DataType::Float32);
        const std::string& name = g.name;
        if (p.record.time_us < out[i]) {
          out[i] = p.record.time_us;
          if (winner) (*winner)[i] = name + "/" + p.record.protocol.value_or("");
        }
      }
    return out;
  }

  // Per size, the (schedule, protocol) pairs within `slack` of the fastest device time under
  // `base`: the ones a nearby calibration can make the fastest.
  std::vector<std::vector<Candidate>> candidates(const sim::Calibration& base, double slack) {
    const sim::ProtocolSet ps = sim::protocol_set(nccl_, base, "auto", "--protocol");
    std::vector<std::vector<Candidate>> out(sizes_.size());
    for (std::size_t i = 0; i < sizes_.size(); ++i) {
      std::vector<std::pair<double, Candidate>> all;
      for (std::size_t k = 0; k < schedules_[i].size(); ++k)
        for (std::size_t j = 0; j < ps.protocols.size(); ++j) {
          if (schedules_[i][k].by_channels.begin()->second.uses_switch() && ps.protocols[j] != sim::Protocol::Simple)
            continue;
          all.push_back({device_time(k, i, ps.protocols[j], ps.calibrations[j]), {k, ps.protocols[j]}});
        }
      double best = std::numeric_limits<double>::infinity();
      for (const auto& [d, c] : all) best = std::min(best, d);
      for (const auto& [d, c] : all)
        if (d <= best * slack) out[i].push_back(c);
    }
    return out;
  }

  // The device time (no host floor) of every size: the fastest of its candidates under `base`.
  std::vector<double> device(const sim::Calibration& base, const std::vector<std::vector<Candidate>>& cands) {
    std::vector<double> out(sizes_.size(), std::numeric_limits<double>::infinity());
    for (std::size_t i = 0; i < sizes_.size(); ++i)
      for (const Candidate& c : cands[i])
        out[i] = std::min(out[i], device_time(c.schedule, i, c.protocol,
                                              sim::with_block_caps(sim::protocol_calibration(base, c.protocol),
                                                                   nccl_.sm, nccl_.nodes)));
    return out;
  }

 private:
  double device_time(std::size_t k, std::size_t i, sim::Protocol p, const sim::Calibration& c) {
    sim::ProtocolSet one;
    one.protocols = {p};
    one.calibrations = {c};
    one.calibrations[0].host_call_us = 0.0;
    const Generated& g = schedules_[i][k];
    const algo::Schedule& s = g.by_channels.at(g.channels[static_cast<std::size_t>(p)]);
    const sim::SimulatedPoint r =
        sim::simulate_point(*engine_, *t_, s, one, base_, g.name, sizes_[i], counts_[i], algo::DataType::Float32);
    return r.record.device_time_us.value_or(r.record.time_us);
  }

  algo::Collective collective_;
  std::vector<std::uint64_t> sizes_;
  std::vector<std::uint64_t> counts_;
  std::unique_ptr<topo::Topology> t_;
  sim::NcclGraphEstimate nccl_;
  algo::Tuning tuning_;
  std::unique_ptr<sim::Engine> engine_;
  records::Record base_;
  std::vector<std::string> names_;
  // A candidate algorithm at one size: its schedule at each channel count a protocol runs it with.
  struct Generated {
    std::string name;
    std::map<int, algo::Schedule> by_channels;
    std::array<int, 3> channels{};  // by sim::Protocol
  };
  sim::ChannelRule rule_;
  std::vector<std::vector<Generated>> schedules_;
};

sim::Calibration with_params(sim::Calibration c, const FitParams& p) {
  auto& nv = c.links[static_cast<std::size_t>(topo::LinkKind::NvLink)];
  if (p.nvlink_efficiency > 0) {
    nv.efficiency = p.nvlink_efficiency;
    nv.by_gpu_generation = false;
  }
  if (p.network_efficiency > 0)
    c.links[static_cast<std::size_t>(topo::LinkKind::Network)].efficiency = p.network_efficiency;
  c.channel_cap_gbps[static_cast<std::size_t>(topo::LinkKind::NvLink)] = p.nvlink_channel_cap_gbps;
  c.host_call_us = p.host_call_us;
  return c;
}

std::vector<double> steps(double lo, double hi, double step) {
  std::vector<double> v;
  for (int i = 0; lo + i * step <= hi + 1e-9; ++i) v.push_back(lo + i * step);
  return v;
}

// The grid of parameters the measurements can tell apart: the NVLink efficiency (large sizes
// inside a node), the per-channel NVLink cap, and on several nodes the network efficiency (its
// cap is left out there, to keep the grid small); the host floor is fitted per grid point.
std::vector<FitParams> parameter_grid(bool network) {
  std::vector<FitParams> g;
  const std::vector<double> nv = steps(0.50, 1.00, 0.05);
  const std::vector<double> net = network ? steps(0.50, 1.00, 0.05) : std::vector<double>{0.0};
  const std::vector<double> caps = network ? std::vector<double>{0.0} : std::vector<double>{0, 8, 10, 12, 16};
  for (double e : nv)
    for (double n : net)
      for (double c : caps) g.push_back({e, n, c, 0.0});
  return g;
}

struct GridFit {
  std::size_t index = 0;
  double host_us = 0.0;
  double sse = std::numeric_limits<double>::infinity();
};

GridFit fit_on(const std::vector<std::vector<double>>& device, const std::vector<double>& measured,
               const std::vector<bool>& use) {
  GridFit best;
  for (std::size_t g = 0; g < device.size(); ++g) {
    const auto [h, sse] = best_host_floor(device[g], measured, use);
    if (sse < best.sse - 1e-12) best = {g, h, sse};
  }
  return best;
}

double rms_ln(const std::vector<double>& sim, const std::vector<double>& measured) {
  double s = 0;
  for (std::size_t i = 0; i < sim.size(); ++i) s += std::pow(std::log(sim[i] / measured[i]), 2);
  return std::sqrt(s / static_cast<double>(sim.size()));
}

double pct(double sim, double measured) {
  return 100.0 * (sim - measured) / measured;
}

// Median abs % error overall and per size range (small <= 64 KiB, mid, large >= 64 MiB).
std::string error_summary(const std::vector<std::uint64_t>& sizes, const std::vector<double>& sim,
                          const std::vector<double>& measured) {
  std::vector<double> all, small, mid, large;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const double e = pct(sim[i], measured[i]);
    all.push_back(e);
    (sizes[i] <= kSmallMax ? small : sizes[i] >= kLargeMin ? large : mid).push_back(e);
  }
  auto f = [](const std::vector<double>& v) {
    return v.empty() ? std::string("- (0)") : fmt::format("{:.1f} % ({})", median_abs(v), v.size());
  };
  return fmt::format("all {}; small (<= 64 KiB) {}; mid {}; large (>= 64 MiB) {}", f(all), f(small), f(mid), f(large));
}

std::string fitted_json(const FitParams& p, const std::string& sources, bool network) {
  nlohmann::ordered_json j;
  j["comment"] = fmt::format(
      "fitted by topocoll calibrate from {} (grid search, least squares on ln time; docs/simulator.md)", sources);
  j["host_call_us"] = p.host_call_us;
  j["links"]["nvlink"]["efficiency"] = p.nvlink_efficiency;
  if (network) j["links"]["network"]["efficiency"] = p.network_efficiency;
  j["channel_cap_gbps"]["nvlink"] = p.nvlink_channel_cap_gbps;
  return j.dump(2) + "\n";
}

}  // namespace

std::pair<double, double> best_host_floor(const std::vector<double>& device_us, const std::vector<double>& measured_us,
                                          const std::vector<bool>& use) {
  double best_h = 0.0, best = std::numeric_limits<double>::infinity();
  for (int k = 0; k <= 2000; ++k) {
    const double h = 0.25 * k;
    double s = 0.0;
    for (std::size_t i = 0; i < device_us.size(); ++i)
      if (use[i]) s += std::pow(std::log(std::max(device_us[i], h) / measured_us[i]), 2);
    if (s < best - 1e-12) {
      best = s;
      best_h = h;
    }
  }
  return {best_h, best};
}

double median_abs(std::vector<double> x) {
  if (x.empty()) return 0.0;
  for (double& v : x) v = std::abs(v);
  std::sort(x.begin(), x.end());
  const std::size_t n = x.size();
  return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2.0;
}

int calibrate_command(const CalibrateArgs& a, std::ostream& out) {
  if (a.from.empty()) throw InputError("calibrate: --from: expected at least one nccl-tests log or calibration CSV");
  if (a.output.empty()) throw InputError("calibrate: -O: expected the calibration JSON file to write");
  ImportOptions io;
  if (!a.collective.empty()) io.collective = parse_collective_flag(a.collective, "--collective");
  io.ranks = a.ranks;

  // The measurements: the first table of each file, out-of-place; every file the same run shape.
  std::vector<MeasuredRun> runs;
  for (const std::string& f : a.from) runs.push_back(first_run(f, io));
  const MeasuredTable& first = runs.front().table;
  for (const MeasuredRun& r : runs)
    if (r.table.ranks != first.ranks || r.table.collective != first.collective)
      throw InputError(fmt::format("{}:{}: {} over {} ranks; {}:{} is {} over {}: calibrate from runs of one shape",
                                   r.table.file, r.table.line, algo::nccl_tests_name(r.table.collective), r.table.ranks,
                                   first.file, first.line, algo::nccl_tests_name(first.collective), first.ranks));
  std::vector<std::uint64_t> sizes;
  std::vector<double> measured;
  std::string sources;
  for (const MeasuredRun& r : runs) {
    sources += fmt::format("{}{}:{}", sources.empty() ? "" : ", ",
                           r.table.file.substr(r.table.file.find_last_of('/') + 1), r.table.line);
    for (const Measured& m : r.points) {
      if (m.time_us <= 0)
        throw InputError(fmt::format("{}: size {} B has time 0: expected a measured time > 0", r.table.file, m.size));
      sizes.push_back(m.size);
      measured.push_back(m.time_us);
    }
  }
  const int nodes = a.topo.nodes.value_or(first.nodes);
  Cluster cluster(a.topo, nodes, first.collective, a.algorithm, a.channels, a.slice, sizes);
  if (cluster.topology().num_ranks() != first.ranks)
    throw InputError(fmt::format("{}:{}: {} ranks; {} x {} has {} GPUs (--topology, --nodes)", first.file, first.line,
                                 first.ranks, a.topo.topology, nodes, cluster.topology().num_ranks()));
  const bool network = cluster.has_network();

  out << fmt::format("# topocoll calibrate: {} x {} node{} ({} GPUs), {} sizes of {} from {} (out-of-place)\n",
                     a.topo.topology, nodes, nodes == 1 ? "" : "s", first.ranks, sizes.size(),
                     algo::nccl_tests_name(first.collective), sources);
  std::string algs;
  for (const auto& n : cluster.algorithm_names()) algs += (algs.empty() ? "" : ",") + n;
  out << fmt::format("# model: the fastest of {} per size, every protocol NCCL enables, {} channels (as sim)\n", algs,
                     cluster.channels());

  // The grid: device times of every parameter set, on the candidates the defaults make close.
  const sim::Calibration defaults = sim::base_calibration();
  const auto cands = cluster.candidates(defaults, kCandidateSlack);
  const std::vector<FitParams> grid = parameter_grid(network);
  std::vector<std::vector<double>> device;
  for (const FitParams& p : grid) device.push_back(cluster.device(with_params(defaults, p), cands));
  const std::vector<bool> all(sizes.size(), true);
  const GridFit fit = fit_on(device, measured, all);
  FitParams best = grid[fit.index];
  best.host_call_us = fit.host_us;
  out << fmt::format(
      "# fitted (grid search, least squares on ln time; {} parameter sets x host floor 0..500 us): nvlink efficiency "
      "{:.3f} (default {:.3f} by GPU generation), nvlink channel cap {}, {}per-call host floor {:.2f} us (default "
      "{:g})\n",
      grid.size(), best.nvlink_efficiency, 0.8,
      best.nvlink_channel_cap_gbps > 0 ? fmt::format("{:g} GB/s", best.nvlink_channel_cap_gbps) : "none (default none)",
      network ? fmt::format("network efficiency {:.3f} (default 0.95), ", best.network_efficiency)
              : "network efficiency not fitted (one node: no network; default 0.95 kept), ",
      best.host_call_us, sim::kHostCallUs);

  // Leave one size out: refit without it, predict it.
  std::vector<double> loo(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::vector<bool> use = all;
    use[i] = false;
    const GridFit f = fit_on(device, measured, use);
    loo[i] = std::max(device[f.index][i], f.host_us);
  }

  // Write the file, read it back as sim does, and simulate the measured sizes with it.
  {
    std::ofstream f(a.output);
    if (!f) throw InputError(fmt::format("-O {}: cannot open the file for writing", a.output));
    f << fitted_json(best, sources, network);
    if (!f.flush()) throw InputError(fmt::format("-O {}: write failed", a.output));
  }
  const sim::Calibration loaded = sim::load_calibration(a.output);
  std::vector<std::string> win_default, win_fitted;
  const std::vector<double> t_default = cluster.full(defaults, &win_default);
  const std::vector<double> t_fitted = cluster.full(loaded, &win_fitted);

  out << fmt::format("#{:>12} {:>11} {:>11} {:>8} {:>11} {:>8} {:>18} {:>11} {:>8}\n", "size", "measured", "default",
                     "err%", "fitted", "err%", "fitted choice", "leave-out", "err%");
  for (std::size_t i = 0; i < sizes.size(); ++i)
    out << fmt::format(" {:>12} {:>11.2f} {:>11.2f} {:>8.1f} {:>11.2f} {:>8.1f} {:>18} {:>11.2f} {:>8.1f}\n", sizes[i],
                       measured[i], t_default[i], pct(t_default[i], measured[i]), t_fitted[i],
                       pct(t_fitted[i], measured[i]), win_fitted[i], loo[i], pct(loo[i], measured[i]));
  out << fmt::format("# rms ln-time residual: default {:.4f}, fitted {:.4f}\n", rms_ln(t_default, measured),
                     rms_ln(t_fitted, measured));
  out << fmt::format("# median abs time error, default: {}\n", error_summary(sizes, t_default, measured));
  out << fmt::format("# median abs time error, fitted: {}\n", error_summary(sizes, t_fitted, measured));
  out << fmt::format("# median abs time error, leave-one-size-out: {}\n", error_summary(sizes, loo, measured));
  out << fmt::format("# wrote {}: topocoll sim --topology {} --nodes N --calibration {}\n", a.output, a.topo.topology,
                     a.output);

  // Predictions at the scale of other measurements, with the fitted file and with the defaults.
  for (const std::string& p : a.predict) {
    const MeasuredRun r = first_run(p, io);
    const int gpn = cluster.topology().num_ranks() / nodes;
    const int pn = r.table.hosts.empty() ? r.table.ranks / std::max(1, gpn) : r.table.nodes;
    std::vector<std::uint64_t> ps;
    std::vector<double> pm;
    for (const Measured& m : r.points) {
      ps.push_back(m.size);
      pm.push_back(m.time_us);
    }
    Cluster c(a.topo, pn, r.table.collective, a.algorithm, a.channels, a.slice, ps);
    if (c.topology().num_ranks() != r.table.ranks)
      throw InputError(fmt::format("{}:{}: {} ranks; {} x {} has {} GPUs", r.table.file, r.table.line, r.table.ranks,
                                   a.topo.topology, pn, c.topology().num_ranks()));
    std::vector<std::string> wd, wf;
    const std::vector<double> pd = c.full(defaults, &wd);
    const std::vector<double> pf = c.full(loaded, &wf);
    out << fmt::format("#\n# predict {}:{} ({} ranks, {} node{}{}): {} x {} with {} and with the defaults\n",
                       r.table.file, r.table.line, r.table.ranks, pn, pn == 1 ? "" : "s",
                       r.table.label.empty() ? "" : ", " + r.table.label, a.topo.topology, pn, a.output);
    out << fmt::format("#{:>12} {:>11} {:>11} {:>8} {:>11} {:>8} {:>18}\n", "size", "measured", "default", "err%",
                       "fitted", "err%", "fitted choice");
    for (std::size_t i = 0; i < ps.size(); ++i)
      out << fmt::format(" {:>12} {:>11.2f} {:>11.2f} {:>8.1f} {:>11.2f} {:>8.1f} {:>18}\n", ps[i], pm[i], pd[i],
                         pct(pd[i], pm[i]), pf[i], pct(pf[i], pm[i]), wf[i]);
    out << fmt::format("# predicted, median abs time error, default: {}\n", error_summary(ps, pd, pm));
    out << fmt::format("# predicted, median abs time error, fitted: {}\n", error_summary(ps, pf, pm));
  }
  return 0;
}

CLI::App* add_calibrate_command(CLI::App& app, CalibrateArgs& a,
                                void (*add_topology_flags)(CLI::App*, TopoArgs&, bool)) {
  CLI::App* c = app.add_subcommand(
      "calibrate", "fit the calibration to nccl-tests measurements; residuals, leave-one-size-out, prediction");
  add_topology_flags(c, a.topo, true);
  c->add_option("--from", a.from, "nccl-tests logs or calibration CSVs to fit (first table, out-of-place)")->required();
  c->add_option("-O,--calibration-out", a.output, "the calibration JSON to write (reads in sim --calibration)")
      ->required();
  c->add_option("--predict", a.predict, "logs to predict with the fit, at their own node count");
  c->add_option("--algorithm,-a", a.algorithm, "candidate algorithms (default ring,dbt,hierarchical for allreduce)");
  c->add_option("--channels", a.channels, "nccl (stock NCCL's) or 1 to 64")->default_val("nccl");
  c->add_option("--slice", a.slice, "pipelining slice in bytes")->default_val("512K");
  c->add_option("--collective", a.collective, "the collective when a log names none");
  c->add_option("--ranks", a.ranks, "the rank count when a log has no device lines");
  c->footer(R"(
Examples:
  topocoll calibrate --topology dgx-a100 --from experiments/calibration/data/stas00-a100-1node.csv -O a100.json \
      --predict experiments/calibration/data/alcf-sophia-dgx-a100-2node.csv
  topocoll sim --topology dgx-a100 --nodes 16 --calibration a100.json
Method: docs/simulator.md, "Calibrating from measurements".)");
  return c;
}

}  // namespace topocoll::tools
