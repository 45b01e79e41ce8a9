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

#include <ostream>
#include <string>

#include "algorithms/ir/schedule.hpp"

namespace topocoll::algo {

void write_schedule_json(const Schedule& s, std::ostream& out);
// Throws InputError naming the file and where in it (line, or programs[rank][op]) the problem is.
Schedule read_schedule_json(const std::string& text, const std::string& source_name);
Schedule load_schedule_json(const std::string& path);

}  // namespace topocoll::algo
