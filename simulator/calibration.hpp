// Calibration: what software achieves on the hardware the topology describes. Data, not code:
// defaults are public facts (sources in docs/simulator.md and below), and a JSON file can
// override any field (`topocoll sim --calibration FILE`). Never fitted to one data point.
#pragma once

#include <array>
#include <string>

#include "topologies/topology.hpp"

namespace topocoll::sim {

enum class Protocol { LL, LL128, Simple };

struct LinkCalibration {
  double efficiency = 1.0;      // fraction of the link's rate a transfer gets (protocol, headers)
  double extra_latency_us = 0;  // added to the link's own latency
  // NVLink only: take the efficiency from the GPU's generation, NCCL's effective per-link rate
  // over the vendor's (sm80: 20/25, sm90: 20.6/25, sm100: 40.1/50); `efficiency` when the sm is
  // unknown. On by default; a calibration file that sets links.nvlink.efficiency turns it off.
  bool by_gpu_generation = false;
};

struct Calibration {
  // Per link kind (topo::LinkKind order: nvlink, pcie, c2c, inter_socket, network).
  std::array<LinkCalibration, 5> links;
  // One channel (one CUDA block in NCCL) cannot fill a fast port: a transfer of one channel
  // runs at most at this rate, per link kind (GB/s). 0 = no cap.
  std::array<double, 5> channel_cap_gbps{};
  // Fixed cost of one operation (a send / recv step) on the GPU: kernel-side work per step.
  double step_overhead_us = 0.0;
  // Launch cost of one collective call (kernel launch, proxy wake-up).
  double launch_overhead_us = 0.0;
  // GPU reduction throughput (bytes reduced per second per channel, GB/s) for local reduce ops.
  double reduce_gbps = 0.0;  // 0 = free
  std::string source;        // "defaults" or the file it came from

  const LinkCalibration& of(topo::LinkKind k) const { return links[static_cast<std::size_t>(k)]; }
  // The calibrated rate of one link, bytes per second per direction. Every engine uses this.
  double rate_bytes_per_s(const topo::Graph& g, topo::Edge e) const;
  double cap(topo::LinkKind k) const { return channel_cap_gbps[static_cast<std::size_t>(k)]; }
};

// The defaults (sources in calibration.cpp and docs/simulator.md).
Calibration default_calibration();
// An ideal machine: every efficiency 1, no caps, no overheads (closed-form tests).
Calibration ideal_calibration();
// Reads a JSON calibration; fields not in the file keep their defaults. Throws InputError with
// the file, the key and what was expected.
Calibration load_calibration(const std::string& path);
Calibration parse_calibration(const std::string& text, const std::string& source);

}  // namespace topocoll::sim
