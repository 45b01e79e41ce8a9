// push_targets (runtime/push_plan.hpp): which sends may be written straight into the receiver's
// buffer, where, and behind which op of the receiver's channel; and runs that push, bit for bit.
#include "runtime/push_plan.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <vector>

#include "algorithms/ir/layout.hpp"
#include "algorithms/registry.hpp"
#include "runtime/testing/run_inproc.hpp"

using namespace topocoll::algo;
using namespace topocoll::runtime;

namespace {

CollectiveArgs allreduce(std::uint64_t count, int ranks) {
  CollectiveArgs a;
  a.collective = Collective::AllReduce;
  a.count = count;
  a.ranks = ranks;
  a.dtype = DataType::Float32;
  return a;
}

// The 2-rank ring on one channel, 8 floats, by hand: rank r owns [4r, 4r + 4).
//   send(q, in[q's]) | recv_reduce_copy(q, in[r's] -> out[r's]) | send(q, out[r's]) | recv(q, out[q's])
// `extra(r, builder)` adds ops of rank r just before its final receive.
template <typename Extra>
Schedule hand_ring(int channels, Extra extra) {
  std::vector<Program> programs(2);
  for (int r = 0; r < 2; ++r) {
    ProgramBuilder b(programs[static_cast<std::size_t>(r)]);
    const int q = 1 - r;
    const Chunk mine_in{BufferId::Input, 4u * r, 4}, theirs_in{BufferId::Input, 4u * q, 4};
    const Chunk mine_out{BufferId::Output, 4u * r, 4}, theirs_out{BufferId::Output, 4u * q, 4};
    b.send(q, theirs_in, 0);
    b.recv_reduce_copy(q, mine_in, mine_out, 0);
    b.send(q, mine_out, 0);
    extra(r, b);
    b.recv(q, theirs_out, 0);
  }
  return Schedule::from_programs("hand-ring", allreduce(8, 2), channels, 4, std::move(programs));
}

std::vector<std::size_t> ok_ops(const std::vector<PushTarget>& t) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < t.size(); ++i)
    if (t[i].ok) out.push_back(i);
  return out;
}

}  // namespace

TEST_CASE("push targets: the 2-rank ring pushes its reduced part into the peer's output") {
  const Schedule s = hand_ring(1, [](int, ProgramBuilder&) {});
  for (bool in_place : {false, true}) {
    INFO("in place: " << in_place);
    const std::vector<PushTarget> t = push_targets(s, 0, in_place);
    REQUIRE(t.size() == 4);
    // Only op 2, send(1, out[0:4]), fused into op 1 (the reduce that computes it); it lands in
    // rank 1's output at element 0, and nothing of rank 1 touches that region before its receive
    // but its own send of in[0:4] to rank 0 (in place the same memory), which rank 0 reads in the
    // fused receive itself.
    CHECK(ok_ops(t) == std::vector<std::size_t>{2});
    CHECK(t[2].fuse == 1);
    CHECK(t[2].buffer == static_cast<std::uint8_t>(BufferId::Output));
    CHECK(t[2].offset == 0);
    CHECK(t[2].gate == 0);
    CHECK(push_targets(s, 1, in_place)[2].offset == 16);  // rank 1 pushes into rank 0's out[4:8]
  }
}

TEST_CASE("push targets: the receiver's earlier writes gate the push; touches on another channel forbid it") {
  SUBCASE("a copy into the destination before the receive: gate after it") {
    const Schedule s = hand_ring(1, [](int r, ProgramBuilder& b) {
      if (r == 1) b.copy({BufferId::Input, 0, 4}, {BufferId::Output, 0, 4}, 0);  // writes R, op 3 of rank 1
    });
    const std::vector<PushTarget> t = push_targets(s, 0, false);
    REQUIRE(t[2].ok);
    CHECK(t[2].gate == 4);                          // rank 1's channel must have completed ops 0..3
    CHECK(push_targets(s, 1, false)[2].gate == 0);  // rank 0 adds nothing before its receive
    // Run for real, pushing where the gate allows: bit for bit every time. (Without the gate, a
    // push that lands before rank 1's copy is overwritten by it: about one run in five here.)
    std::size_t wrong = 0;
    for (int i = 0; i < 100; ++i) {
      std::uint64_t pushed = 0;
      wrong += count_wrong_outputs(s, run_inproc_push(s, false, pushed));
    }
    CHECK(wrong == 0);
  }
  SUBCASE("a read of the destination on another channel: no push") {
    const Schedule s = hand_ring(2, [](int r, ProgramBuilder& b) {
      if (r == 1) b.copy({BufferId::Output, 0, 4}, {BufferId::Scratch, 0, 4}, 1);
    });
    CHECK(ok_ops(push_targets(s, 0, false)).empty());
    CHECK(ok_ops(push_targets(s, 1, false)) == std::vector<std::size_t>{2});
  }
  SUBCASE("the receiver sends the destination to a third party first: no push") {
    // In place, rank 1's output[0:4] is its input[0:4]; a send of it anywhere but to the pusher
    // (who has read it by then) may still be read by its receiver.
    std::vector<Program> programs(3);
    for (int r = 0; r < 2; ++r) {
      ProgramBuilder b(programs[static_cast<std::size_t>(r)]);
      const int q = 1 - r;
      b.send(q, {BufferId::Input, 4u * q, 4}, 0);
      if (r == 1) b.send(2, {BufferId::Input, 0, 4}, 0);
      b.recv_reduce_copy(q, {BufferId::Input, 4u * r, 4}, {BufferId::Output, 4u * r, 4}, 0);
      b.send(q, {BufferId::Output, 4u * r, 4}, 0);
      b.recv(q, {BufferId::Output, 4u * q, 4}, 0);
    }
    ProgramBuilder(programs[2]).recv(1, {BufferId::Scratch, 0, 4}, 0);
    const Schedule s = Schedule::from_programs("third-party", allreduce(8, 3), 1, 4, std::move(programs));
    CHECK(ok_ops(push_targets(s, 0, true)).empty());
    CHECK(ok_ops(push_targets(s, 0, false)) == std::vector<std::size_t>{2});  // out of place: other memory
  }
}

TEST_CASE("push: registered allreduce algorithms push and stay bit-exact over the in-process fabric") {
  // The ring pushes its last reduce-scatter step out of place at every p, and in place at p = 2.
  for (int p : {2, 3, 4, 8}) {
    for (bool in_place : {false, true}) {
      Tuning t;
      t.channels = 2;
      t.slice_bytes = 256;
      const Schedule s = find_algorithm("ring").generate(uniform_layout(1, p), allreduce(4099, p), t);
      std::uint64_t pushed = 0;
      INFO(fmt::format("ring p={} in_place={}", p, in_place));
      CHECK(count_wrong_outputs(s, run_inproc_push(s, in_place, pushed)) == 0);
      // Every rank's last reduce-scatter step: 2 channels x the slices of one part, per rank.
      if (!in_place || p == 2)
        CHECK(pushed > 0);
      else
        CHECK(pushed == 0);
    }
  }
}
