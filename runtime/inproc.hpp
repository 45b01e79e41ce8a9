// The in-process transport: ranks as threads of one process over one shared fabric. The runner of
// multi-rank tests over it (one thread per rank, exceptions rethrown on the caller's) is
// run_inproc, runtime/testing/run_inproc.hpp.
//
//   rank 0 thread ── InprocTransport(0) ─┐            ┌─ mailbox of rank 0: (src, channel) -> FIFO
//   rank 1 thread ── InprocTransport(1) ─┼─ fabric ───┼─ mailbox of rank 1: (src, channel) -> FIFO
//   ...                                  ┘            └─ ...
//
// A send copies its bytes into the destination's mailbox (a recycled buffer, so steady state does
// not allocate) and completes at once (post_send returns kDone); a posted receive remembers its
// destination, and test_recv takes the front of its (source, channel) queue and copies it into
// place outside the lock. Each mailbox counts arrivals under its mutex, so a rank waiting for "anything new"
// sleeps on its condition variable instead of spinning (64 rank threads on 2 cores stay cheap).
//
// Push (runtime/push_plan.hpp), when the fabric is made with push on: receive-reduces read the
// message where the mailbox holds it (reads_in_place), each rank publishes its board (run,
// fingerprint, buffers, per-channel progress), and a sender writes a fused send's bytes straight
// into the receiver's buffer and queues a marker in their FIFO place; the receive finds the bytes
// there (or copies them from there when it was posted elsewhere). The same protocol as the shm
// transport's, so that every algorithm's pushes are checked bit for bit in one process.
//
// Switch ops (contract rule 11) run for real: the fabric holds, per (switch group, channel), the
// instances not yet taken by every receiver; a part is copied in when given, and a receiver whose
// instance is complete reduces the parts in contributor order into place (Plan does, from the
// parts this transport hands it). Completing an instance wakes its receivers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "algorithms/ir/schedule.hpp"
#include "runtime/executor.hpp"
#include "runtime/transport.hpp"

namespace topocoll::runtime {

// Shared by the rank threads of one run.
class InprocFabric {
 public:
  explicit InprocFabric(int ranks, bool push = false);
  int ranks() const { return static_cast<int>(mailboxes_.size()); }
  bool push() const { return push_; }
  std::uint64_t pushed() const { return pushed_.load(); }  // sends pushed so far, every rank
  // Wakes every waiting rank; their next wait() throws Aborted naming `reason`.
  void abort(const std::string& reason);

 private:
  friend class InprocTransport;
  struct Message {
    std::vector<std::byte> data;
    const std::byte* pushed = nullptr;  // push: the bytes are here, in the receiver's buffer
    std::size_t bytes = 0;
  };
  struct Mailbox {
    std::mutex mu;
    std::condition_variable cv;
    std::uint64_t arrivals = 0;
    std::unordered_map<std::uint64_t, std::deque<Message>> queues;  // key: src, channel
    std::vector<std::vector<std::byte>> spare;                      // delivered buffers, reused by later sends
  };
  std::vector<std::unique_ptr<Mailbox>> mailboxes_;  // per destination rank
  // Push: per rank, its board (written by its thread, read by its peers').
  struct Board {
    std::atomic<std::uint64_t> run{0}, fingerprint{0};
    std::atomic<std::byte*> buffers[3] = {};
    std::unique_ptr<std::atomic<std::uint64_t>[]> progress;  // per channel: (run << 32) | ops done
  };
  bool push_ = false;
  std::vector<std::unique_ptr<Board>> boards_;
  std::atomic<std::uint64_t> pushed_{0};
  struct SwitchInstance {
    std::vector<std::vector<std::byte>> parts;  // per contributor position
    std::size_t given = 0, taken = 0;
  };
  struct SwitchQueue {
    std::vector<std::uint64_t> given, taken;  // per contributor / receiver position
    std::deque<SwitchInstance> live;          // instances base, base + 1, ...
    std::uint64_t base = 0;
  };
  std::mutex switch_mu_;
  std::unordered_map<std::uint64_t, SwitchQueue> switches_;       // key: group, channel
  SwitchQueue& switch_queue(const SwitchMember& m, int channel);  // switch_mu_ held
  std::atomic<bool> aborted_{false};
  std::mutex abort_mu_;
  std::string abort_reason_;
};

// One rank's view of the fabric.
class InprocTransport final : public Transport {
 public:
  InprocTransport(InprocFabric& fabric, int rank);
  Request post_send(int peer, int channel, const void* data, std::size_t bytes) override;  // always kDone
  bool test_send(Request r) override;
  Request post_recv(int peer, int channel, void* dst, std::size_t bytes) override;
  bool test_recv(Request r) override;
  void wait(std::chrono::steady_clock::time_point deadline) override;

  // Without posting: when the next message from `peer` on `channel` has arrived, copies it into
  // `dst` and returns true; else false. InputError when it has another size than `bytes`.
  bool try_recv(int peer, int channel, void* dst, std::size_t bytes);

  bool reads_in_place(int /*peer*/) const override { return fabric_.push_; }
  bool test_recv_consume(Request r, Consume consume, void* context) override;
  bool pushes() const override { return fabric_.push_; }
  void begin_run(std::uint64_t fingerprint, std::byte* const* buffers) override;
  void note_progress(int channel, std::uint32_t done) override;
  std::byte* push_target(int peer, int channel, std::uint8_t buffer, std::size_t offset, std::size_t bytes,
                         std::uint32_t gate) override;
  void post_pushed(int peer, int channel, const std::byte* target, std::size_t bytes) override;
  bool test_recv_staged(Request r, const void* wanted, bool& landed) override;

  bool runs_switch_ops() const override { return true; }
  // Completing an instance wakes every rank of the fabric (the transport does not know the
  // group's receivers; a woken rank that has nothing new waits again).
  void switch_send(const SwitchMember& m, int channel, const void* data, std::size_t bytes) override;
  bool switch_recv(const SwitchMember& m, int channel, std::size_t bytes,
                   const std::function<void(std::span<const std::byte* const> parts)>& consume) override;

 private:
  struct PostedRecv {
    int peer = -1, channel = 0;
    void* dst = nullptr;
    std::size_t bytes = 0;
  };
  // The next message from (peer, channel) off the mailbox, when there: its bytes are at `at`
  // (the message's own, or where it was pushed) until `done` hands the buffer back.
  bool take(int peer, int channel, std::size_t bytes, InprocFabric::Message& m, const std::byte*& at);
  void give_back(InprocFabric::Message&& m);
  void enqueue(int peer, int channel, InprocFabric::Message&& m);
  InprocFabric& fabric_;
  int rank_;
  std::uint64_t run_ = 0, fingerprint_ = 0;
  std::uint64_t seen_arrivals_ = 0;  // mailbox arrivals when wait() last returned
  RequestSlots<PostedRecv> posted_;
  InprocFabric::Mailbox& mailbox(int rank) const;
  void wake_all() const;
};

}  // namespace topocoll::runtime
