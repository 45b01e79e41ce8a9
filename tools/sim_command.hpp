// `topocoll sim`: simulate algorithms over a size sweep, nccl-tests style.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "tools/topo_commands.hpp"

namespace topocoll::tools {

struct SimArgs {
  TopoArgs topo;
  std::string algorithm = "ring,dbt,hierarchical";
  std::string min_bytes = "8", max_bytes = "128M";
  std::string factor = "2";
  std::string dtype = "float", op = "sum";
  int channels = 2;
  std::string slice = "512K";
  std::string engine = "analytic";
  std::string calibration;
  // NCCL protocol(s) to simulate: "" = the calibration file's "protocol", else auto; "auto" =
  // every protocol NCCL would enable, fastest reported; "LL" | "LL128" | "Simple" = that one.
  std::string protocol;
  std::string format = "table";  // table | csv | jsonl
  std::string output;
  std::string trace;
  bool no_nccl_model = false;
  // The stock-NCCL model: its release and NCCL environment (NCCL_ALGO=..., also read from the
  // process environment as NCCL does; the flags win). sim::NcclModelOptions.
  std::string nccl_version = "2.28.9";
  std::vector<std::string> nccl_env;
  bool simgrid_plain = false;  // SimOptions::simgrid_fast_paths off
};

int sim_command(const SimArgs& a, std::ostream& out);

}  // namespace topocoll::tools
