#include "runtime/cuda/device_memory.hpp"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>

namespace topocoll::runtime::cuda {

namespace {

void check(cudaError_t e, const char* where) {
  throw_if_failed(Status{static_cast<int>(e), where});
}

}  // namespace

DeviceSpace::DeviceSpace(Stream stream) : stream_(stream) {
  check(cudaGetDevice(&device_), "cudaGetDevice");
}

std::string DeviceSpace::name() const {
  return fmt::format("cuda device {}", device_);
}

void* DeviceSpace::allocate(std::size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)), "cudaMalloc (staging)");  // 256-byte aligned
  return p;
}

void DeviceSpace::deallocate(void* p) noexcept {
  // The stream may still use the memory: cudaFree waits for the device first.
  cudaFree(p);
}

void DeviceSpace::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0 || dst == src) return;
  if (!overlaps(dst, bytes, src, bytes)) {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync (copy)");
    return;
  }
  void* tmp = nullptr;
  check(cudaMallocAsync(&tmp, bytes, stream_), "cudaMallocAsync (overlapping copy)");
  check(cudaMemcpyAsync(tmp, src, bytes, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync (overlapping copy)");
  check(cudaMemcpyAsync(dst, tmp, bytes, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync (copy)");
  check(cudaFreeAsync(tmp, stream_), "cudaFreeAsync (overlapping copy)");
}

void DeviceSpace::reduce(algo::DataType t, algo::ReduceOp op, void* dst, const void* src, std::size_t count) {
  throw_if_failed(cuda::reduce(t, op, dst, src, count, stream_));
}

void DeviceSpace::reduce_copy(algo::DataType t, algo::ReduceOp op, void* dst, const void* a, const void* b,
                              std::size_t count) {
  throw_if_failed(cuda::reduce_copy(t, op, dst, a, b, count, stream_));
}

void DeviceSpace::finish_avg(algo::DataType t, void* data, std::size_t count, int ranks) {
  throw_if_failed(cuda::finish_avg(t, data, count, ranks, stream_));
}

// ---- RAII -------------------------------------------------------------------------------------

namespace {

// The space DeviceBuffer allocates from: cudaMalloc of the current device (DeviceSpace::allocate
// uses no stream). Made on first use, so that a process without a GPU fails at its first buffer.
MemorySpace& allocation_space() {
  static DeviceSpace space(nullptr);
  return space;
}

}  // namespace

DeviceBuffer::DeviceBuffer(std::size_t bytes)
    : buffer_(allocation_space(), std::max<std::size_t>(bytes, 1)), size_(bytes) {}

void DeviceBuffer::upload(const void* host, std::size_t bytes, std::size_t offset) {
  if (bytes > 0) check(cudaMemcpy(data() + offset, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
}

void DeviceBuffer::download(void* host, std::size_t bytes, std::size_t offset) const {
  if (bytes > 0) check(cudaMemcpy(host, data() + offset, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
}

ScopedStream::ScopedStream() {
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  stream_ = s;
}

ScopedStream::~ScopedStream() {
  if (stream_) cudaStreamDestroy(stream_);
}

void synchronize_device() {
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

}  // namespace topocoll::runtime::cuda
