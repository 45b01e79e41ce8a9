// reducer_bench: GB/s of the CPU reducer (sum) next to memcpy of the same buffers, in one run.
//
//   reducer_bench [MiB]      buffer size, default 64 MiB per buffer
//
// Bytes counted (read + written): reduce dst += src moves 3 x size (reads dst and src, writes
// dst); memcpy moves 2 x size. Each figure is the median of 5 timed runs after one warm-up run.
// ratio = reduce GB/s / memcpy GB/s: 1.0 means the reducer runs at memory speed.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "algorithms/ir/types.hpp"
#include "runtime/reducer.hpp"
#include "runtime/test_data.hpp"

namespace {

using topocoll::algo::DataType;
using topocoll::algo::ReduceOp;

constexpr int kRuns = 5;

// Median over kRuns of the seconds one call of `work` takes, after a warm-up call.
template <class Work>
double median_seconds(const Work& work) {
  work();
  std::array<double, kRuns> seconds{};
  for (double& s : seconds) {
    const auto start = std::chrono::steady_clock::now();
    work();
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[kRuns / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 64;
  if (mib == 0) {
    std::fprintf(stderr, "reducer_bench: buffer size '%s' MiB: expected a positive integer\n", argv[1]);
    return 2;
  }
  const std::size_t bytes = mib << 20;
  std::vector<unsigned char> dst(bytes), src(bytes);

  std::printf("%-10s %8s %12s %12s %8s\n", "dtype", "MiB", "reduce GB/s", "memcpy GB/s", "ratio");
  for (DataType t : {DataType::Float32, DataType::BFloat16, DataType::Float16}) {
    const std::size_t n = bytes / topocoll::algo::size_of(t);
    // Sum inputs of 2 ranks: small values, so that repeated runs stay finite and normal.
    topocoll::runtime::fill_input(t, ReduceOp::Sum, 0, 2, 0, dst.data(), n);
    topocoll::runtime::fill_input(t, ReduceOp::Sum, 1, 2, 0, src.data(), n);
    const double reduce_s =
        median_seconds([&] { topocoll::runtime::reduce(t, ReduceOp::Sum, dst.data(), src.data(), n); });
    const double memcpy_s = median_seconds([&] { std::memcpy(dst.data(), src.data(), bytes); });
    const double reduce_gbps = 3.0 * static_cast<double>(bytes) / reduce_s / 1e9;
    const double memcpy_gbps = 2.0 * static_cast<double>(bytes) / memcpy_s / 1e9;
    std::printf("%-10s %8zu %12.2f %12.2f %8.2f\n", std::string(topocoll::algo::to_string(t)).c_str(), mib, reduce_gbps,
                memcpy_gbps, reduce_gbps / memcpy_gbps);
  }
  return 0;
}
