// Exports of a Topology: Graphviz DOT (to look at) and JSON (the full model, for other tools).
// The SimGrid platform XML is the SimGrid engine's (simulator/simgrid/platform_xml.hpp: the
// routes it simulates); it follows the naming below.
//
// Names are the model's: every device is written under Topology::device_name ("n3/gpu5",
// "leaf2"); a rank's SimGrid host is "<device_name(rank(r).gpu)>/ch<channel>". A SimGrid link for
// one model edge is named "<a>--<b>" after its two ends, in the graph's own edge order; its
// direction "UP" runs from <a> to <b>.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>

#include "topologies/topology.hpp"

namespace topocoll::topo {

// Graphviz (undirected `graph`): one `subgraph cluster_n<i>` per node holding its devices and
// the links between them; fabric switches and network links outside. Node labels are device
// names; edge labels are the link kind and its bandwidth per direction ("nvlink 450 GB/s").
void write_dot(const Topology& t, std::ostream& out);

// The full model:
//   {"nodes": N, "node_models": [...], "cpu_vendor": "...", "cores_per_node": C,
//    "devices": [{id, name, kind, node, local, numa, model, port_gbps, sm}],
//    "links":   [{a, b, kind, bw_gbps, latency_us, lanes}],        a, b: device ids
//    "ranks":   [{rank, node, local, gpu, nic, rail}],              gpu, nic: device ids (nic null
//                                                                    when the node has no NIC)
//    "fabric":  {kind, oversubscription, radix, link_gbps, latency_us} or null,
//    "notes":   [...]}
// `model` is the device's label ("H100") or null; a device id is its vertex index.
nlohmann::json to_json(const Topology& t);

}  // namespace topocoll::topo
