// The in-process runner's own rules, over a scripted world (no transport): which failure is
// rethrown, the buffers' layout and poison, and the outputs read back.
#include "runtime/testing/run_inproc.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime/inproc.hpp"  // Aborted

using namespace topocoll::runtime;
using namespace topocoll::algo;

namespace {

// Host memory; each rank runs a script instead of a schedule. abort() is observable, as a
// fabric's is: await_abort() returns once some rank's failure aborted the world.
class ScriptedWorld final : public InprocWorld {
 public:
  using Script = std::function<void(ScriptedWorld&, int rank, const Buffers&)>;
  explicit ScriptedWorld(Script script) : script_(std::move(script)) {}
  MemorySpace& memory() override { return host_memory(); }
  void upload(void* dst, const void* host, std::size_t bytes) override { std::memcpy(dst, host, bytes); }
  void download(void* host, const void* src, std::size_t bytes) override { std::memcpy(host, src, bytes); }
  void run_rank(const Schedule&, int r, const Buffers& b, const ExecOptions&) override { script_(*this, r, b); }
  void abort(const std::string& reason) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (reason_.empty()) reason_ = reason;
    cv_.notify_all();
  }
  std::string await_abort() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return !reason_.empty(); });
    return reason_;
  }

 private:
  Script script_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string reason_;
};

Schedule empty_schedule(Collective c, int ranks) {
  CollectiveArgs a;
  a.collective = c;
  a.count = 4;
  a.ranks = ranks;
  a.dtype = DataType::Int32;
  a.op = ReduceOp::Sum;
  return Schedule::from_programs("empty", a, 1, 0, std::vector<Program>(static_cast<std::size_t>(ranks)));
}

}  // namespace

TEST_CASE("run_in_world: the first failure that is not an Aborted is rethrown") {
  const Schedule s = empty_schedule(Collective::AllReduce, 3);
  SUBCASE("a real failure, then the Aborted it caused") {
    ScriptedWorld world([](ScriptedWorld& w, int r, const Buffers&) {
      if (r == 1) throw std::invalid_argument("rank 1 is wrong");
      throw Aborted("aborted: " + w.await_abort());
    });
    CHECK_THROWS_WITH_AS(run_in_world(s, false, world), "rank 1 is wrong", std::invalid_argument);
  }
  SUBCASE("an Aborted recorded first yields to a later real failure") {
    ScriptedWorld world([](ScriptedWorld& w, int r, const Buffers&) {
      if (r == 0) throw Aborted("rank 0: aborted");
      w.await_abort();
      if (r == 2) throw std::runtime_error("rank 2 failed later");
    });
    CHECK_THROWS_WITH_AS(run_in_world(s, false, world), "rank 2 failed later", std::runtime_error);
  }
  SUBCASE("only Aborted: it is rethrown, never lost") {
    ScriptedWorld world([](ScriptedWorld&, int r, const Buffers&) {
      if (r == 1) throw Aborted("rank 1: aborted");
    });
    CHECK_THROWS_AS(run_in_world(s, false, world), Aborted);
  }
  SUBCASE("the abort reason names the failed rank and its error") {
    std::string reason;
    ScriptedWorld world([&](ScriptedWorld& w, int r, const Buffers&) {
      if (r == 2) throw std::runtime_error("boom");
      if (r == 0) reason = w.await_abort();
    });
    CHECK_THROWS(run_in_world(s, false, world));
    CHECK(reason == "rank 2 failed: boom");
  }
}

TEST_CASE("run_in_world: layout, poison and outputs") {
  SUBCASE("out of place: outputs start as 0xA5 and are read back as the ranks left them") {
    const Schedule s = empty_schedule(Collective::AllReduce, 2);
    ScriptedWorld world([](ScriptedWorld&, int r, const Buffers& b) {
      CHECK(b.input != b.output);
      if (r == 1) std::memset(b.output, 0x11, 4);
    });
    const RunResult result = run_in_world(s, false, world);
    REQUIRE(result.outputs.size() == 2);
    REQUIRE(result.outputs[0].size() == 16);
    for (std::byte x : result.outputs[0]) CHECK(x == std::byte{0xA5});
    CHECK(result.outputs[1][0] == std::byte{0x11});
    CHECK(result.outputs[1][4] == std::byte{0xA5});
  }
  SUBCASE("in place: allgather's input is block r of the output, reduce-scatter's output block r of the input") {
    std::atomic<int> checked{0};
    ScriptedWorld gather([&](ScriptedWorld&, int r, const Buffers& b) {
      CHECK(static_cast<std::byte*>(b.input) == static_cast<std::byte*>(b.output) + 16 * r);
      ++checked;
    });
    run_in_world(empty_schedule(Collective::AllGather, 2), true, gather);
    ScriptedWorld scatter([&](ScriptedWorld&, int r, const Buffers& b) {
      CHECK(static_cast<std::byte*>(b.output) == static_cast<std::byte*>(b.input) + 16 * r);
      ++checked;
    });
    run_in_world(empty_schedule(Collective::ReduceScatter, 2), true, scatter);
    CHECK(checked == 4);
  }
}
