// Switch ops (contract rule 11) in the runtime: the executors that cannot run them refuse the
// schedule when it is bound; the in-process transport runs them, reducing in contributor order.
#include <doctest/doctest.h>

#include <thread>
#include <vector>

#include "algorithms/registry.hpp"
#include "common/errors.hpp"
#include "runtime/executor.hpp"
#include "runtime/inproc.hpp"
#include "runtime/rounds.hpp"

using namespace topocoll::algo;
using namespace topocoll::runtime;

namespace {

Schedule nvls_schedule() {
  CollectiveArgs a = CollectiveArgs::allreduce(1000, DataType::Float32, ReduceOp::Sum, 8);
  return find_algorithm("nvls").generate(uniform_layout(1, 8, {.nvls = true}), a, Tuning{});
}

// Every rank gives its input to one group and receives the reduction (SHARP-style).
Schedule group_allreduce(int p, std::vector<int> contributors, std::uint64_t count) {
  std::vector<Program> programs(static_cast<std::size_t>(p));
  for (auto& prog : programs) {
    ProgramBuilder b(prog);
    b.switch_send(0, {BufferId::Input, 0, count}, 0);
    b.switch_recv(0, {BufferId::Output, 0, count}, 0);
  }
  Schedule s = Schedule::from_programs(
      "hand-made", CollectiveArgs::allreduce(count, DataType::Float32, ReduceOp::Sum, p), 1, 0, std::move(programs));
  std::vector<int> all;
  for (int r = 0; r < p; ++r) all.push_back(r);
  s.add_switch_group(SwitchGroup{SwitchKind::Sharp, std::move(contributors), all});
  return s;
}

// Runs `s` over an InprocFabric, rank r's input = inputs[r]; returns the outputs.
std::vector<std::vector<float>> run_threads(const Schedule& s, const std::vector<std::vector<float>>& inputs,
                                            const ExecOptions& o = {}) {
  const int p = s.num_ranks();
  InprocFabric fabric(p);
  std::vector<std::vector<float>> outputs(static_cast<std::size_t>(p), std::vector<float>(s.args().count, -7.0f));
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r)
    threads.emplace_back([&, r] {
      try {
        InprocTransport t(fabric, r);
        std::vector<float> in = inputs[static_cast<std::size_t>(r)];
        execute(s, r, Buffers{in.data(), outputs[static_cast<std::size_t>(r)].data(), nullptr}, t, o);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
        fabric.abort("a rank failed");
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const Aborted&) {
      }
    }
  return outputs;
}

}  // namespace

TEST_CASE("switch ops: the point-to-point and round executors refuse them when bound") {
  const Schedule s = nvls_schedule();
  const std::string tail = "cannot run: it needs NVSwitch multicast (NVLS) or SHARP; simulate it with `topocoll sim`";
  CHECK_THROWS_WITH_AS(Plan(s, 0),
                       ("schedule 'nvls' uses in-network reduction (switch_send on an NVLS group), which the "
                        "point-to-point executor (the MPI, UCX and device runtimes) " +
                        tail)
                           .c_str(),
                       topocoll::InputError);
  CHECK_THROWS_WITH_AS(plan_rounds(s),
                       ("schedule 'nvls' uses in-network reduction (switch_send on an NVLS group), which the round "
                        "executor (the NCCL and MPI round runtimes) " +
                        tail)
                           .c_str(),
                       topocoll::InputError);
  CHECK_THROWS_WITH_AS(RoundExecutor(s, 0, RoundPlan{}), doctest::Contains("which the round executor"),
                       topocoll::InputError);
  const Schedule sharp =
      find_algorithm("collnet").generate(uniform_layout(2, 4, {.sharp = true}),
                                         CollectiveArgs::allreduce(100, DataType::Float32, ReduceOp::Sum, 8), Tuning{});
  CHECK_THROWS_WITH_AS(Plan(sharp, 3),
                       doctest::Contains("schedule 'collnet' uses in-network reduction (switch_send "
                                         "on an SHARP group)"),
                       topocoll::InputError);
  // Without switch groups nothing changes.
  CHECK_NOTHROW(
      Plan(find_algorithm("ring").generate(
               uniform_layout(1, 8), CollectiveArgs::allreduce(100, DataType::Float32, ReduceOp::Sum, 8), Tuning{}),
           0));
}

TEST_CASE("switch ops: the in-process transport reduces in contributor order") {
  // Float addition is not associative: (1e8 + -1e8) + 1 = 1 but (1 + 1e8) + -1e8 = 0.
  const std::vector<std::vector<float>> in = {{1.0f, 2.0f}, {1e8f, 3.0f}, {-1e8f, 4.0f}};
  const auto by_order = run_threads(group_allreduce(3, {1, 2, 0}, 2), in);
  for (const auto& out : by_order) CHECK(out == std::vector<float>{1.0f, 9.0f});
  const auto by_rank = run_threads(group_allreduce(3, {0, 1, 2}, 2), in);
  for (const auto& out : by_rank) CHECK(out == std::vector<float>{0.0f, 9.0f});
}

TEST_CASE("switch ops: a receiver waiting for a part that never comes times out naming the group") {
  Schedule s = group_allreduce(2, {0, 1}, 2);
  std::vector<Program> programs(2);
  ProgramBuilder(programs[0]).switch_send(0, {BufferId::Input, 0, 2}, 0);
  ProgramBuilder(programs[0]).switch_recv(0, {BufferId::Output, 0, 2}, 0);
  ProgramBuilder(programs[1]).switch_recv(0, {BufferId::Output, 0, 2}, 0);  // never contributes
  Schedule stuck = Schedule::from_programs("stuck", s.args(), 1, 0, std::move(programs));
  stuck.add_switch_group(s.switch_groups()[0]);
  ExecOptions o;
  o.progress_timeout = std::chrono::milliseconds(200);
  CHECK_THROWS_WITH_AS(run_threads(stuck, {{1, 2}, {3, 4}}, o),
                       doctest::Contains("(switch_recv(group 0, output[0:2]) ch 0) waits for the "
                                         "contributors of switch group 0"),
                       PeerTimeout);
}
