// The execution contract's static half (algorithms/ir/schedule.hpp, docs/schedule.md), written once
// for every executor: the verifier, the analytic and SimGrid engines, the runtime's Plan and its
// round planner.
//
//   ProgramIndex(schedule, rank)   fetches the rank's program and checks every operation:
//                                    channel < K, peer in 0..p-1 and not the rank itself,
//                                    chunks inside their buffers, copy / reduce / recv_reduce_copy of equal sizes,
//                                    the read-only input never written;
//                                  on failure a ProgramError (a ScheduleError) whose message names
//                                  rank, channel and operation, the same words from every executor
//                                  ("rank 1 channel 0 op 3 (send(peer 7, output[0:4]) ch 0): peer 7
//                                  is not another rank of 0..3"); then the operations per channel.
//   Connections                    (source, destination, channel) -> dense id, in the order first
//                                  seen.
//   match_fifo(indexes)            contract rule 4: each send with its receive, FIFO per
//                                  connection, equal sizes; for executors that plan ahead.
//   in_place_storage(args, rank,   NCCL's in-place aliasing: where a chunk's elements live when
//                    chunk)        input and output share memory.
//
// What is dynamic stays with each executor: symbolic values, simulated times, real transfers,
// deadlock reports. An executor keeps its own compact form of the operations and builds it from
// the index; the index stores the program once, plus 4 bytes per operation for the per-channel
// order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "algorithms/ir/schedule.hpp"
#include "common/errors.hpp"

namespace topocoll::algo {

inline bool is_transfer(OpKind k) {
  return k == OpKind::Send || k == OpKind::Recv || k == OpKind::RecvReduce || k == OpKind::RecvReduceCopy;
}
inline bool is_receive(OpKind k) {  // a transfer's receiving side
  return k == OpKind::Recv || k == OpKind::RecvReduce || k == OpKind::RecvReduceCopy;
}
inline bool is_switch(OpKind k) {
  return k == OpKind::SwitchSend || k == OpKind::SwitchRecv;
}
inline bool reads_src(OpKind k) {  // the op has a source chunk
  return k == OpKind::Send || k == OpKind::Copy || k == OpKind::Reduce || k == OpKind::SwitchSend ||
         k == OpKind::RecvReduceCopy;
}
inline bool equal_sizes(OpKind k) {  // src and dst of one element count
  return k == OpKind::Copy || k == OpKind::Reduce || k == OpKind::RecvReduceCopy;
}
inline bool writes_dst(OpKind k) {  // the op has a destination chunk
  return k != OpKind::Send && k != OpKind::SwitchSend;
}

// "rank 3 channel 1 op 7 (send(peer 4, output[0:128]) ch 1)": how every executor names an op.
std::string locate(int rank, const Op& op, std::size_t index);

// What the static check finds wrong; the verifier reports each as its Failure of the same name.
enum class StaticFault : std::uint8_t { BadChannel, BadPeer, OutOfBounds, WritesInput, SizeMismatch, BadGroup };

class ProgramError : public ScheduleError {
 public:
  ProgramError(StaticFault fault, const std::string& what, int rank, int channel, std::size_t op_index)
      : ScheduleError(what, rank, channel, op_index), fault_(fault) {}
  StaticFault fault() const { return fault_; }

 private:
  StaticFault fault_;
};

// Checks operation `index` of `rank`'s program against the schedule's shape (see above); throws
// ProgramError naming the first thing wrong, in the order listed there.
void check_op(const Schedule& s, int rank, const Op& op, std::size_t index);

// One rank's program, checked, with its operations per channel (program order within each).
class ProgramIndex {
 public:
  ProgramIndex() = default;
  // Fetches s.program(rank) and checks it. rank must be a rank of s (a caller's bug otherwise).
  // by_channel false: only the per-channel counts, no channel() lists (an executor that packs
  // the operations per channel itself, in one pass over the program, as the engines do).
  explicit ProgramIndex(const Schedule& s, int rank, bool by_channel = true);
  // The same over a program already fetched.
  ProgramIndex(const Schedule& s, int rank, Program program, bool by_channel = true);

