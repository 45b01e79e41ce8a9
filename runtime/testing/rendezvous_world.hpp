// A rendezvous world for run_in_world (runtime/testing/run_inproc.hpp): the in-process fabric with
// sends that complete only once their peer has received them, as MPI's and UCX's large messages
// do (InprocTransport completes every send at once, so it never fills the executor's send
// window). Test code, header-only.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/inproc.hpp"
#include "runtime/testing/run_inproc.hpp"

namespace topocoll::runtime {

// Messages received per (source, destination, channel), shared by the ranks of one run.
struct Receipts {
  Receipts(int ranks, int channels)
      : ranks(ranks), channels(channels), counts(static_cast<std::size_t>(ranks * ranks * channels)) {}
  std::atomic<std::uint64_t>& at(int src, int dst, int ch) {
    return counts[static_cast<std::size_t>((src * ranks + dst) * channels + ch)];
  }
  int ranks, channels;
  std::vector<std::atomic<std::uint64_t>> counts;
};

// The in-process transport with rendezvous completion: send k from r to peer on a channel
// completes once the peer has received k + 1 messages from r there.
class RendezvousTransport final : public Transport {
 public:
  RendezvousTransport(InprocFabric& fabric, int rank, Receipts& receipts)
      : inner_(fabric, rank),
        rank_(rank),
        receipts_(receipts),
        sent_(static_cast<std::size_t>(receipts.ranks * receipts.channels), 0) {}
  Request post_send(int peer, int channel, const void* data, std::size_t bytes) override {
    inner_.post_send(peer, channel, data, bytes);
    std::uint64_t& seq = sent_[static_cast<std::size_t>(peer * receipts_.channels + channel)];
    sends_.push_back({peer, channel, seq++});
    return static_cast<Request>(sends_.size() - 1);
  }
  bool test_send(Request r) override {
    const Send& s = sends_[r];
    return receipts_.at(rank_, s.peer, s.channel).load() > s.seq;
  }
  Request post_recv(int peer, int channel, void* dst, std::size_t bytes) override {
    const Request q = inner_.post_recv(peer, channel, dst, bytes);
    if (q == kDone) {
      ++receipts_.at(peer, rank_, channel);
      return kDone;
    }
    recvs_.push_back({q, peer, channel});
    return static_cast<Request>(recvs_.size() - 1);
  }
  bool test_recv(Request r) override {
    const Recv& v = recvs_[r];
    if (!inner_.test_recv(v.inner)) return false;
    ++receipts_.at(v.peer, rank_, v.channel);
    return true;
  }
  void wait(std::chrono::steady_clock::time_point deadline) override {
    // A peer's receipt wakes nobody: nap briefly instead of sleeping to the deadline.
    inner_.wait(std::min(deadline, std::chrono::steady_clock::now() + std::chrono::microseconds(200)));
  }

 private:
  struct Send {
    int peer, channel;
    std::uint64_t seq;
  };
  struct Recv {
    Request inner;
    int peer, channel;
  };
  InprocTransport inner_;
  int rank_;
  Receipts& receipts_;
  std::vector<std::uint64_t> sent_;
  std::vector<Send> sends_;
  std::vector<Recv> recvs_;
};

class RendezvousWorld final : public InprocWorld {
 public:
  RendezvousWorld(int ranks, int channels) : fabric_(ranks), receipts_(ranks, channels) {}
  MemorySpace& memory() override { return host_memory(); }
  void upload(void* dst, const void* host, std::size_t bytes) override { std::memcpy(dst, host, bytes); }
  void download(void* host, const void* src, std::size_t bytes) override { std::memcpy(host, src, bytes); }
  void run_rank(const algo::Schedule& s, int r, const Buffers& b, const ExecOptions& o) override {
    RendezvousTransport t(fabric_, r, receipts_);
    execute(s, r, b, t, o);
  }
  void abort(const std::string& reason) override { fabric_.abort(reason); }

 private:
  InprocFabric fabric_;
  Receipts receipts_;
};

}  // namespace topocoll::runtime
