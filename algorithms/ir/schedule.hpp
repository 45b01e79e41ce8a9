// The schedule IR: what every executor (verifier, simulator, runtime) runs.
//
// A schedule gives every rank an ordered program of operations on chunks of its buffers
// (input, output, scratch), each on a channel. The execution contract (docs/schedule.md):
//   1. Within a channel a rank's operations run in order; channels run concurrently.
//   2. `send(peer, src)` is non-blocking: the data is `src` as it is when the send is issued
//      (an executor copies it out, or delays later writes to `src` until the send completes).
//   3. `recv(peer, dst)` / `recv_reduce(peer, dst)` / `recv_reduce_copy(peer, src, dst)` block
//      their channel until the matching send has been issued and its data has arrived: dst =
//      data, dst = dst (op) data, or dst = src (op) data (NCCL's recvReduceCopy: the rank's own
//      contribution read from src, no copy of it into dst first).
//   4. A send matches the receive with the same (source, destination, channel), in FIFO order;
//      matched operations have the same element count.
//   5. `copy(src, dst)`: dst = src; `reduce(src, dst)`: dst = dst (op) src. Local, immediate.
//   6. Channels of one rank do not race: an output or scratch element written by one channel
//      is neither written nor read by another (the read-only input may be read by all).
//   7-10. In place aliasing, avg, local-op overlap and errors: see docs/schedule.md.
//  11. In-network reduction (NVSwitch multicast NVLS, SHARP in an InfiniBand switch): a schedule
//      declares switch groups (contributors, receivers, the switch kind). `switch_send(g, src)`
//      by a contributor of g is non-blocking and gives src to the next instance of (g, channel);
//      `switch_recv(g, dst)` by a receiver of g blocks its channel until every contributor has
//      given its part of that instance: dst = the reduction (op) of the contributions, in
//      contributor order. Instances of (g, channel) match in FIFO order on every member; all
//      parts of one instance have one element count. See docs/schedule.md.
// Per-rank programs are generated on demand (program(rank)); nothing O(ranks^2) is stored.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/ir/symmetry.hpp"
#include "algorithms/ir/types.hpp"

namespace topocoll::algo {

enum class BufferId : std::uint8_t { Input, Output, Scratch };
enum class OpKind : std::uint8_t { Send, Recv, RecvReduce, Copy, Reduce, SwitchSend, SwitchRecv, RecvReduceCopy };
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
  std::int32_t peer = -1;  // Send / Recv / RecvReduce / RecvReduceCopy: the peer rank; Switch*: the group
  Chunk src;               // Send, Copy, Reduce, SwitchSend, RecvReduceCopy
  Chunk dst;               // Recv, RecvReduce, Copy, Reduce, SwitchRecv, RecvReduceCopy
  bool operator==(const Op&) const = default;
  std::uint64_t count() const { return kind == OpKind::Send || kind == OpKind::SwitchSend ? src.count : dst.count; }
  bool is_switch() const { return kind == OpKind::SwitchSend || kind == OpKind::SwitchRecv; }
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
  // dst = src (op) data; src and dst of one count. With src == dst it is recv_reduce.
  void recv_reduce_copy(int peer, Chunk src, Chunk dst, int channel);
  void copy(Chunk src, Chunk dst, int channel);
  void reduce(Chunk src, Chunk dst, int channel);
  void switch_send(int group, Chunk src, int channel);
  void switch_recv(int group, Chunk dst, int channel);

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

// Where a switch group's reduction happens: the NVSwitch fabric of the members' NVLink domain
// (NVLS: multimem.ld_reduce / multimem.st through NVSwitch multicast, Hopper and later) or the
// InfiniBand switches of the network (SHARP, NCCL's CollNet).
enum class SwitchKind : std::uint8_t { Nvls, Sharp };
std::string_view to_string(SwitchKind k);

// The ranks of one in-network reduction: every instance reduces one part from each contributor
// and delivers the result to every receiver (a receiver may also contribute). One contributor
// and several receivers is a multicast store (NVLS all-gather).
struct SwitchGroup {
  SwitchKind kind = SwitchKind::Nvls;
  std::vector<int> contributors;  // distinct ranks, the reduction order
  std::vector<int> receivers;     // distinct ranks
  bool operator==(const SwitchGroup&) const = default;
};

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
  // The same into `out`, emptied first: its storage is kept, so a caller that fetches rank after
  // rank allocates (and faults in) the largest program once.
  void program_into(int rank, Program& out) const;
  // The pattern of channel ch (Pipeline unless set_pattern said otherwise).
  ChannelPattern pattern(int ch) const;
  // Marks channel ch (0 <= ch < num_channels()) as running `p`; generators call it.
  void set_pattern(int ch, ChannelPattern p);
  // In-network reduction groups (empty for point-to-point schedules). add_switch_group returns the
  // index an op's `peer` names; it throws InputError when a member is not a rank, is repeated, or
  // a list is empty.
  const std::vector<SwitchGroup>& switch_groups() const { return switch_groups_; }
  int add_switch_group(SwitchGroup g);
  bool uses_switch() const { return !switch_groups_.empty(); }
  // The position of `rank` among group g's contributors / receivers, -1 when it is not one
  // (O(log members); g must be a group index).
  int contributor_index(int g, int rank) const;
  int receiver_index(int g, int rank) const;
  // The programs' symmetry as the generator declares it (symmetry.hpp); null: none declared.
  // An engine may then generate the representatives' programs only.
  const ProgramSymmetry* symmetry() const { return symmetry_.get(); }
  void set_symmetry(ProgramSymmetry s);

 private:
  std::string name_;
  CollectiveArgs args_;
  int channels_ = 1;
  std::uint64_t scratch_count_ = 0;
  Generator generator_;
  std::vector<ChannelPattern> patterns_;  // empty: every channel Pipeline
  std::vector<SwitchGroup> switch_groups_;
  std::shared_ptr<const ProgramSymmetry> symmetry_;
  // Per group: (rank, position) sorted by rank, for contributors and for receivers.
  using MemberIndex = std::vector<std::pair<int, int>>;
  std::vector<std::pair<MemberIndex, MemberIndex>> member_index_;
};

}  // namespace topocoll::algo
