#include "simulator/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "algorithms/registry.hpp"
#include "common/errors.hpp"

namespace topocoll::sim {

namespace {

double algbw_gbps(std::uint64_t bytes, double time_s) {
  return time_s > 0 ? static_cast<double>(bytes) / time_s / 1e9 : 0.0;
}

}  // namespace

ProtocolSet protocol_set(const NcclGraphEstimate& nccl, const Calibration& base, const std::string& requested,
                         const std::string& what) {
  ProtocolSet set;
  set.protocols = select_protocols(nccl, base, requested, what);
  // Each protocol's calibration, with the block caps of NCCL's kernels for these GPUs and nodes.
  for (Protocol p : set.protocols)
    set.calibrations.push_back(with_block_caps(protocol_calibration(base, p), nccl.sm, nccl.nodes));
  return set;
}

records::Record simulated_base(const topo::Topology& t, const std::string& engine, const std::string& topology,
                               algo::ReduceOp op, std::uint64_t slice_bytes, const std::string& calibration) {
  records::Record base;
  base.kind = "simulated";
  base.engine = engine;
  base.topology = topology;
  base.nodes = t.nodes();
  base.fabric = t.fabric() ? std::string(topo::to_string(t.fabric()->kind)) : "";
  base.oversubscription = t.fabric() ? t.fabric()->oversubscription : 1.0;
  base.ranks = t.num_ranks();
  base.op = std::string(algo::to_string(op));
  base.slice_bytes = slice_bytes;
  base.calibration = calibration;
  base.version = TOPOCOLL_VERSION;
  base.machine = records::hostname();
  return base;
}

namespace {

// Schedules with in-network reduction run Simple only, as NCCL's NVLS, NVLSTree and CollNet do
// (tuning.cc: those algorithms get no LL / LL128 entry; the multimem and SHARP paths move whole
// buffers, not flagged lines). InputError when the protocols asked exclude Simple.
void check_switch_protocols(const algo::Schedule& schedule, const ProtocolSet& protocols,
                            const std::string& algorithm) {
  if (schedule.uses_switch() &&
      std::find(protocols.protocols.begin(), protocols.protocols.end(), Protocol::Simple) == protocols.protocols.end())
    throw InputError(
        fmt::format("{}: in-network reduction runs the Simple protocol only (as NCCL's NVLS and "
                    "CollNet); the protocols asked exclude it",
                    algorithm));
}

// Runs `schedule` under the protocols of `protocols` that `take` admits (indices into it); the
// fastest's index in protocols goes to `won`.
SimResult run_protocols(Engine& engine, const topo::Topology& t, const algo::Schedule& schedule,
                        const ProtocolSet& protocols, const std::vector<std::size_t>& take, const SimOptions& options,
                        std::size_t& won) {
  std::vector<const Calibration*> runs;
  for (std::size_t i : take) runs.push_back(&protocols.calibrations[i]);
  std::size_t run_won = 0;
  SimResult r = engine.run_fastest(t, schedule, runs, options, run_won);
  won = take[run_won];
  return r;
}

// The protocols a schedule runs under: all, or Simple alone for in-network reduction.
std::vector<std::size_t> admitted(const algo::Schedule& schedule, const ProtocolSet& protocols) {
  std::vector<std::size_t> take;
  for (std::size_t i = 0; i < protocols.protocols.size(); ++i)
    if (!schedule.uses_switch() || protocols.protocols[i] == Protocol::Simple) take.push_back(i);
  return take;
}

// The record of a point from its fastest run (protocol `won` of protocols).
SimulatedPoint finish_point(SimResult result, std::size_t won, const algo::Schedule& schedule, const topo::Topology& t,
                            const ProtocolSet& protocols, const records::Record& base, const std::string& algorithm,
                            std::uint64_t bytes, std::uint64_t count, algo::DataType dtype) {
  SimulatedPoint p;
  p.result = std::move(result);
  const algo::Collective collective = schedule.args().collective;
  const double factor = algo::busbw_factor(collective, t.num_ranks());
  records::Record& rec = p.record;
  rec = base;
  rec.collective = std::string(algo::to_string(collective));
  rec.algorithm = algorithm;
  rec.dtype = std::string(algo::to_string(dtype));
  rec.size_bytes = bytes;
  rec.count = count;
  rec.channels = schedule.num_channels();
  // The per-call host floor (Calibration::host_call_us): a call takes max(host, device).
  const double device_s = p.result.time_s;
  const double time_s = std::max(device_s, protocols.calibrations[won].host_call_us * 1e-6);
  rec.device_time_us = device_s * 1e6;
  rec.time_us = time_s * 1e6;
  rec.algbw_gbps = algbw_gbps(bytes, time_s);
  rec.busbw_gbps = rec.algbw_gbps * factor;
  rec.protocol = std::string(to_string(protocols.protocols[won]));
  return p;
}

}  // namespace

SimulatedPoint simulate_point(Engine& engine, const topo::Topology& t, const algo::Schedule& schedule,
                              const ProtocolSet& protocols, const records::Record& base, const std::string& algorithm,
                              std::uint64_t bytes, std::uint64_t count, algo::DataType dtype,
                              const SimOptions& options) {
  // Every protocol; the fastest wins (the first in LL, LL128, Simple order on a tie).
  check_switch_protocols(schedule, protocols, algorithm);
  std::size_t won = 0;
  SimResult r = run_protocols(engine, t, schedule, protocols, admitted(schedule, protocols), options, won);
  return finish_point(std::move(r), won, schedule, t, protocols, base, algorithm, bytes, count, dtype);
}

ScheduleMaker schedule_maker(const algo::Algorithm& alg, const algo::Layout& layout, const algo::CollectiveArgs& args,
                             const algo::Tuning& tuning) {
  return [&alg, &layout, &args, &tuning](int channels) {
    algo::Tuning at = tuning;
    at.channels = channels;
    return alg.generate(layout, args, at);
  };
}

std::vector<int> protocol_channels(const NcclGraphEstimate& nccl, const ProtocolSet& protocols, const algo::Schedule& s,
                                   const ChannelRule& rule, std::uint64_t bytes) {
  std::vector<int> out(protocols.protocols.size(), rule.channels);
  if (!rule.per_call || s.uses_switch()) return out;
  bool tree = s.num_channels() > 0;
  for (int c = 0; c < s.num_channels(); ++c) tree = tree && s.pattern(c) == algo::ChannelPattern::Tree;
  const NcclAlgo a = tree ? NcclAlgo::Tree : NcclAlgo::Ring;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto p = static_cast<NcclProto>(static_cast<int>(protocols.protocols[i]));
    out[i] = std::clamp(nccl_call_channels(nccl, a, p, bytes), 1, rule.channels);
  }
  return out;
}

