// The MPI point-to-point transport (issue 5): runtime::Transport over MPI_Isend/MPI_Irecv, zero
// copy on topocoll's side.
//
//   post_send(peer, ch, data, n)   MPI_Isend straight from `data`, tag = ch (the executor holds
//                                  back writes to `data` until test_send says it completed)
//   post_recv(peer, ch, dst, n)    MPI_Irecv of n bytes straight into `dst`
//   test_send / test_recv          MPI_Test; a completed request's slot returns to the free list
//   wait(deadline)                 yields the core (ranks are often oversubscribed here); MPI
//                                  progresses inside the tests
//
// FIFO per (source, destination, channel) is MPI's non-overtaking rule for one (source, tag,
// communicator). The transport works on its own duplicate of the communicator, with
// MPI_ERRORS_RETURN, so a message of the wrong size is an InputError here (a longer one is MPI's
// truncation error, a shorter one a short count), not an abort of the job. Request slots are kept
// and reused: steady state allocates nothing.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/transport.hpp"

namespace topocoll::runtime {

class MpiTransport final : public Transport {
 public:
  explicit MpiTransport(MPI_Comm comm);
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  Request post_send(int peer, int channel, const void* data, std::size_t bytes) override;
  bool test_send(Request r) override;
  Request post_recv(int peer, int channel, void* dst, std::size_t bytes) override;
  bool test_recv(Request r) override;
  void wait(std::chrono::steady_clock::time_point deadline) override;

  // Blocks until every posted send has completed (the executor already waits for its sends; this
  // is for callers that post by hand).
  void flush();
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  struct Slot {
    MPI_Request request = MPI_REQUEST_NULL;
    bool send = false;
    int peer = -1, channel = 0;
    std::size_t bytes = 0;
  };
  Request post(bool send, int peer, int channel, void* data, std::size_t bytes);
  void check_peer(int peer, std::size_t bytes, const char* what) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  RequestSlots<Slot> slots_;
};

// Rounds over MPI (runtime/rounds.hpp): a round's sends and receives are MPI_Isend / MPI_Irecv on
// one tag of a private duplicate communicator, so messages between two ranks match in issue order,
// as NCCL matches them; end_round waits for all of them (MPI_Testall), for at most `timeout`, then
// throws PeerTimeout naming the round and the peers whose transfers did not complete. The host
// counterpart of NcclRoundTransport: round plans run for real, across processes, without a GPU.
class MpiRoundTransport final : public RoundTransport {
 public:
  MpiRoundTransport(MPI_Comm comm, std::chrono::milliseconds timeout);
  ~MpiRoundTransport() override;
  MpiRoundTransport(const MpiRoundTransport&) = delete;
  MpiRoundTransport& operator=(const MpiRoundTransport&) = delete;
  void send(int peer, const void* src, std::size_t bytes) override;
  void recv(int peer, void* dst, std::size_t bytes) override;
  void end_round() override;
  void restart() { round_ = 0; }  // before each run: rounds are counted for error messages

 private:
  void post(bool send, int peer, void* data, std::size_t bytes);
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::chrono::milliseconds timeout_;
  int round_ = 0;
  std::vector<MPI_Request> requests_;
  std::vector<int> peers_;  // per request
};

}  // namespace topocoll::runtime
