#include "topologies/transports.hpp"

#include <fmt/format.h>

#include "common/errors.hpp"
#include "topologies/constants.hpp"

namespace topocoll::topo {

static_assert(kDefaultHopLatencyUs == constants::kNetworkLinkLatencyUs,
              "the profiles' default latency is the fabric's historical one");

namespace {

// Said of every value no public source gives (the brief of this table: never invent one).
constexpr std::string_view kLatencyNotSourced =
    "not sourced: the InfiniBand default (constants::kNetworkLinkLatencyUs, anchored to NCCL's "
    "tuning.cc hwLat NET)";
constexpr std::string_view kEfficiencyNotSourced =
    "not sourced: the InfiniBand default (simulator/calibration.cpp network efficiency 0.95)";

}  // namespace

const std::vector<TransportProfile>& transports() {
  static const std::vector<TransportProfile> kProfiles = {
      {"hdr", "InfiniBand HDR, 200 Gb/s (ConnectX-6, Quantum QM8700)", constants::kHdrGbps,
       "NVIDIA ConnectX-6 VPI product brief: 200 Gb/s per port", kDefaultHopLatencyUs, kLatencyNotSourced,
       kDefaultEfficiency, kEfficiencyNotSourced},
      {"ndr", "InfiniBand NDR, 400 Gb/s (ConnectX-7, Quantum-2 QM9700)", constants::kNdrGbps,
       "NVIDIA ConnectX-7 product brief: 400 Gb/s per port; Quantum-2 QM9700 datasheet: 64 x 400 Gb/s",
       kDefaultHopLatencyUs, kLatencyNotSourced, kDefaultEfficiency, kEfficiencyNotSourced},
      {"xdr", "InfiniBand XDR, 800 Gb/s (ConnectX-8 SuperNIC, Quantum-X800)", 100.0,
       "NVIDIA ConnectX-8 SuperNIC datasheet and Quantum-X800 announcement: 800 Gb/s per port", kDefaultHopLatencyUs,
       kLatencyNotSourced, kDefaultEfficiency, kEfficiencyNotSourced},
      {"roce-100g", "RoCE v2 over 100 GbE (e.g. ConnectX-6 Dx)", 12.5,
       "NVIDIA ConnectX-6 Dx product brief: 100 GbE ports", kDefaultHopLatencyUs, kLatencyNotSourced,
       kDefaultEfficiency, kEfficiencyNotSourced},
      {"roce-200g", "RoCE v2 over 200 GbE (e.g. ConnectX-6 Dx / ConnectX-7)", 25.0,
       "NVIDIA ConnectX-6 Dx product brief: a single 200 GbE port", kDefaultHopLatencyUs, kLatencyNotSourced,
       kDefaultEfficiency, kEfficiencyNotSourced},
      {"roce-400g", "RoCE v2 over 400 GbE (e.g. ConnectX-7, Spectrum-4)", 50.0,
       "NVIDIA ConnectX-7 product brief: 400 GbE per port", kDefaultHopLatencyUs, kLatencyNotSourced,
       kDefaultEfficiency, kEfficiencyNotSourced},
      {"efa-gen1", "AWS EFA, first generation: one 100 Gb/s EFA (p3dn.24xlarge)", 12.5,
       "AWS EC2 p3dn.24xlarge: 100 Gbps networking with EFA", kDefaultHopLatencyUs,
       "not sourced: AWS publishes no per-hop figure; aws-ofi-nccl reports 150 us to NCCL (OFI_NCCL_NET_LATENCY "
       "default, 'for historical reasons'), a tuner hint, not a hop latency; the InfiniBand default",
       kDefaultEfficiency, kEfficiencyNotSourced},
      {"efa-gen2", "AWS EFA v2: 100 Gb/s per EFA (p4d 4 x 100 Gb/s, p5 32 x 100 Gb/s)", 12.5,
       "AWS EC2 P4d: 400 Gbps as 4 EFAs; P5: 3200 Gbps as 32 EFAs of 100 Gbps (EC2 accelerated computing "
       "instance specifications)",
       kDefaultHopLatencyUs,
       "not sourced: AWS publishes no per-hop figure (aws-ofi-nccl's OFI_NCCL_NET_LATENCY is a tuner hint); the "
       "InfiniBand default",
       kDefaultEfficiency, kEfficiencyNotSourced},
      {"efa-gen3", "AWS EFA v3: 200 Gb/s per EFA (p5en 16 x 200 Gb/s)", 25.0,
       "AWS EC2 P5en: 3200 Gbps as 16 EFAv3 of 200 Gbps (EC2 accelerated computing instance specifications)",
       kDefaultHopLatencyUs,
       "not sourced: AWS publishes no per-hop figure (aws-ofi-nccl's OFI_NCCL_NET_LATENCY is a tuner hint); the "
       "InfiniBand default",
       kDefaultEfficiency, kEfficiencyNotSourced},
      {"slingshot-11", "HPE Slingshot-11: Cassini 200 Gb/s NIC, Rosetta 64-port switch (dragonfly)", 25.0,
       "HPE Slingshot: 64 ports of 200 Gbps per Rosetta switch, 200 Gbps Cassini endpoints (HPE Slingshot "
       "datasheet; ALCF Aurora interconnect page)",
       kDefaultHopLatencyUs, kLatencyNotSourced, kDefaultEfficiency, kEfficiencyNotSourced},
      {"tcpx", "GCP GPUDirect-TCPX (A3 High: 4 x 200 Gb/s GPU NICs per 8 GPUs)", 25.0,
       "Google Cloud a3-highgpu-8g: four 200 Gbps NICs for GPU traffic (GPU machine types, GPUDirect-TCPX)",
       kDefaultHopLatencyUs, kLatencyNotSourced, kDefaultEfficiency, kEfficiencyNotSourced},
      {"tcpxo", "GCP GPUDirect-TCPXO (A3 Mega: 8 x 200 Gb/s GPU NICs per 8 GPUs)", 25.0,
       "Google Cloud a3-megagpu-8g: eight 200 Gbps NICs for GPU traffic (GPU machine types, GPUDirect-TCPXO)",
       kDefaultHopLatencyUs, kLatencyNotSourced, kDefaultEfficiency, kEfficiencyNotSourced},
      {"tcp", "plain TCP sockets (NCCL's socket transport) at the node's own NIC rate", 0.0,
       "the node's NIC rate (no rate of its own)", kDefaultHopLatencyUs, kLatencyNotSourced, kDefaultEfficiency,
       kEfficiencyNotSourced},
  };
  return kProfiles;
}

std::string transport_names() {
  std::string names;
  for (const TransportProfile& p : transports()) names += (names.empty() ? "" : ", ") + std::string(p.name);
  return names;
}

const TransportProfile& find_transport(std::string_view name) {
  for (const TransportProfile& p : transports())
    if (p.name == name) return p;
  throw InputError(fmt::format("unknown transport '{}': expected one of {}", name, transport_names()));
}

}  // namespace topocoll::topo
