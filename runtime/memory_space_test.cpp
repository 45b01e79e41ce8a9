// The executor does every local copy, reduction, avg division and staging allocation through its
// plan's MemorySpace (runtime/memory_space.hpp), never on the memory directly: the hook a device
// memory space needs. Proven with a space whose memory holds each 32-bit word XOR-masked: moving
// bytes (transport, copy) is unaffected, but a reduction done on the masked words directly (the
// CPU reducer instead of the space's) gives a wrong result, which the last case shows.
#include "runtime/memory_space.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "algorithms/ir/layout.hpp"
#include "algorithms/registry.hpp"
#include "runtime/executor.hpp"
#include "runtime/inproc.hpp"
#include "runtime/reducer.hpp"
#include "runtime/test_data.hpp"

using namespace topocoll::algo;
using namespace topocoll::runtime;

namespace {

constexpr std::uint32_t kMask = 0x9E3779B9u;

void mask(void* data, std::size_t bytes) {
  auto* w = static_cast<std::uint32_t*>(data);
  for (std::size_t i = 0; i < bytes / 4; ++i) w[i] ^= kMask;
}

// Int32 / float words stored masked; reductions unmask, reduce, mask. Counts its calls.
class MaskedSpace final : public MemorySpace {
 public:
  std::string name() const override { return "masked host"; }
  void* allocate(std::size_t bytes) override {
    ++allocations;
    return host_memory().allocate(bytes);
  }
  void deallocate(void* p) noexcept override { host_memory().deallocate(p); }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    ++copies;
    host_memory().copy(dst, src, bytes);
  }
  void reduce(DataType t, ReduceOp op, void* dst, const void* src, std::size_t count) override {
    ++reductions;
    masked_reduce(t, op, dst, dst, src, count);
  }
  void reduce_copy(DataType t, ReduceOp op, void* dst, const void* x, const void* y, std::size_t count) override {
    ++reduce_copies;
    masked_reduce(t, op, dst, x, y, count);
  }
  void finish_avg(DataType t, void* data, std::size_t count, int ranks) override {
    ++avgs;
    mask(data, count * 4);
    topocoll::runtime::finish_avg(t, data, count, ranks);
    mask(data, count * 4);
  }
  int allocations = 0, copies = 0, reductions = 0, reduce_copies = 0, avgs = 0;

 private:
  // dst = x (op) y on the unmasked words.
  static void masked_reduce(DataType t, ReduceOp op, void* dst, const void* x, const void* y, std::size_t count) {
    std::vector<std::uint32_t> a(count), b(count);
    std::memcpy(a.data(), x, count * 4);
    std::memcpy(b.data(), y, count * 4);
    mask(a.data(), count * 4);
    mask(b.data(), count * 4);
    topocoll::runtime::reduce(t, op, a.data(), b.data(), count);
    mask(a.data(), count * 4);
    std::memcpy(dst, a.data(), count * 4);
  }
};

struct Outcome {
  std::size_t wrong = 0;
  std::vector<MaskedSpace> spaces;
};

// Runs `s` on masked inputs over the in-process fabric, each rank's plan bound to `masked` spaces
// (or to host memory when !use_space), and counts output elements that differ from the exact
// expectation once unmasked.
Outcome run_masked(const Schedule& s, bool use_space) {
  const CollectiveArgs& a = s.args();
  const int p = s.num_ranks();
  const std::size_t bytes = a.count * size_of(a.dtype);
  InprocFabric fabric(p);
  Outcome out;
  out.spaces.resize(static_cast<std::size_t>(p));
  std::vector<std::vector<std::byte>> outputs(static_cast<std::size_t>(p), std::vector<std::byte>(bytes));
  auto rank_main = [&](int r) {
    std::vector<std::byte> in(bytes);
    fill_input(a.dtype, a.op, r, p, 0, in.data(), a.count);
    mask(in.data(), bytes);
    InprocTransport t(fabric, r);
    MemorySpace& space = use_space ? static_cast<MemorySpace&>(out.spaces[static_cast<std::size_t>(r)]) : host_memory();
    Plan plan(s, r, space);
    plan.run(Buffers{in.data(), outputs[static_cast<std::size_t>(r)].data(), nullptr}, t);
  };
  std::vector<std::thread> threads;
  for (int r = 1; r < p; ++r) threads.emplace_back(rank_main, r);
  rank_main(0);
  for (auto& th : threads) th.join();
  std::vector<std::byte> want(bytes);
  fill_expected(a.dtype, a.op, p, 0, want.data(), a.count);
  for (auto& o : outputs) {
    mask(o.data(), bytes);
    for (std::size_t i = 0; i < a.count; ++i) out.wrong += std::memcmp(o.data() + 4 * i, want.data() + 4 * i, 4) != 0;
  }
  return out;
}

Schedule make(const std::string& algorithm, int p, std::uint64_t count, DataType t, ReduceOp op) {
  Tuning tuning;
  tuning.channels = 2;
  tuning.slice_bytes = 256;
  return find_algorithm(algorithm).generate(uniform_layout(1, p), CollectiveArgs::allreduce(count, t, op, p), tuning);
}

}  // namespace

TEST_CASE("memory space: the executor's copies, reductions, staging and avg all go through the plan's space") {
  for (const char* algorithm : {"ring", "dbt", "recursive-doubling"})
    for (int p : {2, 3, 5}) {
      INFO(fmt::format("{} p={}", algorithm, p));
      const Schedule s = make(algorithm, p, 1000, DataType::Int32, ReduceOp::Sum);
      const Outcome o = run_masked(s, true);
      CHECK(o.wrong == 0);
      int reductions = 0, from_input = 0;
      for (const MaskedSpace& m : o.spaces) {
        CHECK(m.allocations >= 1);  // the receive staging (every rank receives)
        CHECK(m.avgs == 0);
        // The input reaches the output through the space, reduced from where it is
        // (recv_reduce_copy): at every rank of the ring; of dbt and recursive doubling at the
        // ranks that reduce (a leaf of both trees, or a rank that folds into another, only
        // sends its input and receives the result).
        if (std::string(algorithm) == "ring") CHECK(m.reduce_copies >= 1);
        from_input += m.copies + m.reduce_copies;
        reductions += m.reductions + m.reduce_copies;  // leaves of a tree, or a rank that folds, reduce nothing
      }
      CHECK(from_input >= 1);
      CHECK(reductions >= p - 1);
    }
  const Outcome avg = run_masked(make("ring", 4, 999, DataType::Float32, ReduceOp::Avg), true);
  CHECK(avg.wrong == 0);
  for (const MaskedSpace& m : avg.spaces) CHECK(m.avgs == 1);
}

TEST_CASE("memory space: the masked check can fail (host memory's reducer on masked words is wrong)") {
  const Outcome o = run_masked(make("ring", 3, 1000, DataType::Int32, ReduceOp::Sum), false);
  CHECK(o.wrong > 900);
}
