#include "runtime/memory_space.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "runtime/reducer.hpp"

namespace topocoll::runtime {

namespace {

constexpr std::align_val_t kAlignment{256};

// memcpy with streaming (non-temporal) 16-byte stores where SSE2 has them: the head up to dst's
// 16-byte boundary and the tail by memcpy, then a store fence, so that a flag stored after it
// (release) publishes the bytes to another process.
void stream_copy(void* dst, const void* src, std::size_t bytes) {
#if defined(__SSE2__)
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  const std::size_t head = std::min(bytes, (16 - reinterpret_cast<std::uintptr_t>(d) % 16) % 16);
  std::memcpy(d, s, head);
  std::size_t i = head;
  for (; i + 64 <= bytes; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  for (; i + 16 <= bytes; i += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
  std::memcpy(d + i, s + i, bytes - i);
  _mm_sfence();
#else
  std::memcpy(dst, src, bytes);
#endif
}

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
  void copy_out(void* dst, const void* src, std::size_t bytes) override { stream_copy(dst, src, bytes); }
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
