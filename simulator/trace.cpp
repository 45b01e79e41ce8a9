#include "simulator/trace.hpp"

#include <fmt/format.h>

namespace topocoll::sim {

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
        R"({{"ph": "X", "name": "{}", "cat": "{}", "pid": {}, "tid": {}, "ts": {:.3f}, "dur": {:.3f}, "args": {{"bytes": {}}}}})",
        name, algo::to_string(e.kind), e.rank, e.channel, e.start_s * 1e6, (e.end_s - e.start_s) * 1e6, e.bytes);
  }
  out << "\n]}\n";
}

}  // namespace topocoll::sim
