// `topocoll calibrate --topology T --from LOG... -O calib.json`: fits the few free parameters of
// the simulator's calibration (simulator/calibration.hpp) to a cluster's nccl-tests measurements,
// prints the residuals per size and a leave-one-size-out error, writes a calibration file that
// `sim --calibration` reads, and with --predict LOG compares the fitted model with a measurement
// at another scale. Method and parameters: docs/simulator.md, "Calibrating from measurements".
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "tools/topo_commands.hpp"

namespace CLI {
class App;
}

namespace topocoll::tools {

struct CalibrateArgs {
  TopoArgs topo;
  std::vector<std::string> from;     // logs to fit (the first table of each, out-of-place)
  std::string output;                // -O: the calibration JSON
  std::vector<std::string> predict;  // logs to predict with the fit (their own node count)
  std::string algorithm;             // candidates; "" = ring,dbt,hierarchical (allreduce), else all
  std::string channels = "nccl";
  std::string slice = "512K";
  std::string collective;  // when a log names none
  int ranks = 0;           // when a log does not tell
};

// One fitted parameter set: what the grid search chose.
struct FitParams {
  double nvlink_efficiency = 0.0;   // 0: not fitted (default kept)
  double network_efficiency = 0.0;  // 0: not fitted
  double nvlink_channel_cap_gbps = 0.0;
  double host_call_us = 0.0;
};

// The per-call host floor that minimises sum (ln max(d_i, h) - ln m_i)^2 over `use` (device
// times d, measured times m), searched over [0, 500] us in 0.25 us steps; the smallest on a tie.
// Returns {h, the sum}.
std::pair<double, double> best_host_floor(const std::vector<double>& device_us, const std::vector<double>& measured_us,
                                          const std::vector<bool>& use);

// Median of |x|; 0 for none.
double median_abs(std::vector<double> x);

int calibrate_command(const CalibrateArgs& a, std::ostream& out);
// `topocoll calibrate`: its flags on `app`; `add_topology_flags` adds --topology and the rest.
CLI::App* add_calibrate_command(CLI::App& app, CalibrateArgs& a,
                                void (*add_topology_flags)(CLI::App*, TopoArgs&, bool));

}  // namespace topocoll::tools
