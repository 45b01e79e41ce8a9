// cuda_reducer_bench: GB/s of the CUDA reducer (sum) next to a device-to-device cudaMemcpy of the
// same buffers and the memory's theoretical peak, in one run.
//
//   cuda_reducer_bench [MiB]      buffer size, default 256 MiB per buffer
//
// Bytes counted (read + written): reduce dst += src moves 3 x size, reduce_copy dst = a + b (a
// receive-reduce-copy) 3 x size, copy-then-reduce (what reduce_copy replaces) 5 x size over its
// two calls, memcpy 2 x size. Peak =
// 2 (double data rate) x memory clock x bus width, from cudaDeviceGetAttribute (CUDA 13 dropped
// cudaDeviceProp::memoryClockRate). Each figure is the median of 9 runs timed with CUDA events after
// one warm-up run. Without a usable GPU it prints why and exits 77.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/cuda/reducer.hpp"
#include "runtime/cuda/test_support.hpp"
#include "runtime/test_data.hpp"

namespace {

using topocoll::algo::DataType;
using topocoll::algo::ReduceOp;
namespace cuda = topocoll::runtime::cuda;

constexpr int kRuns = 9;

void check(cudaError_t e, const char* where) {
  cuda::throw_if_failed(cuda::Status{static_cast<int>(e), where});
}

// Median seconds of one `work()` (enqueued on the default stream), timed with events.
template <class Work>
double median_seconds(const Work& work) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  work();
  std::array<double, kRuns> seconds{};
  for (double& s : seconds) {
    check(cudaEventRecord(start), "cudaEventRecord");
    work();
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    s = ms * 1e-3;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(seconds.begin(), seconds.end());
  return seconds[kRuns / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 256;
  if (mib == 0) {
    std::fprintf(stderr, "cuda_reducer_bench: buffer size '%s' MiB: expected a positive integer\n", argv[1]);
    return 2;
  }
  std::string why;
  if (!cuda::device_available(&why)) {
    std::printf("SKIP: no usable CUDA device: %s\n", why.c_str());
    return 77;
  }
  try {
    int device = 0, sms = 0, clock_khz = 0, bus_bits = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
    check(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device), "cudaDeviceGetAttribute");
    check(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device), "cudaDeviceGetAttribute");
    const double peak_gbps = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
    std::printf("# device %d: %s, sm_%d%d, %d SMs, memory %.0f MHz x %d bit: peak %.1f GB/s%s\n", device, prop.name,
                prop.major, prop.minor, sms, clock_khz / 1e3, bus_bits, peak_gbps,
                peak_gbps > 0 ? "" : " (not reported)");
    std::printf("# reduce moves 3 x size (read dst, src; write dst), memcpy 2 x size; median of %d runs\n", kRuns);

    const std::size_t bytes = mib << 20;
    cuda::test::DeviceBuffer dst(bytes), src(bytes), own(bytes);
    std::printf("%-10s %6s %12s %12s %10s %10s %10s\n", "dtype", "MiB", "reduce GB/s", "memcpy GB/s", "red/memcpy",
                "red/peak", "memcpy/peak");
    for (DataType t : {DataType::Float32, DataType::BFloat16, DataType::Float16}) {
      const std::size_t n = bytes / topocoll::algo::size_of(t);
      std::vector<unsigned char> host(bytes);
      topocoll::runtime::fill_input(t, ReduceOp::Sum, 0, 2, 0, host.data(), n);
      dst.upload(host.data(), bytes);
      topocoll::runtime::fill_input(t, ReduceOp::Sum, 1, 2, 0, host.data(), n);
      src.upload(host.data(), bytes);
      const double reduce_s = median_seconds(
          [&] { cuda::throw_if_failed(cuda::reduce(t, ReduceOp::Sum, dst.data(), src.data(), n, nullptr)); });
      const double memcpy_s = median_seconds([&] {
        check(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, nullptr), "cudaMemcpyAsync");
      });
      const double reduce_gbps = 3.0 * static_cast<double>(bytes) / reduce_s / 1e9;
      const double memcpy_gbps = 2.0 * static_cast<double>(bytes) / memcpy_s / 1e9;
      std::printf("%-10s %6zu %12.1f %12.1f %10.3f %10.3f %10.3f\n", std::string(topocoll::algo::to_string(t)).c_str(),
                  mib, reduce_gbps, memcpy_gbps, reduce_gbps / memcpy_gbps,
                  peak_gbps > 0 ? reduce_gbps / peak_gbps : 0.0, peak_gbps > 0 ? memcpy_gbps / peak_gbps : 0.0);
    }
    // A receive-reduce-copy (dst = own + message, three buffers) in one kernel against the copy of
    // own into dst and the reduce it replaces; times per call, fp32 sum.
    {
      const std::size_t n = bytes / 4;
      check(cudaMemset(own.data(), 0, bytes), "cudaMemset");  // zeros: a float like any other here
      const double fused_s = median_seconds([&] {
        cuda::throw_if_failed(
            cuda::reduce_copy(DataType::Float32, ReduceOp::Sum, dst.data(), own.data(), src.data(), n, nullptr));
      });
      const double two_s = median_seconds([&] {
        check(cudaMemcpyAsync(dst.data(), own.data(), bytes, cudaMemcpyDeviceToDevice, nullptr), "cudaMemcpyAsync");
        cuda::throw_if_failed(cuda::reduce(DataType::Float32, ReduceOp::Sum, dst.data(), src.data(), n, nullptr));
      });
      std::printf(
          "# reduce_copy float32: %.3f ms (%.1f GB/s of 3 x size) vs copy + reduce %.3f ms: ratio %.2f"
          " (target < 1; 3/5 = 0.60 at one memory rate)\n",
          fused_s * 1e3, 3.0 * static_cast<double>(bytes) / fused_s / 1e9, two_s * 1e3, fused_s / two_s);
    }
    // The launch policy around the default, fp32 sum: to retune ReducePolicy from one GPU session.
    std::printf("# policy sweep, float32 sum: threads/block x blocks/SM -> reduce GB/s\n");
    const std::size_t n = bytes / 4;
    for (cuda::ReducePolicy p : {cuda::ReducePolicy{256, 8}, cuda::ReducePolicy{512, 4}, cuda::ReducePolicy{512, 8},
                                 cuda::ReducePolicy{1024, 2}, cuda::ReducePolicy{256, 16}}) {
      try {
        const double s = median_seconds([&] {
          cuda::throw_if_failed(cuda::reduce(DataType::Float32, ReduceOp::Sum, dst.data(), src.data(), n, nullptr, p));
        });
        std::printf("#   %4d x %2d: %8.1f GB/s\n", p.threads_per_block, p.blocks_per_sm,
                    3.0 * static_cast<double>(bytes) / s / 1e9);
      } catch (const cuda::CudaError& e) {  // e.g. a block too large for the kernel's registers
        std::printf("#   %4d x %2d: %s\n", p.threads_per_block, p.blocks_per_sm, e.what());
      }
    }
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda_reducer_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
