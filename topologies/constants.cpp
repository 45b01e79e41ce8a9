#include "topologies/constants.hpp"

#include <charconv>
#include <cmath>
#include <string>

namespace topocoll::topo::constants {

double nvlink_gbps_per_link(int sm) {
  if (sm >= 100) return kNvlink5GbpsPerLink;
  if (sm >= 90) return kNvlink4GbpsPerLink;
  if (sm == 86 || sm == 87 || sm == 89) return 112.5 / 2.0 / 4.0;
  if (sm >= 80) return kNvlink3GbpsPerLink;
  if (sm >= 70) return kNvlink2GbpsPerLink;
  return kNvlink1GbpsPerLink;
}

std::optional<double> nvlink_generation_gbps_per_link(int generation) {
  switch (generation) {
    case 1:
      return kNvlink1GbpsPerLink;
    case 2:
      return kNvlink2GbpsPerLink;
    case 3:
      return kNvlink3GbpsPerLink;
    case 4:
      return kNvlink4GbpsPerLink;
    case 5:
      return kNvlink5GbpsPerLink;
    default:
      return std::nullopt;
  }
}

std::optional<double> pcie_generation_gts(int generation) {
  static constexpr double kGts[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
  if (generation < 1 || generation > 6) return std::nullopt;
  return kGts[generation - 1];
}

std::optional<double> inter_socket_gbps_of_vendor(std::string_view vendor) {
  if (vendor == "intel") return kInterSocketIntelSapphireRapidsGbps;
  if (vendor == "amd") return kInterSocketAmdGbps;
  if (vendor == "arm") return kInterSocketArmGbps;
  return std::nullopt;
}

double nccl_nvlink_gbps_per_link(int sm) {
  if (sm >= 100) return 40.1;
  if (sm >= 90) return 20.6;
  if (sm == 86) return 12.0;
  if (sm >= 70) return 20.0;
  return 18.0;
}

std::optional<double> pcie_gbps_per_lane(double gts) {
  struct Gen {
    double gts;
    double gbps_per_lane;
  };
  static constexpr Gen kGens[] = {{2.5, 0.25}, {5.0, 0.5}, {8.0, 0.985}, {16.0, 1.969}, {32.0, 3.938}, {64.0, 7.877}};
  for (const Gen& g : kGens)
    if (std::fabs(g.gts - gts) < 1e-6) return g.gbps_per_lane;
  return std::nullopt;
}

std::optional<double> parse_pcie_link_speed(std::string_view text) {
  // "<number> GT/s" optionally followed by " PCIe".
  std::size_t i = 0;
  while (i < text.size() && text[i] == ' ') ++i;
  const char* begin = text.data() + i;
  const char* end = text.data() + text.size();
  double value = 0.0;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr == begin) return std::nullopt;
  std::string_view rest(ptr, static_cast<std::size_t>(end - ptr));
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (rest != "GT/s" && rest != "GT/s PCIe") return std::nullopt;
  if (!pcie_gbps_per_lane(value)) return std::nullopt;
  return value;
}

}  // namespace topocoll::topo::constants
