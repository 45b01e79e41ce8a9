// Every registered allreduce algorithm on 2 ... 8 ranks sharing one GPU (device-memory in-process
// transport, CUDA reducer), bit-exact against test_data's closed-form expectation; plus the
// transport's FIFO matching and size check on their own.
#include "runtime/cuda/device_inproc.hpp"

#include <cuda_runtime.h>
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/testing.hpp"
#include "common/errors.hpp"
#include "runtime/cuda/device_memory.hpp"
#include "runtime/cuda/test_support.hpp"
#include "runtime/rounds.hpp"
#include "runtime/test_data.hpp"
#include "runtime/testing/run_device_inproc.hpp"

using namespace topocoll::algo;
using namespace topocoll::runtime;
namespace tc = topocoll::runtime::cuda::test;

TEST_CASE("device inproc transport: FIFO per (source, destination, channel), sizes checked") {
  cuda::DeviceFabric fabric(2);
  cuda::DeviceTransport r0(fabric, 0, nullptr), r1(fabric, 1, nullptr);
  // Rank 0 sends 0..9 on channel 0 and 100..109 on channel 1, interleaved.
  tc::DeviceBuffer values(20 * sizeof(std::int64_t)), got(20 * sizeof(std::int64_t));
  std::vector<std::int64_t> host(20);
  for (int i = 0; i < 10; ++i) host[2 * i] = i, host[2 * i + 1] = 100 + i;
  values.upload(host.data(), 20 * sizeof(std::int64_t));
  for (int i = 0; i < 20; ++i)
    CHECK(r0.post_send(1, i % 2, values.data() + i * sizeof(std::int64_t), sizeof(std::int64_t)) == Transport::kDone);
  // Rank 1 takes channel 1 first, then channel 0.
  for (int i = 0; i < 20; ++i) {
    const int channel = i < 10 ? 1 : 0;
    const Transport::Request r = r1.post_recv(0, channel, got.data() + i * sizeof(std::int64_t), sizeof(std::int64_t));
    CHECK(r1.test_recv(r));
  }
  const Transport::Request none = r1.post_recv(0, 0, got.data(), sizeof(std::int64_t));
  CHECK_FALSE(r1.test_recv(none));  // nothing left
  tc::sync();
  std::vector<std::int64_t> out(20);
  got.download(out.data(), 20 * sizeof(std::int64_t));
  for (int i = 0; i < 10; ++i) {
    CHECK(out[static_cast<std::size_t>(i)] == 100 + i);
    CHECK(out[static_cast<std::size_t>(10 + i)] == i);
  }
  r0.post_send(1, 3, values.data(), 8);
  const Transport::Request wrong = r1.post_recv(0, 3, got.data(), 4);
  CHECK_THROWS_AS(r1.test_recv(wrong), topocoll::InputError);
}

TEST_CASE("device inproc: every registered allreduce on 2..8 ranks of one GPU is bit-exact") {
  std::size_t runs = 0, unsupported = 0, j = 0;
  for (const Algorithm& alg : registry()) {
    if (alg.collective != Collective::AllReduce) continue;
    for (int p = 2; p <= 8; ++p) {
      std::vector<std::pair<int, int>> shapes = {{1, p}};
      if (p % 2 == 0) shapes.push_back({2, p / 2});
      for (auto [nodes, per_node] : shapes) {
        const Layout layout = uniform_layout(nodes, per_node);
        std::vector<std::uint64_t> counts = testing::awkward_counts(p);
        counts.push_back(65536 + 7);  // several slices per chunk, odd tail
        for (std::uint64_t n : counts)
          for (bool in_place : {false, true}) {
            // Rotate dtype and op so that every algorithm meets every dtype and every op.
            CollectiveArgs a = CollectiveArgs::allreduce(n, kAllDataTypes[j % 10], kAllOps[(j + j / 10) % 5], p);
            Tuning t;
            t.channels = j % 2 == 0 ? 1 : 3;
            t.slice_bytes = n > 4096 ? 16384 : 64;
            ++j;
            if (!alg.supports(layout, a, t).ok) {
              ++unsupported;
              continue;
            }
            const Schedule s = alg.generate(layout, a, t);
            INFO(fmt::format("{} p={} shape={}x{} count={} {} {} channels={} in_place={}", alg.name, p, nodes, per_node,
                             n, to_string(a.dtype), to_string(a.op), t.channels, in_place));
            CHECK(count_wrong_outputs(s, cuda::run_device_inproc(s, in_place)) == 0);
            ++runs;
          }
      }
    }
  }
  MESSAGE(fmt::format("{} one-GPU runs, {} combinations unsupported (with a reason)", runs, unsupported));
  CHECK(runs > 0);
}

