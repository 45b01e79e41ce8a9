#include "algorithms/ir/program_index.hpp"

#include <doctest/doctest.h>

#include "algorithms/ir/layout.hpp"
#include "algorithms/malformed_schedules.hpp"
#include "algorithms/registry.hpp"
#include "algorithms/verifier.hpp"

using namespace topocoll::algo;
using topocoll::ScheduleError;

namespace {

Schedule ring_of(int ranks, int channels) {
  Tuning t;
  t.channels = channels;
  t.slice_bytes = 64;
  return find_algorithm("ring").generate(uniform_layout(1, ranks),
                                         CollectiveArgs::allreduce(1000, DataType::Float32, ReduceOp::Sum, ranks), t);
}

}  // namespace

TEST_CASE("program index: operations per channel, in program order, each once") {
  const Schedule s = ring_of(4, 3);
  for (int r = 0; r < 4; ++r) {
    const ProgramIndex index(s, r);
    CHECK(index.rank() == r);
    CHECK(index.num_channels() == 3);
    CHECK(index.program() == s.program(r));
    std::vector<int> seen(index.size(), 0);
    for (int c = 0; c < 3; ++c) {
      std::uint32_t last = 0;
      bool first = true;
      for (const std::uint32_t i : index.channel(c)) {
        CHECK(index.op(i).channel == c);
        CHECK((first || i > last));
        first = false;
        last = i;
        ++seen[i];
      }
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  }
}

TEST_CASE("program index: a malformed operation is a ScheduleError naming rank, channel and op") {
  for (const testing::MalformedCase& c : testing::malformed_schedules()) {
    INFO(c.name);
    CHECK_NOTHROW(ProgramIndex(c.schedule, 1));
    CHECK_THROWS_WITH_AS(ProgramIndex(c.schedule, 0), c.message.c_str(), ScheduleError);
    try {
      ProgramIndex(c.schedule, 0);
    } catch (const ProgramError& e) {
      CHECK(e.rank() == 0);
      CHECK(e.op_index() == 1);
      CHECK(e.channel() == c.schedule.program(0)[1].channel);
    }
  }
}

TEST_CASE("program index: the verifier reports the same message for every malformed schedule") {
  for (const testing::MalformedCase& c : testing::malformed_schedules()) {
    INFO(c.name);
    const VerifyResult v = verify(c.schedule);
    CHECK_FALSE(v.ok());
    CHECK(v.message == c.message);
  }
  const auto cases = testing::malformed_schedules();
  CHECK(verify(cases[0].schedule).failure == Failure::BadChannel);
  CHECK(verify(cases[1].schedule).failure == Failure::BadPeer);
  CHECK(verify(cases[4].schedule).failure == Failure::OutOfBounds);
  CHECK(verify(cases[6].schedule).failure == Failure::WritesInput);
  CHECK(verify(cases[7].schedule).failure == Failure::SizeMismatch);
}

TEST_CASE("program index: switch ops name their group, membership and chunks") {
  for (const testing::MalformedCase& c : testing::malformed_switch_schedules()) {
    INFO(c.name);
    CHECK_NOTHROW(ProgramIndex(c.schedule, 1));
    CHECK_THROWS_WITH_AS(ProgramIndex(c.schedule, 0), c.message.c_str(), ScheduleError);
    CHECK(verify(c.schedule).message == c.message);
  }
  const auto cases = testing::malformed_switch_schedules();
  for (std::size_t i : {0, 1, 2}) CHECK(verify(cases[i].schedule).failure == Failure::BadGroup);
  CHECK(verify(cases[3].schedule).failure == Failure::OutOfBounds);
  CHECK(verify(cases[4].schedule).failure == Failure::WritesInput);
  // A switch op in a schedule that declares no groups.
  std::vector<Program> p(1);
  ProgramBuilder(p[0]).switch_send(0, {BufferId::Input, 0, 4}, 0);
  const Schedule none = Schedule::from_programs(
      "no groups", CollectiveArgs::allreduce(4, DataType::Float32, ReduceOp::Sum, 1), 1, 0, std::move(p));
  CHECK_THROWS_WITH_AS(ProgramIndex(none, 0),
                       "rank 0 channel 0 op 0 (switch_send(group 0, input[0:4]) ch 0): switch group 0 but the "
                       "schedule declares no switch groups",
                       ScheduleError);
}

TEST_CASE("connections: dense ids in the order first seen") {
  Connections c(4, 2);
  CHECK(c.id(0, 1, 0) == 0);
  CHECK(c.id(1, 0, 0) == 1);
  CHECK(c.id(0, 1, 1) == 2);
  CHECK(c.id(0, 1, 0) == 0);
  Op send{OpKind::Send, 1, 3, {BufferId::Input, 0, 1}, {}};
  Op recv{OpKind::Recv, 1, 3, {}, {BufferId::Output, 0, 1}};
  CHECK(c.id_of(2, send) == 3);  // (2, 3, 1)
  CHECK(c.id_of(2, recv) == 4);  // (3, 2, 1)
  c.forget_lookup();
  CHECK(c.size() == 5);
  CHECK(c.key(4).src == 3);
  CHECK(c.key(4).dst == 2);
  CHECK(c.key(4).channel == 1);
}

TEST_CASE("match_fifo: every transfer of a ring meets its other end") {
  const Schedule s = ring_of(5, 2);
  std::vector<ProgramIndex> index;
  for (int r = 0; r < 5; ++r) index.emplace_back(s, r);
  const auto partner = match_fifo(index, 2);
  for (int r = 0; r < 5; ++r)
    for (std::uint32_t i = 0; i < index[static_cast<std::size_t>(r)].size(); ++i) {
      const Op& op = index[static_cast<std::size_t>(r)].op(i);
      if (!is_transfer(op.kind)) continue;
      const OpRef o = partner[static_cast<std::size_t>(r)][i];
      REQUIRE(o.rank == op.peer);
      const Op& other = index[static_cast<std::size_t>(o.rank)].op(o.op);
      CHECK(other.peer == r);
      CHECK(other.channel == op.channel);
      CHECK(other.count() == op.count());
      CHECK((op.kind == OpKind::Send) != (other.kind == OpKind::Send));
      CHECK(partner[static_cast<std::size_t>(o.rank)][o.op].rank == r);
      CHECK(partner[static_cast<std::size_t>(o.rank)][o.op].op == i);
    }
}

TEST_CASE("match_fifo: unmatched transfers and different sizes are ScheduleErrors") {
  const CollectiveArgs a = CollectiveArgs::allreduce(4, DataType::Int32, ReduceOp::Sum, 2);
  auto index_of = [&](std::vector<Program> programs) {
    const Schedule s = Schedule::from_programs("hand-made", a, 1, 0, std::move(programs));
    std::vector<ProgramIndex> index;
    for (int r = 0; r < 2; ++r) index.emplace_back(s, r);
    return index;
  };
  std::vector<Program> lonely(2);
  ProgramBuilder(lonely[0]).send(1, {BufferId::Input, 0, 4}, 0);
  CHECK_THROWS_WITH_AS(match_fifo(index_of(lonely), 1),
                       "rank 0 op 0 (send(peer 1, input[0:4]) ch 0) has no matching receive on rank 1", ScheduleError);
  std::vector<Program> waiting(2);
  ProgramBuilder(waiting[1]).recv(0, {BufferId::Output, 0, 4}, 0);
  CHECK_THROWS_WITH_AS(match_fifo(index_of(waiting), 1),
                       "rank 1 op 0 (recv(peer 0, output[0:4]) ch 0) has no matching send", ScheduleError);
  std::vector<Program> sizes(2);
  ProgramBuilder(sizes[0]).send(1, {BufferId::Input, 0, 4}, 0);
  ProgramBuilder(sizes[1]).recv(0, {BufferId::Output, 0, 3}, 0);
  CHECK_THROWS_WITH_AS(
      match_fifo(index_of(sizes), 1),
      "rank 0 op 0 (send(peer 1, input[0:4]) ch 0) sends 4 elements, rank 1 op 0 (recv(peer 0, output[0:3]) ch 0) "
      "receives 3",
      ScheduleError);
}

TEST_CASE("in_place_storage: NCCL's aliasing") {
  CollectiveArgs a = CollectiveArgs::allreduce(10, DataType::Float32, ReduceOp::Sum, 4);
  const Chunk in{BufferId::Input, 2, 3}, out{BufferId::Output, 2, 3}, scratch{BufferId::Scratch, 2, 3};
  CHECK(in_place_storage(a, 3, in).buffer == BufferId::Output);
  CHECK(in_place_storage(a, 3, in).offset == 2);
  CHECK(in_place_storage(a, 3, scratch).buffer == BufferId::Scratch);
  a.collective = Collective::ReduceScatter;  // output == input + rank * count
  CHECK(in_place_storage(a, 3, out).buffer == BufferId::Input);
  CHECK(in_place_storage(a, 3, out).offset == 32);
  CHECK(in_place_storage(a, 3, in).offset == 2);
  a.collective = Collective::AllGather;  // input == output + rank * count
  CHECK(in_place_storage(a, 3, in).buffer == BufferId::Output);
  CHECK(in_place_storage(a, 3, in).offset == 32);
  CHECK(in_place_storage(a, 3, out).offset == 2);
}
