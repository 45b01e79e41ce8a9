// The transports' side of the runtime: what the executors (runtime/executor.hpp's Plan,
// runtime/rounds.hpp's RoundExecutor) drive and what a transport implements, without the
// executors themselves. Transports (in-process, MPI, UCX, NCCL) include this, not the executors.
//
//   Transport       post / test byte transfers per (peer, channel), FIFO (Plan)
//   RequestSlots    the Request handles of a transport, reused once released
//   RoundTransport  sends and receives queued, run as one group per round (RoundExecutor)
//   PeerTimeout     a peer made no progress within the timeout (thrown by executors and transports)
//   Aborted         the rank's fabric was aborted because another rank failed
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "common/errors.hpp"

namespace topocoll::runtime {

// One member of a switch group (contract rule 11), as an executor names it to the transport: the
// group, the member's position among the contributors (switch_send) or the receivers
// (switch_recv), and the group's sizes.
struct SwitchMember {
  int group = 0;
  int position = 0;
  int contributors = 0;
  int receivers = 0;
};

// Posts byte transfers to a peer on a channel. Matching is FIFO per (source, destination, channel).
// Requests are small handles owned by the transport; each is tested until it reports completion,
// after which the handle is released (and may be handed out again).
//
//   post_send ──> test_send ... true       post_recv(dst) ──> test_recv ... true (data in dst)
//
// At most one receive is posted per (peer, channel) at a time (the executor posts only a channel's
// current operation), so transports may match receives to messages in posting order.
class Transport {
 public:
  using Request = std::uint32_t;
  static constexpr Request kDone = UINT32_MAX;  // completed when posted: nothing to test

  virtual ~Transport() = default;
  // Starts sending `bytes` at `data` to `peer` on `channel`. `data` must not be written until the
  // send completed (post_send returned kDone, or test_send returned true).
  virtual Request post_send(int peer, int channel, const void* data, std::size_t bytes) = 0;
  // True when the send has completed (progresses the transport); the request is then released.
  virtual bool test_send(Request r) = 0;
  // Starts receiving the next message from `peer` on `channel` into `dst` (exactly `bytes`).
  virtual Request post_recv(int peer, int channel, void* dst, std::size_t bytes) = 0;
  // True when the message is in `dst`; the request is then released. A message of another size
  // than the receive breaks the contract: the transport throws InputError.
  virtual bool test_recv(Request r) = 0;
  // Called by the executor when no channel can progress: blocks until a message may have arrived
  // or a send may have completed, or until `deadline`, whichever is first. Spurious returns are
  // allowed. The default yields the thread (a polling transport needs nothing more); a transport
  // that can be aborted throws from here.
  virtual void wait(std::chrono::steady_clock::time_point deadline);
  // Advances outstanding work without waiting for anything: a rank that has finished its program
  // but waits elsewhere (an MPI barrier) keeps answering its peers, e.g. the rendezvous
  // acknowledgement UCX's CMA protocol sends after a receive, without which the peer's send never
  // completes. Default: nothing to advance.
  virtual void progress() {}

  // Receive-reduce in one pass, for a transport whose receiver can see a message where the sender
  // keeps it (the direct intra-node one: the sender's buffer, mapped): the executor then reduces
  // the message into the destination straight from there, instead of receiving it into staging
  // and reducing from that. reads_in_place(peer) says whether test_recv_consume may be called for
  // a receive from `peer`.
  // test_recv_consume(r, consume, context) is test_recv for a receive into staging, except that
  // when the message is there the transport calls consume(context, message bytes) instead of (or,
  // when it cannot show them in place, after) filling the receive's buffer; the bytes are readable
  // until consume returns, then the receive completes (true). Default: refused (an assertion).
  using Consume = void (*)(void* context, const std::byte* message);
  virtual bool reads_in_place(int /*peer*/) const { return false; }
  virtual bool test_recv_consume(Request r, Consume consume, void* context);

  // Push (runtime/push_plan.hpp: NCCL's directRecvReduceCopySend), for a transport whose sender
  // can write into the receiver's memory (the direct intra-node one: read-write mappings).
  //   begin_run(fingerprint, buffers)  the executor starts a run: a fingerprint of the plan and
  //                                    placement, and the run's input, output and scratch, so
  //                                    that peers find their targets in them
  //   note_progress(channel, done)     the executor's channel has completed `done` ops this run
  //   push_target(peer, channel, buffer, offset, bytes, gate)
  //                                    where the peer's buffer `buffer` + offset lies in this
  //                                    rank's address space, when the peer runs a plan of the same
  //                                    fingerprint, in the same run, its channel has completed
  //                                    `gate` ops and those bytes are writable from here; else
  //                                    null (the send then goes the ordinary way)
  //   post_pushed(peer, channel, target, bytes)
  //                                    after writing there: the next send to (peer, channel),
  //                                    complete at once; its receive finds the bytes in place
  //   test_recv_staged(r, wanted, landed)
  //                                    test_recv for a plain receive posted into staging because
  //                                    its destination `wanted` was still being sent: when the
  //                                    message was pushed into `wanted` itself, nothing is copied
  //                                    and `landed` is set (the executor then skips its copy)
  // pushes() says whether the transport may push at all (the executor then announces runs and
  // progress). Defaults: no push (push_target null, the others do nothing / assert).
  virtual bool pushes() const { return false; }
  virtual void begin_run(std::uint64_t /*fingerprint*/, std::byte* const* /*buffers*/) {}
  virtual void note_progress(int /*channel*/, std::uint32_t /*done*/) {}
  virtual std::byte* push_target(int /*peer*/, int /*channel*/, std::uint8_t /*buffer*/, std::size_t /*offset*/,
                                 std::size_t /*bytes*/, std::uint32_t /*gate*/) {
    return nullptr;
  }
  virtual void post_pushed(int peer, int channel, const std::byte* target, std::size_t bytes);
  virtual bool test_recv_staged(Request r, const void* /*wanted*/, bool& landed) {
    landed = false;
    return test_recv(r);
  }

