// The grid of an experiment spec: its points and their resume keys (the `point` field of a
// record: the grid coordinates as written in the spec, and the repetition).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "experiments/runner/spec.hpp"

namespace topocoll::experiments {

// A grid coordinate as written in a resume key: the value, or "-" when the spec leaves it unset.
std::string grid_value(const std::optional<int>& v);
std::string grid_value(const std::optional<std::string>& v);

// Resume keys. A simulated point: topology (index ti of s.topologies), nodes, fabric, dtype,
// channels, algorithm, size and repetition; the stock-NCCL model's row of a size; a measured
// point (engine real), in or out of place.
std::string sim_point(const ExpSpec& s, std::size_t ti, const std::optional<int>& nodes,
                      const std::optional<std::string>& fabric, const std::string& dtype, const std::string& channels,
                      const std::string& algorithm, std::uint64_t bytes, int rep);
std::string model_point(const ExpSpec& s, std::size_t ti, const std::optional<int>& nodes,
                        const std::optional<std::string>& fabric, const std::string& dtype, std::uint64_t bytes);
std::string real_point(const ExpSpec& s, int ranks, const std::string& dtype, const std::string& channels,
                       const std::string& algorithm, std::uint64_t bytes, bool in_place, int rep);

// The sizes of the spec's sweep (nccl-tests' -b / -e / -f) in whole elements of `dtype`.
std::vector<std::uint64_t> sizes_of(const ExpSpec& s, const std::string& dtype);
// The sizes `algorithm` (a name of s.run_names()) runs at: the sweep, or a fixed-count schedule
// file's own size.
std::vector<std::uint64_t> sizes_for(const ExpSpec& s, const std::string& algorithm, const std::string& dtype);

// How many points the grid has: every record `exp run` writes when nothing is skipped.
std::size_t count_points(const ExpSpec& s);

}  // namespace topocoll::experiments