SimulatedPoint simulate_point(Engine& engine, const topo::Topology& t, const ScheduleMaker& make,
                              const ChannelRule& rule, const NcclGraphEstimate& nccl, const ProtocolSet& protocols,
                              const records::Record& base, const std::string& algorithm, std::uint64_t bytes,
                              std::uint64_t count, algo::DataType dtype, const SimOptions& options) {
  const algo::Schedule full = make(rule.channels);
  if (!rule.per_call) return simulate_point(engine, t, full, protocols, base, algorithm, bytes, count, dtype, options);
  check_switch_protocols(full, protocols, algorithm);
  const std::vector<int> channels = protocol_channels(nccl, protocols, full, rule, bytes);
  const std::vector<std::size_t> take = admitted(full, protocols);
  // One run per distinct channel count, narrowest (cheapest) first, so that its exact time
  // bounds the wider counts' walks; a tie goes to the earlier protocol.
  std::vector<int> counts;
  for (std::size_t i : take)
    if (std::find(counts.begin(), counts.end(), channels[i]) == counts.end()) counts.push_back(channels[i]);
  std::sort(counts.begin(), counts.end());
  std::optional<algo::Schedule> best_schedule;
  SimResult best;
  std::size_t best_won = 0;
  for (int nc : counts) {
    std::vector<std::size_t> group;
    for (std::size_t i : take)
      if (channels[i] == nc) group.push_back(i);
    algo::Schedule s = nc == rule.channels ? full : make(nc);
    // A group whose runs all lie above the best so far need not finish (SimOptions).
    SimOptions o = options;
    if (best_schedule) o.faster_than_s = best.time_s;
    std::size_t won = 0;
    SimResult r = run_protocols(engine, t, s, protocols, group, o, won);
    if (!std::isfinite(r.time_s)) continue;
    if (!best_schedule || r.time_s < best.time_s || (r.time_s == best.time_s && won < best_won)) {
      best = std::move(r);
      best_won = won;
      best_schedule = std::move(s);
    }
  }
  return finish_point(std::move(best), best_won, *best_schedule, t, protocols, base, algorithm, bytes, count, dtype);
}

records::Record nccl_model_point(const NcclGraphEstimate& nccl, const records::Record& base, std::uint64_t bytes,
                                 algo::DataType dtype, algo::Collective collective, algo::ReduceOp op) {
  const algo::CollectiveArgs args = algo::nccl_tests_args(collective, bytes, dtype, op, base.ranks);
  const std::uint64_t size = algo::nccl_tests_bytes(args);
  const NcclPrediction pick = nccl_choice(nccl, size, collective, op);
  const double factor = algo::busbw_factor(collective, base.ranks);
  records::Record rec = base;
  rec.kind = "model";
  rec.engine = "nccl-model";
  rec.collective = std::string(algo::to_string(collective));
  rec.algorithm = fmt::format("nccl:{}/{}", pick.algorithm, pick.protocol);
  rec.dtype = std::string(algo::to_string(dtype));
  rec.size_bytes = size;
  rec.count = args.count;
  rec.channels = nccl.channels;
  rec.nccl_channels = pick.channels;
  rec.nccl_version = std::string(to_string(nccl.options.version));
  rec.time_us = pick.time_us;
  rec.protocol = pick.protocol;
  rec.algbw_gbps = algbw_gbps(size, pick.time_us * 1e-6);
  rec.busbw_gbps = rec.algbw_gbps * factor;
  return rec;
}

int nccl_channels(const NcclGraphEstimate& nccl) {
  const int max_channels = nccl_tuning_tables(nccl.options.version).max_channels;
  return std::min(max_channels, nccl.comm_channels > 0 ? nccl.comm_channels : 2 * nccl.channels);
}

}  // namespace topocoll::sim
