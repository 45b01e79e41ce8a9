// The executor: runs one rank's program of a Schedule on real buffers over a Transport, under the
// execution contract of algorithms/schedule.hpp.
//
//   setup (once per call)                       run
//   ─────────────────────                       ───
//   program(rank) -> ops bound to pointers  ──> round-robin over channels: each channel runs its
//   (chunks resolved, bounds checked),          ops in order until it finishes or its next op is
//   ops split per channel, staging buffer       a receive whose message has not arrived; then the
//   for overlapping local reductions            next channel. No channel progresses for
//                                               progress_timeout -> PeerTimeout.
//
// Buffers and in-place calls. The executor reads and writes exactly the pointers it is given; the
// caller expresses NCCL's in-place aliasing through them (the same aliasing as the verifier's
// resolve() in algorithms/verifier.cpp):
//   allreduce, broadcast, reduce   input == output
//   reduce_scatter                 output == input + rank * count elements
//   allgather                      input == output + rank * count elements
// A copy whose source and destination overlap has memmove semantics (the same memory: a no-op);
// a local reduce whose source partially overlaps its destination reduces from a staged copy.
//
// Avg. The schedule reduces with runtime::reduce(..., Avg), which accumulates as a sum; when the
// program has finished, finish_avg divides the output by the rank count for the collectives that
// reduce: allreduce (every rank), reduce_scatter (every rank's block) and reduce (the root only;
// other ranks' outputs are unspecified). Allgather and broadcast move data without reducing, so
// avg leaves their output as it is.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>

#include "algorithms/schedule.hpp"

namespace topocoll::runtime {

// Posts byte transfers to a peer on a channel. Matching is FIFO per (source, destination, channel).
class Transport {
 public:
  virtual ~Transport() = default;
  // `data` may be reused when this returns (the transport copies it or completes the transfer).
  virtual void post_send(int peer, int channel, const void* data, std::size_t bytes) = 0;
  // Non-blocking: if the next message from `peer` on `channel` has arrived, hands it to `deliver`
  // (which copies or reduces it into place before returning) and returns true; otherwise false.
  // A message of another size than `bytes` breaks the contract: the transport throws.
  virtual bool try_recv(int peer, int channel, std::size_t bytes,
                        const std::function<void(const void* data)>& deliver) = 0;
  // Called by the executor when no channel can progress: blocks until a message may have arrived
  // for this rank or until `deadline`, whichever is first. Spurious returns are allowed. The
  // default yields the thread (a polling transport needs nothing more); a transport that can be
  // aborted throws from here.
  virtual void wait(std::chrono::steady_clock::time_point deadline);
};

struct Buffers {
  void* input = nullptr;
  void* output = nullptr;
  void* scratch = nullptr;  // scratch_count() elements, owned by the caller
};

struct ExecOptions {
  std::chrono::milliseconds progress_timeout{60000};  // no channel progresses this long: PeerTimeout
};

// A peer made no progress within the timeout. The message names the rank, the peer it waits for,
// the channel and the operation (index and algo::describe).
class PeerTimeout : public std::runtime_error {
 public:
  PeerTimeout(const std::string& what, int rank, int peer, int channel, std::size_t op_index)
      : std::runtime_error(what), rank_(rank), peer_(peer), channel_(channel), op_index_(op_index) {}
  int rank() const { return rank_; }
  int peer() const { return peer_; }
  int channel() const { return channel_; }
  std::size_t op_index() const { return op_index_; }  // index in the rank's program

 private:
  int rank_, peer_, channel_;
  std::size_t op_index_;
};

// Runs rank `rank`'s program of `s` on `b` over `t` and returns when every channel has finished.
// Throws InputError for a program the buffers cannot hold (bad peer, channel or chunk, a null
// buffer that a chunk needs, a message of the wrong size), PeerTimeout when stalled; exceptions of
// the transport pass through.
void execute(const algo::Schedule& s, int rank, const Buffers& b, Transport& t, const ExecOptions& o = {});

}  // namespace topocoll::runtime
