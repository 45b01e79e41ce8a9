// The CUDA reducer against the CPU reducer, bit for bit: every dtype x op, awkward sizes (0, 1, 7,
// 1009, and one that needs more than one grid-stride turn) and offsets (equal misalignment: the
// vector path with a head; unequal: the element path), random inputs that make no NaN.
#include "runtime/cuda/reducer.hpp"

#include <cuda_runtime.h>
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/cuda/test_support.hpp"
#include "runtime/reducer.hpp"

using namespace topocoll::runtime;
using topocoll::algo::DataType;
using topocoll::algo::ReduceOp;
using topocoll::algo::size_of;
using topocoll::algo::to_string;
namespace tc = topocoll::runtime::cuda::test;

namespace {

// Random elements whose combinations never make a NaN: any integer; finite floats of every
// exponent (subnormals and zeros of both signs included), no infinity or NaN (inf - inf would be).
void fill_random(DataType t, unsigned char* data, std::size_t n, std::mt19937_64& rng) {
  const std::size_t elem = size_of(t);
  for (std::size_t i = 0; i < n; ++i) {
    unsigned char* e = data + i * elem;
    for (;;) {
      const std::uint64_t bits = rng();
      std::memcpy(e, &bits, elem);
      bool finite = true;
      if (t == DataType::Float16) finite = ((bits >> 10) & 0x1f) != 0x1f;
      if (t == DataType::BFloat16) finite = ((bits >> 7) & 0xff) != 0xff;
      if (t == DataType::Float32) finite = ((bits >> 23) & 0xff) != 0xff;
      if (t == DataType::Float64) finite = ((bits >> 52) & 0x7ff) != 0x7ff;
      if (finite) break;
    }
  }
}

// Reduces n elements at element offsets (dst_off, src_off) on the GPU and on the CPU; returns the
// number of elements that differ bit for bit.
std::size_t compare_reduce(DataType t, ReduceOp op, std::size_t n, std::size_t dst_off, std::size_t src_off,
                           std::mt19937_64& rng, const cuda::ReducePolicy& policy = {}) {
  const std::size_t elem = size_of(t);
  std::vector<unsigned char> dst((n + dst_off) * elem), src((n + src_off) * elem);
  fill_random(t, dst.data(), n + dst_off, rng);
  fill_random(t, src.data(), n + src_off, rng);
  tc::DeviceBuffer d_dst(dst.size()), d_src(src.size());
  d_dst.upload(dst.data(), dst.size());
  d_src.upload(src.data(), src.size());
  cuda::throw_if_failed(
      cuda::reduce(t, op, d_dst.data() + dst_off * elem, d_src.data() + src_off * elem, n, nullptr, policy));
  tc::sync();
  std::vector<unsigned char> got(dst.size());
  d_dst.download(got.data(), got.size());
  reduce(t, op, dst.data() + dst_off * elem, src.data() + src_off * elem, n);
  return tc::count_different(got.data(), dst.data(), dst.size() / elem, elem);
}

}  // namespace

TEST_CASE("cuda reduce equals the CPU reducer bit for bit: every dtype x op, awkward sizes and offsets") {
  std::mt19937_64 rng(20261130);
  struct Offsets {
    std::size_t dst, src;
  };
  for (DataType t : topocoll::algo::kAllDataTypes)
    for (ReduceOp op : topocoll::algo::kAllOps)
      for (std::size_t n : {0u, 1u, 7u, 1009u})
        for (Offsets o : {Offsets{0, 0}, Offsets{1, 1}, Offsets{3, 3}, Offsets{0, 5}, Offsets{2, 1}}) {
          CAPTURE(to_string(t));
          CAPTURE(to_string(op));
          CAPTURE(n);
          CAPTURE(o.dst);
          CAPTURE(o.src);
          CHECK(compare_reduce(t, op, n, o.dst, o.src, rng) == 0);
        }
}

TEST_CASE("cuda reduce on buffers larger than one grid (many grid-stride turns), aligned and not, any policy") {
  std::mt19937_64 rng(7);
  // {64, 1}: a grid of one 64-thread block per SM, so that 2^20 elements take many turns of the
  // loop; the default; the largest blocks.
  for (cuda::ReducePolicy policy : {cuda::ReducePolicy{64, 1}, cuda::ReducePolicy{}, cuda::ReducePolicy{1024, 2}})
    for (DataType t : {DataType::Int8, DataType::BFloat16, DataType::Float32, DataType::Float64})
      for (std::size_t off : {0u, 1u}) {
        CAPTURE(to_string(t));
        CAPTURE(off);
        CAPTURE(policy.threads_per_block);
        CHECK(compare_reduce(t, ReduceOp::Sum, (std::size_t{1} << 20) + 13, off, off, rng, policy) == 0);
        CHECK(compare_reduce(t, ReduceOp::Max, (std::size_t{1} << 20) + 5, off, off + 1, rng, policy) == 0);
      }
  std::mt19937_64 big_rng(8);
  CHECK(compare_reduce(DataType::Float32, ReduceOp::Sum, (std::size_t{1} << 26) + 3, 0, 0, big_rng) == 0);  // 256 MiB
}

