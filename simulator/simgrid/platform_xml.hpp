// The SimGrid platform XML (`topocoll topo export --format simgrid`): the platform the SimGrid
// engine simulates (simgrid_adapter.hpp, "The platform"), written out instead of built in
// memory. Same zones, hosts, routers, link names, rates and latencies, and every route the
// Router's (routes.hpp: PXN relays, hashed ECMP over the spines), so a program run on the file
// (SMPI, an S4U simulator) crosses the links `topocoll sim --engine simgrid` simulates.
//
//   <zone id="cluster" routing="None">           top zone: bypass routes only, one per
//     <zone id="links">  every <link>             cross-node connection (declared first: SimGrid
//                                                 3.32 finds a link by name zone by zone)
//     <zone id="n0" routing="Full">               a node: one zoneRoute per same-node connection
//       <zone id="n0/gpu0/ch0:zone" routing="Full">
//         <host id="n0/gpu0/ch0">                 channel 0 of GPU 0 (properties: kind, node,
//                                                 local, numa, rank, channel, model, sm)
//         <router id="n0/gpu0/ch0@n0/nic3">       a NIC this endpoint's traffic crosses, with
//         <route>                                 the routes host -> NIC and NIC -> host
//     ...
//     <bypassZoneRoute src="n0/gpu0/ch0:zone" dst="n1/gpu3/ch0:zone" gw_src=... gw_dst=...>
//                                                 the fabric part of that connection's route
//
// The <config> block sets the network model the engine runs with (CM02, TCP-gamma 0,
// cross-traffic off), not its latency-factor 0: the engine adds each route's latency after the
// transfer itself (simgrid_adapter.hpp, "The network model"), while a program run on the file
// (SMPI) needs SimGrid to charge it. A setting given on the command line wins.
//
// Size: routes exist for the connections of the spec. The export writes every ordered pair of
// GPUs (channel 0), so its size grows as GPUs²: about 0.3 KB per pair across nodes (1024
// GPUs: about 1M routes). The engine itself builds routes for its schedule's connections only.
#pragma once

#include <iosfwd>
#include <vector>

#include "simulator/simgrid/simgrid_adapter.hpp"
#include "topologies/topology.hpp"

namespace topocoll::sim::sg {

// The platform that Simulation(spec, ...) builds, as SimGrid 3.32 platform XML (DTD 4.1).
void write_platform_xml(const PlatformSpec& spec, std::ostream& out);

// Every ordered pair of distinct ranks, on channel 0.
std::vector<Connection> all_pairs(const topo::Topology& t);

// `topocoll topo export --format simgrid`: write_platform_xml for every ordered pair of GPUs on
// one channel, with the ideal calibration (links at their rates and latencies, no caps): the
// machine `topocoll sim --calibration` gives with efficiencies 1 and no overheads.
void write_platform_xml(const topo::Topology& t, std::ostream& out);

}  // namespace topocoll::sim::sg
