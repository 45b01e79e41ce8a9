#include "runtime/cuda/test_support.hpp"

#include <cuda_runtime.h>

namespace topocoll::runtime::cuda::test {

namespace {
void check(cudaError_t e, const char* where) {
  throw_if_failed(Status{static_cast<int>(e), where});
}
}  // namespace

DeviceBuffer::DeviceBuffer(std::size_t bytes) : size_(bytes) {
  // At least one byte, so that a zero-element buffer still has a distinct address.
  void* p = nullptr;
  check(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc");
  data_ = static_cast<unsigned char*>(p);
}

DeviceBuffer::~DeviceBuffer() {
  cudaFree(data_);
}

void DeviceBuffer::upload(const void* host, std::size_t bytes, std::size_t offset) {
  if (bytes > 0) check(cudaMemcpy(data_ + offset, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
}

void DeviceBuffer::download(void* host, std::size_t bytes, std::size_t offset) const {
  if (bytes > 0) check(cudaMemcpy(host, data_ + offset, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
}

void sync() {
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

}  // namespace topocoll::runtime::cuda::test