  int rank() const { return rank_; }
  int num_channels() const { return static_cast<int>(channel_begin_.size()) - 1; }
  std::size_t size() const { return program_.size(); }
  const Program& program() const { return program_; }
  const Op& op(std::size_t index) const { return program_[index]; }
  // How many operations channel c has.
  std::size_t channel_size(int c) const {
    return channel_begin_[static_cast<std::size_t>(c) + 1] - channel_begin_[static_cast<std::size_t>(c)];
  }
  // The indices into program() of channel c's operations, in program order (by_channel only).
  std::span<const std::uint32_t> channel(int c) const {
    TOPOCOLL_ASSERT(by_channel_.size() == program_.size(), "ProgramIndex built without by_channel");
    return {by_channel_.data() + channel_begin_[static_cast<std::size_t>(c)],
            by_channel_.data() + channel_begin_[static_cast<std::size_t>(c) + 1]};
  }
  // Hands the program over (the index is empty afterwards).
  Program release_program() { return std::move(program_); }

 private:
  int rank_ = 0;
  Program program_;
  std::vector<std::uint32_t> by_channel_;     // op indices: channel 0's, then channel 1's, ...
  std::vector<std::uint32_t> channel_begin_;  // K + 1 offsets into by_channel_
};

// Dense ids for the connections (source, destination, channel) of a schedule, numbered in the
// order first seen, so an executor's ids follow its own walk of the programs.
class Connections {
 public:
  struct Key {
    int src = 0, dst = 0, channel = 0;
  };
  Connections(int ranks, int channels)
      : ranks_(static_cast<std::uint64_t>(ranks)), channels_(static_cast<std::uint64_t>(channels)) {}
  // The id of (src, dst, channel), added when new.
  std::uint32_t id(int src, int dst, int channel) {
    const std::uint64_t k = (static_cast<std::uint64_t>(src) * ranks_ + static_cast<std::uint64_t>(dst)) * channels_ +
                            static_cast<std::uint64_t>(channel);
    auto [it, added] = ids_.try_emplace(k, static_cast<std::uint32_t>(keys_.size()));
    if (added) keys_.push_back({src, dst, channel});
    return it->second;
  }
  // The connection a transfer of `rank` uses: a send's (rank, peer), a receive's (peer, rank).
  std::uint32_t id_of(int rank, const Op& op) {
    return op.kind == OpKind::Send ? id(rank, op.peer, op.channel) : id(op.peer, rank, op.channel);
  }
  std::size_t size() const { return keys_.size(); }
  const Key& key(std::uint32_t id) const { return keys_[id]; }
  const std::vector<Key>& keys() const { return keys_; }
  // Frees the lookup table once every id is known (keys stay).
  void forget_lookup() { std::unordered_map<std::uint64_t, std::uint32_t>().swap(ids_); }

 private:
  std::uint64_t ranks_, channels_;
  std::unordered_map<std::uint64_t, std::uint32_t> ids_;
  std::vector<Key> keys_;
};

// An operation of a schedule: rank and index in its program.
struct OpRef {
  int rank = -1;
  std::uint32_t op = 0;
};

// Contract rule 4 over every rank's program (indexes[r] is rank r's): per rank and op, the
// transfer at the other end (local ops: {-1, 0}). ScheduleError for a send without its receive,
// a receive without its send, or matched transfers of different sizes.
std::vector<std::vector<OpRef>> match_fifo(const std::vector<ProgramIndex>& indexes, int channels);

// NCCL's in-place aliasing: where chunk c of `rank` lives when input and output share memory.
//   allreduce, broadcast, reduce   input == output            -> the output buffer, same offset
//   reduce_scatter                 output == input + rank * count elements -> the input buffer
//   allgather                      input == output + rank * count elements -> the output buffer
// Scratch is never aliased. Out of place every chunk lives where it says.
struct Storage {
  BufferId buffer = BufferId::Output;
  std::uint64_t offset = 0;  // elements
};
Storage in_place_storage(const CollectiveArgs& a, int rank, const Chunk& c);

}  // namespace topocoll::algo
