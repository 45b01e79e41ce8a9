// The schedule IR: what every executor (verifier, simulator, runtime) runs.
//
// A schedule gives every rank an ordered program of operations on chunks of its buffers
// (input, output, scratch), each on a channel. The execution contract (docs/schedule.md):
//   1. Within a channel a rank's operations run in order; channels run concurrently.
//   2. `send(peer, src)` is non-blocking: the data is `src` as it is when the send is issued
//      (an executor copies it out, or delays later writes to `src` until the send completes).
//   3. `recv(peer, dst)` / `recv_reduce(peer, dst)` block their channel until the matching send
//      has been issued and its data has arrived: dst = data, or dst = dst (op) data.
//   4. A send matches the receive with the same (source, destination, channel), in FIFO order;
//      matched operations have the same element count.
//   5. `copy(src, dst)`: dst = src; `reduce(src, dst)`: dst = dst (op) src. Local, immediate.
//   6. Channels of one rank do not race: an output or scratch element written by one channel
//      is neither written nor read by another (the read-only input may be read by all).
//   7-10. In place aliasing, avg, local-op overlap and errors: see docs/schedule.md.
// Per-rank programs are generated on demand (program(rank)); nothing O(ranks^2) is stored.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/ir/types.hpp"

namespace topocoll::algo {

enum class BufferId : std::uint8_t { Input, Output, Scratch };
enum class OpKind : std::uint8_t { Send, Recv, RecvReduce, Copy, Reduce };
std::string_view to_string(BufferId b);
std::string_view to_string(OpKind k);

struct Chunk {
  BufferId buffer = BufferId::Output;
  std::uint64_t offset = 0;  // elements
  std::uint64_t count = 0;   // elements
  std::uint64_t end() const { return offset + count; }
  bool operator==(const Chunk&) const = default;
};

struct Op {
  OpKind kind = OpKind::Send;
  std::uint16_t channel = 0;
  std::int32_t peer = -1;  // Send / Recv / RecvReduce
  Chunk src;               // Send, Copy, Reduce
  Chunk dst;               // Recv, RecvReduce, Copy, Reduce
  bool operator==(const Op&) const = default;
  std::uint64_t count() const { return kind == OpKind::Send ? src.count : dst.count; }
};
std::string describe(const Op& op);  // "send(peer 3, output[0:128]) ch 1"

using Program = std::vector<Op>;

// Appends operations to one rank's program; zero-element operations are dropped (both sides of
// a transfer compute the same sizes, so they drop the same ones).
class ProgramBuilder {
 public:
  explicit ProgramBuilder(Program& out) : out_(out) {}
  void send(int peer, Chunk src, int channel);
  void recv(int peer, Chunk dst, int channel);
  void recv_reduce(int peer, Chunk dst, int channel);
  void copy(Chunk src, Chunk dst, int channel);
  void reduce(Chunk src, Chunk dst, int channel);

 private:
  Program& out_;
};

// Limits of a schedule's header, checked where a Schedule is built (validate_header). Within them
// every size an executor computes fits its type: count x ranks, offset + count, bytes, and the
// verifier's packed keys (rank x rank x channel, storage tag above bit 60).
inline constexpr int kMaxRanks = 1 << 20;
inline constexpr int kMaxChannels = 1024;
inline constexpr std::uint64_t kMaxBufferBytes = std::uint64_t{1} << 60;  // each buffer of a rank

// Throws InputError naming the field, its value and the limit: ranks in 1..kMaxRanks, channels in
// 1..kMaxChannels, root a rank, and every buffer (input, output, scratch) below kMaxBufferBytes.
void validate_header(const std::string& name, const CollectiveArgs& args, int channels, std::uint64_t scratch_count);

// What a channel's GPU block runs, for the simulator's per-block throughput (sim::Calibration
// block caps): a pipeline (ring steps, pairwise exchanges; NCCL's ring primitives) or a tree
// (reduce from children and send up, receive from the parent and send down; NCCL's tree kernel,
// whose block reaches a lower rate per channel). Execution and correctness do not depend on it.
enum class ChannelPattern : std::uint8_t { Pipeline, Tree };
std::string_view to_string(ChannelPattern p);

class Schedule {
 public:
  using Generator = std::function<void(int rank, Program& out)>;  // appends rank's program

  Schedule(std::string name, CollectiveArgs args, int channels, std::uint64_t scratch_count, Generator generator);
  // A schedule given as explicit programs (imported from JSON, or hand-made in tests).
  static Schedule from_programs(std::string name, CollectiveArgs args, int channels, std::uint64_t scratch_count,
                                std::vector<Program> programs);

  const std::string& name() const { return name_; }
  const CollectiveArgs& args() const { return args_; }
  int num_ranks() const { return args_.ranks; }
  int num_channels() const { return channels_; }
  std::uint64_t scratch_count() const { return scratch_count_; }  // elements, every rank
  std::uint64_t buffer_count(BufferId b) const;
  Program program(int rank) const;
  // The pattern of channel ch (Pipeline unless set_pattern said otherwise).
  ChannelPattern pattern(int ch) const;
  // Marks channel ch (0 <= ch < num_channels()) as running `p`; generators call it.
  void set_pattern(int ch, ChannelPattern p);

 private:
  std::string name_;
  CollectiveArgs args_;
  int channels_ = 1;
  std::uint64_t scratch_count_ = 0;
  Generator generator_;
  std::vector<ChannelPattern> patterns_;  // empty: every channel Pipeline
};

}  // namespace topocoll::algo
