// The device-memory in-process transport (issue 5): ranks as threads of one process, every rank's
// buffers in the memory of one GPU; the GPU counterpart of runtime/inproc, for tests and for
// measuring the CUDA data path without a network. Its runner is cuda::run_device_inproc
// (runtime/testing/run_device_inproc.hpp), the one in-process runner over device memory.
//
//   rank r: stream r ── DeviceTransport(r) ─┐                 ┌─ queue (src, dst, channel): FIFO of
//   rank s: stream s ── DeviceTransport(s) ─┼─ DeviceFabric ──┤   messages {device copy, ready event}
//   ...                                     ┘                 └─ ...
//
// Completion is stream-ordered. post_send enqueues, on the sender's stream, a copy of the source
// into a fresh stream-ordered allocation (cudaMallocAsync) and records an event; it returns kDone
// because every later write of the sender goes on the same stream, after the copy. test_recv,
// once the message is queued, makes the receiver's stream wait for that event, enqueues the copy
// into place and frees the message on the receiver's stream (cudaFreeAsync); "true" means "the
// data is in dst for everything enqueued on this rank's stream from now on". Host threads never
// wait for the GPU on the data path.
//
// With stream-ordered completion the executor's send window holds nothing.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "algorithms/ir/schedule.hpp"
#include "runtime/cuda/reducer.hpp"
#include "runtime/executor.hpp"
#include "runtime/inproc.hpp"

struct CUevent_st;

namespace topocoll::runtime::cuda {

// Shared by the ranks of one run; thread-safe (one mutex around the queues).
class DeviceFabric {
 public:
  explicit DeviceFabric(int ranks);
  ~DeviceFabric();  // frees messages never received (after an error)
  DeviceFabric(const DeviceFabric&) = delete;
  DeviceFabric& operator=(const DeviceFabric&) = delete;
  int ranks() const { return ranks_; }

 private:
  friend class DeviceTransport;
  struct Message {
    void* data = nullptr;  // device memory from cudaMallocAsync; null for 0 bytes
    std::size_t bytes = 0;
    CUevent_st* ready = nullptr;  // recorded on the sender's stream after the copy
  };
  int ranks_;
  std::mutex mu_;
  std::unordered_map<std::uint64_t, std::deque<Message>> queues_;  // key: (src, dst, channel)
  std::atomic<bool> aborted_{false};
  std::string abort_reason_;  // under mu_

 public:
  // Every rank's next DeviceTransport::wait throws Aborted naming `reason` (a rank failed).
  void abort(const std::string& reason);
};

// One rank's view of the fabric; all its GPU work goes on `stream`. Throws CudaError when a CUDA
// call fails, InputError for a message of the wrong size.
class DeviceTransport final : public Transport {
 public:
  DeviceTransport(DeviceFabric& fabric, int rank, Stream stream);
  Request post_send(int peer, int channel, const void* data, std::size_t bytes) override;  // always kDone
  bool test_send(Request r) override;
  Request post_recv(int peer, int channel, void* dst, std::size_t bytes) override;
  bool test_recv(Request r) override;
  void wait(std::chrono::steady_clock::time_point deadline) override;  // yields; throws Aborted after abort()
  Stream stream() const { return stream_; }

 private:
  struct PostedRecv {
    int peer = -1, channel = 0;
    void* dst = nullptr;
    std::size_t bytes = 0;
  };
  DeviceFabric& fabric_;
  int rank_;
  Stream stream_;
  RequestSlots<PostedRecv> posted_;
};

}  // namespace topocoll::runtime::cuda
