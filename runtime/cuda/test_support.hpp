// Small helpers for the CUDA tests and benchmarks: an RAII device buffer and bitwise comparison.
// Failures throw CudaError naming the call (tests run on the main thread; doctest reports it).
#pragma once

#include <cstddef>
#include <cstring>

#include "runtime/cuda/status.hpp"

namespace topocoll::runtime::cuda::test {

class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  unsigned char* bytes() const { return data_; }
  std::size_t size() const { return size_; }
  void upload(const void* host, std::size_t bytes, std::size_t offset = 0);
  void download(void* host, std::size_t bytes, std::size_t offset = 0) const;

 private:
  unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
};

// cudaDeviceSynchronize, throwing on an error (a kernel fault surfaces here).
void sync();

// Elements of `elem` bytes that differ bit for bit.
inline std::size_t count_different(const void* a, const void* b, std::size_t n, std::size_t elem) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i)
    wrong += std::memcmp(static_cast<const unsigned char*>(a) + i * elem,
                         static_cast<const unsigned char*>(b) + i * elem, elem) != 0;
  return wrong;
}

}  // namespace topocoll::runtime::cuda::test
