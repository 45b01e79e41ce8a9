// Transport profiles: what a network technology gives a collective, as data. One entry per
// technology, each value with its source (docs/topologies.md repeats the table). A FabricSpec
// names one (`transport`, `topocoll sim --transport NAME`); its network links then carry the
// profile's latency and efficiency, and every NIC its port rate.
//
// Where no public source gives a value, the profile says "not sourced" and takes the InfiniBand
// default (kDefaultHopLatencyUs, kDefaultEfficiency: the values every fabric had before transports
// existed), never an invented one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace topocoll::topo {

struct TransportProfile {
  std::string_view name;         // "ndr", "efa-gen2", ... (what --transport takes)
  std::string_view description;  // one line
  // Port rate of one NIC, per direction, GB/s (1e9 B/s); 0 = the node's own NIC rate.
  double port_gbps = 0.0;
  std::string_view port_source;
  // One way, per network link (NIC-switch or switch-switch), us.
  double hop_latency_us = 0.0;
  std::string_view latency_source;
  // The fraction of the port rate a collective's transfer gets.
  double efficiency = 0.0;
  std::string_view efficiency_source;
};

// The default of every profile without a source of its own: constants::kNetworkLinkLatencyUs and
// the calibration's network efficiency (simulator/calibration.cpp, base_calibration()).
inline constexpr double kDefaultHopLatencyUs = 0.6;
inline constexpr double kDefaultEfficiency = 0.95;

// Every profile, in a fixed order (the order docs/topologies.md and the error message list).
const std::vector<TransportProfile>& transports();
// The profile named `name`; throws InputError naming `name` and every accepted name.
const TransportProfile& find_transport(std::string_view name);
// "hdr, ndr, ..." (for messages and --help).
std::string transport_names();

}  // namespace topocoll::topo