TEST_CASE("cuda reduce_copy equals the CPU reduce_copy bit for bit: three buffers, equal and unequal offsets") {
  // dst = a (op) b, a third buffer (the receive-reduce-copy of an out-of-place run): offsets
  // (dst, a, b) all equal modulo 16 B (the vector path, with a head), and not (the element path).
  std::mt19937_64 rng(20261207);
  struct Offsets {
    std::size_t dst, a, b;
  };
  for (DataType t : topocoll::algo::kAllDataTypes)
    for (ReduceOp op : topocoll::algo::kAllOps)
      for (std::size_t n : {0u, 1u, 1009u, (1u << 20) + 3u})
        for (Offsets o : {Offsets{0, 0, 0}, Offsets{1, 1, 1}, Offsets{0, 1, 0}, Offsets{2, 2, 3}}) {
          CAPTURE(to_string(t));
          CAPTURE(to_string(op));
          CAPTURE(n);
          CAPTURE(o.dst);
          CAPTURE(o.a);
          CAPTURE(o.b);
          const std::size_t elem = size_of(t);
          std::vector<unsigned char> a((n + o.a) * elem), b((n + o.b) * elem), dst((n + o.dst) * elem, 0xA5);
          fill_random(t, a.data(), n + o.a, rng);
          fill_random(t, b.data(), n + o.b, rng);
          tc::DeviceBuffer d_a(a.size()), d_b(b.size()), d_dst(dst.size());
          d_a.upload(a.data(), a.size());
          d_b.upload(b.data(), b.size());
          d_dst.upload(dst.data(), dst.size());
          cuda::throw_if_failed(cuda::reduce_copy(t, op, d_dst.data() + o.dst * elem, d_a.data() + o.a * elem,
                                                  d_b.data() + o.b * elem, n, nullptr));
          tc::sync();
          std::vector<unsigned char> got(dst.size()), a_after(a.size());
          d_dst.download(got.data(), got.size());
          d_a.download(a_after.data(), a_after.size());
          reduce_copy(t, op, dst.data() + o.dst * elem, a.data() + o.a * elem, b.data() + o.b * elem, n);
          CHECK(tc::count_different(got.data(), dst.data(), dst.size() / elem, elem) == 0);
          CHECK(a_after == a);  // the own operand is not changed
        }
}

TEST_CASE("cuda reduce with dst == src (x op= x), as the CPU reducer allows") {
  std::mt19937_64 rng(11);
  for (DataType t : topocoll::algo::kAllDataTypes)
    for (ReduceOp op : topocoll::algo::kAllOps) {
      const std::size_t n = 1009, elem = size_of(t);
      std::vector<unsigned char> x(n * elem);
      fill_random(t, x.data(), n, rng);
      tc::DeviceBuffer d(x.size());
      d.upload(x.data(), x.size());
      cuda::throw_if_failed(cuda::reduce(t, op, d.data(), d.data(), n, nullptr));
      tc::sync();
      std::vector<unsigned char> got(x.size());
      d.download(got.data(), got.size());
      reduce(t, op, x.data(), x.data(), n);
      CAPTURE(to_string(t));
      CAPTURE(to_string(op));
      CHECK(tc::count_different(got.data(), x.data(), n, elem) == 0);
    }
}

TEST_CASE("cuda finish_avg equals the CPU finish_avg bit for bit") {
  std::mt19937_64 rng(3);
  for (DataType t : topocoll::algo::kAllDataTypes)
    for (int ranks : {1, 3, 7, 200})
      for (std::size_t n : {0u, 1u, 1009u}) {
        const std::size_t elem = size_of(t);
        std::vector<unsigned char> x(n * elem + 1);
        fill_random(t, x.data(), n, rng);
        tc::DeviceBuffer d(x.size());
        d.upload(x.data(), x.size());
        cuda::throw_if_failed(cuda::finish_avg(t, d.data(), n, ranks, nullptr));
        tc::sync();
        std::vector<unsigned char> got(x.size());
        d.download(got.data(), got.size());
        finish_avg(t, x.data(), n, ranks);
        CAPTURE(to_string(t));
        CAPTURE(ranks);
        CAPTURE(n);
        CHECK(tc::count_different(got.data(), x.data(), n, elem) == 0);
      }
}

TEST_CASE("cuda reduce refuses what it cannot do with a status, not a fault") {
  tc::DeviceBuffer d(64);
  const cuda::Status misaligned =
      cuda::reduce(DataType::Float32, ReduceOp::Sum, d.data() + 1, d.data() + 8, 3, nullptr);
  CHECK_FALSE(misaligned.ok());
  CHECK(cuda::to_string(misaligned).find("aligned") != std::string::npos);
  CHECK_FALSE(cuda::finish_avg(DataType::Float32, d.data(), 4, 0, nullptr).ok());
  CHECK(cuda::reduce(DataType::Float32, ReduceOp::Sum, nullptr, nullptr, 0, nullptr).ok());  // n = 0: nothing
}
