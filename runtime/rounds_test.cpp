// Round plans (runtime/rounds.hpp) for every registered algorithm, run in lockstep on host memory
// with NCCL's matching rules (per pair of ranks, in issue order, all of a round's transfers at
// once): bit-exact results prove that the rounds keep every data dependency and that both ends of
// every transfer issue it in the same round and order; a transfer left unmatched in its round
// fails the run.
#include "runtime/rounds.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstring>
#include <deque>
#include <map>
#include <stdexcept>
#include <vector>

#include "algorithms/ir/layout.hpp"
#include "algorithms/malformed_schedules.hpp"
#include "algorithms/registry.hpp"
#include "algorithms/testing.hpp"
#include "common/errors.hpp"
#include "runtime/test_data.hpp"
#include "runtime/testing/run_inproc.hpp"

using namespace topocoll::algo;
using namespace topocoll::runtime;

namespace {

// Records a rank's transfers of the current round; the driver runs them as one group.
class LockstepTransport final : public RoundTransport {
 public:
  struct Transfer {
    int peer;
    std::byte* data;
    std::size_t bytes;
  };
  void send(int peer, const void* src, std::size_t bytes) override {
    sends.push_back({peer, const_cast<std::byte*>(static_cast<const std::byte*>(src)), bytes});
  }
  void recv(int peer, void* dst, std::size_t bytes) override {
    recvs.push_back({peer, static_cast<std::byte*>(dst), bytes});
  }
  void end_round() override {}
  std::vector<Transfer> sends, recvs;
};

// Every rank's round k as one group: every send's bytes (read now, as the group runs) into a FIFO
// per (source, destination); then every receive takes the front of its FIFO, which must hold a
// message of its size; nothing may be left over.
void run_group(int k, std::vector<LockstepTransport>& ts) {
  std::map<std::pair<int, int>, std::deque<std::vector<std::byte>>> fifo;
  for (std::size_t r = 0; r < ts.size(); ++r)
    for (const auto& s : ts[r].sends) fifo[{static_cast<int>(r), s.peer}].emplace_back(s.data, s.data + s.bytes);
  for (std::size_t r = 0; r < ts.size(); ++r)
    for (const auto& v : ts[r].recvs) {
      auto& q = fifo[{v.peer, static_cast<int>(r)}];
      if (q.empty())
        throw std::runtime_error(
            fmt::format("round {}: rank {} receives from {}, which sent nothing more", k, r, v.peer));
      if (q.front().size() != v.bytes)
        throw std::runtime_error(fmt::format("round {}: rank {} receives {} bytes from {}, the message has {}", k, r,
                                             v.bytes, v.peer, q.front().size()));
      std::memcpy(v.data, q.front().data(), v.bytes);
      q.pop_front();
    }
  for (const auto& [pair, q] : fifo)
    if (!q.empty())
      throw std::runtime_error(
          fmt::format("round {}: {} message(s) from {} to {} not received", k, q.size(), pair.first, pair.second));
  for (auto& t : ts) t.sends.clear(), t.recvs.clear();
}

// Inputs as run_inproc fills them. In place, one buffer per rank holds input and output, aliased
// as NCCL's in-place calls do (the output block r of the input for reduce_scatter, the input block
// r of the output for allgather, one buffer otherwise).
RunResult run_lockstep(const Schedule& s, bool in_place = false) {
  const CollectiveArgs& a = s.args();
  const int p = s.num_ranks();
  const std::size_t elem = size_of(a.dtype);
  std::vector<RoundPlan> plans = plan_rounds(s);
  std::vector<std::vector<std::byte>> mem(static_cast<std::size_t>(p)), scratch(static_cast<std::size_t>(p));
  std::vector<Buffers> buffers(static_cast<std::size_t>(p));
  std::vector<RoundExecutor> ex;
  std::vector<LockstepTransport> ts(static_cast<std::size_t>(p));
  const std::size_t in_n = a.input_count(), out_n = a.output_count();
  for (int r = 0; r < p; ++r) {
    const std::size_t block = static_cast<std::size_t>(r) * a.count * elem;
    const std::uint64_t first = a.collective == Collective::AllGather ? static_cast<std::uint64_t>(r) * a.count : 0;
    auto& m = mem[static_cast<std::size_t>(r)];
    Buffers& b = buffers[static_cast<std::size_t>(r)];
    scratch[static_cast<std::size_t>(r)].resize(s.scratch_count() * elem);
    b.scratch = scratch[static_cast<std::size_t>(r)].data();
    if (!in_place) {  // input, then the output (poisoned)
      m.assign((in_n + out_n) * elem, std::byte{0xA5});
      fill_input(a.dtype, a.op, r, p, first, m.data(), in_n);
      b.input = m.data();
      b.output = m.data() + in_n * elem;
    } else if (a.collective == Collective::ReduceScatter) {
      m.resize(in_n * elem);
      fill_input(a.dtype, a.op, r, p, first, m.data(), in_n);
      b.input = m.data();
      b.output = m.data() + block;
    } else if (a.collective == Collective::AllGather) {
      m.assign(out_n * elem, std::byte{0xA5});
      fill_input(a.dtype, a.op, r, p, first, m.data() + block, in_n);
      b.output = m.data();
      b.input = m.data() + block;
    } else {
      m.assign(std::max(in_n, out_n) * elem, std::byte{0xA5});
      fill_input(a.dtype, a.op, r, p, first, m.data(), in_n);
      b.input = b.output = m.data();
    }
    ex.emplace_back(s, r, plans[static_cast<std::size_t>(r)]);
  }
  for (int r = 0; r < p; ++r) ex[static_cast<std::size_t>(r)].begin(buffers[static_cast<std::size_t>(r)]);
  const int rounds = plans.front().rounds;
  for (int k = 0; k < rounds; ++k) {
    for (int r = 0; r < p; ++r) ex[static_cast<std::size_t>(r)].issue(k, ts[static_cast<std::size_t>(r)]);
    run_group(k, ts);
    for (int r = 0; r < p; ++r) ex[static_cast<std::size_t>(r)].finish(k, ts[static_cast<std::size_t>(r)]);
  }
  for (auto& e : ex) e.end();
  RunResult result;
  for (const Buffers& b : buffers) {
    const auto* out = static_cast<const std::byte*>(b.output);
    result.outputs.emplace_back(out, out + out_n * elem);
  }
  return result;
}

}  // namespace

