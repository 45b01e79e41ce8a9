// `topocoll algorithms`, `topocoll verify`, `topocoll schedule export`.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "algorithms/ir/types.hpp"
#include "tools/topo_commands.hpp"

namespace topocoll::tools {

struct AlgoArgs {
  TopoArgs topo;  // --topology / --nodes / --fabric / --oversubscription
  std::string algorithm = "all";
  std::string count = "";  // elements, suffixes allowed (K, M, G); default: ranks * channels * 64
  int channels = 2;
  std::string slice = "1M";  // bytes per slice
  std::string dtype = "float";
  std::string op = "sum";
  int root = 0;
  std::string collective;       // verify --collective NAME: `--algorithm all` is that collective's; "" = every one
  std::string schedule;         // verify --schedule FILE (schedule JSON, or MSCCL XML with --count)
  std::string sizes;            // --sizes FILE: an all-to-allv's size matrix (algo::load_alltoallv_sizes)
  std::string output;           // schedule export -o
  std::string format = "json";  // schedule export --format json|msccl
  bool in_place = false;
  std::string layout;     // verify --layout NxG: N nodes of G ranks, no topology
  bool nvls = false;      // verify --nvls: every node has NVLS (NVSwitch multicast)
  int nvlink_domain = 1;  // verify --nvlink-domain K: K consecutive nodes share one NVLink domain
};

int algorithms_list(std::ostream& out);
int verify_command(const AlgoArgs& a, std::ostream& out);  // 0 all OK, 1 a schedule is wrong
int schedule_export(const AlgoArgs& a, std::ostream& out);

// "8", "64K", "1M", "1G" (powers of 1024) -> value; throws InputError naming the flag.
std::uint64_t parse_size(const std::string& text, const char* flag);

// A collective flag's value (algo::parse_collective's names); InputError naming the flag, the
// value and the accepted names.
algo::Collective parse_collective_flag(const std::string& value, const char* flag);

}  // namespace topocoll::tools