namespace {

// Records one rank's transfers of a round; the test runs every rank's round as one group.
class RecordingRounds final : public RoundTransport {
 public:
  struct Transfer {
    int peer;
    const void* src;
    void* dst;
    std::size_t bytes;
  };
  void send(int peer, const void* src, std::size_t bytes) override { sends.push_back({peer, src, nullptr, bytes}); }
  void recv(int peer, void* dst, std::size_t bytes) override { recvs.push_back({peer, nullptr, dst, bytes}); }
  void end_round() override {}
  std::vector<Transfer> sends, recvs;
};

}  // namespace

TEST_CASE("device rounds: registered allreduces cut into rounds run on device memory (DeviceSpace), bit-exact") {
  // What --backend nccl runs, with NCCL's group replaced by device-to-device copies between the
  // ranks' buffers on one GPU: the round executor's reductions and copies on DeviceSpace.
  std::size_t runs = 0;
  for (const char* name : {"ring", "dbt", "recursive-doubling", "hierarchical"})
    for (int p : {2, 3, 4}) {
      const Layout layout = uniform_layout(1, p);
      const std::uint64_t n = 65536 + 7;
      Tuning t;
      t.slice_bytes = 16384;
      const Schedule s =
          find_algorithm(name).generate(layout, CollectiveArgs::allreduce(n, DataType::Float32, ReduceOp::Sum, p), t);
      std::vector<RoundPlan> plans = plan_rounds(s);
      std::vector<std::unique_ptr<tc::DeviceBuffer>> in, out;
      std::vector<std::unique_ptr<cuda::DeviceSpace>> spaces;
      std::vector<RoundExecutor> ex;
      std::vector<RecordingRounds> ts(static_cast<std::size_t>(p));
      std::vector<float> host(n);
      for (int r = 0; r < p; ++r) {
        fill_input(DataType::Float32, ReduceOp::Sum, r, p, 0, host.data(), n);
        in.push_back(std::make_unique<tc::DeviceBuffer>(n * 4));
        out.push_back(std::make_unique<tc::DeviceBuffer>(n * 4));
        in.back()->upload(host.data(), n * 4);
        spaces.push_back(std::make_unique<cuda::DeviceSpace>(nullptr));
        ex.emplace_back(s, r, plans[static_cast<std::size_t>(r)], *spaces.back());
      }
      for (int r = 0; r < p; ++r)
        ex[static_cast<std::size_t>(r)].begin(
            Buffers{in[static_cast<std::size_t>(r)]->data(), out[static_cast<std::size_t>(r)]->data(), nullptr});
      for (int k = 0; k < plans.front().rounds; ++k) {
        for (int r = 0; r < p; ++r) ex[static_cast<std::size_t>(r)].issue(k, ts[static_cast<std::size_t>(r)]);
        tc::sync();
        // Per pair of ranks in issue order, as NCCL matches.
        for (int r = 0; r < p; ++r) {
          std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
          for (const auto& v : ts[static_cast<std::size_t>(r)].recvs) {
            auto& sends = ts[static_cast<std::size_t>(v.peer)].sends;
            std::size_t& i = next[static_cast<std::size_t>(v.peer)];
            while (i < sends.size() && sends[i].peer != r) ++i;
            REQUIRE(i < sends.size());
            REQUIRE(sends[i].bytes == v.bytes);
            REQUIRE(cudaMemcpy(v.dst, sends[i].src, v.bytes, cudaMemcpyDeviceToDevice) == cudaSuccess);
            ++i;
          }
        }
        for (auto& tr : ts) tr.sends.clear(), tr.recvs.clear();
        for (int r = 0; r < p; ++r) ex[static_cast<std::size_t>(r)].finish(k, ts[static_cast<std::size_t>(r)]);
      }
      for (auto& e : ex) e.end();
      tc::sync();
      std::vector<float> want(n), got(n);
      fill_expected(DataType::Float32, ReduceOp::Sum, p, 0, want.data(), n);
      for (int r = 0; r < p; ++r) {
        out[static_cast<std::size_t>(r)]->download(got.data(), n * 4);
        INFO(fmt::format("{} p={} rank {}", name, p, r));
        CHECK(tc::count_different(got.data(), want.data(), n, 4) == 0);
      }
      ++runs;
    }
  CHECK(runs == 12);
}
