#include "runtime/memory_space.hpp"

#include <cstring>
#include <new>

#include "runtime/reducer.hpp"

namespace topocoll::runtime {

namespace {

constexpr std::align_val_t kAlignment{256};

class HostMemory final : public MemorySpace {
 public:
  std::string name() const override { return "host"; }
  void* allocate(std::size_t bytes) override { return ::operator new(bytes, kAlignment); }
  void deallocate(void* p) noexcept override { ::operator delete(p, kAlignment); }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes > 0 && dst != src) std::memmove(dst, src, bytes);
  }
  void reduce(algo::DataType t, algo::ReduceOp op, void* dst, const void* src, std::size_t count) override {
    runtime::reduce(t, op, dst, src, count);
  }
  void reduce_copy(algo::DataType t, algo::ReduceOp op, void* dst, const void* a, const void* b,
                   std::size_t count) override {
    runtime::reduce_copy(t, op, dst, a, b, count);
  }
  void finish_avg(algo::DataType t, void* data, std::size_t count, int ranks) override {
    runtime::finish_avg(t, data, count, ranks);
  }
};

}  // namespace

MemorySpace& host_memory() {
  static HostMemory host;
  return host;
}

}  // namespace topocoll::runtime
