// `topocoll tune`: the tuner table for NCCL (docs/tuner.md). For each size of a sweep, the
// algorithms that have an NCCL counterpart are simulated under every protocol NCCL would enable;
// the fastest, as NCCL's algorithm / protocol / channels, is written per size range, for the
// plugin libnccl-tuner-topocoll.so (--format topocoll) or NCCL's example tuner (nccl-example).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "plugins/nccl_tuner/tuner_table.hpp"
#include "simulator/calibration.hpp"
#include "simulator/nccl_model.hpp"
#include "tools/topo_commands.hpp"

namespace topocoll::tools {

struct TuneArgs {
  TopoArgs topo;
  // Candidates: "all" (every algorithm of nccl_counterparts NCCL would enable here) or a comma
  // list of them (each must be runnable here: an error otherwise).
  std::string algorithm = "all";
  std::string min_bytes = "8", max_bytes = "1G", factor = "2";
  // "nccl": each algorithm with the channels stock NCCL gives it (nccl_channels_for); or 1..64.
  std::string channels = "nccl";
  std::string slice = "512K";
  std::string engine = "analytic";
  std::string calibration;
  std::string protocol = "auto";        // auto | LL | LL128 | Simple (sim::protocol_set)
  std::string format = "topocoll";      // topocoll | nccl-example | nccl-csv (optimize_config.py's input)
  std::string output;                   // the table; none or "-": stdout (and no summary)
  std::string nccl_version = "2.28.9";  // the NCCL model's release (which algorithms NCCL enables)
  std::vector<std::string> nccl_env;    // KEY=VALUE for the NCCL model, as `sim --nccl-env`
};

// topocoll's algorithms that NCCL runs too, in the order they are tried (the first wins a tie):
// ring = RING, dbt = TREE, nvls = NVLS, nvls-tree = NVLS_TREE, collnet = COLLNET_DIRECT (SHARP
// per rail, one network head per GPU, as CollNet Direct's one head per NIC).
struct NcclCounterpart {
  std::string_view algorithm;
  tuner::Algorithm nccl;
};
const std::vector<NcclCounterpart>& nccl_counterparts();
std::optional<tuner::Algorithm> nccl_counterpart(std::string_view algorithm);

// Why NCCL would not run `a` on this topology with this environment ("" when it would):
// NVLS / NVLS_TREE need nvlsSupport, CollNet needs collNetSupport (NCCL_COLLNET_ENABLE=1 and a
// network that reduces).
std::string nccl_disables(tuner::Algorithm a, const sim::NcclGraphEstimate& nccl);

// The channels stock NCCL runs `a` with: comm->nvlsChannels for NVLS / NVLS_TREE, the CollNet
// Direct graph's for COLLNET_DIRECT, comm->nChannels (sim::nccl_channels) otherwise.
int nccl_channels_for(tuner::Algorithm a, const sim::NcclGraphEstimate& nccl);

tuner::Protocol nccl_protocol(sim::Protocol p);

// The fastest candidate at one size of the sweep.
struct TunedPoint {
  std::uint64_t bytes = 0;
  std::string algorithm;  // topocoll's name
  tuner::Algorithm nccl_algorithm = tuner::Algorithm::Ring;
  tuner::Protocol protocol = tuner::Protocol::Simple;
  int channels = 1;
  double time_us = 0.0;
};

// The table rows of one collective: consecutive points with the same algorithm, protocol and
// channels merged; a point's range runs from its size to just below the next point's, the first
// from 0 and the last to the largest size NCCL can ask (2^64 - 1). `points` ascend by bytes.
std::vector<tuner::Row> table_rows(const std::vector<TunedPoint>& points, tuner::Collective collective, int nodes,
                                   int ranks);

int tune_command(const TuneArgs& a, std::ostream& out);

// What `tune_command` computes for its table, for other commands (`topocoll advise`): the fastest
// candidate of `a.algorithm` at each size of a's sweep, allreduce, on `t` with calibration `calib`
// (a base calibration) and NCCL estimate `nccl`.
std::vector<TunedPoint> tune_points(const TuneArgs& a, const topo::Topology& t, const sim::NcclGraphEstimate& nccl,
                                    const sim::Calibration& calib);

}  // namespace topocoll::tools
