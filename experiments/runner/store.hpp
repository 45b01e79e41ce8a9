// The records file of an experiment: what is already written (resumption), appending one
// record a line, and reading a file back for `exp compare`.
#pragma once

#include <cstddef>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "common/records.hpp"
#include "experiments/runner/spec.hpp"

namespace topocoll::experiments {

// Where a spec's records go in `dir`: experiment.yaml -> records.jsonl; another spec in the
// folder (NAME.yaml) -> records-NAME.jsonl.
std::string records_file(const ExpSpec& spec, const std::string& dir);

struct Existing {
  std::set<std::string> points;
  std::size_t dropped_partial = 0;  // bytes of a partial last line removed
};

// Reads a records file: the points already written. A last line without its newline (an
// interrupted write) is cut off the file (with `cut` false, as shards read the shared records
// file, only left out); any other line that is not a record of this spec is an InputError. No
// file: no points.
Existing read_existing(const std::string& file, const ExpSpec& spec, bool cut = true);

// Appends records to a file, a line each, flushed: an interrupted run leaves at most one partial
// line. The file is opened at the first record: a run that fails its checks leaves no file.
class RecordWriter {
 public:
  explicit RecordWriter(std::string file) : file_(std::move(file)) {}
  void write(const records::Record& r);

 private:
  std::string file_;
  std::ofstream out_;
};

// A records file written by `exp run`, keyed by point, without the fields that name when, where
// and from which checkout a record was made (date, machine, commit). InputError on a line that
// is not a record, a record without a point, or a point that appears twice.
std::map<std::string, nlohmann::json> load_points(const std::string& file);

}  // namespace topocoll::experiments