TEST_CASE("rounds: every registered schedule runs in lockstep rounds, bit-exact, in place and out of place") {
  std::size_t runs = 0;
  for (const Algorithm& alg : registry())
    for (int p : {2, 3, 4, 5, 7, 8})
      for (std::uint64_t n : {std::uint64_t{1}, static_cast<std::uint64_t>(p + 1), std::uint64_t{1009}})
        for (int channels : {1, 3})
          for (bool in_place : {false, true}) {
            const Layout layout = p % 2 == 0 && p > 2 ? uniform_layout(2, p / 2) : uniform_layout(1, p);
            CollectiveArgs a = CollectiveArgs::allreduce(n, DataType::Float32, ReduceOp::Sum, p);
            a.collective = alg.collective;
            a.root = p / 2;
            if (a.collective == Collective::AllToAllV)  // in place: a symmetric matrix (MPI_IN_PLACE's rule)
              a.sizes = topocoll::algo::testing::skewed_alltoallv_sizes(p, n, in_place);
            Tuning t;
            t.channels = channels;
            t.slice_bytes = 64;  // many slices: the send-ahead window is in play
            if (!alg.supports(layout, a, t).ok) continue;
            const Schedule s = alg.generate(layout, a, t);
            INFO(fmt::format("{} p={} count={} channels={} in_place={}", alg.name, p, n, channels, in_place));
            CHECK(count_wrong_outputs(s, run_lockstep(s, in_place)) == 0);
            ++runs;
          }
  MESSAGE(fmt::format("{} runs in rounds (every schedule out of place and in place)", runs));
  CHECK(runs > 600);
}

TEST_CASE("rounds: the plan is the least one (a ring of p ranks with one slice takes 2(p-1) rounds)") {
  for (int p : {2, 3, 8}) {
    Tuning t;
    t.channels = 1;
    t.slice_bytes = std::uint64_t{1} << 30;
    const Schedule s = find_algorithm("ring").generate(
        uniform_layout(1, p), CollectiveArgs::allreduce(64 * p, DataType::Float32, ReduceOp::Sum, p), t);
    CHECK(plan_rounds(s).front().rounds == 2 * (p - 1));
  }
}

