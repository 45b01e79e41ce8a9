// The direct intra-node transport (issue 19): runtime::Transport where the receiver copies a
// message straight out of the sender's buffer, mapped into its own address space: one copy per
// message (UCX's shared-memory path copies twice, into and out of its FIFO). Peers on other nodes
// go through a second transport given at construction (MPI point-to-point in topocoll-bench).
//
//   start-up (collective over the communicator; the node is MPI_COMM_TYPE_SHARED's split)
//     control segment  one per node, /dev/shm, created by the node's first rank, mapped by all,
//                      unlinked as soon as every rank of the node has it
//     allocate(bytes)  collective: a data region per rank in its own segment, mapped (read only)
//                      by every rank of the node, unlinked once all have it; the caller puts the
//                      buffers its schedules send from there (topocoll-bench: input, output and
//                      scratch). A send from memory outside every region is read with CMA
//                      (process_vm_readv) instead: one copy too, by the kernel.
//
//   per ordered pair (src, dst) of the node and channel, a ring of kRingSlots descriptors:
//
//       sender                              ring (shared)                    receiver
//       post_send: slot[posted % R] = ──>   posted (release)  ──acquire──>  post_recv / test_recv:
//         (region, offset, bytes)                                             copy from the peer's
//       test_send: acked > seq      <──     acked (release)   <─────────────  mapping into dst
//
//   push (set_push, the bench's default --shm-copy push; runtime/push_plan.hpp): a sender may
//   instead write a message straight into the receiver's destination, through a read-write
//   mapping of the receiver's region, when the executor fuses the send into the reducing receive
//   that computes it; the descriptor then says "pushed" (the region and offset it wrote) and the
//   receiver only acknowledges it (or copies it from there when its receive was posted elsewhere).
//   Where a receiver's destination is, and whether it is free yet, comes from its board in the
//   control segment: per rank, the run it is in (counted by begin_run), the plan's fingerprint, its
//   buffers for the run (region, offset) and per channel the ops completed (note_progress).
//
//   A send completes when the receiver has copied it (acked): until then the executor keeps the
//   source unwritten, as the Transport contract says. A full ring (more than kRingSlots sends to
//   one peer and channel unreceived) queues further sends on the sender, published as slots free
//   up (on any later call into the transport). The flags are std::atomic_ref over plain 64-bit
//   words of the segment (lock-free, so address-free across processes): the same flag / credit
//   protocol a GPU kernel would run over NVLink-mapped peer memory.
//
// FIFO per (source, destination, channel): one ring, consumed in order, and the executor posts
// one receive per (peer, channel) at a time. A message of another size than its receive is an
// InputError naming both. A peer that dies or stops leaves its rings as they were: the executor's
// progress timeout ends the run, and the bench names the peer (runtime/faults.hpp's board); the
// segments are already unlinked, so nothing is left in /dev/shm either way.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "runtime/transport.hpp"

namespace topocoll::runtime {

class PeerTable;

class ShmTransport final : public Transport {
 public:
  static constexpr int kChannels = 64;             // per peer: topocoll-bench's --channels limit
  static constexpr std::uint32_t kRingSlots = 16;  // descriptors in flight per (pair, channel)

  // Collective over `comm`. `remote`: the transport for peers on other nodes (null when the job
  // has one node; required otherwise). `timeout` bounds the start-up's and allocate's barriers
  // (a JobTimeout naming the ranks `peers` knows to be gone). std::runtime_error naming the call
  // and errno when shared memory cannot be set up.
  ShmTransport(MPI_Comm comm, std::unique_ptr<Transport> remote, std::chrono::milliseconds timeout,
               const PeerTable* peers = nullptr);
  ~ShmTransport() override;
  ShmTransport(const ShmTransport&) = delete;
  ShmTransport& operator=(const ShmTransport&) = delete;

  // Collective over the communicator: `bytes` of zeroed, already faulted-in memory in a region
  // every rank of the node maps. Sends from there are read in place by the receiver. Lives as
  // long as the transport.
  std::byte* allocate(std::size_t bytes);

