// Where a rank's buffers live, and how the executor works on them there (issue 5). The executor
// (runtime/executor.hpp) does three things to memory besides handing it to the transport: local
// copies, reductions (of a received slice, or a local reduce op) and the final avg division, plus
// the allocation of its staging slices. A MemorySpace does them; a plan is bound to one.
//
//   space         copy                  reduce / finish_avg          staging
//   host          memmove               runtime::reduce (CPU)        aligned operator new
//                                       reduce_copy: one fused pass
//   cuda device   cudaMemcpyAsync       cuda::reduce on the stream   cudaMalloc
//                 (runtime/cuda/device_memory.hpp; work enqueued on the rank's stream, so
//                  completion is stream-ordered like the device transports'; reduce_copy is
//                  one kernel, cuda::reduce_copy)
//
// Contract: copy has memmove semantics; reduce takes dst and src identical or disjoint (the
// executor stages a partial overlap through an allocation of its own); allocations are aligned to
// 256 bytes and live until deallocate.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "algorithms/ir/types.hpp"

namespace topocoll::runtime {

class MemorySpace {
 public:
  virtual ~MemorySpace() = default;
  virtual std::string name() const = 0;  // "host", "cuda device 0"
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* p) noexcept = 0;
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void reduce(algo::DataType t, algo::ReduceOp op, void* dst, const void* src, std::size_t count) = 0;
  virtual void finish_avg(algo::DataType t, void* data, std::size_t count, int ranks) = 0;
  // dst = a (op) b (a receive-reduce-copy): b disjoint from dst, a dst itself or disjoint from
  // it. By default a copy of a into dst, then reduce; a space with a fused pass overrides it.
  virtual void reduce_copy(algo::DataType t, algo::ReduceOp op, void* dst, const void* a, const void* b,
                           std::size_t count) {
    if (dst != a) copy(dst, a, count * algo::size_of(t));
    reduce(t, op, dst, b, count);
  }
  // A copy into memory that will not be read again soon (a push into a peer's buffer): where the
  // space has them, streaming stores that skip the cache and the read for ownership, made visible
  // to other processes before it returns. src and dst disjoint. By default: copy.
  virtual void copy_out(void* dst, const void* src, std::size_t bytes) { copy(dst, src, bytes); }
};

// Whether [a, a + a_bytes) and [b, b + b_bytes) share a byte (in any memory space: addresses only).
inline bool overlaps(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
  const auto* x = static_cast<const std::byte*>(a);
  const auto* y = static_cast<const std::byte*>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

// Host memory: memmove, the CPU reducer. One shared instance (stateless).
MemorySpace& host_memory();

// An allocation of a memory space, released with the object.
class SpaceBuffer {
 public:
  SpaceBuffer() = default;
  SpaceBuffer(MemorySpace& space, std::size_t bytes) : space_(&space), bytes_(bytes) {
    if (bytes > 0) data_ = static_cast<std::byte*>(space.allocate(bytes));
  }
  SpaceBuffer(SpaceBuffer&& o) noexcept { swap(o); }
  SpaceBuffer& operator=(SpaceBuffer&& o) noexcept {
    swap(o);
    return *this;
  }
  SpaceBuffer(const SpaceBuffer&) = delete;
  SpaceBuffer& operator=(const SpaceBuffer&) = delete;
  ~SpaceBuffer() {
    if (data_ != nullptr) space_->deallocate(data_);
  }
  std::byte* data() const { return data_; }
  std::size_t size() const { return bytes_; }

 private:
  void swap(SpaceBuffer& o) noexcept {
    std::swap(space_, o.space_);
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
  }
  MemorySpace* space_ = nullptr;
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace topocoll::runtime
