// Calibration: what software achieves on the hardware the topology describes. Data, not code:
// defaults are public facts (sources in docs/simulator.md and below), and a JSON file can
// override any field (`topocoll sim --calibration FILE`). Never fitted to one data point.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/ir/schedule.hpp"
#include "topologies/topology.hpp"

namespace topocoll::sim {

// NCCL's protocols (src/device/prims_{ll,ll128,simple}.h). A protocol is not an engine feature:
// it is a Calibration derived from the base one (protocol_calibration below).
enum class Protocol { LL, LL128, Simple };
std::string_view to_string(Protocol p);
std::optional<Protocol> parse_protocol(std::string_view s);  // "LL" | "LL128" | "Simple" (any case)

// NCCL's hardware classes of a hop (tuning.cc NCCL_HW_NVLINK / _PCI / _NET).
enum class HopClass { NvLink = 0, Pci = 1, Net = 2 };
// A route's class: Net when it crosses a network link, else Pci when it crosses PCIe or an
// inter-socket link, else NvLink.
HopClass hop_class(const topo::Graph& g, const std::vector<topo::Edge>& links);

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
  // What one GPU block (one channel in NCCL) moves per second on a channel of each pattern,
  // GB/s of payload, indexed by algo::ChannelPattern [pipeline, tree]; 0 = no cap. Every flow of
  // such a channel runs at most at this rate. with_block_caps() sets them for a topology from
  // NCCL's per-channel limits (tuning.cc perChMaxTreeBws, perChMaxTreeLL128Bws,
  // perChMaxRingLL128Bws: per graph channel, and NCCL runs two blocks per graph channel, so half
  // of it per block); a calibration file that sets "block_cap_gbps" keeps its own.
  std::array<double, 2> block_cap_gbps{};
  bool block_cap_fixed = false;
  // The block cap of the schedule being run (for_schedule), GB/s; 0 = none. Part of
  // channel_cap_bytes_per_s, so every engine path that caps a channel caps it.
  double schedule_block_cap_gbps = 0.0;
  // Fixed cost of one hop of a message (a send / recv step), paid like latency: kernel-side work
  // per step. `step_overhead_us` for every hop, unless `step_overhead_hw_us` sets the hop's class
  // (>= 0; index HopClass: nvlink, pci, net).
  double step_overhead_us = 0.0;
  std::array<double, 3> step_overhead_hw_us{-1.0, -1.0, -1.0};
  // Launch cost of one collective call on the GPU side (NCCL's baseLat: kernel start, the
  // protocol's first handshake), part of the engine's time.
  double launch_overhead_us = 0.0;
  // The per-call host floor (us): what one ncclAllReduce call costs the host thread that issues
  // it (enqueue, plan, kernel launch, proxy hand-off). nccl-tests issues its iterations back to
  // back on a stream, so the host prepares call i+1 while the GPUs run call i and a call takes
  // max(host_call_us, device time) in steady state; a point's time is that (simulate_point).
  // 0 = none (CUDA graphs, `nccl-tests -G`, take the host out). Default kHostCallUs.
  double host_call_us = 0.0;
  // In-network reduction (switch groups; simulator/switch_plan.hpp, docs/simulator.md "Switch
  // operations"). Per algo::SwitchKind [nvls, sharp]: an instance's time in the switch, from its
  // last part landing to its result leaving (us); protocol_calibration sets them from NCCL's
  // tuning constants, a calibration file's "switch_latency_us" keeps its own.
  std::array<double, 2> switch_latency_us{};
  bool switch_latency_fixed = false;
  // The NVSwitch's reduction rate at a GPU's port, as a fraction of the port's vendor rate
  // (its NVLink bundle's bw_gbps): > 0 that fraction; 0 by GPU generation when
  // nvls_reduce_by_gpu_generation (NCCL's nvlsEfficiency: sm90 0.85, sm100 0.74), else no limit.
  double nvls_reduce_efficiency = 0.0;
  bool nvls_reduce_by_gpu_generation = false;
  // GPU reduction throughput (bytes reduced per second per channel, GB/s) for local reduce ops.
  double reduce_gbps = 0.0;  // 0 = free
  // Protocol: the fraction of a link's rate that carries payload (LL 1/2: 4 B of data per 8 B
  // line; LL128 120/128; Simple 1). Multiplies every link's calibrated rate.
  double payload_efficiency = 1.0;
  // The protocol this calibration was derived for (protocol_calibration); none for a base one.
  std::optional<Protocol> protocol;
  // Which protocols `topocoll sim` runs with this base calibration: none = every protocol NCCL
  // would enable on the topology, the fastest reported ("auto"); or one. File key "protocol".
  std::optional<Protocol> only_protocol;
  // Set by a calibration file that gives them: protocol_calibration keeps them as they are.
  bool step_overhead_fixed = false, launch_overhead_fixed = false;
  std::string source;  // "defaults" or the file it came from

