// The device-memory in-process transport and a runner that executes a multi-rank schedule with
// every rank's buffers in the memory of one GPU (issue 5): the GPU counterpart of runtime/inproc,
// for tests and for measuring the CUDA data path without a network.
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
// It implements runtime::Transport, but the executor (runtime/executor.hpp) cannot drive it yet:
// its local copies, reductions and receive-reduce staging are host memcpy / the CPU reducer on
// host memory. run_device_inproc is therefore a small executor of its own (same contract: channels
// in order, FIFO per (source, destination, channel), avg finished once) whose local operations are
// cudaMemcpyAsync and the CUDA reducer on the rank's stream. For the executor to run device
// buffers itself it needs one hook per rank, a memory space: copy (memmove semantics), reduce,
// finish_avg and the allocation of its staging slices, all enqueued on the rank's stream (the host
// versions being today's memmove, runtime::reduce and std::vector). With stream-ordered
// completion its send window needs nothing more: a device send returns kDone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "algorithms/schedule.hpp"
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

// Runs schedule `s` with every rank's buffers in the current device's memory, all ranks driven by
// the calling thread (round-robin over ranks and their channels; a rank's GPU work in order on
// its own stream). Inputs, in-place aliasing and output poisoning exactly as run_inproc, so
// count_wrong_outputs (runtime/inproc.hpp) checks the result. A sweep over every rank in which no
// operation can start means the schedule deadlocks (nothing else could unblock it): InputError
// naming each stuck rank's operation. CudaError when a CUDA call fails.
RunResult run_device_inproc(const algo::Schedule& s, bool in_place);

}  // namespace topocoll::runtime::cuda
