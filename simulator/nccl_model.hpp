// The reference model of stock NCCL: what NCCL's own tuning model predicts for a collective
// (allreduce, allgather, reduce-scatter, broadcast, reduce), and which algorithm and protocol it
// picks. Users compare our schedules against it. All-to-all has no model: NCCL runs it as grouped
// send/recv, which its tuner does not cost (nccl_tune_model refuses it).
//
// Two releases, chosen by NcclModelOptions::version (default 2.28.9, the NCCL of the toolkit;
// nccl_tables.cpp names the files and commits each table set was read from):
//   2.28.9: Tree, Ring, NVLS (one node) and NVLSTree (several nodes) where the hardware allows
//           them; PAT is never an allreduce algorithm (tuning.cc skips it for allreduce);
//           CollNet Direct / Chain stay off (NCCL_COLLNET_ENABLE defaults to 0);
//   2.22.3: Tree and Ring only, as this model has always reproduced it.
// Reference for 2.22.3: NCCL 2.22.3-1 (github.com/NVIDIA/nccl, commit 178b6b759074597777ce13438efb0e0ba625e429):
//   src/graph/tuning.cc  ncclTopoTuneModel (latency and bandwidth per algorithm x protocol),
//                        ncclTopoGetAlgoTime (time = latency + bytes / (1000 * bandwidth));
//   src/enqueue.cc       updateCollCostTable + topoGetAlgoInfo (the minimum time wins);
//   src/graph/search.cc  ncclTopoCompute (channels and per-channel bandwidth: emulated below);
//   src/graph/topo.h     per-link bandwidths (SM90_NVLINK_BW 20.6, PCI_BW 12, ...).
// Facts are taken from those files; the code is ours. Where neighbouring releases differ in a
// way that changes the numbers, nccl_model.cpp says so next to the fact (2.20.3: ring LL at 1/4
// of busBw and Hopper llMaxBw 87.7; later releases: tree Simple hwLat 4 us instead of 28,
// nInterSteps 2*(nNodes-1)).
//
// Scope: allreduce on both releases; allgather, reduce-scatter (Ring, PAT, NVLS, CollNet Direct),
// broadcast and reduce (Ring) on 2.28.9 only; protocols LL, LL128, Simple; NCCL_ALGO, NCCL_PROTO, NCCL_MIN_NCHANNELS,
// NCCL_MAX_NCHANNELS and NCCL_NVLS_ENABLE as NCCL reads them (NcclModelOptions).
// Not modelled: CollNet Direct / Chain (they need SHARP-capable network switches and the CollNet
// plugin); tuner plugins; aggregated launches (numPipeOps = 1); the smaller channel and thread
// counts topoGetAlgoInfo picks for small messages; NVLS in 2.22.3.
//
// Two steps:
//   estimate_nccl_graph(topology)   what NCCL's topology search would find (channels, bandwidth
//                                   per channel, link classes), estimated from our graph;
//   nccl_predictions(graph, bytes)  NCCL's cost model on that estimate: one prediction per
//                                   enabled (algorithm, protocol) and the choice among them.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/ir/types.hpp"
#include "simulator/calibration.hpp"
#include "simulator/nccl_tables.hpp"
#include "topologies/paths.hpp"
#include "topologies/topology.hpp"

