// `topocoll advise --topology T`: one screen of advice for a stock NCCL job on the topology: per
// size range the fastest algorithm and protocol the simulator finds (topocoll tune's choices,
// tools/tune_command.hpp), what stock NCCL picks by its own model (simulator/nccl_model.hpp), the
// speed-up, the NCCL environment that gets a stock job there, and the topology's diagnostics
// (topocoll topo check). docs/tuner.md, "Advice for a stock job".
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "tools/tune_command.hpp"

namespace CLI {
class App;
}

namespace topocoll::tools {

struct AdviseArgs {
  TopoArgs topo;
  std::string collective = "allreduce";
  std::string min_bytes = "8", max_bytes = "1G";
  std::string calibration;
};

// One size range of the advice: consecutive sizes with the same fastest choice.
struct AdviceRange {
  std::uint64_t from = 0, to = 0;             // the first and last size of the sweep in it
  TunedPoint fastest;                         // at the range's last size
  std::string nccl_algorithm, nccl_protocol;  // stock NCCL's pick at the last size
  int nccl_channels = 0;
  double speedup = 1.0;  // geometric mean over the range of max(NCCL model, host floor) / fastest
  bool same_as_stock = false;
};

// The ranges of `points` (ascending) against stock NCCL's picks `stock` (one per point) and the
// host floor.
std::vector<AdviceRange> advice_ranges(const std::vector<TunedPoint>& points,
                                       const std::vector<sim::NcclPrediction>& stock, double host_floor_us);

// Below this speed-up over stock NCCL a range keeps stock NCCL's choice: the model's error is larger.
inline constexpr double kWorthwhileSpeedup = 1.05;

// The NCCL environment that makes stock NCCL run `r.fastest` (NCCL_ALGO, NCCL_PROTO, and the
// channels when they differ from `stock_channels`): empty when it already does, or when the
// range's speed-up is below kWorthwhileSpeedup.
std::string nccl_environment(const AdviceRange& r, int stock_channels);

int advise_command(const AdviseArgs& a, std::ostream& out);
CLI::App* add_advise_command(CLI::App& app, AdviseArgs& a, void (*add_topology_flags)(CLI::App*, TopoArgs&, bool));

}  // namespace topocoll::tools
