#include "simulator/nccl_tables.hpp"

namespace topocoll::sim {

namespace {

// --- src/graph/tuning.cc (NCCL 2.22.3) ---------------------------------------------------------
// NCCL 2.20.3 (commit b6475625) has the same baseLat / hwLat, but llMaxBws Hopper =
// {87.7, 22.5, 19.0} and the ring LL factor 1/4 (allreduce). Later releases (a Blackwell-era
// tuning.cc) lower hwLat tree/Simple to 4.0 (NVLINK, PCI) and 14 (NET) and give tree/Simple a
// baseLat of 8.4, which makes Tree/Simple much more attractive than here.
const NcclTuningTables kTables = {
    // baseLat [Tree, Ring][LL, LL128, Simple], us
    {{{6.8, 14.0, 0.0}, {6.6, 14.0, 8.4}}},
    // hwLat [NVLINK, PCI, NET][Tree, Ring][LL, LL128, Simple], us
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
    // treeCorrectionFactor [LL, LL128, Simple][log2i(bytes >> 6)], powers of two from 64 B to 256 MB
    {{{1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
      {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
      {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}}},
};

}  // namespace

const NcclTuningTables& nccl_tuning_tables() {
  return kTables;
}

}  // namespace topocoll::sim
