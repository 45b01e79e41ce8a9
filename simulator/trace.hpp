// Chrome trace / Perfetto JSON (the "Trace Event Format"): a process per rank, a thread per
// channel, one complete ("X") event per operation, times in microseconds.
#pragma once

#include <ostream>
#include <vector>

#include "simulator/engine.hpp"

namespace topocoll::sim {

void write_chrome_trace(const std::vector<TraceEvent>& events, int ranks, int channels, std::ostream& out);

}  // namespace topocoll::sim
