// Every hardware number the topology model uses, with its source. docs/topologies.md cites the
// same sources. Bandwidths are per direction, GB/s (1e9 B/s); latencies one way, microseconds.
//
// The model stores the *physical* link rates (vendor specifications). What software achieves on
// them (NCCL's effective rates, protocol overheads) is calibration data for the simulator, not
// topology: see NCCL's constants below, kept here for reference and for the NCCL model.
#pragma once

#include <optional>
#include <string_view>

namespace topocoll::topo::constants {

// --- NVLink, per link, per direction ------------------------------------------------------
// NVLink 3 (A100): 12 links, 600 GB/s total bidirectional -> 25 GB/s per link per direction.
//   Source: NVIDIA A100 Tensor Core GPU datasheet; NVIDIA Ampere architecture whitepaper.
// NVLink 4 (H100 SXM5): 18 links, 900 GB/s total bidirectional -> 25 GB/s per link per direction.
//   Source: NVIDIA H100 Tensor Core GPU datasheet; NVIDIA Hopper architecture whitepaper.
// NVLink 5 (B200): 18 links, 1.8 TB/s total bidirectional -> 50 GB/s per link per direction.
//   Source: NVIDIA Blackwell architecture technical brief.
// NVLink 2 (V100): 6 links, 300 GB/s bidirectional -> 25 GB/s; NVLink 1 (P100): 4 links,
//   160 GB/s -> 20 GB/s. Source: Tesla V100 / P100 whitepapers.
inline constexpr double kNvlink1GbpsPerLink = 20.0;
inline constexpr double kNvlink2GbpsPerLink = 25.0;
inline constexpr double kNvlink3GbpsPerLink = 25.0;
inline constexpr double kNvlink4GbpsPerLink = 25.0;
inline constexpr double kNvlink5GbpsPerLink = 50.0;
// NVLink rate per link for a GPU of compute capability `sm` (60, 70, 80, 86, 90, 100, ...).
// SM86 (A40/A10 class) NVLink bridges: 112.5 GB/s over 4 links -> 14.0625 per link per direction
// (NVIDIA A40 datasheet: "112.5 GB/s bidirectional" over the bridge).
double nvlink_gbps_per_link(int sm);
// The per-link rate of an NVLink generation 1..5 (the figures above); nullopt for another number.
std::optional<double> nvlink_generation_gbps_per_link(int generation);
// H200 SXM: NVLink 4, 900 GB/s bidirectional over 18 links (NVIDIA H200 Tensor Core GPU
//   datasheet) -> 25 GB/s per link per direction, as H100 SXM5.
// H100 PCIe: NVLink bridge, "NVLink: 600 GB/s" bidirectional between a bridged pair (NVIDIA
//   H100 PCIe product brief PB-11133-001) -> 12 NVLink 4 links at 25 GB/s per direction.
// B200 (HGX B200 / DGX B200) and GB200: NVLink 5, 1.8 TB/s bidirectional over 18 links (NVIDIA
//   Blackwell architecture technical brief; DGX B200 user guide: 2 fifth-generation NVLink
//   switches, 14.4 TB/s aggregate) -> 50 GB/s per link per direction.
// L40S: no NVLink; PCIe Gen4 x16, 64 GB/s bidirectional (NVIDIA L40S datasheet).
inline constexpr int kH100PcieBridgeLinks = 12;
// GB200 NVL72: 72 GPUs in one NVLink domain, 18 compute trays of 4 GPUs and 2 Grace CPUs, 9
// NVLink switch trays of 2 NVLink switch chips; each GPU's 18 NVLink 5 links go one to each of
// the 18 chips (NVIDIA multi-node NVLink tuning guide, "Understanding Your Grace-Blackwell
// Systems": 18x 1RU compute trays, 4 GPUs per tray, 9x NVL72 NVLink switch trays).
inline constexpr int kNvl72Gpus = 72;
inline constexpr int kNvl72SwitchChips = 18;

// --- NVLink-C2C (Grace) ------------------------------------------------------------------
// Grace Hopper GH200: NVLink-C2C 900 GB/s bidirectional between the Grace CPU and its H100 ->
// 450 GB/s per direction (NVIDIA Grace Hopper Superchip datasheet). GB200 superchip: one Grace
// and two B200 joined by NVLink-C2C, 900 GB/s bidirectional for the superchip (NVIDIA GB200 NVL72
// product page) -> modelled as 225 GB/s per direction on each GPU's C2C link.
inline constexpr double kGh200C2CGbps = 450.0;
inline constexpr double kGb200C2CGbpsPerGpu = 225.0;

// NCCL's own per-link NVLink figures (src/graph/topo.h, NCCL 2.2x): SM60 18, SM70 20, SM80 20,
// SM86 12, SM90 20.6, SM100 40.1 GB/s. Effective rates, used by the NCCL reference model only.
double nccl_nvlink_gbps_per_link(int sm);

// --- PCIe, per lane, per direction (after line encoding) ----------------------------------
// Gen1 2.5 GT/s 8b/10b -> 0.25 GB/s; Gen2 5 GT/s 8b/10b -> 0.5; Gen3 8 GT/s 128b/130b ->
// 0.985; Gen4 16 GT/s -> 1.969; Gen5 32 GT/s -> 3.938; Gen6 64 GT/s (PAM4, FLIT) -> 7.877
// (raw, before FLIT overhead). Source: PCI-SIG PCI Express Base Specification 1.0-6.0.
// NCCL instead uses width*speed/80 with speed {15,30,60,120,240,480} (x100 Mb/s per lane), i.e.
// 75% of these (src/graph/topo.cc kvDictPciGen): Gen3 x16 = 12 GB/s, Gen4 x16 = 24, Gen5 x16 = 48.
// Returns the per-lane rate for a transfer rate in GT/s, nullopt when it is no PCIe rate.
std::optional<double> pcie_gbps_per_lane(double gts);
// Parses sysfs/NCCL link_speed strings: "8 GT/s", "8.0 GT/s PCIe", "16.0 GT/s PCIe", ...
// Returns the GT/s figure, nullopt when the text is not of that form.
std::optional<double> parse_pcie_link_speed(std::string_view text);
inline constexpr int kPcieDefaultWidth = 16;  // NCCL: "if (width == 0) width = 16" (topo.cc)
// The transfer rate of PCIe generation 1..6 in GT/s (2.5, 5, 8, 16, 32, 64; PCI-SIG base
// specifications); nullopt for another number.
std::optional<double> pcie_generation_gts(int generation);

// --- CPU interconnect, per direction -------------------------------------------------------
// NCCL's published inter-socket figures (src/graph/topo.h): BDW_QPI 6, SKL_QPI 10, SRP_QPI 22
// (Sapphire Rapids UPI 2.0), ERP_QPI 40 (Emerald Rapids), AMD 16 (Infinity Fabric xGMI),
// ARM 6 GB/s. No vendor publishes one usable per-direction socket-to-socket figure for GPU
// traffic, so these measured-by-NVIDIA values are the model's numbers.
inline constexpr double kInterSocketIntelSkylakeGbps = 10.0;
inline constexpr double kInterSocketIntelSapphireRapidsGbps = 22.0;
inline constexpr double kInterSocketAmdGbps = 16.0;
inline constexpr double kInterSocketArmGbps = 6.0;
// The figure above for a vendor name ("intel" -> Sapphire Rapids, "amd", "arm"); nullopt else.
std::optional<double> inter_socket_gbps_of_vendor(std::string_view vendor);
// CPU-to-root-port bandwidth inside a socket is not a bottleneck in the model (NCCL: LOC_BW 5000).
inline constexpr double kLocalGbps = 5000.0;

// --- Network ---------------------------------------------------------------------------
// ConnectX-6 HDR InfiniBand: 200 Gb/s = 25 GB/s; ConnectX-7 NDR: 400 Gb/s = 50 GB/s.
// Source: NVIDIA ConnectX-6 VPI / ConnectX-7 product briefs. NCCL XML gives <net speed="..."> in
// Mb/s (200000 = 200 Gb/s).
inline constexpr double kHdrGbps = 25.0;
inline constexpr double kNdrGbps = 50.0;
// ConnectX-8 SuperNIC XDR: 800 Gb/s = 100 GB/s (NVIDIA ConnectX-8 SuperNIC product brief).
inline constexpr double kXdrGbps = 100.0;
// HPE Slingshot 11 (Cassini NIC): 200 Gb/s = 25 GB/s (HPE Slingshot interconnect data sheet;
// ALCF Polaris machine overview: "a pair of Slingshot 11 network adapters" per node).
inline constexpr double kSlingshot11Gbps = 25.0;
// Gb/s as vendors write a port rate -> GB/s per direction.
inline constexpr double gbit_to_gbps(double gbit) {
  return gbit / 8.0;
}
// Quantum-2 QM9700 switch: 64 ports of 400 Gb/s NDR. Source: NVIDIA Quantum-2 QM9700 datasheet.
inline constexpr int kQuantum2Radix = 64;

// --- Latencies (one way, per link) ------------------------------------------------------
// Anchored to NCCL's tuning model (src/graph/tuning.cc, hwLat, LL protocol): NVLink 0.6 us,
// PCI 1.0 us per GPU-to-GPU hop; Ring/NET 2.7 us. Split evenly over the two links a GPU-to-GPU
// hop crosses (GPU-NVSwitch-GPU, GPU-PCIe switch-GPU). The network figure makes a NIC-leaf-NIC
// hop 2 x 0.6 + two PCIe links = 2.2 us, below NCCL's 2.7 us which also covers the proxy thread.
// These are starting points for calibration (simulator issue), not measurements.
inline constexpr double kNvlinkLatencyUs = 0.3;
inline constexpr double kPcieLatencyUs = 0.5;
inline constexpr double kInterSocketLatencyUs = 0.5;
inline constexpr double kNetworkLinkLatencyUs = 0.6;

}  // namespace topocoll::topo::constants
