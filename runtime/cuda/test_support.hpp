// Small helpers for the CUDA tests and benchmarks: the device buffer (device_memory.hpp's one
// DeviceBuffer), a checked device synchronisation and bitwise comparison. Failures throw CudaError
// naming the call (tests run on the main thread; doctest reports it).
#pragma once

#include <cstddef>
#include <cstring>

#include "runtime/cuda/device_memory.hpp"
#include "runtime/cuda/status.hpp"

namespace topocoll::runtime::cuda::test {

using cuda::DeviceBuffer;

// cudaDeviceSynchronize, throwing on an error (a kernel fault surfaces here).
inline void sync() {
  synchronize_device();
}

// Elements of `elem` bytes that differ bit for bit.
inline std::size_t count_different(const void* a, const void* b, std::size_t n, std::size_t elem) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i)
    wrong += std::memcmp(static_cast<const unsigned char*>(a) + i * elem,
                         static_cast<const unsigned char*>(b) + i * elem, elem) != 0;
  return wrong;
}

}  // namespace topocoll::runtime::cuda::test