  // In-network reduction (contract rule 11), only for a transport whose fabric can reduce (the
  // in-process one; MPI, UCX and NCCL cannot, and executors refuse such schedules at bind time).
  // switch_send copies `bytes` from `data` at once as the contributor's part of the next instance
  // of (group, channel); switch_recv returns false until every contributor has given its part of
  // the receiver's next instance, then calls `consume` with the parts in contributor order and
  // returns true. InputError when parts or the receive differ in size.
  virtual bool runs_switch_ops() const { return false; }
  virtual void switch_send(const SwitchMember& m, int channel, const void* data, std::size_t bytes);
  virtual bool switch_recv(const SwitchMember& m, int channel, std::size_t bytes,
                           const std::function<void(std::span<const std::byte* const> parts)>& consume);
};

// Push's progress words (Transport::note_progress, as a transport stores them for its peers):
// run in the high 32 bits, the channel's ops completed in the low. Whether `word` says that the
// channel has completed `gate` ops in run `run` (gate 0: always; the run itself is checked apart).
inline std::uint64_t progress_word(std::uint64_t run, std::uint32_t done) {
  return (run << 32) | done;
}
inline bool passed_gate(std::uint64_t word, std::uint64_t run, std::uint32_t gate) {
  return gate == 0 || ((word >> 32) == (run & 0xffffffffu) && (word & 0xffffffffu) >= gate);
}

// The request slots of a transport: a Slot per Request, indexed by it, reused once released, so a
// transport in steady state allocates nothing. at() checks the handle (a bug in the caller: an
// assertion naming `what`).
template <typename Slot>
class RequestSlots {
 public:
  Transport::Request acquire(const Slot& s) {
    Transport::Request r;
    if (!free_.empty()) {
      r = free_.back();
      free_.pop_back();
    } else {
      r = static_cast<Transport::Request>(slots_.size());
      slots_.emplace_back();
    }
    slots_[r] = s;
    return r;
  }
  const Slot& at(Transport::Request r, const char* what) const {
    TOPOCOLL_ASSERT(r < slots_.size(), std::string(what) + ": request " + std::to_string(r) + " was never posted");
    return slots_[r];
  }
  Slot& at(Transport::Request r, const char* what) {
    return const_cast<Slot&>(static_cast<const RequestSlots&>(*this).at(r, what));
  }
  void release(Transport::Request r) { free_.push_back(r); }
  // Every slot ever handed out, released or not (teardown: the slot's own state says whether it
  // still holds something), with its Request.
  template <typename F>
  void for_each(F&& f) {
    for (std::size_t i = 0; i < slots_.size(); ++i) f(static_cast<Transport::Request>(i), slots_[i]);
  }

 private:
  std::vector<Slot> slots_;
  std::vector<Transport::Request> free_;
};

// A transport that completes per round: sends and receives are queued, end_round() runs them as
// one group; afterwards the received data is in place for everything the memory space does next.
class RoundTransport {
 public:
  virtual ~RoundTransport() = default;
  virtual void send(int peer, const void* src, std::size_t bytes) = 0;
  virtual void recv(int peer, void* dst, std::size_t bytes) = 0;
  virtual void end_round() = 0;
};

// A peer made no progress within the timeout. The message names the rank, the peer it waits for,
// the channel and the operation (index and algo::describe).
class PeerTimeout : public RuntimeFailure {
 public:
  PeerTimeout(const std::string& what, int rank, int peer, int channel, std::size_t op_index)
      : RuntimeFailure(what), rank_(rank), peer_(peer), channel_(channel), op_index_(op_index) {}
  int rank() const { return rank_; }
  int peer() const { return peer_; }
  int channel() const { return channel_; }
  std::size_t op_index() const { return op_index_; }  // index in the rank's program

 private:
  int rank_, peer_, channel_;
  std::size_t op_index_;
};

// Thrown on a rank whose fabric was aborted because another rank failed.
class Aborted : public RuntimeFailure {
 public:
  explicit Aborted(const std::string& what) : RuntimeFailure(what) {}
};

}  // namespace topocoll::runtime
