#include "simulator/calibration.hpp"

#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/errors.hpp"
#include "common/json_input.hpp"
#include "simulator/nccl_tables.hpp"
#include "topologies/constants.hpp"

namespace topocoll::sim {

namespace {
constexpr const char* kKinds[] = {"nvlink", "pcie", "c2c", "inter_socket", "network"};
}

// Defaults, each from a public source (docs/simulator.md repeats them):
//  - nvlink efficiency by GPU generation: NCCL's effective per-link NVLink rate (src/graph/
//    topo.h: SM80 20, SM90 20.6, SM100 40.1 GB/s) over the vendor's per-link rate (25, 25, 50):
//    0.80 for A100, 0.824 for H100; 0.824 when the GPU's generation is unknown.
//  - pcie efficiency 0.762: NCCL's PCIe rate, width * speed / 80 (24 GB/s for Gen4 x16,
//    src/graph/topo.cc) over the raw rate after 128b/130b encoding (31.5 GB/s).
//  - inter_socket efficiency 1: the topology already holds NCCL's measured figures.
//  - network efficiency 0.95: InfiniBand at MTU 4096 carries ~98.5% payload (LRH+GRH+BTH+RETH+
//    ICRC headers); the rest covers NCCL's proxy pipeline gaps. An assumption, checked in
//    docs/validation.md against the 2-node DGX A100 measurement.
//  - per-step and launch overheads, payload efficiency: by protocol (protocol_calibration), from
//    NCCL 2.22.3's src/graph/tuning.cc (nccl_tuning_tables(), Ring row): a hop of class h costs
//    hwLat[h][Ring][p] - hwLat[h][Ring][LL] on top of its links' latencies (which stand for LL's
//    hwLat, topologies/constants.hpp); a call costs baseLat[Ring][p]. Simple: 2.8 / 4.7 / 11.3 us
//    per NVLink / PCI / network hop, 8.4 us per call; LL128: 1.3 / 1.5 / 1.3 us, 14 us; LL: 0 per
//    hop, 6.6 us. Payload: LL carries 4 B of data per 8 B line (src/device/prims_ll.h), LL128
//    120 B per 128 B line (prims_ll128.h, NCCL_LL128_DATAELEMS), Simple all.
//    The defaults are the Simple protocol's (NCCL's choice for large messages).
//  - host_call_us kHostCallUs (calibration.hpp): the per-call host floor, measured on the
//    calibration sets (no public constant gives it), checked leave-one-out in docs/validation.md.
//  - reduce throughput 0: reductions are fused into the copy on a GPU (NCCL's recvReduceSend);
//    a positive value adds an execution per local reduce.
//  - switch reduction rate (NVLS): by GPU generation, NCCL's nvlsEfficiency (2.28 src/graph/
//    tuning.cc, [Volta, Ampere, Hopper, Blackwell] = {0, 0, 0.85, 0.74}: NCCL's NVLS bus
//    bandwidth is the NVLS graph's NVLink bandwidth times it) of the GPU port's vendor rate: on
//    H100 / H200, 0.85 x 450 = 382.5 GB/s of parts per port, above NVLink's calibrated
//    0.824 x 450 = 370.8, so NVLink bounds NVLS there, not the switch. SHARP: no limit (no
//    public figure for Quantum-2's aggregation rate; the NIC's link bounds it).
//  - switch latency per instance: by protocol (protocol_calibration), from NCCL 2.28's tables.
//  - block caps: by channel pattern and protocol from NCCL's per-channel limits (with_block_caps,
//    called for the topology by protocol_set in sweep.cpp); none in base_calibration itself.
//  - channel caps 0: none by default; one CUDA block reaches ~20-40 GB/s (NCCL's per-channel
//    LL128 caps in tuning.cc, 38.7 GB/s for Hopper), set them to study few-channel schedules.
Calibration base_calibration() {
  Calibration c;
  c.links[static_cast<std::size_t>(topo::LinkKind::NvLink)] = {20.6 / 25.0, 0.0, true};
  c.links[static_cast<std::size_t>(topo::LinkKind::Pcie)] = {24.0 / 31.5, 0.0};
  c.links[static_cast<std::size_t>(topo::LinkKind::C2C)] = {1.0, 0.0};
  c.links[static_cast<std::size_t>(topo::LinkKind::InterSocket)] = {1.0, 0.0};
  c.links[static_cast<std::size_t>(topo::LinkKind::Network)] = {0.95, 0.0};
  c.step_overhead_us = 0.0;
  c.launch_overhead_us = 0.0;
  c.host_call_us = kHostCallUs;
  c.reduce_gbps = 0.0;
  c.nvls_reduce_by_gpu_generation = true;
  c.source = "defaults";
  return c;
}

Calibration default_calibration() {
  return protocol_calibration(base_calibration(), Protocol::Simple);
}

std::string_view to_string(Protocol p) {
  switch (p) {
    case Protocol::LL:
      return "LL";
    case Protocol::LL128:
      return "LL128";
    case Protocol::Simple:
      return "Simple";
  }
  return "?";
}

std::optional<Protocol> parse_protocol(std::string_view s) {
  std::string lower(s);
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (lower == "ll") return Protocol::LL;
  if (lower == "ll128") return Protocol::LL128;
  if (lower == "simple") return Protocol::Simple;
  return std::nullopt;
}

HopClass hop_class(const topo::Graph& g, const std::vector<topo::Edge>& links) {
  HopClass h = HopClass::NvLink;
  for (topo::Edge e : links) {
    const topo::LinkKind k = g[e].kind;
    if (k == topo::LinkKind::Network) return HopClass::Net;
    if (k == topo::LinkKind::Pcie || k == topo::LinkKind::InterSocket) h = HopClass::Pci;
  }
  return h;
}

double Calibration::step_overhead_for(const topo::Graph& g, const std::vector<topo::Edge>& links) const {
  const double by_class = step_overhead_hw_us[static_cast<std::size_t>(hop_class(g, links))];
  return by_class >= 0.0 ? by_class : step_overhead_us;
}

double Calibration::latency_s(const topo::Graph& g, topo::Edge e) const {
  return (g[e].latency_us + of(g[e].kind).extra_latency_us) * 1e-6;
}

double Calibration::route_latency_s(const topo::Graph& g, const std::vector<topo::Edge>& links) const {
  double s = 0.0;
  for (topo::Edge e : links) s += latency_s(g, e);
  return s + step_overhead_for(g, links) * 1e-6;
}

Calibration protocol_calibration(const Calibration& base, Protocol p) {
  // NCCL's own tables (simulator/nccl_model.cpp), not a copy: [hw][Ring][protocol], [Ring][protocol].
  const NcclTuningTables& tb = nccl_tuning_tables();
  constexpr int kRing = static_cast<int>(NcclAlgo::Ring);
  const int proto = static_cast<int>(p == Protocol::LL      ? NcclProto::LL
                                     : p == Protocol::LL128 ? NcclProto::LL128
                                                            : NcclProto::Simple);
  constexpr int kLL = static_cast<int>(NcclProto::LL);
  Calibration c = base;
  c.protocol = p;
  if (!base.step_overhead_fixed) {
    for (int hw : {kNcclHwNvlink, kNcclHwPci, kNcclHwNet})
      c.step_overhead_hw_us[static_cast<std::size_t>(hw)] =
          tb.hw_lat_us[hw][kRing][proto] - tb.hw_lat_us[hw][kRing][kLL];
    c.step_overhead_us = c.step_overhead_hw_us[static_cast<std::size_t>(kNcclHwNvlink)];
  }
  if (!base.launch_overhead_fixed) c.launch_overhead_us = tb.base_lat_us[kRing][proto];
  // Switch latency per instance, from NCCL 2.28.9's tables (NVLS rows exist from 2.28 here):
  //  - NVLS: NCCL models an NVLS allreduce's latency as hwLat[NVLINK][NVLS][Simple] = 25 us
  //    (baseLat 0; tuning.cc "comm->latencies[coll][a][p] = intraLat") for its two switch passes
  //    (multimem.ld_reduce, then multimem.st): 12.5 us per pass, i.e. per instance here;
  //  - SHARP: CollNet's network term hwLat[NET][CollNetDirect][Simple] = 31 us for one pass up
  //    the aggregation tree and down.
  // NVLS and CollNet run Simple only (tuning.cc), so every protocol gets the Simple figures.
  if (!base.switch_latency_fixed) {
    const NcclTuningTables& t28 = nccl_tuning_tables(NcclVersion::V2_28_9);
    constexpr int kSimple = static_cast<int>(NcclProto::Simple);
    c.switch_latency_us[static_cast<std::size_t>(algo::SwitchKind::Nvls)] =
        t28.hw_lat_us[kNcclHwNvlink][static_cast<int>(NcclAlgo::Nvls)][kSimple] / 2.0;
    c.switch_latency_us[static_cast<std::size_t>(algo::SwitchKind::Sharp)] =
        t28.hw_lat_us[kNcclHwNet][static_cast<int>(NcclAlgo::CollNetDirect)][kSimple];
  }
  // Payload per line: LL 4 of 8 bytes (a flag with each 4 B of data), LL128 120 of 128 bytes.
  c.payload_efficiency = p == Protocol::LL ? 0.5 : p == Protocol::LL128 ? 120.0 / 128.0 : 1.0;
  return c;
}

double Calibration::nvls_reduce_fraction(int sm) const {
  if (nvls_reduce_efficiency > 0) return nvls_reduce_efficiency;
  if (!nvls_reduce_by_gpu_generation) return 0.0;
  // NCCL's nvlsEfficiency (2.28 tuning.cc): Hopper 0.85, Blackwell 0.74.
  const NcclTuningTables& t28 = nccl_tuning_tables(NcclVersion::V2_28_9);
  return t28.nvls_efficiency[sm >= 100 ? 3 : sm >= 90 ? 2 : sm >= 80 ? 1 : 0];
}

Calibration ideal_calibration() {
  Calibration c;
  c.source = "ideal";
  return c;
}

Calibration parse_calibration(const std::string& text, const std::string& source) {
  const nlohmann::json j = json_input::parse(text, source);  // 1e309 included: an InputError
  // Keys and values of the file, escaped: an error message stays on one line.
  const auto esc = json_input::escaped;
  if (!j.is_object()) throw InputError(fmt::format("{}: expected a JSON object of calibration fields", source));
  Calibration c = base_calibration();
  c.source = source;
  auto number = [&](const nlohmann::json& v, const std::string& key, double lo, double hi) {
    if (!v.is_number())
      throw InputError(fmt::format("{}: '{}' must be a number, got {}", source, esc(key), json_input::echo(v)));
    const double x = v.get<double>();
    if (!(x >= lo && x <= hi))
      throw InputError(fmt::format("{}: '{}' = {} is outside [{}, {}]", source, esc(key), x, lo, hi));
    return x;
  };
  for (auto& [key, value] : j.items()) {
    if (key == "step_overhead_us") {
      c.step_overhead_us = number(value, key, 0, 1e6);
      c.step_overhead_fixed = true;
    } else if (key == "launch_overhead_us") {
      c.launch_overhead_us = number(value, key, 0, 1e6);
      c.launch_overhead_fixed = true;
    } else if (key == "block_cap_gbps") {
      if (!value.is_object())
        throw InputError(
            fmt::format("{}: 'block_cap_gbps' must be an object: {{\"pipeline\": GB/s, \"tree\": GB/s}}", source));
      for (auto& [pattern, v] : value.items()) {
        if (pattern != "pipeline" && pattern != "tree")
          throw InputError(fmt::format("{}: 'block_cap_gbps.{}': unknown channel pattern, expected pipeline or tree",
                                       source, esc(pattern)));
        c.block_cap_gbps[pattern == "tree" ? 1 : 0] = number(v, "block_cap_gbps." + pattern, 0, 1e6);
      }
      c.block_cap_fixed = true;
    } else if (key == "host_call_us") {
      c.host_call_us = number(value, key, 0, 1e6);
    } else if (key == "protocol") {
      if (!value.is_string())
        throw InputError(fmt::format("{}: 'protocol' must be a string: auto, LL, LL128 or Simple", source));
      const std::string name = value.get<std::string>();
      if (name != "auto") {
        c.only_protocol = parse_protocol(name);
        if (!c.only_protocol)
          throw InputError(
              fmt::format("{}: 'protocol' = \"{}\": expected auto, LL, LL128 or Simple", source, esc(name)));
      }
    } else if (key == "reduce_gbps") {
      c.reduce_gbps = number(value, key, 0, 1e6);
    } else if (key == "switch_latency_us") {
      if (!value.is_object())
        throw InputError(
            fmt::format("{}: 'switch_latency_us' must be an object: {{\"nvls\": us, \"sharp\": us}}", source));
      for (auto& [kind, v] : value.items()) {
        if (kind != "nvls" && kind != "sharp")
          throw InputError(fmt::format("{}: 'switch_latency_us.{}': unknown switch kind, expected nvls or sharp",
                                       source, esc(kind)));
        c.switch_latency_us[kind == "sharp" ? 1 : 0] = number(v, "switch_latency_us." + kind, 0, 1e6);
      }
      c.switch_latency_fixed = true;
    } else if (key == "nvls_reduce_efficiency") {
      c.nvls_reduce_efficiency = number(value, key, 1e-6, 1.0);
    } else if (key == "comment" || key == "source")
      continue;
    else if (key == "links" || key == "channel_cap_gbps") {
      if (!value.is_object())
        throw InputError(fmt::format("{}: '{}' must be an object keyed by link kind", source, esc(key)));
      for (auto& [kind, v] : value.items()) {
        std::size_t k = 0;
        while (k < 5 && kind != kKinds[k]) ++k;
        if (k == 5)
          throw InputError(
              fmt::format("{}: '{}.{}': unknown link kind, expected nvlink, pcie, c2c, inter_socket or network", source,
                          esc(key), esc(kind)));
        if (key == "channel_cap_gbps") {
          c.channel_cap_gbps[k] = number(v, key + "." + kind, 0, 1e6);
          continue;
        }
        if (!v.is_object()) throw InputError(fmt::format("{}: 'links.{}' must be an object", source, esc(kind)));
        for (auto& [field, x] : v.items()) {
          if (field == "efficiency") {
            c.links[k].efficiency = number(x, "links." + kind + ".efficiency", 1e-6, 1.0);
            c.links[k].by_gpu_generation = false;
          } else if (field == "extra_latency_us")
            c.links[k].extra_latency_us = number(x, "links." + kind + ".extra_latency_us", 0, 1e6);
          else
            throw InputError(fmt::format("{}: 'links.{}.{}': unknown field, expected efficiency or extra_latency_us",
                                         source, esc(kind), esc(field)));
        }
      }
    } else {
      throw InputError(fmt::format(
          "{}: unknown key '{}': expected links, channel_cap_gbps, step_overhead_us, launch_overhead_us, "
          "host_call_us, block_cap_gbps, reduce_gbps, switch_latency_us, nvls_reduce_efficiency, protocol or "
          "comment",
          source, esc(key)));
    }
  }
  // Ready to use as it is: the file's protocol (Simple when it says none or "auto", like the
  // defaults); `topocoll sim` derives the other protocols from it again.
  return protocol_calibration(c, c.only_protocol.value_or(Protocol::Simple));
}

double Calibration::channel_cap_bytes_per_s(const topo::Graph& g, const std::vector<topo::Edge>& links) const {
  double cap_bps = schedule_block_cap_gbps > 0 ? schedule_block_cap_gbps * 1e9 : 0.0;
  for (topo::Edge e : links)
    if (const double k = cap(g[e].kind) * 1e9; k > 0) cap_bps = cap_bps > 0 ? std::min(cap_bps, k) : k;
  return cap_bps;
}

Calibration Calibration::for_schedule(const algo::Schedule& s) const {
  Calibration c = *this;
  c.schedule_block_cap_gbps = 0.0;
  const algo::ChannelPattern first = s.pattern(0);
  for (int ch = 1; ch < s.num_channels(); ++ch)
    if (s.pattern(ch) != first) return c;  // mixed patterns: no block cap
  c.schedule_block_cap_gbps = block_cap_gbps[static_cast<std::size_t>(first)];
  return c;
}

Calibration with_block_caps(Calibration c, int sm, int nodes) {
  if (c.block_cap_fixed) return c;
  const NcclTuningTables& tb = nccl_tuning_tables();
  // tuning.cc's indices: compCapIndex (Volta 0 for sm < 80, Ampere 1, Hopper 2 for sm >= 90)
  // and index2 (1, 2, >= 3 nodes).
  const std::size_t arch = sm >= 90 ? 2 : sm >= 80 ? 1 : 0;
  const std::size_t scale = nodes <= 1 ? 0 : nodes == 2 ? 1 : 2;
  // NCCL's figures are per graph channel; the kernels run comm->nChannels = 2 x graph channels
  // blocks (connect.cc ncclTopoPostset; enqueue.cc gives a tree or ring collective all of them at
  // large sizes), so one block gets half.
  const Protocol p = c.protocol.value_or(Protocol::Simple);
  double tree = tb.per_ch_max_tree_bws[arch][scale] / 2.0;
  double pipeline = 0.0;
  if (p == Protocol::LL128) {
    tree = std::min(tree, tb.per_ch_max_tree_ll128_bws[arch][scale] / 2.0);
    pipeline = tb.per_ch_max_ring_ll128_bws[arch][scale] / 2.0;
  }
  c.block_cap_gbps[static_cast<std::size_t>(algo::ChannelPattern::Pipeline)] = pipeline;
  c.block_cap_gbps[static_cast<std::size_t>(algo::ChannelPattern::Tree)] = tree;
  return c;
}

double Calibration::rate_bytes_per_s(const topo::Graph& g, topo::Edge e) const {
  const topo::Link& l = g[e];
  const LinkCalibration& lc = of(l.kind);
  // A link of a named transport carries its own efficiency (topologies/transports.hpp).
  double eff = l.efficiency > 0.0 ? l.efficiency : lc.efficiency;
  if (lc.by_gpu_generation && l.kind == topo::LinkKind::NvLink) {
    // The GPU end of the link tells the generation (either end for GPU-to-GPU links).
    int sm = 0;
    for (topo::Vertex v : {boost::source(e, g), boost::target(e, g)})
      if (g[v].kind == topo::DeviceKind::Gpu && g[v].sm > 0) sm = g[v].sm;
    if (sm > 0) eff = topo::constants::nccl_nvlink_gbps_per_link(sm) / topo::constants::nvlink_gbps_per_link(sm);
  }
  return l.bw_gbps * 1e9 * eff * payload_efficiency;
}

Calibration load_calibration(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot read the calibration file", path));
  std::ostringstream os;
  os << in.rdbuf();
  return parse_calibration(os.str(), path);
}

}  // namespace topocoll::sim
