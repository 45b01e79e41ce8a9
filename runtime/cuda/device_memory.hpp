// Device memory as the executor's memory space (runtime/memory_space.hpp): a plan bound to a
// DeviceSpace runs a rank's program on buffers in the current GPU's memory, its copies and
// reductions enqueued on the rank's stream (cudaMemcpyAsync, the CUDA reducer), its staging slices
// in cudaMalloc memory. Completion is stream-ordered, as with the device transports: when
// Plan::run returns, the work is enqueued; synchronise the stream before reading results on the
// host. Host-only header (no CUDA types); failures throw CudaError naming the call.
#pragma once

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
  void finish_avg(algo::DataType t, void* data, std::size_t count, int ranks) override;
  Stream stream() const { return stream_; }
  int device() const { return device_; }

 private:
  Stream stream_ = nullptr;
  int device_ = 0;
};

}  // namespace topocoll::runtime::cuda
