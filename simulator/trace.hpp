// Chrome trace / Perfetto JSON (the "Trace Event Format") of one simulated run.
//
// Layout: a process per rank; per channel of a rank one thread for its blocking operations
// (receives, local copies and reductions, switch receives: they run one after another, so their
// complete ("X") events never overlap) and one thread per peer for its sends (a send is issued
// and the channel moves on; transfers on one (rank, peer, channel) flow are serialised, so they
// never overlap either). Times are integer nanoseconds (rounded once per event boundary, so
// nesting is exact), printed as microseconds with three decimals. A flow arrow ("s" / "f") joins
// each send to the receive that takes it (k-th send of a flow, k-th receive of it: contract rule
// 4). A metadata object names the run (algorithm, size, topology, engine, version).
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "simulator/engine.hpp"

namespace topocoll::sim {

struct TraceOptions {
  // Inclusive rank ranges to write (events of other ranks and flows that leave the set are
  // dropped); empty: every rank.
  std::vector<std::pair<int, int>> ranks;
  std::map<std::string, std::string> metadata;  // written as "metadata" and as the trace's name
};

struct TraceStats {
  std::uint64_t events = 0;  // complete events written
  std::uint64_t flows = 0;   // send -> receive arrows written
  int ranks = 0;             // ranks written
};

// "0-15,1016-1023" or "3" (ranks of 0..ranks-1) -> sorted, merged ranges; InputError naming the
// flag's text and what was expected.
std::vector<std::pair<int, int>> parse_rank_ranges(const std::string& text, int ranks);

// The ranks a trace of `ranks` ranks writes unless told: all up to kTraceAllRanks, else the first
// and the last kTraceEdgeRanks (the ends of rings and chains), so that a 1024-GPU trace stays a
// file Perfetto opens.
inline constexpr int kTraceAllRanks = 64;
inline constexpr int kTraceEdgeRanks = 4;
std::vector<std::pair<int, int>> default_trace_ranks(int ranks);

TraceStats write_chrome_trace(const std::vector<TraceEvent>& events, int ranks, int channels, std::ostream& out,
                              const TraceOptions& options = {});

}  // namespace topocoll::sim