namespace topocoll::sim {

// The NCCL environment the model honours, typed. Defaults are NCCL's (unset variables).
struct NcclModelOptions {
  NcclVersion version = kDefaultNcclVersion;  // --nccl-version
  std::string algo;        // NCCL_ALGO, NCCL's parseList syntax ("Tree,Ring", "^NVLS", "allreduce:Ring"); "" = unset
  std::string proto;       // NCCL_PROTO, same syntax over LL, LL128, Simple; "" = unset
  int min_channels = -2;   // NCCL_MIN_NCHANNELS; -2 = unset (NCCL_PARAM default)
  int max_channels = -2;   // NCCL_MAX_NCHANNELS; -2 = unset
  int nvls_enable = 2;     // NCCL_NVLS_ENABLE: 0 off, 2 (default) where the GPUs report multicast, else on
  int collnet_enable = 0;  // NCCL_COLLNET_ENABLE: 0 (default) off, 1 CollNet where the network reduces (SHARP)
};

// "2.22.3" | "2.28.9"; InputError naming `what` and the accepted versions otherwise.
NcclVersion parse_nccl_version(const std::string& s, const std::string& what);
std::string_view to_string(NcclVersion v);

// The variables above, by name (kNcclEnvKeys). set_nccl_env: InputError naming `what`, the key and
// the value for an unknown key or a value that is not an integer where NCCL reads one; the names in
// NCCL_ALGO / NCCL_PROTO are checked against the release when the model reads them.
inline constexpr std::array<std::string_view, 6> kNcclEnvKeys = {
    "NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_NVLS_ENABLE", "NCCL_COLLNET_ENABLE"};
void set_nccl_env(NcclModelOptions& o, const std::string& key, const std::string& value, const std::string& what);
// "KEY=VALUE" (the `--nccl-env` flag): set_nccl_env on its two halves.
void set_nccl_env(NcclModelOptions& o, const std::string& assignment, const std::string& what);
// Checks the NCCL_ALGO / NCCL_PROTO names against the release: InputError as estimate_nccl_graph.
void check_nccl_options(const NcclModelOptions& o);
// Reads the keys of kNcclEnvKeys present in `env` (a process environment: other keys are ignored).
NcclModelOptions nccl_options_from_env(const std::map<std::string, std::string>& env, NcclModelOptions o = {});
// The process environment's NCCL variables, as NCCL reads them (getenv).
std::map<std::string, std::string> nccl_process_env();

// What NCCL's topology search would find, estimated from our model (estimate_nccl_graph says how).
// Field names follow NCCL's struct ncclTopoGraph where one exists.
struct NcclGraphEstimate {
  int nodes = 1;
  int gpus_per_node = 1;
  int ranks = 1;
  int sm = 0;                       // smallest GPU compute capability (minCompCap), 90 = Hopper -> arch index
  int sm_max = 0;                   // largest (maxCompCap); LL128 needs sm == sm_max; 0 = same as sm
  int channels = 1;                 // ring graph nChannels (what busBw = nChannels * bw uses)
  int tree_channels = 0;            // tree graph nChannels; 0 = same as channels
  int comm_channels = 0;            // comm->nChannels after ncclTopoPostset doubles the channels; 0 = 2 * channels
  double bw_intra_gbps = 0.0;       // ring graph->bwIntra: per channel, inside a node (GB/s)
  double bw_inter_gbps = 0.0;       // ring graph->bwInter: per channel, across the network (GB/s)
  double tree_bw_intra_gbps = 0.0;  // tree graph->bwIntra; 0 = same as the ring's
  double tree_bw_inter_gbps = 0.0;  // tree graph->bwInter; 0 = same as the ring's
  int intra_link = kNcclHwNvlink;   // kNcclHwNvlink when graph->typeIntra is NVL, else kNcclHwPci
  topo::PathType intra_path = topo::PathType::NVL;  // graph->typeIntra (LL128 needs <= NVB)
  topo::PathType inter_path = topo::PathType::PIX;  // graph->typeInter: GPU-to-NIC path (PIX on one node)
  double latency_inter_us = 0.0;                    // graph->latencyInter (NIC property; 0 for InfiniBand)
  std::string cpu_vendor;                           // "intel", "amd", ... (network post overhead, llMaxBw row)
  // NVLS (2.28.9): the NVLS graph (search.cc NCCL_TOPO_PATTERN_NVLS) and ncclNvlsInit's outcome.
  bool nvls_support = false;        // comm->nvlsSupport: NCCL_NVLS_ENABLE, > 2 GPUs per node, multicast
  int nvls_graph_channels = 0;      // NVLS graph nChannels (0: no NVSwitch, SM < 90, or not searched)
  double nvls_bw_intra_gbps = 0.0;  // NVLS graph bwIntra
  double nvls_bw_inter_gbps = 0.0;  // NVLS graph bwInter
  int nvls_channels = 0;            // comm->nvlsChannels: the channels NVLS and NVLSTree run with
  // CollNet (SHARP): comm->collNetSupport (NCCL_COLLNET_ENABLE=1, a network that reduces: the
  // fabric's `sharp`, more than one node), and the CollNet graphs: Chain a tree-pattern search on
  // the ring's channels, Direct one channel per NIC of a node (its heads). Estimated from the tree
  // graph's figures (nccl_model.cpp).
  bool collnet_support = false;
  int collnet_chain_channels = 0, collnet_direct_channels = 0;
  double collnet_bw_intra_gbps = 0.0, collnet_bw_inter_gbps = 0.0;
  bool nvswitch = false;  // ncclTopoGetNvsCount > 0 (CollNet Direct needs it)
  // ring graph->sameChannels: every channel is the same ring (the search tries that first and the
  // estimate keeps it); broadcast / reduce latency is one hop then, nsteps hops otherwise.
  bool ring_same_channels = true;
  NcclModelOptions options;        // the release and environment this estimate was made for
  std::vector<std::string> notes;  // what the estimate assumed
};

// Derives the estimate from our topology (see nccl_model.cpp for each step: NVLink counts times
// constants::nccl_nvlink_gbps_per_link, PCIe as width * speed / 80, NIC port rate; then
// NCCL's search over its speed arrays). Throws InputError for a topology without GPUs.
// `options`: the release (search arrays, MAXCHANNELS, channel rules) and environment
// (NCCL_MIN/MAX_NCHANNELS on comm_channels, NCCL_NVLS_ENABLE); InputError for a bad NCCL_ALGO /
// NCCL_PROTO as well, so that a bad environment fails before any simulation.
NcclGraphEstimate estimate_nccl_graph(const topo::Topology& t, const NcclModelOptions& options = {});

struct NcclPrediction {
  std::string algorithm;    // "Tree" | "Ring" | "NVLS" | "NVLSTree" ... (NCCL's ncclAlgoStr)
  std::string protocol;     // "LL" | "LL128" | "Simple" (NCCL's ncclProtoStr)
  double time_us = 0.0;     // NCCL's predicted time
  double busbw_gbps = 0.0;  // nccl-tests busbw of that time: bytes / time * busbw_factor(collective, n)
  int channels = 0;         // channels NCCL runs this call with (nccl_call_channels: fewer when small)
};

// NCCL's predicted time for each enabled (algorithm, protocol) of collective `c`, in NCCL's order
// (Tree, Ring, ..., NVLS, NVLSTree, PAT; LL, LL128, Simple). Disabled combinations (LL128 off,
// NCCL_ALGO / NCCL_PROTO, NVLS without support; see nccl_model.cpp) are left out.
// `bytes` is NCCL's nBytes: the larger buffer of a rank, sizeof(type) * ncclFuncMaxSendRecvCount
// (enqueue.cc), which is algo::nccl_tests_bytes of the call (allreduce, broadcast, reduce: count;
// allgather, reduce-scatter: count * ranks); busbw uses algo::busbw_factor(c). `op` matters to
// PAT reduce-scatter only (no avg). One rank: one entry, Ring/Simple with time 0, as NCCL does.
// Throws InputError for an inconsistent estimate, for all-to-all, and for a collective other
// than allreduce on 2.22.3.
std::vector<NcclPrediction> nccl_predictions(const NcclGraphEstimate& g, std::uint64_t bytes,
                                             algo::Collective c = algo::Collective::AllReduce,
                                             algo::ReduceOp op = algo::ReduceOp::Sum);
// NCCL's choice: the minimum time, the first in NCCL's order on a tie (as topoGetAlgoInfo).
// InputError when NCCL_ALGO / NCCL_PROTO leave nothing (NCCL: "no algorithm/protocol available").
NcclPrediction nccl_choice(const NcclGraphEstimate& g, std::uint64_t bytes,
                           algo::Collective c = algo::Collective::AllReduce, algo::ReduceOp op = algo::ReduceOp::Sum);

// The channels NCCL runs one call of algorithm `a` and protocol `p` with, for nBytes = `bytes`
// (as nccl_predictions takes it): topoGetAlgoInfo in enqueue.cc (2.22.3 and 2.28.9 alike). NVLS
// and NVLSTree run on comm->nvlsChannels. Ring, Tree and CollNet Chain start at comm->nChannels
// and drop one channel at a time while nBytes < nc * nt * threadThreshold, down to 1; CollNet
// Direct steps down 16, 8, 4, 2, 1 with its heads counted. nt is comm->maxThreads[a][p] and
// threadThreshold comm->threadThresholds[a][p] (tuning.cc, defaults: see nccl_model.cpp). PAT
// keeps comm->nChannels: tuning.cc sets no maxThreads for it, so the loop never runs. So a 1 KiB
// Ring/Simple call runs on one channel, and full width needs 32 KiB per channel (Simple), 5 KiB
// (LL128), 4 KiB times the rank count (Ring/LL). One rank: 1.
int nccl_call_channels(const NcclGraphEstimate& g, NcclAlgo a, NcclProto p, std::uint64_t bytes);

// --- The model's parts, exposed for tests and for tools that explain a choice ------------

// What ncclTopoTuneModel stores for one collective: comm->latencies[coll] (us) and
// comm->bandwidths[coll] (algorithm bandwidth, GB/s; for allgather / reduce-scatter by PAT, NVLS
// or CollNet Direct the bus bandwidth, which tuning.cc does not convert), and whether each
// combination is enabled. InputError as nccl_predictions for a collective without a model.
struct NcclTuneResult {
  algo::Collective collective = algo::Collective::AllReduce;
  std::array<std::array<double, 3>, kNcclNumAlgos> latency_us{};
  std::array<std::array<double, 3>, kNcclNumAlgos> algbw_gbps{};
  std::array<std::array<bool, 3>, kNcclNumAlgos> enabled{};
};
NcclTuneResult nccl_tune_model(const NcclGraphEstimate& g, algo::Collective c = algo::Collective::AllReduce,
                               algo::ReduceOp op = algo::ReduceOp::Sum);
// ncclTopoGetAlgoTime for one combination; -1 when it is disabled.
double nccl_algo_time_us(const NcclGraphEstimate& g, const NcclTuneResult& m, NcclAlgo a, NcclProto p,
                         std::uint64_t bytes);

std::string_view to_string(NcclAlgo a);
std::string_view to_string(NcclProto p);

// The protocols a simulation runs each schedule under, as `topocoll sim` and `topocoll exp run`
// pick them: `requested` ("LL" | "LL128" | "Simple") when given, else the calibration's own
// protocol, else ("" or "auto") every protocol NCCL would enable on this topology: LL and Simple
// always, LL128 by NCCL's own rule (nccl_tune_model on `nccl`). InputError naming `what` and the
// value for an unknown protocol.
std::vector<Protocol> select_protocols(const NcclGraphEstimate& nccl, const Calibration& calib,
                                       const std::string& requested, const std::string& what);

}  // namespace topocoll::sim
