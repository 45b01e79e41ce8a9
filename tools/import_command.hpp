// `topocoll import nccl-tests LOG...`: nccl-tests stdout logs (any layout since the 2.x tables:
// with or without the root and in-place columns, `error` or `#wrong`, several runs in one file)
// and the project's calibration CSV layout (experiments/calibration/data) as measured tables and
// records (docs/records.md, kind "measured", engine "nccl-tests"). The parsers are pure: text in,
// tables out; a malformed input is an InputError naming FILE:LINE and what was expected.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "algorithms/ir/types.hpp"
#include "common/records.hpp"

namespace CLI {
class App;
}

namespace topocoll::tools {

// One row of a table: the out-of-place columns and, when the table has them, the in-place ones.
struct MeasuredColumns {
  double time_us = 0.0, algbw_gbps = 0.0, busbw_gbps = 0.0;
  std::optional<std::uint64_t> wrong;  // `#wrong` when a count (not N/A, not an `error` magnitude)
};
struct MeasuredPoint {
  int line = 0;  // 1-based line in its file
  std::uint64_t size_bytes = 0, count = 0;
  std::string dtype = "float", op = "sum";
  MeasuredColumns out_of_place;
  std::optional<MeasuredColumns> in_place;
};

// One table: the rows of one run (one header line and the rows under it).
struct MeasuredTable {
  std::string file;
  int line = 0;  // the header line
  algo::Collective collective = algo::Collective::AllReduce;
  int ranks = 0;
  int nodes = 0;
  std::vector<std::string> hosts;  // distinct, in the order the device lines name them
  std::string gpu;                 // the device lines' GPU name, "" when none
  std::string nccl_version;        // "2.19.3", "" when the log does not say
  std::string algorithm = "nccl";  // NCCL's own choice, or ring / tree when the log sets NCCL_ALGO
  std::string label;               // the calibration CSV's run columns (env, node pair), "" for logs
  std::vector<MeasuredPoint> points;
};

// What the command line adds where a log is silent.
struct ImportOptions {
  std::optional<algo::Collective> collective;  // --collective: when the log names none
  int ranks = 0;                               // --ranks: when no device line gives them (0: infer)
  int nodes = 0;                               // --nodes: else the distinct hosts, else 1
};

// nccl-tests' binary name to the collective: all_reduce_perf -> allreduce, ...; nullopt for a
// binary with no collective in the record schema (sendrecv_perf, hypercube_perf, ...).
std::optional<algo::Collective> collective_of_binary(const std::string& name);

// Every table of one file (an nccl-tests log or a calibration CSV, told apart by content).
// InputError: no table, a truncated row, a non-numeric field, device lines that disagree on the
// ranks, a collective the log does not name or the schema does not know.
std::vector<MeasuredTable> parse_measured(const std::string& path, const std::string& text, const ImportOptions& o);
std::vector<MeasuredTable> load_measured(const std::string& path, const ImportOptions& o);

// The records of one table: one per row and column group (out-of-place, and in-place when the
// table has it). `topology` is the name the simulated records carry, so scripts/plot pairs them.
std::vector<records::Record> table_records(const MeasuredTable& t, const std::string& topology);

struct ImportArgs {
  std::vector<std::string> logs;
  std::string output;  // "" or "-": stdout
  std::string topology = "unknown";
  std::string collective;
  std::string algorithm;  // overrides the table's
  int ranks = 0, nodes = 0;
};

int import_command(const ImportArgs& a, std::ostream& out);
// `topocoll import nccl-tests`: its flags on `app` (tools/topocoll.cpp calls it once).
CLI::App* add_import_command(CLI::App& app, ImportArgs& a);

}  // namespace topocoll::tools
