// One simulated point, written once for every driver (`topocoll sim`, `topocoll exp run`):
// a schedule run under each protocol the calibration enables, the fastest kept, as a record
// (common/records.hpp); the stock-NCCL model's row for a size; the channels stock NCCL runs with.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/ir/schedule.hpp"
#include "algorithms/registry.hpp"
#include "common/records.hpp"
#include "simulator/calibration.hpp"
#include "simulator/engine.hpp"
#include "simulator/nccl_model.hpp"
#include "topologies/topology.hpp"

namespace topocoll::sim {

// The protocols a sweep simulates, in LL, LL128, Simple order, each with the calibration derived
// from the base one (protocol_calibration).
struct ProtocolSet {
  std::vector<Protocol> protocols;
  std::vector<Calibration> calibrations;
};

// `requested`: "" (the calibration's "protocol", else auto) | "auto" (every protocol NCCL would
// enable on this topology) | "LL" | "LL128" | "Simple"; `what` names the flag or key in errors.
ProtocolSet protocol_set(const NcclGraphEstimate& nccl, const Calibration& base, const std::string& requested,
                         const std::string& what);

// The fields every simulated record of one topology shares: kind "simulated", the engine, the
// topology as the user named it, its nodes, fabric, oversubscription and ranks, the reduction,
// the slice, the calibration, the version and the machine. The caller adds dtype and date.
records::Record simulated_base(const topo::Topology& t, const std::string& engine, const std::string& topology,
                               algo::ReduceOp op, std::uint64_t slice_bytes, const std::string& calibration);

struct SimulatedPoint {
  records::Record record;  // base + algorithm, size, count, dtype, channels, time, algbw, busbw, protocol
  SimResult result;        // the fastest protocol's run (with its trace when SimOptions::trace)
};

// Runs `schedule` (generated for a call nccl-tests reports as `bytes` bytes, the larger buffer of
// a rank, with `count` elements of `dtype` per rank: algo::nccl_tests_bytes and CollectiveArgs::count)
// on every protocol of `protocols`; the fastest wins (the first on a tie). The record's time is
// max(engine time, the calibration's host_call_us): a call costs the host at least that (the
// engine time is kept as device_time_us). The record's collective is the schedule's; busbw uses
// nccl-tests' factor of that collective for t's ranks (algo::busbw_factor).
SimulatedPoint simulate_point(Engine& engine, const topo::Topology& t, const algo::Schedule& schedule,
                              const ProtocolSet& protocols, const records::Record& base, const std::string& algorithm,
                              std::uint64_t bytes, std::uint64_t count, algo::DataType dtype,
                              const SimOptions& options = {});

// How many channels a point's schedule gets: `channels` for every call, or, with per_call (what
// `--channels nccl` asks), for each protocol the count NCCL gives a call of that size and
// protocol (nccl_call_channels: Ring's rule for pipeline schedules, Tree's when every channel of
// the schedule is a tree), at most `channels`. Schedules with in-network reduction keep
// `channels`.
struct ChannelRule {
  int channels = 2;
  bool per_call = false;
};

// The schedule of the point's algorithm at a channel count (the caller's generator with its
// layout, call and tuning, the channels replaced).
using ScheduleMaker = std::function<algo::Schedule(int channels)>;

// The maker of a registered algorithm's schedules for one call: alg.generate(layout, args, tuning)
// with tuning.channels replaced. It refers to its arguments, which must outlive it.
ScheduleMaker schedule_maker(const algo::Algorithm& alg, const algo::Layout& layout, const algo::CollectiveArgs& args,
                             const algo::Tuning& tuning);

// simulate_point for a generated algorithm: make(rule.channels) alone when the rule is fixed;
// with per_call, one schedule per distinct channel count of the protocols (the full one reused),
// each run under its protocols, the fastest kept (the first in LL, LL128, Simple order on a tie).
// The record's channels are the winning run's.
SimulatedPoint simulate_point(Engine& engine, const topo::Topology& t, const ScheduleMaker& make,
                              const ChannelRule& rule, const NcclGraphEstimate& nccl, const ProtocolSet& protocols,
                              const records::Record& base, const std::string& algorithm, std::uint64_t bytes,
                              std::uint64_t count, algo::DataType dtype, const SimOptions& options = {});

// The channels each protocol of `protocols` runs `s` with under `rule` for a call of `bytes`
// (the rule above; s is the schedule at rule.channels).
std::vector<int> protocol_channels(const NcclGraphEstimate& nccl, const ProtocolSet& protocols, const algo::Schedule& s,
                                   const ChannelRule& rule, std::uint64_t bytes);

// Stock NCCL's choice for the call nccl-tests runs at `-b bytes` of `collective` (sizes and counts
// by algo::nccl_tests_args: the record's size_bytes is nccl_tests_bytes of it) by its own tuning
// model, as a record of kind "model", engine "nccl-model", algorithm "nccl:<algo>/<proto>",
// channels the ring graph's, nccl_channels the channels NCCL runs its choice with, nccl_version
// the release modelled. The release and NCCL environment are the estimate's
// (NcclGraphEstimate::options). InputError for all-to-all (no model) as nccl_choice.
records::Record nccl_model_point(const NcclGraphEstimate& nccl, const records::Record& base, std::uint64_t bytes,
                                 algo::DataType dtype, algo::Collective collective = algo::Collective::AllReduce,
                                 algo::ReduceOp op = algo::ReduceOp::Sum);

// The channels stock NCCL runs Ring and Tree with on the topology: comm->nChannels after
// ncclTopoPostset (comm_channels), at most MAXCHANNELS of the estimate's release (32 or 64).
int nccl_channels(const NcclGraphEstimate& nccl);

}  // namespace topocoll::sim
