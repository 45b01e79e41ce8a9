#include "simulator/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
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

SimulatedPoint simulate_point(Engine& engine, const topo::Topology& t, const algo::Schedule& schedule,
                              const ProtocolSet& protocols, const records::Record& base, const std::string& algorithm,
                              std::uint64_t bytes, std::uint64_t count, algo::DataType dtype,
                              const SimOptions& options) {
  SimulatedPoint p;
  // Every protocol; the fastest wins (the first in LL, LL128, Simple order on a tie). Schedules
  // with in-network reduction run Simple only, as NCCL's NVLS, NVLSTree and CollNet do
  // (tuning.cc: those algorithms get no LL / LL128 entry; the multimem and SHARP paths move
  // whole buffers, not flagged lines).
  const bool simple_only = schedule.uses_switch();
  if (simple_only &&
      std::find(protocols.protocols.begin(), protocols.protocols.end(), Protocol::Simple) == protocols.protocols.end())
    throw InputError(
        fmt::format("{}: in-network reduction runs the Simple protocol only (as NCCL's NVLS and "
                    "CollNet); the protocols asked exclude it",
                    algorithm));
  std::vector<const Calibration*> runs;
  std::vector<std::size_t> index;  // of each run in protocols
  for (std::size_t i = 0; i < protocols.calibrations.size(); ++i) {
    if (simple_only && protocols.protocols[i] != Protocol::Simple) continue;
    runs.push_back(&protocols.calibrations[i]);
    index.push_back(i);
  }
  std::size_t run_won = 0;
  p.result = engine.run_fastest(t, schedule, runs, options, run_won);
  const std::size_t won = index[run_won];
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
