// Rounds: a schedule cut into steps for transports whose sends complete only together with the
// matching receive, and only inside a group (NCCL: ncclSend waits on the GPU until the peer's
// ncclRecv runs; the operations of one ncclGroupStart/End progress together). The executor's
// send-ahead window (runtime/executor.hpp) assumes a send completes without the peer; under NCCL
// it would deadlock a ring. A round plan instead gives every operation of every rank a round:
//
//   round k on every rank:  group { its sends and receives of round k }   (all matched inside
//                           round k: a send and its receive always share a round)
//                           then, in program order, the reductions of its receive-reduces (and
//                           the copies of staged receives) of round k, then its local ops of
//                           "after round k"
//
// so each round's groups form a closed set of matched operations across the ranks and the job
// cannot deadlock, whatever the schedule's send-ahead window. Rounds follow the data, not program
// order (a window's sends may share a round with the receives they ran ahead of): on one rank
// and channel, a send that reads what an earlier receive or local op wrote goes one round later;
// a receive that writes what an earlier transfer touches goes in the same round or later (then it
// lands in staging); a receive after a local op touching its memory goes one round later; a local
// op runs after the rounds of the transfers it depends on (-1: before round 0). Input and output
// count as one buffer, so a plan holds in place and out of place. The plan is the least such
// assignment, found by raising each matched pair to the larger of its two sides until nothing
// changes (the matching of algorithms/ir/schedule.hpp: FIFO per source, destination, channel). A
// ring with one slice per chunk takes 2(p-1) rounds; with several slices a step's slices share a
// round (they move at once, inside one group).
//
// RoundExecutor runs one rank's plan over a RoundTransport on a MemorySpace. Inside a round a
// plain receive whose destination a send or receive of the same round may also touch (decided
// once, on chunks) lands in staging and is copied after the group; receive-reduces always do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/ir/schedule.hpp"
#include "runtime/bound_program.hpp"
#include "runtime/executor.hpp"
#include "runtime/memory_space.hpp"
#include "runtime/transport.hpp"

namespace topocoll::runtime {

struct RoundPlan {
  int rounds = 0;  // the same on every rank
  std::vector<std::int32_t>
      round;  // per op of the rank's program: its round; local ops: after which round (-1: before 0)
};

// Every rank's plan. ScheduleError for a program that does not fit the schedule's shape
// (algo::ProgramIndex), programs that do not match (algo::match_fifo: a send without its receive,
// sizes that differ) or that cannot be cut into rounds.
std::vector<RoundPlan> plan_rounds(const algo::Schedule& s);

class RoundExecutor {
 public:
  // Binds rank `rank`'s program (checked by algo::ProgramIndex, as Plan's) to its round plan, which
  // must be plan_rounds(s)[rank] (an assertion otherwise).
  RoundExecutor(const algo::Schedule& s, int rank, RoundPlan plan, MemorySpace& memory = host_memory());
  int rounds() const { return plan_.rounds; }
  // The peers this rank exchanges with in round k (sorted; error messages of a stalled round).
  std::vector<int> peers(int k) const;

  // The whole program: local ops before round 0, then issue(k) + finish(k) for every round, then
  // avg's division.
  void run(const Buffers& b, RoundTransport& t);
  // The steps of run(), for drivers that interleave ranks round by round (tests): begin (local ops
  // before round 0), issue(k) (the round's sends and receives, channel by channel in program
  // order, so two ranks queue the messages between them in the same order), finish(k)
  // (end_round, then reductions, staged copies and local ops of round k), end (avg).
  void begin(const Buffers& b);
  void issue(int k, RoundTransport& t);
  void finish(int k, RoundTransport& t);
  void end();

 private:
  std::byte* src(const BoundOp& b) const { return base_[b.src_buffer] + b.src_offset; }
  std::byte* dst(const BoundOp& b) const { return base_[b.dst_buffer] + b.dst_offset; }
  void run_local(const BoundOp& b);

  algo::CollectiveArgs args_;
  int rank_ = 0;
  RoundPlan plan_;
  MemorySpace* memory_ = nullptr;
  std::vector<BoundOp> ops_;
  std::vector<std::vector<std::uint32_t>> comm_;   // [round]: its send / receive ops, by channel then program order
  std::vector<std::vector<std::uint32_t>> after_;  // [round + 1]: local ops after that round, program order
  std::vector<bool> staged_;                       // per op: a receive that lands in staging (bound once)
  std::vector<std::uint32_t> landed_;              // this round: ops whose data lands in staging (filled by issue)
  std::vector<std::size_t> landed_at_;             // ... and where in the staging
  SpaceBuffer staging_;                            // the largest round's staged bytes
  SpaceBuffer overlap_;                            // a local reduce whose operands partially overlap
  BufferNeeds needs_;
  std::byte* base_[4] = {};
};

}  // namespace topocoll::runtime
