// Records files (JSONL, docs/records.md): `topocoll exp compare` reads them with load_points,
// `exp run` resumes with read_existing; both go through records::record_from_json.
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/records.hpp"
#include "experiments/runner/store.hpp"
#include "fuzz/harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = topocoll::fuzz::as_text(data, size);
  // Each line on its own, as the readers do: a malformed line is a parse error, a line of the
  // wrong shape must be an InputError.
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {  // not JSON (1e400 included): the readers' InputError
      continue;
    }
    topocoll::fuzz::guarded([&] {
      const topocoll::records::Record r = topocoll::records::record_from_json(j);
      (void)topocoll::records::to_json(r).dump();
    });
  }
  return topocoll::fuzz::guarded(
      [&] { (void)topocoll::experiments::load_points(topocoll::fuzz::write_input(data, size, "records.jsonl")); });
}