TEST_CASE("rounds: input and output overlap where they share memory in place, and only there") {
  // Rank 0 receives into output[0:4], then sends input[0:4]. Out of place they are two buffers;
  // in place (allreduce: one buffer) the send reads what the receive wrote, so it goes a round
  // later, and a plan must hold for both placements: 2 rounds.
  auto plan = [](Collective c, std::uint64_t count, Chunk recv_dst, Chunk send_src) {
    std::vector<Program> programs(2);
    ProgramBuilder(programs[0]).recv(1, recv_dst, 0);
    ProgramBuilder(programs[0]).send(1, send_src, 0);
    ProgramBuilder(programs[1]).send(0, {BufferId::Input, 0, 4}, 0);
    ProgramBuilder(programs[1]).recv(0, {BufferId::Output, 0, 4}, 0);
    CollectiveArgs a = CollectiveArgs::allreduce(count, DataType::Int32, ReduceOp::Sum, 2);
    a.collective = c;
    return plan_rounds(Schedule::from_programs("hand-made", a, 1, 0, std::move(programs))).front().rounds;
  };
  CHECK(plan(Collective::AllReduce, 4, {BufferId::Output, 0, 4}, {BufferId::Input, 0, 4}) == 2);
  CHECK(plan(Collective::AllReduce, 8, {BufferId::Output, 0, 4}, {BufferId::Input, 4, 4}) == 1);  // disjoint
  // reduce_scatter: rank 0's output is input[0:4] in place; input[4:8] is apart from it.
  CHECK(plan(Collective::ReduceScatter, 4, {BufferId::Output, 0, 4}, {BufferId::Input, 4, 4}) == 1);
  CHECK(plan(Collective::ReduceScatter, 4, {BufferId::Output, 0, 4}, {BufferId::Input, 2, 4}) == 2);
}

TEST_CASE("rounds: avg is divided once, at the end") {
  Tuning t;
  t.slice_bytes = 64;
  const Schedule s =
      find_algorithm("recursive-doubling")
          .generate(uniform_layout(1, 5), CollectiveArgs::allreduce(999, DataType::Float32, ReduceOp::Avg, 5), t);
  CHECK(count_wrong_outputs(s, run_lockstep(s)) == 0);
}

TEST_CASE("rounds: programs that do not match are a ScheduleError naming the op") {
  std::vector<Program> programs(2);
  ProgramBuilder(programs[0]).send(1, {BufferId::Input, 0, 4}, 0);
  const Schedule s = Schedule::from_programs(
      "lonely-send", CollectiveArgs::allreduce(4, DataType::Int32, ReduceOp::Sum, 2), 1, 0, std::move(programs));
  CHECK_THROWS_WITH_AS(
      plan_rounds(s),
      doctest::Contains("rank 0 op 0 (send(peer 1, input[0:4]) ch 0) has no matching receive on rank 1"),
      topocoll::ScheduleError);
  std::vector<Program> sizes(2);
  ProgramBuilder(sizes[0]).send(1, {BufferId::Input, 0, 4}, 0);
  ProgramBuilder(sizes[1]).recv(0, {BufferId::Output, 0, 3}, 0);
  const Schedule t = Schedule::from_programs("sizes", CollectiveArgs::allreduce(4, DataType::Int32, ReduceOp::Sum, 2),
                                             1, 0, std::move(sizes));
  CHECK_THROWS_WITH_AS(plan_rounds(t), doctest::Contains("sends 4 elements"), topocoll::ScheduleError);
}

TEST_CASE("runtime: a malformed schedule is the ScheduleError every executor gives (Plan, round plan, rounds)") {
  for (const testing::MalformedCase& c : testing::malformed_schedules()) {
    INFO(c.name);
    CHECK_THROWS_WITH_AS(Plan(c.schedule, 0), c.message.c_str(), topocoll::ScheduleError);
    CHECK_NOTHROW(Plan(c.schedule, 1));
    CHECK_THROWS_WITH_AS(plan_rounds(c.schedule), c.message.c_str(), topocoll::ScheduleError);
    CHECK_THROWS_WITH_AS(RoundExecutor(c.schedule, 0, RoundPlan{}), c.message.c_str(), topocoll::ScheduleError);
  }
}