  const LinkCalibration& of(topo::LinkKind k) const { return links[static_cast<std::size_t>(k)]; }
  // The calibrated rate of one link, bytes per second per direction. Every engine uses this.
  double rate_bytes_per_s(const topo::Graph& g, topo::Edge e) const;
  double cap(topo::LinkKind k) const { return channel_cap_gbps[static_cast<std::size_t>(k)]; }
  // The per-channel cap of a route with these links, bytes per second: the smallest cap of
  // their kinds; 0 when none is capped.
  double channel_cap_bytes_per_s(const topo::Graph& g, const std::vector<topo::Edge>& links) const;
  // This calibration for running `s`: schedule_block_cap_gbps = the block cap of s's channel
  // pattern when every channel has the same one; none when they mix (docs/simulator.md). Engines
  // call it once per run.
  Calibration for_schedule(const algo::Schedule& s) const;
  // The NVSwitch's reduction rate at a port of a GPU of compute capability sm, as a fraction of
  // the port's vendor rate; 0: no limit (nvls_reduce_efficiency above).
  double nvls_reduce_fraction(int sm) const;
  // The per-hop overhead of a message on a route with these links (us).
  double step_overhead_for(const topo::Graph& g, const std::vector<topo::Edge>& links) const;
  // One link's calibrated latency, seconds: its own plus its kind's extra.
  double latency_s(const topo::Graph& g, topo::Edge e) const;
  // From a message's last byte leaving to its landing on a route with these links, seconds: the
  // links' calibrated latencies and the route's per-hop overhead. Every engine uses this.
  double route_latency_s(const topo::Graph& g, const std::vector<topo::Edge>& links) const;
};

// The default per-call host floor: the median of the four calibration sets' per-call floors, a
// set's floor being its smallest message's measured time (experiments/calibration/data: DGX H100
// 34.98 us at 8 B, A100 node 43.83 us at 32 KiB, 2 x DGX A100 37.17 us at 4 B, 8 x RTX 4090
// 38.83 us at 8 B): (37.17 + 38.83) / 2 = 38.0 us. A measurement, not a source figure: no public
// constant gives it. scripts/validate checks it leave-one-out (each set simulated with the
// median of the other three sets' floors) in docs/validation.md.
inline constexpr double kHostCallUs = 38.0;

// The defaults (sources in calibration.cpp and docs/simulator.md): NCCL's Simple protocol, i.e.
// protocol_calibration(base_calibration(), Protocol::Simple).
Calibration default_calibration();
// The protocol-free part of the defaults: link efficiencies and latencies of the hardware, no
// per-step or launch overhead (protocol_calibration adds them).
Calibration base_calibration();
// `base` under NCCL protocol p, from NCCL 2.22.3's tuning constants (nccl_tuning_tables(), Ring
// row, as every schedule here moves data in point-to-point steps like NCCL's ring primitives):
//   step overhead of a hop of class h = hwLat[h][Ring][p] - hwLat[h][Ring][LL] (the topology's
//     link latencies stand for LL's per-hop latency: topologies/constants.hpp);
//   launch overhead = baseLat[Ring][p];
//   payload efficiency = 1/2 (LL), 120/128 (LL128), 1 (Simple).
// Step and launch overheads a calibration file set explicitly are kept.
Calibration protocol_calibration(const Calibration& base, Protocol p);
// `c` with its block caps set for GPUs of compute capability `sm` (the smallest of the job) on
// `nodes` nodes, from NCCL's tables for c's protocol (Simple when none): tree channels
// perChMaxTreeBws[arch][scale] / 2 (LL128: also at most perChMaxTreeLL128Bws / 2), pipeline
// channels perChMaxRingLL128Bws / 2 under LL128 and no cap otherwise (NCCL's model has none for
// ring LL and Simple). arch: Volta (sm < 80, and unknown), Ampere, Hopper and later; scale: 1, 2,
// 3+ nodes. Kept as they are when c.block_cap_fixed. docs/simulator.md, "Trees as NCCL runs them".
Calibration with_block_caps(Calibration c, int sm, int nodes);
// An ideal machine: every efficiency 1, no caps, no overheads (closed-form tests).
Calibration ideal_calibration();
// Reads a JSON calibration; fields not in the file keep their defaults. The result is derived
// for the file's "protocol" (Simple when none or "auto"), ready for an engine; protocol_calibration
// re-derives it for another protocol, keeping what the file set. Throws InputError with the file,
// the key and what was expected.
Calibration load_calibration(const std::string& path);
Calibration parse_calibration(const std::string& text, const std::string& source);

}  // namespace topocoll::sim
