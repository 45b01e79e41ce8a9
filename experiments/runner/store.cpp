#include "experiments/runner/store.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <sstream>

#include "common/errors.hpp"

namespace fs = std::filesystem;

namespace topocoll::experiments {

std::string records_file(const ExpSpec& spec, const std::string& dir) {
  const std::string stem = fs::path(spec.path).stem().string();
  return (fs::path(dir) / (stem == "experiment" ? "records.jsonl" : "records-" + stem + ".jsonl")).string();
}

Existing read_existing(const std::string& file, const ExpSpec& spec, bool cut) {
  Existing ex;
  if (!fs::exists(file)) return ex;
  const std::string text = read_spec_file(file);
  std::size_t complete = text.rfind('\n');
  complete = complete == std::string::npos ? 0 : complete + 1;
  if (complete < text.size()) {
    ex.dropped_partial = text.size() - complete;
    if (cut) fs::resize_file(file, complete);
  }
  std::istringstream in(text.substr(0, complete));
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    records::Record rec;
    try {
      rec = records::record_from_json(nlohmann::json::parse(line));
    } catch (const std::exception& e) {
      throw InputError(fmt::format("{}:{}: not a record ({}): fix or remove the file, or run with --fresh", file,
                                   lineno, std::string(e.what()).substr(0, 120)));
    }
    if (!rec.point || !rec.spec_hash)
      throw InputError(
          fmt::format("{}:{}: a record without point / spec_hash (not written by topocoll exp run): remove the "
                      "file or run with --fresh",
                      file, lineno));
    if (*rec.spec_hash != "sha256:" + spec.sha256)
      throw InputError(
          fmt::format("{}:{}: written from another version of the spec ({}, the spec is now sha256:{}): "
                      "run with --fresh to start over",
                      file, lineno, *rec.spec_hash, spec.sha256.substr(0, 12)));
    ex.points.insert(*rec.point);
  }
  return ex;
}

void RecordWriter::write(const records::Record& r) {
  if (!out_.is_open()) {  // opened at the first record: a run that fails its checks leaves no file
    out_.open(file_, std::ios::app);
    if (!out_) throw InputError(fmt::format("{}: cannot open the records file for writing", file_));
  }
  out_ << records::to_json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  out_.flush();  // a line at a time: an interrupted run leaves at most one partial line
  if (!out_) throw InputError(fmt::format("{}: writing failed", file_));
}

std::map<std::string, nlohmann::json> load_points(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw InputError(fmt::format("{}: cannot read the records file", file));
  std::map<std::string, nlohmann::json> m;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
      (void)records::record_from_json(j);
    } catch (const std::exception& e) {
      throw InputError(fmt::format("{}:{}: not a record: {}", file, lineno, std::string(e.what()).substr(0, 120)));
    }
    if (!j.contains("point"))
      throw InputError(fmt::format("{}:{}: no 'point' field (not written by topocoll exp run)", file, lineno));
    // "Reproduces exactly" ignores when, where and from which checkout a record was made.
    for (const char* k : {"date", "machine", "commit"}) j.erase(k);
    const std::string key = j["point"].get<std::string>();
    if (!m.emplace(key, j).second) throw InputError(fmt::format("{}:{}: point {} appears twice", file, lineno, key));
  }
  return m;
}

}  // namespace topocoll::experiments
