// Schedule interchange as JSON (documented in docs/schedule.md):
// {
//   "format": "topocoll-schedule", "version": 1,
//   "name": "ring", "collective": "allreduce", "count": 1024, "dtype": "float32", "op": "sum",
//   "ranks": 4, "root": 0, "channels": 2, "scratch_count": 0,
//   "programs": [ [ ["send", ch, peer, "output", offset, count],
//                   ["recv", ch, peer, "output", offset, count],
//                   ["recv_reduce", ch, peer, "output", offset, count],
//                   ["copy", ch, "input", offset, "output", offset, count],
//                   ["reduce", ch, "scratch", offset, "output", offset, count] ], ... ]
// }
// Operations are arrays, not objects, to keep a 1024-rank file small.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "algorithms/ir/schedule.hpp"

namespace topocoll::algo {

// What a schedule file may declare (InputError beyond, naming the limit). Ranks: 2048 nodes of
// 32 GPUs; channels: four times NCCL's 64; operations: all programs together, 16 Mi (a file of
// about 300 MB); kMaxScheduleElements: any offset or count of an operation, in elements, so that
// no end wraps 64 bits. Every buffer (input, output, scratch: count x ranks x the dtype's size)
// stays below the IR's kMaxBufferBytes (schedule.hpp), checked here so that the error names the
// file's field. Ranks and channels are tighter than the IR's kMaxRanks / kMaxChannels (which
// bound generated schedules): a file holds every program explicitly.
inline constexpr int kMaxScheduleRanks = 65536;
inline constexpr int kMaxScheduleChannels = 256;
inline constexpr std::uint64_t kMaxScheduleOperations = std::uint64_t{1} << 24;
inline constexpr std::uint64_t kMaxScheduleElements = std::uint64_t{1} << 62;

void write_schedule_json(const Schedule& s, std::ostream& out);
// Throws InputError naming the file and where in it (line, or programs[rank][op]) the problem is.
Schedule read_schedule_json(const std::string& text, const std::string& source_name);
Schedule load_schedule_json(const std::string& path);

}  // namespace topocoll::algo
