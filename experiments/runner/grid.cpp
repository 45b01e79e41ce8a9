#include "experiments/runner/grid.hpp"

#include <fmt/format.h>

#include "common/cli_io.hpp"

namespace topocoll::experiments {

std::string grid_value(const std::optional<int>& v) {
  return v ? std::to_string(*v) : "-";
}
std::string grid_value(const std::optional<std::string>& v) {
  return v ? *v : "-";
}

std::string sim_point(const ExpSpec& s, std::size_t ti, const std::optional<int>& nodes,
                      const std::optional<std::string>& fabric, const std::string& dtype, const std::string& channels,
                      const std::string& algorithm, const GridSize& size, int rep) {
  return fmt::format("{}|nodes={}|fabric={}|dtype={}|channels={}|{}|{}|rep={}", s.topologies[ti], grid_value(nodes),
                     grid_value(fabric), dtype, channels, algorithm, size.key, rep);
}
std::string model_point(const ExpSpec& s, std::size_t ti, const std::optional<int>& nodes,
                        const std::optional<std::string>& fabric, const std::string& dtype, const GridSize& size) {
  return fmt::format("{}|nodes={}|fabric={}|dtype={}|nccl-model|{}", s.topologies[ti], grid_value(nodes),
                     grid_value(fabric), dtype, size.key);
}
std::string real_point(const ExpSpec& s, int ranks, const std::string& dtype, const std::string& channels,
                       const std::string& algorithm, const GridSize& size, bool in_place, int rep) {
  return fmt::format("local|ranks={}|backend={}|dtype={}|channels={}|{}|{}|{}|rep={}", ranks, s.real.backend, dtype,
                     channels, algorithm, size.key, in_place ? "in-place" : "out-of-place", rep);
}

int known_ranks(const ExpSpec& s, std::size_t ti, const std::optional<int>& nodes) {
  const auto it = s.cluster_ranks.find(fmt::format("{}|{}", s.topologies[ti], grid_value(nodes)));
  return it == s.cluster_ranks.end() ? 0 : it->second;
}

std::vector<GridSize> sizes_of(const ExpSpec& s, const std::string& dtype, int ranks) {
  std::vector<GridSize> out;
  if (s.collective == algo::Collective::AllToAllV) {
    for (std::size_t i = 0; i < s.matrices.size(); ++i)
      if (s.matrix_sizes[i]->ranks() == ranks)
        out.push_back({.bytes = 0, .matrix = static_cast<int>(i), .key = "sizes=" + s.matrices[i]});
    return out;
  }
  for (std::uint64_t b : cli::size_sweep(s.min_bytes, s.max_bytes, s.factor, algo::size_of(algo::parse_dtype(dtype))))
    out.push_back({.bytes = b, .matrix = -1, .key = std::to_string(b)});
  return out;
}

std::vector<GridSize> sizes_for(const ExpSpec& s, const std::string& algorithm, const std::string& dtype, int ranks) {
  std::vector<GridSize> out = sizes_of(s, dtype, ranks);
  if (const algo::ScheduleFile* f = s.file_named(algorithm)) {
    const algo::DataType t = algo::parse_dtype(dtype);
    std::erase_if(out, [&](const GridSize& z) {
      if (z.matrix >= 0) return !f->sizes || !(*f->sizes == *s.matrix_sizes[static_cast<std::size_t>(z.matrix)]);
      return f->sits_out(z.bytes, t);
    });
  }
  return out;
}

bool measured_in_place(const ExpSpec& s, const GridSize& size) {
  return size.matrix < 0 || s.matrix_sizes[static_cast<std::size_t>(size.matrix)]->symmetric();
}

algo::CollectiveArgs call_of(const ExpSpec& s, const GridSize& size, algo::DataType dtype, algo::ReduceOp op,
                             int ranks) {
  return algo::collective_call(s.collective, size.bytes,
                               size.matrix >= 0 ? s.matrix_sizes[static_cast<std::size_t>(size.matrix)] : nullptr,
                               dtype, op, ranks);
}

std::size_t count_points(const ExpSpec& s) {
  std::size_t n = 0;
  // Algorithm x size pairs: every size for an algorithm, its own size (matrix) for a file; engine
  // real: each out of place and, where it runs so, in place.
  const auto runs_of = [&](const std::string& dtype, int ranks, bool measured) {
    std::size_t runs = 0;
    for (const std::string& a : s.run_names())
      for (const GridSize& z : sizes_for(s, a, dtype, ranks)) runs += measured && measured_in_place(s, z) ? 2 : 1;
    return runs;
  };
  const auto reps = static_cast<std::size_t>(s.repetitions);
  for (const std::string& dtype : s.dtypes) {
    if (s.engine == "real") {
      for (int ranks : s.ranks) n += s.channels.size() * runs_of(dtype, ranks, true) * reps;
      continue;
    }
    for (std::size_t ti = 0; ti < s.topologies.size(); ++ti)
      for (const auto& nodes : s.nodes) {
        const int ranks = known_ranks(s, ti, nodes);
        const std::size_t sizes = sizes_of(s, dtype, ranks).size();
        n += s.fabrics.size() * (s.channels.size() * runs_of(dtype, ranks, false) * reps + (s.nccl_model ? sizes : 0));
      }
  }
  return n;
}

std::vector<std::string> point_order(const ExpSpec& s) {
  // The walk of run_simulated, without running anything (alltoallv: the matrices of each
  // cluster's rank count, which the spec knows).
  std::vector<std::string> keys;
  for (std::size_t ti = 0; ti < s.topologies.size(); ++ti)
    for (const auto& nodes : s.nodes) {
      const int ranks = known_ranks(s, ti, nodes);
      for (const auto& fabric : s.fabrics)
        for (const std::string& dtype : s.dtypes) {
          for (const std::string& ch : s.channels)
            for (const std::string& a : s.run_names())
              for (const GridSize& z : sizes_for(s, a, dtype, ranks))
                for (int rep = 0; rep < s.repetitions; ++rep)
                  keys.push_back(sim_point(s, ti, nodes, fabric, dtype, ch, a, z, rep));
          if (s.nccl_model)
            for (const GridSize& z : sizes_of(s, dtype, ranks))
              keys.push_back(model_point(s, ti, nodes, fabric, dtype, z));
        }
    }
  return keys;
}

}  // namespace topocoll::experiments
