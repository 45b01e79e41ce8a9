#include "simulator/trace.hpp"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

namespace topocoll::sim {

namespace {

// A JSON string literal: quotes, backslashes and control characters escaped (nlohmann).
std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump();
}

// Microseconds with 3 decimals; null for a non-finite value (JSON has no NaN or Infinity).
std::string micros(double seconds) {
  const double us = seconds * 1e6;
  return std::isfinite(us) ? fmt::format("{:.3f}", us) : std::string("null");
}

}  // namespace

void write_chrome_trace(const std::vector<TraceEvent>& events, int ranks, int channels, std::ostream& out) {
  out << "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  bool first = true;
  auto sep = [&] {
    if (!first) out << ",\n";
    first = false;
  };
  // Names for the processes (ranks) and threads (channels).
  for (int r = 0; r < ranks; ++r) {
    sep();
    out << fmt::format(R"({{"ph": "M", "name": "process_name", "pid": {}, "args": {{"name": "rank {}"}}}})", r, r);
    for (int c = 0; c < channels; ++c) {
      sep();
      out << fmt::format(
          R"({{"ph": "M", "name": "thread_name", "pid": {}, "tid": {}, "args": {{"name": "channel {}"}}}})", r, c, c);
    }
  }
  for (const TraceEvent& e : events) {
    sep();
    const std::string name =
        e.peer >= 0 ? fmt::format("{} {}", algo::to_string(e.kind), e.peer) : std::string(algo::to_string(e.kind));
    out << fmt::format(
        R"({{"ph": "X", "name": {}, "cat": {}, "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{"bytes": {}}}}})",
        quoted(name), quoted(std::string(algo::to_string(e.kind))), e.rank, e.channel, micros(e.start_s),
        micros(e.end_s - e.start_s), e.bytes);
  }
  out << "\n]}\n";
}

}  // namespace topocoll::sim
