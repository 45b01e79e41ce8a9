// Device memory as the executor's memory space (runtime/memory_space.hpp), and the RAII of device
// memory and streams (one DeviceBuffer, one ScopedStream: every CUDA user of the runtime, its tests
// and the bench take these). A plan bound to a
// DeviceSpace runs a rank's program on buffers in the current GPU's memory, its copies and
// reductions enqueued on the rank's stream (cudaMemcpyAsync, the CUDA reducer), its staging slices
// in cudaMalloc memory. Completion is stream-ordered, as with the device transports: when
// Plan::run returns, the work is enqueued; synchronise the stream before reading results on the
// host. Host-only header (no CUDA types); failures throw CudaError naming the call.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/cuda/reducer.hpp"
#include "runtime/memory_space.hpp"

namespace topocoll::runtime::cuda {

class DeviceSpace final : public MemorySpace {
 public:
  // The current CUDA device; work goes on `stream`.
  explicit DeviceSpace(Stream stream);
  std::string name() const override;  // "cuda device 0"
  void* allocate(std::size_t bytes) override;
  void deallocate(void* p) noexcept override;
  // memmove semantics: a partial overlap goes through a stream-ordered temporary.
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void reduce(algo::DataType t, algo::ReduceOp op, void* dst, const void* src, std::size_t count) override;
  void reduce_copy(algo::DataType t, algo::ReduceOp op, void* dst, const void* a, const void* b,
                   std::size_t count) override;
  void finish_avg(algo::DataType t, void* data, std::size_t count, int ranks) override;
  Stream stream() const { return stream_; }
  int device() const { return device_; }

 private:
  Stream stream_ = nullptr;
  int device_ = 0;
};

// Memory of the current device, freed with the object: a SpaceBuffer over a DeviceSpace
// (cudaMalloc, 256-byte aligned). At least one byte is allocated, so that an empty buffer still has
// a distinct address. upload / download are synchronous (cudaMemcpy) at a byte offset.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  std::byte* data() const { return buffer_.data(); }
  std::size_t size() const { return size_; }  // as asked (0 for an empty one)
  void upload(const void* host, std::size_t bytes, std::size_t offset = 0);
  void download(void* host, std::size_t bytes, std::size_t offset = 0) const;

 private:
  SpaceBuffer buffer_;
  std::size_t size_ = 0;
};

// A non-blocking stream of the current device (it does not wait for the legacy default stream),
// destroyed with the object.
class ScopedStream {
 public:
  ScopedStream();
  ~ScopedStream();
  ScopedStream(const ScopedStream&) = delete;
  ScopedStream& operator=(const ScopedStream&) = delete;
  Stream get() const { return stream_; }

 private:
  Stream stream_ = nullptr;
};

// cudaDeviceSynchronize, throwing on an error (a kernel fault surfaces here).
void synchronize_device();

}  // namespace topocoll::runtime::cuda
