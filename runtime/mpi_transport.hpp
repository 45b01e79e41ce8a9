// The MPI point-to-point transport (issue 5, part 1): runtime::Transport over MPI_Isend/MPI_Irecv.
//
//   post_send(peer, ch, data, n)   copy data into a staging buffer from the pool, MPI_Isend it
//                                  with tag = ch; the buffer returns to the pool when MPI_Test
//                                  says the send completed (so `data` is reusable at once, as the
//                                  Transport contract wants)
//   try_recv(peer, ch, n, deliver) the first call for (peer, ch) posts an MPI_Irecv of n bytes into
//                                  a pool buffer; this and later calls MPI_Test it; when complete,
//                                  deliver(buffer), the buffer goes back to the pool
//   wait(deadline)                 tests the pending sends (MPI progresses inside its calls) and
//                                  yields the core (ranks are often oversubscribed here)
//
// FIFO per (source, destination, channel) is MPI's non-overtaking rule for one (source, tag,
// communicator). The transport works on its own duplicate of the communicator, with
// MPI_ERRORS_RETURN, so a message of the wrong size is an InputError here (truncation or short
// count), not an abort of the job. Pool buffers are kept and reused: steady state allocates
// nothing. Cost: each message is copied twice (send staging and receive staging) on top of MPI's
// own copies; receiving straight into place is for a later slice.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/executor.hpp"

namespace topocoll::runtime {

class MpiTransport final : public Transport {
 public:
  explicit MpiTransport(MPI_Comm comm);
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  void post_send(int peer, int channel, const void* data, std::size_t bytes) override;
  bool try_recv(int peer, int channel, std::size_t bytes, const std::function<void(const void* data)>& deliver) override;
  void wait(std::chrono::steady_clock::time_point deadline) override;

  // Blocks until every posted send has completed (call before freeing the job, e.g. MPI_Finalize).
  void flush();
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  struct PendingRecv {
    bool active = false;
    MPI_Request request = MPI_REQUEST_NULL;
    std::size_t buffer = 0;  // index into buffers_
    std::size_t bytes = 0;
  };
  std::size_t acquire(std::size_t bytes);  // a free pool buffer of at least `bytes`
  void release(std::size_t buffer);
  void progress_sends();
  PendingRecv& pending(int peer, int channel);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::vector<std::vector<std::byte>> buffers_;  // the pool
  std::vector<std::size_t> free_;                // indices of free pool buffers
  std::vector<MPI_Request> send_requests_;       // in flight
  std::vector<std::size_t> send_buffers_;        // parallel to send_requests_
  std::vector<int> completed_;                   // scratch for MPI_Testsome
  std::vector<std::vector<PendingRecv>> recvs_;  // [peer][channel]
};

}  // namespace topocoll::runtime
