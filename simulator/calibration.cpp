#include "simulator/calibration.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/errors.hpp"
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
//  - per-step overhead 2.8 us: NCCL's per-hop latency for the Simple protocol on NVLink ring,
//    3.4 us (src/graph/tuning.cc hwLat), less the 0.6 us the links already carry.
//  - launch overhead 6.6 us: NCCL's base latency of a ring allreduce (tuning.cc baseLat, LL).
//  - reduce throughput 0: reductions are fused into the copy on a GPU (NCCL's recvReduceSend);
//    a positive value adds an execution per local reduce.
//  - channel caps 0: none by default; one CUDA block reaches ~20-40 GB/s (NCCL's per-channel
//    LL128 caps in tuning.cc, 38.7 GB/s for Hopper), set them to study few-channel schedules.
Calibration default_calibration() {
  Calibration c;
  c.links[static_cast<std::size_t>(topo::LinkKind::NvLink)] = {20.6 / 25.0, 0.0, true};
  c.links[static_cast<std::size_t>(topo::LinkKind::Pcie)] = {24.0 / 31.5, 0.0};
  c.links[static_cast<std::size_t>(topo::LinkKind::C2C)] = {1.0, 0.0};
  c.links[static_cast<std::size_t>(topo::LinkKind::InterSocket)] = {1.0, 0.0};
  c.links[static_cast<std::size_t>(topo::LinkKind::Network)] = {0.95, 0.0};
  c.step_overhead_us = 2.8;
  c.launch_overhead_us = 6.6;
  c.reduce_gbps = 0.0;
  c.source = "defaults";
  return c;
}

Calibration ideal_calibration() {
  Calibration c;
  c.source = "ideal";
  return c;
}

Calibration parse_calibration(const std::string& text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    const std::size_t upto = std::min<std::size_t>(e.byte, text.size());
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(upto), '\n');
    throw InputError(fmt::format("{}:{}: not valid JSON ({})", source, line, e.what()));
  }
  if (!j.is_object()) throw InputError(fmt::format("{}: expected a JSON object of calibration fields", source));
  Calibration c = default_calibration();
  c.source = source;
  auto number = [&](const nlohmann::json& v, const std::string& key, double lo, double hi) {
    if (!v.is_number()) throw InputError(fmt::format("{}: '{}' must be a number, got {}", source, key, v.dump()));
    const double x = v.get<double>();
    if (!(x >= lo && x <= hi)) throw InputError(fmt::format("{}: '{}' = {} is outside [{}, {}]", source, key, x, lo, hi));
    return x;
  };
  for (auto& [key, value] : j.items()) {
    if (key == "step_overhead_us") c.step_overhead_us = number(value, key, 0, 1e6);
    else if (key == "launch_overhead_us") c.launch_overhead_us = number(value, key, 0, 1e6);
    else if (key == "reduce_gbps") c.reduce_gbps = number(value, key, 0, 1e6);
    else if (key == "comment" || key == "source") continue;
    else if (key == "links" || key == "channel_cap_gbps") {
      if (!value.is_object()) throw InputError(fmt::format("{}: '{}' must be an object keyed by link kind", source, key));
      for (auto& [kind, v] : value.items()) {
        std::size_t k = 0;
        while (k < 5 && kind != kKinds[k]) ++k;
        if (k == 5)
          throw InputError(fmt::format("{}: '{}.{}': unknown link kind, expected nvlink, pcie, c2c, inter_socket or network", source,
                                       key, kind));
        if (key == "channel_cap_gbps") {
          c.channel_cap_gbps[k] = number(v, key + "." + kind, 0, 1e6);
          continue;
        }
        if (!v.is_object()) throw InputError(fmt::format("{}: 'links.{}' must be an object", source, kind));
        for (auto& [field, x] : v.items()) {
          if (field == "efficiency") {
            c.links[k].efficiency = number(x, "links." + kind + ".efficiency", 1e-6, 1.0);
            c.links[k].by_gpu_generation = false;
          }
          else if (field == "extra_latency_us") c.links[k].extra_latency_us = number(x, "links." + kind + ".extra_latency_us", 0, 1e6);
          else throw InputError(fmt::format("{}: 'links.{}.{}': unknown field, expected efficiency or extra_latency_us", source, kind, field));
        }
      }
    } else {
      throw InputError(fmt::format("{}: unknown key '{}': expected links, channel_cap_gbps, step_overhead_us, launch_overhead_us, "
                                   "reduce_gbps or comment",
                                   source, key));
    }
  }
  return c;
}

double Calibration::rate_bytes_per_s(const topo::Graph& g, topo::Edge e) const {
  const topo::Link& l = g[e];
  const LinkCalibration& lc = of(l.kind);
  double eff = lc.efficiency;
  if (lc.by_gpu_generation && l.kind == topo::LinkKind::NvLink) {
    // The GPU end of the link tells the generation (either end for GPU-to-GPU links).
    int sm = 0;
    for (topo::Vertex v : {boost::source(e, g), boost::target(e, g)})
      if (g[v].kind == topo::DeviceKind::Gpu && g[v].sm > 0) sm = g[v].sm;
    if (sm > 0) eff = topo::constants::nccl_nvlink_gbps_per_link(sm) / topo::constants::nvlink_gbps_per_link(sm);
  }
  return l.bw_gbps * 1e9 * eff;
}

Calibration load_calibration(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot read the calibration file", path));
  std::ostringstream os;
  os << in.rdbuf();
  return parse_calibration(os.str(), path);
}

}  // namespace topocoll::sim
