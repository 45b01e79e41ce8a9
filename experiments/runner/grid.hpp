// The grid of an experiment spec: its points and their resume keys (the `point` field of a
// record: the grid coordinates as written in the spec, and the repetition).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/ir/types.hpp"
#include "experiments/runner/spec.hpp"

namespace topocoll::experiments {

// A grid coordinate as written in a resume key: the value, or "-" when the spec leaves it unset.
std::string grid_value(const std::optional<int>& v);
std::string grid_value(const std::optional<std::string>& v);

// A point of the size axis: a size of the sweep (grid.sizes, in bytes), or for alltoallv one of
// grid.matrices (its index). `key` is how a resume key writes it: the bytes as a decimal, or
// "sizes=FILE" with the file as the spec writes it.
struct GridSize {
  std::uint64_t bytes = 0;
  int matrix = -1;
  std::string key;
};

// Resume keys. A simulated point: topology (index ti of s.topologies), nodes, fabric, dtype,
// channels, algorithm, size and repetition; the stock-NCCL model's row of a size; a measured
// point (engine real), in or out of place.
std::string sim_point(const ExpSpec& s, std::size_t ti, const std::optional<int>& nodes,
                      const std::optional<std::string>& fabric, const std::string& dtype, const std::string& channels,
                      const std::string& algorithm, const GridSize& size, int rep);
std::string model_point(const ExpSpec& s, std::size_t ti, const std::optional<int>& nodes,
                        const std::optional<std::string>& fabric, const std::string& dtype, const GridSize& size);
std::string real_point(const ExpSpec& s, int ranks, const std::string& dtype, const std::string& channels,
                       const std::string& algorithm, const GridSize& size, bool in_place, int rep);

// The rank count of simulated cluster (ti, nodes) when the spec knows it without loading the
// topology (alltoallv: ExpSpec::cluster_ranks), else 0.
int known_ranks(const ExpSpec& s, std::size_t ti, const std::optional<int>& nodes);

// The size axis of a job of `ranks` ranks in `dtype`: the sweep (nccl-tests' -b / -e / -f, in
// whole elements of dtype), or the matrices of that rank count (alltoallv).
std::vector<GridSize> sizes_of(const ExpSpec& s, const std::string& dtype, int ranks);
// The sizes `algorithm` (a name of s.run_names()) runs at: the axis, less what a schedule file
// sits out (a fixed-count file runs at its own size, an alltoallv file at its own matrix).
std::vector<GridSize> sizes_for(const ExpSpec& s, const std::string& algorithm, const std::string& dtype, int ranks);
// Whether engine real measures the point in place as well: always, but for an asymmetric
// alltoallv matrix (MPI_IN_PLACE's condition; the bench prints N/A there).
bool measured_in_place(const ExpSpec& s, const GridSize& size);
// The call of a point (algo::collective_call).
algo::CollectiveArgs call_of(const ExpSpec& s, const GridSize& size, algo::DataType dtype, algo::ReduceOp op,
                             int ranks);

// How many points the grid has: every record `exp run` writes when nothing is skipped.
std::size_t count_points(const ExpSpec& s);

// Engine analytic | simgrid: every point's resume key in the order a single-process run writes
// them (topology, nodes, fabric, dtype, then channels, algorithm, size, repetition, then the
// dtype's NCCL-model rows), count_points(s) of them. The order merged shards are put in.
std::vector<std::string> point_order(const ExpSpec& s);

}  // namespace topocoll::experiments
