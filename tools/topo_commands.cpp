#include "tools/topo_commands.hpp"

#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "common/errors.hpp"
#include "simulator/simgrid/platform_xml.hpp"
#include "topologies/diagnostics.hpp"
#include "topologies/export.hpp"
#include "topologies/load.hpp"
#include "topologies/paths.hpp"
#include "topologies/presets.hpp"
#include "topologies/summary.hpp"

namespace topocoll::tools {

namespace {

topo::Topology load(const TopoArgs& a) {
  return topo::load_topology(topology_options(a));
}

std::string header(const TopoArgs& a, const topo::Topology& t) {
  return fmt::format("topology     {} x {} node{}", a.topology, t.nodes(), t.nodes() == 1 ? "" : "s");
}

}  // namespace

topo::TopologyOptions topology_options(const TopoArgs& a) {
  topo::TopologyOptions o;
  o.topology = a.topology;
  o.nodes = a.nodes;
  if (a.fabric) o.fabric = topo::parse_fabric(*a.fabric);
  o.oversubscription = a.oversubscription;
  o.transport = a.transport;
  if (a.ecmp) o.ecmp = topo::parse_ecmp(*a.ecmp);
  if (a.no_pxn) o.pxn = false;
  if (a.sharp) o.sharp = true;
  o.nics_per_gpu = a.nics_per_gpu;
  return o;
}

int topo_show(const TopoArgs& a, std::ostream& out) {
  if (a.format != "text" && a.format != "json")
    throw InputError(fmt::format("--format {}: expected text or json", a.format));
  const topo::Topology t = load(a);
  const topo::Summary s = topo::summarize(t, !a.no_bounds);
  if (a.format == "json") {
    nlohmann::json j = topo::to_json(s);
    j["topology"] = a.topology;
    out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    out << header(a, t) << "\n";
    topo::write_text(s, out);
  }
  return 0;
}

int topo_check(const TopoArgs& a, std::ostream& out) {
  const topo::Topology t = load(a);
  const auto findings = topo::diagnose(t);
  out << header(a, t) << fmt::format(": {} GPUs\n", t.num_ranks());
  std::size_t warnings = 0;
  for (const auto& f : findings) {
    if (f.severity == topo::Severity::Warning) ++warnings;
    out << fmt::format("{} [{}] {}\n", f.severity == topo::Severity::Warning ? "WARN" : "info", f.check, f.message);
  }
  out << fmt::format("{} warning{}\n", warnings, warnings == 1 ? "" : "s");
  return 0;  // problems found are a result, not a failure
}

void write_topology_notes(const topo::Topology& t, std::ostream& err) {
  for (const std::string& note : t.notes()) err << "note: " << note << "\n";
}

int topo_export(const TopoArgs& a, std::ostream& out) {
  if (a.format != "dot" && a.format != "simgrid" && a.format != "json")
    throw InputError(fmt::format("--format {}: expected dot, simgrid or json", a.format));
  const topo::Topology t = load(a);
  Output output(a.output, out);
  if (a.format == "dot")
    topo::write_dot(t, output.stream());
  else if (a.format == "simgrid")
    sim::sg::write_platform_xml(t, output.stream());
  else
    output.stream() << topo::to_json(t).dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  output.close();
  write_topology_notes(t, std::cerr);  // the export is the topology's; what it assumed goes to stderr
  return 0;
}

int topo_path(const TopoArgs& a, std::ostream& out) {
  const topo::Topology t = load(a);
  auto find = [&](const std::string& name, const char* flag) {
    auto v = t.find_device(name);
    if (!v)
      throw InputError(
          fmt::format("{} {}: no such device; names look like n0/gpu3, n1/nic0, n0/cpu1, leaf0, spine2", flag, name));
    return *v;
  };
  const topo::Vertex from = find(a.from, "--from"), to = find(a.to, "--to");
  const topo::Path p = topo::find_path(t, from, to);
  if (!p.found) {
    out << fmt::format("{} -> {}: not connected\n", a.from, a.to);
    return 0;
  }
  const double flow = topo::max_flow_gbps(t, {from}, {to});
  out << fmt::format(
      "{} -> {}: type {}, {} links, {:.2f} GB/s single path, {:.2f} GB/s over all paths (max-flow), {:.2f} us\n",
      a.from, a.to, to_string(p.type), p.hops(), p.bw_gbps, flow, p.latency_us);
  const auto& g = t.graph();
  for (std::size_t i = 0; i + 1 < p.vertices.size(); ++i) {
    auto [e, ok] = boost::edge(p.vertices[i], p.vertices[i + 1], g);
    out << fmt::format("  {:<14} -> {:<14} {:<12} {:8.2f} GB/s {:5.2f} us\n", t.device_name(p.vertices[i]),
                       t.device_name(p.vertices[i + 1]), to_string(g[e].kind), g[e].bw_gbps, g[e].latency_us);
  }
  return 0;
}

int topo_presets(std::ostream& out) {
  for (const auto& p : topo::presets()) out << fmt::format("{:<16} {}\n", p.name, p.description);
  return 0;
}

}  // namespace topocoll::tools