  Request post_send(int peer, int channel, const void* data, std::size_t bytes) override;
  bool test_send(Request r) override;
  Request post_recv(int peer, int channel, void* dst, std::size_t bytes) override;
  bool test_recv(Request r) override;
  void wait(std::chrono::steady_clock::time_point deadline) override;
  void progress() override;
  // Receive-reduce from the sender's mapped buffer (a message sent from outside the shared
  // regions is copied into the receive's buffer first, then consumed from there).
  bool reads_in_place(int peer) const override { return fused_ && direct(peer); }
  bool test_recv_consume(Request r, Consume consume, void* context) override;
  // Whether receive-reduces read in place (default), or receive into staging then reduce.
  void set_fused(bool on) { fused_ = on; }
  // Whether senders may push (above); off by default. Pushing needs fused receive-reduces.
  void set_push(bool on) { push_ = on; }

  bool pushes() const override { return push_ && fused_ && local_size_ > 1; }
  void begin_run(std::uint64_t fingerprint, std::byte* const* buffers) override;
  void note_progress(int channel, std::uint32_t done) override;
  std::byte* push_target(int peer, int channel, std::uint8_t buffer, std::size_t offset, std::size_t bytes,
                         std::uint32_t gate) override;
  void post_pushed(int peer, int channel, const std::byte* target, std::size_t bytes) override;
  bool test_recv_staged(Request r, const void* wanted, bool& landed) override;
  // Sends to peers on this node so far, and how many of them were pushed.
  std::uint64_t sends() const { return sends_; }
  std::uint64_t pushed() const { return pushed_; }

  bool direct(int peer) const { return local_of_[static_cast<std::size_t>(peer)] >= 0; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // One line for a start-up banner: which peers are direct, and what the others use.
  std::string describe() const;

 private:
  struct Ring;
  struct Board;
  struct Descriptor {
    std::uint32_t region;  // kCma: `address` is the sender's own pointer, read with CMA
    std::uint32_t unused;
    std::uint64_t offset;  // in the region, or the sender's address
    std::uint64_t bytes;
  };
  static constexpr std::uint32_t kCma = UINT32_MAX;
  static constexpr std::uint32_t kPushed = 1u << 31;  // region | kPushed: in the receiver's own region
  struct Slot {
    bool send = false;
    int peer = -1, local = -1, channel = 0;
    std::uint64_t seq = 0;  // send: its number on (peer, channel)
    void* dst = nullptr;
    std::size_t bytes = 0;
  };
  struct Region {
    std::byte* base = nullptr;
    std::size_t bytes = 0;
    std::vector<std::byte*> peer_base;  // per local rank (this rank's own too), mapped read-write
    std::vector<std::size_t> peer_bytes;
  };
  static constexpr Request kRemote = Request{1} << 31;  // bit set: a request of the remote transport

  Ring& ring(int src_local, int dst_local, int channel) const;
  Board& board(int local) const;
  void queue(int local, int channel, const Descriptor& d);
  std::size_t key(int local, int channel) const {
    return static_cast<std::size_t>(local) * kChannels + static_cast<std::size_t>(channel);
  }
  void check(int peer, int channel, const char* what) const;
  bool try_receive(Slot& s, Consume consume = nullptr, void* context = nullptr, const void* wanted = nullptr,
                   bool* landed = nullptr);
  void publish(std::size_t k);
  void publish_all();
  void node_barrier(const std::string& what);
  [[noreturn]] void fail_on_node(const std::string& mine, const std::string& what);
  void agree_ok(const std::string& error, const std::string& what);

  MPI_Comm comm_ = MPI_COMM_NULL, node_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  std::chrono::milliseconds timeout_;
  const PeerTable* peers_ = nullptr;
  std::unique_ptr<Transport> remote_;
  std::vector<int> local_of_;         // per rank: its index on this node, -1 on another node
  std::vector<std::int64_t> pid_of_;  // per local rank
  std::string prefix_;                // of the node's segment names
  std::byte* control_ = nullptr;      // the control segment
  std::size_t control_bytes_ = 0;
  std::vector<Region> regions_;
  std::vector<std::uint64_t> sent_;             // per (dst local, channel): sends posted
  std::vector<std::uint64_t> published_;        // per (dst local, channel): descriptors in the ring
  std::vector<std::uint64_t> received_;         // per (src local, channel): messages copied
  std::vector<std::deque<Descriptor>> queued_;  // per (dst local, channel): waiting for a slot
  std::size_t queued_count_ = 0;
  bool fused_ = true;
  bool push_ = false;
  std::uint64_t run_ = 0;          // runs begun (begin_run)
  std::uint64_t fingerprint_ = 0;  // of the run in progress
  std::uint64_t sends_ = 0, pushed_ = 0;
  RequestSlots<Slot> slots_;
};

}  // namespace topocoll::runtime
