// Exports of a Topology: Graphviz DOT (to look at), SimGrid platform XML (to simulate) and JSON
// (the full model, for other tools).
//
// Names are the model's: every device is written under Topology::device_name ("n3/gpu5",
// "leaf2"), so a rank's SimGrid host is device_name(rank(r).gpu). A SimGrid link that stands for
// one model edge is named "<a>--<b>" after its two ends, in the graph's own edge order; its
// direction "UP" runs from <a> to <b>. export.cpp explains, at its top, the few places where the
// SimGrid platform departs from the model.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>

#include "topologies/topology.hpp"

namespace topocoll::topo {

// Graphviz (undirected `graph`): one `subgraph cluster_n<i>` per node holding its devices and
// the links between them; fabric switches and network links outside. Node labels are device
// names; edge labels are the link kind and its bandwidth per direction ("nvlink 450 GB/s").
void write_dot(const Topology& t, std::ostream& out);

// SimGrid 3.32 platform XML (DTD version 4.1). GPUs and CPUs are hosts (properties: kind,
// node, local, numa, rank, model, sm), other devices routers, links split-duplex. Zones: one per
// node, inside one per group of nodes sharing a leaf, inside a top zone that also holds the
// spine layer; routing stays proportional to nodes, never to ranks². Load it with
// simgrid::s4u::Engine::load_platform(), then seal_platform() before asking for routes.
void write_simgrid_platform(const Topology& t, std::ostream& out);

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
