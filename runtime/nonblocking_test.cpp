// The non-blocking API (Plan::start / test / wait, ProgressThread): registered schedules run with
// caller-driven progress between chunks of "compute", and from a progress thread, bit-exact against
// test_data; misuse and a silent peer are errors, after which the plan runs again.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <thread>
#include <vector>

#include "algorithms/ir/layout.hpp"
#include "algorithms/registry.hpp"
#include "common/errors.hpp"
#include "runtime/executor.hpp"
#include "runtime/inproc.hpp"
#include "runtime/progress_thread.hpp"
#include "runtime/test_data.hpp"

using namespace topocoll;
using namespace topocoll::runtime;

namespace {

enum class Drive { Caller, Thread };

// One rank's buffers with test_data's inputs.
struct RankBuffers {
  std::vector<std::byte> input, output, scratch;
  Buffers b() { return {input.data(), output.data(), scratch.empty() ? nullptr : scratch.data()}; }
};

// Runs `s` on every rank in a thread of its own over an InprocFabric, `calls` times per rank,
// each call started, then driven by `drive` while the thread "computes"; returns the wrong
// elements over all ranks and calls, and the test() calls that returned false (in polls).
std::uint64_t run_nonblocking(const algo::Schedule& s, Drive drive, int calls, std::atomic<long>& polls) {
  const algo::CollectiveArgs& a = s.args();
  const std::size_t elem = algo::size_of(a.dtype);
  const int p = s.num_ranks();
  InprocFabric fabric(p);
  std::atomic<std::uint64_t> wrong{0};
  std::vector<std::exception_ptr> failures(static_cast<std::size_t>(p));
  std::vector<std::thread> threads;
  for (int r = 0; r < p; ++r)
    threads.emplace_back([&, r] {
      try {
        InprocTransport t(fabric, r);
        Plan plan(s, r);
        RankBuffers rb;
        rb.input.resize(a.input_count() * elem);
        rb.output.resize(a.output_count() * elem);
        rb.scratch.resize(s.scratch_count() * elem);
        ProgressThread progress;
        volatile double sink = 0;
        for (int call = 0; call < calls; ++call) {
          fill_collective_input(a, r, 0, rb.input.data(), static_cast<std::size_t>(a.input_count()));
          std::memset(rb.output.data(), 0xA5, rb.output.size());
          plan.start(rb.b(), t, {.progress_timeout = std::chrono::milliseconds(20000)});
          const auto compute = [&] {
            for (int i = 0; i < 200; ++i) sink = sink + 1e-9 * i;
          };
          if (drive == Drive::Caller) {
            while (!plan.test()) {
              polls.fetch_add(1);
              compute();
            }
          } else {
            progress.drive(plan);
            while (!progress.done()) compute();
            progress.wait();
          }
          CHECK_FALSE(plan.running());
          wrong.fetch_add(count_wrong_output(a, r, rb.output.data()));
        }
      } catch (...) {
        failures[static_cast<std::size_t>(r)] = std::current_exception();
        fabric.abort(fmt::format("rank {} failed", r));
      }
    });
  for (auto& th : threads) th.join();
  for (const auto& f : failures)
    if (f) std::rethrow_exception(f);
  return wrong.load();
}

algo::Schedule registered(const std::string& name, int ranks, std::uint64_t count) {
  const algo::Layout layout = algo::uniform_layout(1, ranks);
  const algo::Algorithm& alg = algo::find_algorithm(name);
  algo::CollectiveArgs a = algo::CollectiveArgs::allreduce(count, algo::DataType::Int32, algo::ReduceOp::Sum, ranks);
  a.collective = alg.collective;
  a.count =
      algo::nccl_tests_args(alg.collective, count * 4, a.dtype, a.op, ranks).count;  // nccl-tests' call of count ints
  algo::Tuning tuning;
  tuning.channels = 2;
  tuning.slice_bytes = 256;
  return alg.generate(layout, a, tuning);
}

}  // namespace

TEST_CASE("non-blocking: start + test from a compute loop gives run()'s exact results") {
  for (const char* name : {"ring", "dbt", "recursive-doubling", "allgather-ring", "reduce_scatter-ring",
                           "broadcast-tree", "alltoall-pairwise"}) {
    for (int ranks : {2, 3, 5}) {
      CAPTURE(name);
      CAPTURE(ranks);
      std::atomic<long> polls{0};
      const algo::Schedule s = registered(name, ranks, 1000 + 7);
      CHECK(run_nonblocking(s, Drive::Caller, 3, polls) == 0);
    }
  }
}

TEST_CASE("non-blocking: a progress thread drives the plan while the caller computes") {
  for (const char* name : {"ring", "dbt"}) {
    CAPTURE(name);
    std::atomic<long> polls{0};
    const algo::Schedule s = registered(name, 4, 4099);
    CHECK(run_nonblocking(s, Drive::Thread, 3, polls) == 0);
    CHECK(polls.load() == 0);  // the caller never tested the plan itself
  }
}

TEST_CASE("non-blocking: misuse and a silent peer") {
  // Rank 0 of a 2-rank ring runs alone: its receive never arrives.
  const algo::Schedule s = registered("ring", 2, 64);
  const algo::CollectiveArgs& a = s.args();
  InprocFabric fabric(2);
  InprocTransport t(fabric, 0);
  Plan plan(s, 0);
  std::vector<std::int32_t> in(a.input_count()), out(a.output_count());
  std::vector<std::int32_t> scratch(s.scratch_count() + 1);
  const Buffers b{in.data(), out.data(), scratch.data()};
  const ExecOptions quick{.progress_timeout = std::chrono::milliseconds(30), .spin = std::chrono::microseconds(0)};

  CHECK(plan.test());  // not started: nothing to do
  plan.start(b, t, quick);
  CHECK(plan.running());
  CHECK_FALSE(plan.test());
  try {
    plan.start(b, t, quick);
    FAIL("a second start of an unfinished run must be refused");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("started while its previous run is unfinished") != std::string::npos);
  }
  ProgressThread progress;
  progress.drive(plan);
  CHECK_THROWS_AS(progress.drive(plan), InputError);  // already driving it
  CHECK_THROWS_AS(progress.wait(), PeerTimeout);      // the thread's PeerTimeout, rethrown here
  CHECK_FALSE(plan.running());
  CHECK_THROWS_AS(progress.drive(plan), InputError);  // not started
  // After the failure the plan starts again; test() reports the same timeout.
  plan.start(b, t, quick);
  const auto t0 = std::chrono::steady_clock::now();
  bool threw = false;
  try {
    while (!plan.test()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  } catch (const PeerTimeout&) {
    threw = true;
  }
  CHECK(threw);
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(30));
  CHECK_FALSE(plan.running());
}
