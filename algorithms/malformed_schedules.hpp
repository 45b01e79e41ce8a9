// Malformed schedules for the tests of the contract's static half (algorithms/ir/program_index.hpp):
// the same cases go to all five executors (verifier, analytic and SimGrid engines, runtime Plan,
// round planner), and each must throw (the verifier: report) the same ScheduleError message.
// Every case is a 2-rank, 1-channel allreduce of 4 float32 per rank; rank 1's program is a
// correct exchange, rank 0's holds the bad operation as its op 1, after a valid send.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "algorithms/ir/schedule.hpp"

namespace topocoll::algo::testing {

struct MalformedCase {
  std::string name;
  Schedule schedule;
  std::string message;  // exactly what every executor reports
};

inline std::vector<MalformedCase> malformed_schedules() {
  const CollectiveArgs args = CollectiveArgs::allreduce(4, DataType::Float32, ReduceOp::Sum, 2);
  auto with_bad_op = [&](std::string name, Op bad, std::string message) {
    std::vector<Program> programs(2);
    ProgramBuilder(programs[0]).send(1, {BufferId::Input, 0, 4}, 0);
    programs[0].push_back(bad);
    ProgramBuilder(programs[0]).recv(1, {BufferId::Output, 0, 4}, 0);
    ProgramBuilder(programs[1]).send(0, {BufferId::Input, 0, 4}, 0);
    ProgramBuilder(programs[1]).recv(0, {BufferId::Output, 0, 4}, 0);
    return MalformedCase{name, Schedule::from_programs(name, args, 1, 0, std::move(programs)), std::move(message)};
  };
  Op channel{OpKind::Copy, 3, -1, {BufferId::Input, 0, 4}, {BufferId::Output, 0, 4}};
  Op peer_out{OpKind::Send, 0, 7, {BufferId::Input, 0, 4}, {}};
  Op peer_self{OpKind::Recv, 0, 0, {}, {BufferId::Output, 0, 4}};
  Op negative{OpKind::RecvReduce, 0, -1, {}, {BufferId::Output, 0, 4}};
  Op bounds{OpKind::Send, 0, 1, {BufferId::Output, 2, 4}, {}};
  Op scratch{OpKind::Copy, 0, -1, {BufferId::Input, 0, 1}, {BufferId::Scratch, 0, 1}};
  Op input{OpKind::Copy, 0, -1, {BufferId::Output, 0, 4}, {BufferId::Input, 0, 4}};
  Op sizes{OpKind::Reduce, 0, -1, {BufferId::Input, 0, 4}, {BufferId::Output, 0, 3}};
  std::vector<MalformedCase> out;
  out.push_back(with_bad_op("bad channel", channel,
                            "rank 0 channel 3 op 1 (copy(input[0:4] -> output[0:4]) ch 3): channel 3 but the schedule "
                            "has 1 channels"));
  out.push_back(
      with_bad_op("peer out of range", peer_out,
                  "rank 0 channel 0 op 1 (send(peer 7, input[0:4]) ch 0): peer 7 is not another rank of 0..1"));
  out.push_back(
      with_bad_op("peer is self", peer_self,
                  "rank 0 channel 0 op 1 (recv(peer 0, output[0:4]) ch 0): peer 0 is not another rank of 0..1"));
  out.push_back(with_bad_op("no peer", negative,
                            "rank 0 channel 0 op 1 (recv_reduce(peer -1, output[0:4]) ch 0): peer -1 is not another "
                            "rank of 0..1"));
  out.push_back(with_bad_op("chunk out of bounds", bounds,
                            "rank 0 channel 0 op 1 (send(peer 1, output[2:6]) ch 0): output[2:6] is outside the output "
                            "buffer of 4 elements"));
  out.push_back(with_bad_op("scratch out of bounds", scratch,
                            "rank 0 channel 0 op 1 (copy(input[0:1] -> scratch[0:1]) ch 0): scratch[0:1] is outside "
                            "the scratch buffer of 0 elements"));
  out.push_back(with_bad_op("write to the input", input,
                            "rank 0 channel 0 op 1 (copy(output[0:4] -> input[0:4]) ch 0): the input buffer is "
                            "read-only"));
  out.push_back(with_bad_op("local op of mismatched counts", sizes,
                            "rank 0 channel 0 op 1 (reduce(input[0:4] -> output[0:3]) ch 0): 4 elements into 3"));
  return out;
}

// The static faults of switch ops (contract rule 11), for the executors that run them (the
// verifier, the simulator engines). Same shape as above; the schedule declares three NVLS groups:
// 0 = {contributors 0 1, receivers 0 1}, 1 = {contributors 1, receivers 0 1},
// 2 = {contributors 0 1, receivers 1}; rank 0's op 1 is the bad one.
inline std::vector<MalformedCase> malformed_switch_schedules() {
  const CollectiveArgs args = CollectiveArgs::allreduce(4, DataType::Float32, ReduceOp::Sum, 2);
  auto with_bad_op = [&](std::string name, Op bad, std::string message) {
    std::vector<Program> programs(2);
    ProgramBuilder(programs[0]).switch_send(0, {BufferId::Input, 0, 4}, 0);
    programs[0].push_back(bad);
    ProgramBuilder(programs[0]).switch_recv(0, {BufferId::Output, 0, 4}, 0);
    ProgramBuilder(programs[1]).switch_send(0, {BufferId::Input, 0, 4}, 0);
    ProgramBuilder(programs[1]).switch_recv(0, {BufferId::Output, 0, 4}, 0);
    Schedule s = Schedule::from_programs(name, args, 1, 0, std::move(programs));
    s.add_switch_group(SwitchGroup{SwitchKind::Nvls, {0, 1}, {0, 1}});
    s.add_switch_group(SwitchGroup{SwitchKind::Nvls, {1}, {0, 1}});
    s.add_switch_group(SwitchGroup{SwitchKind::Nvls, {0, 1}, {1}});
    return MalformedCase{name, std::move(s), std::move(message)};
  };
  std::vector<MalformedCase> out;
  out.push_back(with_bad_op("switch group out of range", Op{OpKind::SwitchSend, 0, 5, {BufferId::Input, 0, 4}, {}},
                            "rank 0 channel 0 op 1 (switch_send(group 5, input[0:4]) ch 0): switch group 5 is not a "
                            "group of 0..2"));
  out.push_back(with_bad_op("switch send by a non-contributor",
                            Op{OpKind::SwitchSend, 0, 1, {BufferId::Input, 0, 4}, {}},
                            "rank 0 channel 0 op 1 (switch_send(group 1, input[0:4]) ch 0): rank 0 is not a "
                            "contributor of switch group 1 (nvls)"));
  out.push_back(with_bad_op("switch receive by a non-receiver",
                            Op{OpKind::SwitchRecv, 0, 2, {}, {BufferId::Output, 0, 4}},
                            "rank 0 channel 0 op 1 (switch_recv(group 2, output[0:4]) ch 0): rank 0 is not a receiver "
                            "of switch group 2 (nvls)"));
  out.push_back(with_bad_op("switch send out of bounds", Op{OpKind::SwitchSend, 0, 0, {BufferId::Input, 2, 4}, {}},
                            "rank 0 channel 0 op 1 (switch_send(group 0, input[2:6]) ch 0): input[2:6] is outside the "
                            "input buffer of 4 elements"));
  out.push_back(with_bad_op("switch receive into the input", Op{OpKind::SwitchRecv, 0, 0, {}, {BufferId::Input, 0, 4}},
                            "rank 0 channel 0 op 1 (switch_recv(group 0, input[0:4]) ch 0): the input buffer is "
                            "read-only"));
  return out;
}

}  // namespace topocoll::algo::testing
