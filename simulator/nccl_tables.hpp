// NCCL's tuning constants (src/graph/tuning.cc), as data: the tables the NCCL reference model
// (nccl_model.hpp) and the protocol calibration (calibration.hpp) both read. A file of its own so
// that neither depends on the other.
#pragma once

#include <array>

namespace topocoll::sim {

// NCCL's hardware classes for latencies (tuning.cc NCCL_HW_NVLINK / _PCI / _NET).
inline constexpr int kNcclHwNvlink = 0;
inline constexpr int kNcclHwPci = 1;
inline constexpr int kNcclHwNet = 2;

enum class NcclAlgo : int { Tree = 0, Ring = 1 };              // NCCL_ALGO_TREE, NCCL_ALGO_RING
enum class NcclProto : int { LL = 0, LL128 = 1, Simple = 2 };  // NCCL_PROTO_*

// Constants of src/graph/tuning.cc, NCCL 2.22.3 (Tree and Ring rows only).
// Indices: algorithm [tree, ring]; protocol [LL, LL128, Simple]; hw [NVLINK, PCI, NET];
// arch [Volta, Ampere, Hopper] x scale [1 node, 2 nodes, >= 3 nodes]. llMaxBws is the exception:
// on one node its row is the GPU arch, on several nodes row 1 for AMD CPUs and row 0 otherwise.
struct NcclTuningTables {
  std::array<std::array<double, 3>, 2> base_lat_us;
  std::array<std::array<std::array<double, 3>, 2>, 3> hw_lat_us;
  std::array<std::array<double, 3>, 3> ll_max_bws;
  std::array<std::array<double, 3>, 3> per_ch_max_ring_ll128_bws;
  std::array<std::array<double, 3>, 3> per_ch_max_tree_ll128_bws;
  std::array<std::array<double, 3>, 3> per_ch_max_tree_bws;
  std::array<std::array<double, 23>, 3> tree_correction;  // [protocol][log2(bytes / 64)]
};
const NcclTuningTables& nccl_tuning_tables();

}  // namespace topocoll::sim
