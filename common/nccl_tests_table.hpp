// nccl-tests' output, byte for byte: the text all_reduce_perf & co. print (header, device lines,
// the two-row column header, the 13-column rows with out-of-place and in-place groups, the
// footers) and the JSON document of its -J flag. `topocoll sim --format nccl-tests` and
// `topocoll-bench --format nccl-tests` print through these functions so that the tools written
// for nccl-tests logs (grep of "# Avg bus bandwidth", AWS's nccl_to_csv.py, SuperBench's parser)
// read ours unmodified (tools/nccl_tests_parsers_test.sh runs them).
//
// Two layouts, each pinned to the nccl-tests source it reproduces:
//   current  src/util.cu at commit 0fdb00a (writeDeviceReport, writeResultHeader,
//            writeBenchmarkLinePreamble / LineBody, writeResultFooter): the layout of the
//            releases that print "# nccl-tests version ..." (2.17 and later) and write -J JSON;
//   classic  src/common.cu at commit d2d40cc (the printing inline in run() and BenchTime), the
//            layout of the earlier releases: no version line, "%6.2f" bandwidths, "%5g" #wrong.
// docs/simulator.md ("nccl-tests output") shows both.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace topocoll::nccl_tests {

enum class Layout { Current, Classic };
// "current" | "classic" (also "2.17"+ and "2.13" as the releases that print them); InputError
// naming `flag` otherwise.
Layout parse_layout(const std::string& text, const char* flag);

// The run's parameters, as the "# nThread ..." line prints them.
struct RunHeader {
  std::string program;  // all_reduce_perf, all_gather_perf, ...
  std::uint64_t min_bytes = 0, max_bytes = 0;
  std::uint64_t step = 2;      // the factor, or the increment in bytes
  bool step_is_factor = true;  // "(factor)" or "(bytes)"
  int warmup = 5, iters = 20, agg_iters = 1, check = 1;
  int blocking = 0;  // nccl-tests' -z: 1 prints "# Blocking Enabled: ..."
};

// A device line's fields ("#  Rank  0 Group  0 Pid  1234 on   hostname device  0 [...] NAME").
struct Device {
  int rank = 0, group = 0;
  long pid = 0;
  std::string host;
  int device = 0;
  unsigned pci_domain = 0, pci_bus = 0, pci_device = 0;
  std::string name;
};

// One placement of a row: time in microseconds, bandwidths in GB/s, and the wrong elements
// (nullopt: not checked, printed N/A as nccl-tests does with -c 0).
struct Placement {
  double time_us = 0, algbw = 0, busbw = 0;
  std::optional<std::int64_t> wrong;
};

// A row: nccl-tests' size (the larger buffer of a rank), count, type, redop ("none" for the
// collectives that do not reduce) and root (-1 when not rooted).
struct Row {
  std::uint64_t bytes = 0, count = 0;
  std::string type, redop;
  int root = -1;
  Placement out_of_place, in_place;
};

// The summary: `failed_checks` is nccl-tests' errors[0], the number of (size, placement) checks
// that found a wrong element; `avg_busbw` the mean busbw over every row and placement; `min_bw`
// NCCL_TESTS_MIN_BW when set.
struct Footer {
  std::string program;
  int failed_checks = 0;
  double avg_busbw = 0;
  std::optional<double> min_bw;
};

// nccl-tests' getFloatStr (current layout): two, one or no decimals as the value grows, then
// exponent notation, in `width` characters.
std::string float_str(double value, int width);

// The lines before the first table: version (current), "# nThread ..." and its notes, "#",
// "# Using devices".
std::string run_header(Layout layout, const RunHeader& h);
std::string device_line(Layout layout, const Device& d);
// "#" and the three lines of the column header ("out-of-place ... in-place", names, units).
std::string column_header(Layout layout);
std::string row_line(Layout layout, const Row& r);  // ends with "\n"
// "# Out of bounds values : ...", "# Avg bus bandwidth    : ...", "#", and (current) "# Collective
// test concluded: PROGRAM"; classic ends with the empty line nccl-tests prints for
// ncclGetLastError.
std::string footer(Layout layout, const Footer& f);

// NCCL_TESTS_MIN_BW as nccl-tests reads it (common.cu run()): the average bus bandwidth line
// says FAILED, and the run exits non-zero, when avg < min * 0.9. nullptr or "" -> nullopt; not a
// number >= 0 -> InputError naming the variable and the value (nccl-tests' atof would take 0).
std::optional<double> min_bw_from(const char* value);
bool below_min_bw(double avg_busbw, std::optional<double> min_bw);
// What the run's exit status must say: a failed check or a bandwidth below NCCL_TESTS_MIN_BW
// (nccl-tests exits EXIT_FAILURE on either).
bool footer_failed(const Footer& f);

// -J: nccl-tests' JSON document (util.cu, JSON_FILE_VERSION 2), for one table. Keys in the order
// nccl-tests writes them; its quirks kept (root as the "%6i" string, booleans as the strings
// "true" / "false", okay "unchecked" without NCCL_TESTS_MIN_BW).
struct JsonRun {
  std::string start_time, end_time;  // "%Y-%m-%d %H:%M:%S", local time
  std::vector<std::string> args;     // argv
  std::vector<std::string> env;      // KEY=VALUE
  int nccl_version = 0;              // NCCL's version code (22809); 0 when none is linked
  RunHeader header;
  std::vector<Device> devices;
  std::string experiment_name;  // nccl-tests' empty; here the algorithm of the table
};
nlohmann::ordered_json json_document(const JsonRun& run, const std::vector<Row>& rows, const Footer& f);

// The local time as nccl-tests' formatNow prints it.
std::string now_string();

}  // namespace topocoll::nccl_tests
