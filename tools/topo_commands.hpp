// The `topocoll topo ...` subcommands, as functions of their typed arguments (testable without
// a process).
#pragma once

#include <fstream>
#include <optional>
#include <ostream>
#include <string>

#include "topologies/load.hpp"

namespace topocoll::tools {

struct TopoArgs {
  std::string topology;
  std::optional<int> nodes;
  std::optional<std::string> fabric;
  std::optional<double> oversubscription;
  std::string format = "text";
  std::string output;
  std::string from, to;
  bool no_bounds = false;
};

// The topology flags as the library's typed options (--fabric parsed, InputError if unknown).
topo::TopologyOptions topology_options(const TopoArgs& a);

// Where a command writes: the file named by -o (none or "-": the given stream). Errors on open
// and on close name the flag and the file.
class Output {
 public:
  Output(const std::string& path, std::ostream& fallback);
  std::ostream& stream() { return file_.is_open() ? file_ : fallback_; }
  void close();  // flushes and reports a failed write

 private:
  std::string path_;
  std::ofstream file_;
  std::ostream& fallback_;
};

int topo_show(const TopoArgs& args, std::ostream& out);
int topo_check(const TopoArgs& args, std::ostream& out);
int topo_export(const TopoArgs& args, std::ostream& out);
int topo_path(const TopoArgs& args, std::ostream& out);
int topo_presets(std::ostream& out);

}  // namespace topocoll::tools
