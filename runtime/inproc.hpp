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
  explicit InprocFabric(int ranks);
  int ranks() const { return static_cast<int>(mailboxes_.size()); }
  // Wakes every waiting rank; their next wait() throws Aborted naming `reason`.
  void abort(const std::string& reason);

 private:
  friend class InprocTransport;
  struct Mailbox {
    std::mutex mu;
    std::condition_variable cv;
    std::uint64_t arrivals = 0;
    std::unordered_map<std::uint64_t, std::deque<std::vector<std::byte>>> queues;  // key: src, channel
    std::vector<std::vector<std::byte>> spare;  // delivered buffers, reused by later sends
  };
  std::vector<std::unique_ptr<Mailbox>> mailboxes_;  // per destination rank
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
  InprocFabric& fabric_;
  int rank_;
  std::uint64_t seen_arrivals_ = 0;  // mailbox arrivals when wait() last returned
  RequestSlots<PostedRecv> posted_;
  InprocFabric::Mailbox& mailbox(int rank) const;
  void wake_all() const;
};

}  // namespace topocoll::runtime
