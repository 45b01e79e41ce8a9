// Every group allreduce stage on its own: a group of n ranks in a scrambled order runs the stage
// on every channel it asks for, and the verifier proves the allreduce; with one slice and a count
// divisible by n and the channels, the stage's cost is the bytes and steps the verifier counts.
#include "algorithms/group.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <numeric>

#include "algorithms/patterns/ring.hpp"
#include "algorithms/registry.hpp"
#include "algorithms/verifier.hpp"

using namespace topocoll::algo;

namespace {

// Ranks 0..n-1 in a scrambled group order (a stride coprime to n), so positions are not ranks.
std::vector<int> scrambled(int n) {
  int stride = n > 2 ? n / 2 + 1 : 1;
  while (std::gcd(stride, n) != 1) ++stride;
  std::vector<int> group;
  for (int i = 0; i < n; ++i) group.push_back(static_cast<int>((static_cast<long>(i) * stride) % n));
  return group;
}

Schedule group_schedule(const GroupAllreduce& stage, int n, std::uint64_t count, const Tuning& t) {
  const CollectiveArgs a = CollectiveArgs::allreduce(count, DataType::Float32, ReduceOp::Sum, n);
  const int K = stage.channels(a, t);
  const std::vector<int> group = scrambled(n);
  const std::vector<int> pos = positions(group, n);
  return Schedule(stage.name, a, K, 0, [&stage, group, pos, a, t, K](int rank, Program& out) {
    ProgramBuilder b(out);
    for (int c = 0; c < K; ++c) {
      const Range mine = channel_range(a.count, K, c);
      b.copy(Chunk{BufferId::Input, mine.offset, mine.count}, Chunk{BufferId::Output, mine.offset, mine.count}, c);
      stage.emit(b, group, pos[static_cast<std::size_t>(rank)], Chunk{BufferId::Output, mine.offset, mine.count}, c, a,
                 t);
    }
  });
}

}  // namespace

TEST_CASE("group allreduce: every stage is proven on groups of 1..17 ranks in any order") {
  for (const GroupAllreduce* stage : group_allreduces()) {
    for (int n = 1; n <= 17; ++n)
      for (std::uint64_t count : {std::uint64_t{0}, std::uint64_t{1}, static_cast<std::uint64_t>(n) + 1,
                                  std::uint64_t{1009}, std::uint64_t{5000}})
        for (int channels : {1, 3}) {
          Tuning t;
          t.channels = channels;
          t.slice_bytes = 16;
          const VerifyResult r = verify(group_schedule(*stage, n, count, t));
          INFO(fmt::format("{} n={} count={} channels={}", stage->name, n, count, channels));
          CHECK_MESSAGE(r.ok(), r.message);
        }
  }
}

TEST_CASE("group allreduce: cost is the bytes and steps the verifier counts") {
  for (const GroupAllreduce* stage : group_allreduces()) {
    for (int n : {1, 2, 3, 4, 5, 7, 8, 12, 16, 17})
      for (int channels : {1, 2, 4}) {
        Tuning t;
        t.channels = channels;
        t.slice_bytes = std::uint64_t{1} << 40;  // one slice
        const std::uint64_t count = static_cast<std::uint64_t>(n) * 8 * 3 * 1024;
        const Schedule s = group_schedule(*stage, n, count, t);
        const VerifyResult r = verify(s);
        REQUIRE_MESSAGE(r.ok(), r.message);
        const GroupCost c = stage->cost(n, static_cast<double>(count * 4), t);
        INFO(fmt::format("{} n={} channels={} (ran {})", stage->name, n, channels, s.num_channels()));
        CHECK(static_cast<std::uint64_t>(std::llround(c.bytes)) == r.max_bytes_sent);
        CHECK(c.steps == r.steps);
      }
  }
}

TEST_CASE("group allreduce: every stage has its hierarchical allreduce in the registry") {
  for (const GroupAllreduce* stage : group_allreduces()) {
    CAPTURE(stage->name);
    CHECK_FALSE(stage->name.empty());
    CHECK_FALSE(stage->phrase.empty());
    const std::string name = stage->name == "ring" ? "hierarchical" : "hierarchical-" + stage->name;
    const Algorithm& alg = find_algorithm(name);
    CHECK(alg.collective == Collective::AllReduce);
    CHECK(alg.description.find(stage->phrase + " allreduce across nodes") != std::string::npos);
  }
}
