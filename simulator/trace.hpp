// Chrome trace / Perfetto JSON (the "Trace Event Format") of one simulated run.
//
// Layout: a process per rank; per channel of a rank one thread for its blocking operations
// (receives, local copies and reductions, switch receives: they run one after another, so their
// complete ("X") events never overlap) and one thread per peer for its sends (a send is issued
// and the channel moves on; transfers on one (rank, peer, channel) flow are serialised, so they
// never overlap either). Times are integer nanoseconds (rounded once per event boundary, so
// nesting is exact), printed as microseconds with three decimals. A flow arrow ("s" / "f") joins
// each send to the receive that takes it (k-th send of a flow, k-th receive of it: contract rule
// 4), and each switch receive to the contribution its result waited for (a receiver's k-th
// switch_recv of a group on a channel is instance k: of every contributor's k-th switch_send
// there, the traced one that ended last; named "switch"). A metadata object names the run
// (algorithm, size, topology, engine, version).
//
// Aggregation for big runs: when the chosen ranks' operations outnumber `max_slices`, each track's
// consecutive operations of one kind with one peer are merged, up to M = ceil(operations /
// max_slices) of them, into one slice (from the first's start to the last's end; "ops" and the
// summed "bytes" in its args), and one arrow leaves each send slice: from its first send to the
// slice holding that send's receive. `otherData` then says "ops_per_slice": "up to M". Slices on a
// track still never overlap (they merge neighbours only).
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
  // At most about this many slices (above): 0 writes one slice per operation, whatever the count.
  std::uint64_t max_slices = 0;
};

// The slices a trace writes by default (`topocoll sim --trace-max-slices`): a ring's slice with its
// share of the arrows is about 250 bytes of JSON (128 of 1024 GPUs: 935,936 slices and 463,296
// arrows in 231 MB), so that a trace stays under 200 MB, a file the Perfetto UI opens.
inline constexpr std::uint64_t kTraceMaxSlices = 750000;

struct TraceStats {
  std::uint64_t events = 0;         // complete events (slices) written
  std::uint64_t ops = 0;            // operations they hold (events, unless aggregated)
  std::uint64_t ops_per_slice = 1;  // M above; 1: not aggregated
  std::uint64_t flows = 0;          // send -> receive and switch arrows written
  int ranks = 0;                    // ranks written
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
