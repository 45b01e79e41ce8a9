// NCCL's tuning constants (src/graph/tuning.cc), as data: one table set per NCCL release, read by
// the NCCL reference model (nccl_model.hpp) and, for the Ring rows, by the protocol calibration
// (calibration.hpp). A file of its own so that neither depends on the other.
#pragma once

#include <array>
#include <string_view>

namespace topocoll::sim {

// NCCL's hardware classes for latencies (tuning.cc NCCL_HW_NVLINK / _PCI / _NET).
inline constexpr int kNcclHwNvlink = 0;
inline constexpr int kNcclHwPci = 1;
inline constexpr int kNcclHwNet = 2;

// NCCL's algorithms in NCCL's order (src/include/device.h NCCL_ALGO_TREE 0 ... NCCL_ALGO_PAT 6;
// PAT exists from 2.23 on) and protocols (NCCL_PROTO_LL 0, LL128 1, SIMPLE 2).
enum class NcclAlgo : int { Tree = 0, Ring = 1, CollNetDirect = 2, CollNetChain = 3, Nvls = 4, NvlsTree = 5, Pat = 6 };
enum class NcclProto : int { LL = 0, LL128 = 1, Simple = 2 };
inline constexpr int kNcclNumAlgos = 7;
inline constexpr int kNcclNumProtos = 3;

// The NCCL releases the model follows. 2.28.9 is the NCCL of the toolkit here
// (/usr/local/cuda/include/nccl.h: NCCL_MAJOR 2, NCCL_MINOR 28, NCCL_PATCH 9).
enum class NcclVersion : int { V2_22_3 = 0, V2_28_9 = 1 };
inline constexpr NcclVersion kDefaultNcclVersion = NcclVersion::V2_28_9;

// Constants of src/graph/tuning.cc and the behaviour that differs between releases, per release.
// Indices: algorithm [NcclAlgo]; protocol [LL, LL128, Simple]; hw [NVLINK, PCI, NET];
// arch [Volta, Ampere, Hopper, Blackwell] x scale [1 node, 2 nodes, >= 3 nodes]. llMaxBws is the
// exception: on one node its row is the GPU arch, on several nodes row 1 for AMD CPUs and row 0
// otherwise. A row a release does not have (Blackwell before 2.23, NVLS rows of 2.22.3, which
// this model does not transcribe) is zero and never read (`arch_rows`, `models_nvls`).
struct NcclTuningTables {
  NcclVersion version;
  std::string_view name;    // "2.22.3" | "2.28.9"
  std::string_view source;  // where the numbers were read (repository and commit)
  std::array<std::array<double, 3>, kNcclNumAlgos> base_lat_us;
  std::array<std::array<std::array<double, 3>, kNcclNumAlgos>, 3> hw_lat_us;
  std::array<std::array<double, 3>, 4> ll_max_bws;
  std::array<std::array<double, 3>, 4> per_ch_max_ring_ll128_bws;
  std::array<std::array<double, 3>, 4> per_ch_max_tree_ll128_bws;
  std::array<std::array<double, 3>, 4> per_ch_max_tree_bws;
  std::array<std::array<double, 3>, 4> per_ch_max_nvls_tree_bws;
  std::array<double, 4> nvls_efficiency;                  // nvlsEfficiency[compCapIndex]
  std::array<std::array<double, 23>, 3> tree_correction;  // [protocol][log2(bytes / 64)]
  int arch_rows;     // 3 (Volta, Ampere, Hopper) or 4 (+ Blackwell, compCapIndex 3 for SM >= 100)
  int max_channels;  // MAXCHANNELS (src/include/device.h): 32, then 64
  bool has_pat;      // ncclAlgoStr lists "PAT" (NCCL_NUM_ALGORITHMS 7), else 6 algorithms
  bool models_nvls;  // NVLS / NVLSTree are part of this model's choice for this release
  // Behaviour that changed between releases (each named where it is used in nccl_model.cpp):
  bool ring_ll128_ppn1_factor;  // 2.22.3: ring LL128 busBw * (ppn < 2 ? 0.7 : 0.92); 2.28: * 0.92
  bool inter_steps_minus_one;   // ring nInterSteps = 2*(nNodes-1) (2.28) instead of 2*nNodes
  bool ppn1_tree_net_latency;   // ppn == 1: interLat = hwLat[NET][TREE][p] (2.28)
  bool ll128_any_sm70_plus;     // LL128 by default on SM >= 70 (2.28) instead of SM 70/80/90 only
  bool postset_sm90_doubling;   // connect.cc: SM90+, nNodes > 1, ring bwIntra > 45, < 16 channels: x2
  int nvls_channels_sm90;       // NVLS_NCHANNELS_SM90 (src/transport/nvls.cc)
  int nvls_channels_sm100;      // NVLS_NCHANNELS_SM100 (multi-node)
  int nvls_channels_sm100_nvl;  // NVLS_NCHANNELS_SM100_NVL (one node)
};

// The tables of one release.
const NcclTuningTables& nccl_tuning_tables(NcclVersion v);
// The 2.22.3 tables: what the protocol calibration reads (its Ring rows are the same in 2.28.9).
const NcclTuningTables& nccl_tuning_tables();

}  // namespace topocoll::sim
