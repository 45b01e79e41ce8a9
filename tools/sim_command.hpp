// `topocoll sim`: simulate algorithms over a size sweep, nccl-tests style.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "simulator/nccl_model.hpp"
#include "simulator/trace.hpp"
#include "tools/topo_commands.hpp"

namespace topocoll::tools {

struct SimArgs {
  TopoArgs topo;
  // The collective (algo::parse_collective's names) and, for broadcast / reduce, the root rank.
  // Sizes and counts are nccl-tests' for it (algo::nccl_tests_args).
  std::string collective = "allreduce";
  int root = 0;
  // A comma list or "all" (the registry's algorithms of the collective); "" = ring,dbt,hierarchical
  // for allreduce, all for the other collectives.
  std::string algorithm;
  std::string min_bytes = "8", max_bytes = "128M";
  std::string factor = "2";
  std::string dtype = "float", op = "sum";
  // "nccl" (default): the channels stock NCCL runs with on the topology (sim::nccl_channels, the
  // NCCL model's ring graph doubled as ncclTopoPostset does), so comparisons are like for like;
  // or an integer 1..64.
  std::string channels = "nccl";
  std::string slice = "512K";
  std::string engine = "analytic";
  std::string calibration;
  // NCCL protocol(s) to simulate: "" = the calibration file's "protocol", else auto; "auto" =
  // every protocol NCCL would enable, fastest reported; "LL" | "LL128" | "Simple" = that one.
  std::string protocol;
  std::string format = "table";  // table | csv | jsonl | nccl-tests
  // --format nccl-tests: nccl-tests' layout (common/nccl_tests_table.hpp): current | classic.
  std::string nccl_tests_layout = "current";
  // -O: the output file; with --format nccl-tests a name holding {algorithm} is a pattern, one
  // file per algorithm (one nccl-tests log each, as the parsers that read one table per file want).
  std::string output;
  std::string trace;
  // What --trace covers: the algorithm (default the first), the size in bytes as the sweep names
  // it (default the largest), the ranks (sim::parse_rank_ranges; default sim::default_trace_ranks).
  std::string trace_algorithm, trace_size, trace_ranks;
  // About the most slices --trace writes (sim::TraceOptions::max_slices; 0: one per operation).
  std::uint64_t trace_max_slices = sim::kTraceMaxSlices;
  int jobs = 0;        // points simulated at once (analytic engine); 0: the machine's hardware threads
  bool quiet = false;  // no progress on stderr (which a sweep longer than 5 s prints)
  bool no_nccl_model = false;
  // The stock-NCCL model: its release and NCCL environment (NCCL_ALGO=..., also read from the
  // process environment as NCCL does; the flags win). sim::NcclModelOptions.
  std::string nccl_version = "2.28.9";
  std::vector<std::string> nccl_env;
  bool simgrid_plain = false;  // SimOptions::simgrid_fast_paths off
  bool no_symmetry = false;    // SimOptions::symmetry off
  // Schedule files run beside (or, without --algorithm, instead of) the registry's algorithms
  // (algorithms/schedule_file.hpp); verified on the topology first unless no_verify.
  std::vector<std::string> schedules;
  bool no_verify = false;
  // --collective alltoallv: the size matrix file (algo::load_alltoallv_sizes); else empty.
  std::string sizes_file;
  // Which flags the command line gave (a schedule file supplies the others: its dtype, op, and
  // for a fixed-count file its size).
  bool algorithm_given = false, sizes_given = false, dtype_given = false, op_given = false;
  bool collective_given = false, root_given = false;
};

// `--channels`: "nccl" -> sim::nccl_channels(nccl), else an integer 1..64; InputError otherwise.
int channels_option(const std::string& value, const sim::NcclGraphEstimate& nccl);

int sim_command(const SimArgs& a, std::ostream& out);

}  // namespace topocoll::tools
