#include "tools/advise_command.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include "common/cli_io.hpp"
#include "common/errors.hpp"
#include "simulator/calibration.hpp"
#include "simulator/nccl_model.hpp"
#include "simulator/sweep.hpp"
#include "tools/algo_commands.hpp"
#include "topologies/load.hpp"

namespace topocoll::tools {

namespace {

// NCCL_ALGO's spelling of a tuner algorithm (NCCL parses it case-insensitively).
std::string nccl_algo_env(tuner::Algorithm a) {
  switch (a) {
    case tuner::Algorithm::Tree:
      return "Tree";
    case tuner::Algorithm::Ring:
      return "Ring";
    case tuner::Algorithm::CollNetDirect:
      return "CollnetDirect";
    case tuner::Algorithm::CollNetChain:
      return "CollnetChain";
    case tuner::Algorithm::Nvls:
      return "NVLS";
    case tuner::Algorithm::NvlsTree:
      return "NVLSTree";
    case tuner::Algorithm::Pat:
      return "PAT";
  }
  return "";
}

std::string nccl_proto_env(tuner::Protocol p) {
  return p == tuner::Protocol::Simple ? "Simple" : std::string(tuner::to_string(p));
}

// Names compared as NCCL compares them: case and underscores ignored.
std::string folded(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string human(std::uint64_t b) {
  const char* units[] = {"B", "K", "M", "G", "T"};
  int u = 0;
  double x = static_cast<double>(b);
  while (x >= 1024 && u < 4) {
    x /= 1024;
    ++u;
  }
  return fmt::format("{:g}{}", x, units[u]);
}

}  // namespace

std::vector<AdviceRange> advice_ranges(const std::vector<TunedPoint>& points,
                                       const std::vector<sim::NcclPrediction>& stock, double host_floor_us) {
  std::vector<AdviceRange> out;
  double log_sum = 0.0;
  int n = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const TunedPoint& p = points[i];
    const bool same_choice = !out.empty() && out.back().fastest.nccl_algorithm == p.nccl_algorithm &&
                             out.back().fastest.protocol == p.protocol && out.back().fastest.channels == p.channels;
    if (!same_choice) {
      if (!out.empty()) out.back().speedup = std::exp(log_sum / n);
      out.push_back({p.bytes, p.bytes, p, "", "", 0, 1.0, false});
      log_sum = 0.0;
      n = 0;
    }
    AdviceRange& r = out.back();
    r.to = p.bytes;
    r.fastest = p;
    r.nccl_algorithm = stock[i].algorithm;
    r.nccl_protocol = stock[i].protocol;
    r.nccl_channels = stock[i].channels;
    r.same_as_stock = folded(stock[i].algorithm) == folded(std::string(tuner::to_string(p.nccl_algorithm))) &&
                      folded(stock[i].protocol) == folded(std::string(tuner::to_string(p.protocol)));
    log_sum += std::log(std::max(stock[i].time_us, host_floor_us) / p.time_us);
    ++n;
  }
  if (!out.empty()) out.back().speedup = std::exp(log_sum / n);
  return out;
}

std::string nccl_environment(const AdviceRange& r, int stock_channels) {
  if (r.speedup < kWorthwhileSpeedup) return "";
  std::string env;
  if (!r.same_as_stock)
    env = fmt::format("NCCL_ALGO={} NCCL_PROTO={}", nccl_algo_env(r.fastest.nccl_algorithm),
                      nccl_proto_env(r.fastest.protocol));
  if (r.fastest.channels != stock_channels)
    env += fmt::format("{}NCCL_MIN_NCHANNELS={} NCCL_MAX_NCHANNELS={}", env.empty() ? "" : " ", r.fastest.channels,
                       r.fastest.channels);
  return env;
}

int advise_command(const AdviseArgs& a, std::ostream& out) {
  if (parse_collective_flag(a.collective, "--collective") != algo::Collective::AllReduce)
    throw InputError(fmt::format("--collective {}: advise covers allreduce (what topocoll tune tunes)",
                                 cli::one_line(a.collective)));
  TuneArgs ta;
  ta.topo = a.topo;
  ta.min_bytes = a.min_bytes;
  ta.max_bytes = a.max_bytes;
  ta.factor = "2";
  ta.calibration = a.calibration;
  topo::TopologyOptions o = topology_options(a.topo);
  o.merge_nvswitch_planes = true;
  const topo::Topology t = topo::load_topology(o);
  const sim::NcclGraphEstimate nccl = sim::estimate_nccl_graph(t, sim::NcclModelOptions{});
  const sim::Calibration calib = a.calibration.empty() ? sim::base_calibration() : sim::load_calibration(a.calibration);
  const std::vector<TunedPoint> points = tune_points(ta, t, nccl, calib);
  std::vector<sim::NcclPrediction> stock;
  for (const TunedPoint& p : points) stock.push_back(sim::nccl_choice(nccl, p.bytes));
  const int stock_channels = sim::nccl_channels(nccl);
  const std::vector<AdviceRange> ranges = advice_ranges(points, stock, calib.host_call_us);

  out << fmt::format("# topocoll advise: {} x {} node{} ({} GPUs), allreduce {} .. {}, calibration {}\n",
                     a.topo.topology, t.nodes(), t.nodes() == 1 ? "" : "s", t.num_ranks(), human(points.front().bytes),
                     human(points.back().bytes), calib.source);
  out << fmt::format(
      "# fastest: the simulator's (as topocoll tune); stock: NCCL {}'s own model, {} channels; speed-up = "
      "max(stock, host floor {:g} us) / fastest, geometric mean over the range\n",
      sim::to_string(nccl.options.version), stock_channels, calib.host_call_us);
  out << fmt::format("#{:>16} {:>22} {:>18} {:>9}  {}\n", "sizes", "fastest", "stock NCCL", "speed-up",
                     "NCCL environment for a stock job");
  bool any_env = false;
  for (const AdviceRange& r : ranges) {
    const std::string env = nccl_environment(r, nccl_channels_for(r.fastest.nccl_algorithm, nccl));
    any_env = any_env || !env.empty();
    out << fmt::format(
        " {:>16} {:>22} {:>18} {:>8.2f}x  {}\n",
        r.from == r.to ? human(r.from) : fmt::format("{}-{}", human(r.from), human(r.to)),
        fmt::format("{}/{} x{}", r.fastest.algorithm, nccl_proto_env(r.fastest.protocol), r.fastest.channels),
        fmt::format("{}/{} x{}", r.nccl_algorithm, r.nccl_protocol, r.nccl_channels), r.speedup,
        !env.empty()                     ? env
        : r.speedup < kWorthwhileSpeedup ? "(keep stock NCCL: no gain by the model)"
                                         : "(stock NCCL already runs it)");
  }
  if (any_env)
    out << "# NCCL_ALGO / NCCL_PROTO / channels hold for every size of a job: set them for the range a job's calls "
           "fall in, or give every range its choice with the tuner plugin: topocoll tune (docs/tuner.md)\n";
  out << "# NCCL_BUFFSIZE, NCCL_IB_QPS_PER_CONNECTION: no advice (the model has no term they change)\n";
  out << "#\n# topology diagnostics (topocoll topo check):\n";
  std::ostringstream check;
  topo_check(a.topo, check);
  std::istringstream lines(check.str());
  for (std::string l; std::getline(lines, l);) out << "#   " << l << "\n";
  write_topology_notes(t, std::cerr);
  return 0;
}

CLI::App* add_advise_command(CLI::App& app, AdviseArgs& a, void (*add_topology_flags)(CLI::App*, TopoArgs&, bool)) {
  CLI::App* c = app.add_subcommand(
      "advise", "per size range: the fastest algorithm, stock NCCL's pick, the speed-up, the NCCL environment");
  add_topology_flags(c, a.topo, true);
  c->add_option("--collective", a.collective, "allreduce (what topocoll tune tunes)")->default_val("allreduce");
  c->add_option("-b,--minbytes", a.min_bytes, "smallest size")->default_val("8");
  c->add_option("-e,--maxbytes", a.max_bytes, "largest size")->default_val("1G");
  c->add_option("--calibration", a.calibration, "calibration JSON file (topocoll calibrate writes one)");
  c->footer(R"(
Examples:
  topocoll advise --topology dgx-a100 --nodes 2
  topocoll advise --topology pcie-8gpu --calibration my-cluster.json
docs/tuner.md, "Advice for a stock job".)");
  return c;
}

}  // namespace topocoll::tools
