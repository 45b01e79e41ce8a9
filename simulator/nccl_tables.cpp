#include "simulator/nccl_tables.hpp"

namespace topocoll::sim {

namespace {

// --- NCCL 2.22.3-1, src/graph/tuning.cc (github.com/NVIDIA/nccl, commit 178b6b75) -------------
// Tree and Ring rows only: the other algorithms are not part of this release's model here.
// NCCL 2.20.3 (commit b6475625) has the same baseLat / hwLat, but llMaxBws Hopper =
// {87.7, 22.5, 19.0} and the ring LL factor 1/4 (allreduce).
const NcclTuningTables kTables2223 = {
    NcclVersion::V2_22_3,
    "2.22.3",
    "NVIDIA/nccl v2.22.3-1 (commit 178b6b759074597777ce13438efb0e0ba625e429), src/graph/tuning.cc",
    // baseLat [algorithm][LL, LL128, Simple], us
    {{{6.8, 14.0, 0.0}, {6.6, 14.0, 8.4}}},
    // hwLat [NVLINK, PCI, NET][algorithm][LL, LL128, Simple], us
    {{{{{0.6, 1.25, 28.0}, {0.6, 1.9, 3.4}}},
      {{{1.0, 1.9, 28.0}, {1.0, 2.5, 5.7}}},
      {{{5.0, 8.5, 28.0}, {2.7, 4.0, 14.0}}}}},
    // llMaxBws [Volta-N1/Intel-N2/Intel-N4, Ampere-N1/AMD-N2/AMD-N4, Hopper-N1/AMD-N2/AMD-N4], GB/s
    {{{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}}},
    // perChMaxRingLL128Bws [Volta, Ampere, Hopper][N1, N2, N4]
    {{{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}}},
    // perChMaxTreeLL128Bws
    {{{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}}},
    // perChMaxTreeBws
    {{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}}},
    // perChMaxNVLSTreeBws: not transcribed for this release (models_nvls false)
    {},
    // nvlsEfficiency: not transcribed for this release
    {},
    // treeCorrectionFactor [LL, LL128, Simple][log2i(bytes >> 6)], powers of two from 64 B to 256 MB
    {{{1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
      {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
      {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}}},
    3,      // arch rows: Volta, Ampere, Hopper (compCapIndex 2 for SM >= 90)
    32,     // MAXCHANNELS (src/include/device.h)
    false,  // no PAT (NCCL_NUM_ALGORITHMS 6)
    false,  // NVLS / NVLSTree not modelled for this release
    true,   // ring LL128: busBw * (ppn < 2 ? 0.7 : 0.92)
    false,  // nInterSteps = 2*nNodes (allreduce), as 2.22.3 writes it
    false,  // interLat = hwLat[NET][algorithm][p] at every ppn
    false,  // LL128 by default on SM 70, 80 and 90 only
    false,  // no SM90 multi-node channel doubling in ncclTopoPostset
    0,
    0,
    0,
};

// --- NCCL 2.28.x ------------------------------------------------------------------------------
// No 2.28.9 tuning.cc is stored in the index this project reads (github.com/NVIDIA/nccl there
// holds older commits only). The nearest stored release is a verbatim copy of NCCL 2.28.3-1 (the
// repository zhanglin496/nccl-2.28.3-1, commit 850a18f5a2d15a77525bb671b12ee03bc1d4b951, which adds
// comments only): src/graph/tuning.cc (ncclTunerConstantsDefaults, nvlsEfficiency,
// ncclTopoTuneModel, ncclTopoGetAlgoTime), src/graph/search.cc (speed arrays, ncclTopoCompute),
// src/graph/connect.cc (ncclTopoPostset), src/transport/nvls.cc (ncclNvlsInit),
// src/include/device.h (MAXCHANNELS 64, NCCL_MAX_NVLS_ARITY 32). What 2.28.4 .. 2.28.9 may have
// changed is not known here; a later tuning.cc (copyright 2016-2026, an annotated copy) differs
// in hwLat[NET][NVLSTree][Simple] = 20.9 (2.28.3: 14), perChMaxRingLL128Bws Blackwell = 40
// (2.28.3: 2 * 36.7) and perChMaxNVLSTreeBws Blackwell N4 = 80 (2.28.3: 43.1): Hopper rows other
// than NVLSTree's network latency are the same in both.
const NcclTuningTables kTables2289 = {
    NcclVersion::V2_28_9,
    "2.28.9",
    "zhanglin496/nccl-2.28.3-1 (NCCL 2.28.3-1, commit 850a18f5a2d15a77525bb671b12ee03bc1d4b951), "
    "src/graph/tuning.cc; no 2.28.9 file is stored",
    // baseLatencies [Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT][LL, LL128, Simple]
    {{{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {8.0, 8.0, 8.0}}},
    // hwLatencies [NVLINK, PCI, NET][algorithm][LL, LL128, Simple], us
    {{{{{.6, 1.25, 4.0}, {.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}}},
      {{{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}}},
      {{{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 14}, {0, 0, 14}}}}},
    // llMaxBws [Volta-N1/Intel-N2/Intel-N4, Ampere-N1/AMD-N2/AMD-N4, Hopper-N1/AMD-N2/AMD-N4,
    // Blackwell-N1/AMD-N2/AMD-N4 = 2 * Hopper's]
    {{{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}}},
    // perChMaxRingLL128Bws [Volta, Ampere, Hopper, Blackwell][N1, N2, N4]
    {{{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {2 * 36.7, 2 * 36.7, 2 * 36.7}}},
    // perChMaxTreeLL128Bws
    {{{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}}},
    // perChMaxTreeBws
    {{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}}},
    // perChMaxNVLSTreeBws
    {{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 43.1}}},
    // nvlsEfficiency [Volta, Ampere, Hopper, Blackwell]
    {0.0, 0.0, 0.85, 0.74},
    // treeCorrectionFactor: unchanged from 2.22.3
    {{{1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
      {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
      {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}}},
    4,      // arch rows: + Blackwell (compCapIndex 3 for SM >= 100)
    64,     // MAXCHANNELS
    true,   // PAT (NCCL_NUM_ALGORITHMS 7)
    true,   // NVLS / NVLSTree modelled
    false,  // ring LL128: busBw * 0.92
    true,   // nInterSteps = 2*(nNodes-1) for allreduce
    true,   // ppn == 1: "With ppn=1 latencies are fully exposed, use the Tree network latency"
    true,   // LL128 by default on SM >= 70 (the SM 70/80/90 list is gone)
    true,   // "Use 4 compute channels per search channel to reach peak BW on <8 PPN"
    16,     // NVLS_NCHANNELS_SM90
    32,     // NVLS_NCHANNELS_SM100
    24,     // NVLS_NCHANNELS_SM100_NVL
};

}  // namespace

const NcclTuningTables& nccl_tuning_tables(NcclVersion v) {
  return v == NcclVersion::V2_22_3 ? kTables2223 : kTables2289;
}

const NcclTuningTables& nccl_tuning_tables() {
  return kTables2223;
}

}  // namespace topocoll::sim
