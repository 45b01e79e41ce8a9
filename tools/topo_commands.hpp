// The `topocoll topo ...` subcommands, as functions of their typed arguments (testable without
// a process).
#pragma once

#include <fstream>
#include <optional>
#include <ostream>
#include <string>

#include "common/cli_io.hpp"
#include "topologies/load.hpp"

namespace topocoll::tools {

struct TopoArgs {
  std::string topology;
  std::optional<int> nodes;
  std::optional<std::string> fabric;
  std::optional<double> oversubscription;
  std::optional<std::string> transport;  // topologies/transports.hpp
  std::optional<std::string> ecmp;       // hash | ideal
  std::optional<int> nics_per_gpu;
  bool no_pxn = false;
  bool sharp = false;
  std::string format = "text";
  std::string output;
  std::string from, to;
  bool no_bounds = false;
};

// The topology flags as the library's typed options (--fabric parsed, InputError if unknown).
topo::TopologyOptions topology_options(const TopoArgs& a);

using cli::Output;

int topo_show(const TopoArgs& args, std::ostream& out);
int topo_check(const TopoArgs& args, std::ostream& out);
int topo_export(const TopoArgs& args, std::ostream& out);

// Every note of the topology (what its importer assumed, each naming the field that sets it), one
// line each, "note: ...": `sim` and `topo export` write them on stderr after their output.
void write_topology_notes(const topo::Topology& t, std::ostream& err);
int topo_path(const TopoArgs& args, std::ostream& out);
int topo_presets(std::ostream& out);

}  // namespace topocoll::tools
