#include "experiments/runner/grid.hpp"

#include <fmt/format.h>

#include "algorithms/ir/types.hpp"
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
                      const std::string& algorithm, std::uint64_t bytes, int rep) {
  return fmt::format("{}|nodes={}|fabric={}|dtype={}|channels={}|{}|{}|rep={}", s.topologies[ti], grid_value(nodes),
                     grid_value(fabric), dtype, channels, algorithm, bytes, rep);
}
std::string model_point(const ExpSpec& s, std::size_t ti, const std::optional<int>& nodes,
                        const std::optional<std::string>& fabric, const std::string& dtype, std::uint64_t bytes) {
  return fmt::format("{}|nodes={}|fabric={}|dtype={}|nccl-model|{}", s.topologies[ti], grid_value(nodes),
                     grid_value(fabric), dtype, bytes);
}
std::string real_point(const ExpSpec& s, int ranks, const std::string& dtype, const std::string& channels,
                       const std::string& algorithm, std::uint64_t bytes, bool in_place, int rep) {
  return fmt::format("local|ranks={}|backend={}|dtype={}|channels={}|{}|{}|{}|rep={}", ranks, s.real.backend, dtype,
                     channels, algorithm, bytes, in_place ? "in-place" : "out-of-place", rep);
}

std::vector<std::uint64_t> sizes_of(const ExpSpec& s, const std::string& dtype) {
  return cli::size_sweep(s.min_bytes, s.max_bytes, s.factor, algo::size_of(algo::parse_dtype(dtype)));
}

std::vector<std::uint64_t> sizes_for(const ExpSpec& s, const std::string& algorithm, const std::string& dtype) {
  std::vector<std::uint64_t> out = sizes_of(s, dtype);
  if (const algo::ScheduleFile* f = s.file_named(algorithm)) {
    const algo::DataType t = algo::parse_dtype(dtype);
    std::erase_if(out, [&](std::uint64_t b) { return f->sits_out(b, t); });
  }
  return out;
}

std::size_t count_points(const ExpSpec& s) {
  std::size_t n = 0;
  for (const std::string& dtype : s.dtypes) {
    const std::vector<std::uint64_t> sweep = sizes_of(s, dtype);
    const std::size_t sizes = sweep.size();
    // Algorithm x size pairs: every size for an algorithm, its own size for a fixed-count file.
    std::size_t runs = 0;
    for (const std::string& a : s.run_names()) runs += sizes_for(s, a, dtype).size();
    if (s.engine == "real") {
      n += s.ranks.size() * s.channels.size() * runs * 2 * static_cast<std::size_t>(s.repetitions);
    } else {
      const std::size_t clusters = s.topologies.size() * s.nodes.size() * s.fabrics.size();
      n += clusters * (s.channels.size() * runs * static_cast<std::size_t>(s.repetitions) + (s.nccl_model ? sizes : 0));
    }
  }
  return n;
}

}  // namespace topocoll::experiments
