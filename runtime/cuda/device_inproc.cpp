#include "runtime/cuda/device_inproc.hpp"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <string>
#include <thread>

#include "common/errors.hpp"

namespace topocoll::runtime::cuda {

namespace {

void check(cudaError_t e, const char* where) {
  throw_if_failed(Status{static_cast<int>(e), where});
}

std::uint64_t queue_key(int src, int dst, int channel) {
  // 20 bits of rank each, 24 of channel: far beyond any run in one process.
  return (static_cast<std::uint64_t>(src) << 44) | (static_cast<std::uint64_t>(dst) << 24) |
         static_cast<std::uint64_t>(channel);
}

}  // namespace

// ---- the fabric and its transport ------------------------------------------------------------

DeviceFabric::DeviceFabric(int ranks) : ranks_(ranks) {
  if (ranks < 1 || ranks >= (1 << 20))
    throw InputError(fmt::format("DeviceFabric: {} ranks; expected 1 to {}", ranks, (1 << 20) - 1));
}

DeviceFabric::~DeviceFabric() {
  // Only after an error: wait for the GPU, then free what nobody received.
  cudaDeviceSynchronize();
  for (auto& [key, queue] : queues_)
    for (Message& m : queue) {
      if (m.data) cudaFree(m.data);
      if (m.ready) cudaEventDestroy(m.ready);
    }
}

DeviceTransport::DeviceTransport(DeviceFabric& fabric, int rank, Stream stream)
    : fabric_(fabric), rank_(rank), stream_(stream) {
  if (rank < 0 || rank >= fabric.ranks())
    throw InputError(
        fmt::format("DeviceTransport: rank {} is not a rank of the fabric (0..{})", rank, fabric.ranks() - 1));
}

Transport::Request DeviceTransport::post_send(int peer, int channel, const void* data, std::size_t bytes) {
  if (peer < 0 || peer >= fabric_.ranks())
    throw InputError(fmt::format("device inproc: rank {}: peer {} is not a rank of the fabric (0..{})", rank_, peer,
                                 fabric_.ranks() - 1));
  DeviceFabric::Message m;
  m.bytes = bytes;
  if (bytes > 0) {
    check(cudaMallocAsync(&m.data, bytes, stream_), "cudaMallocAsync (message)");
    check(cudaMemcpyAsync(m.data, data, bytes, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync (send)");
  }
  cudaEvent_t ready = nullptr;
  check(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  m.ready = ready;
  check(cudaEventRecord(ready, stream_), "cudaEventRecord");
  std::lock_guard<std::mutex> lock(fabric_.mu_);
  fabric_.queues_[queue_key(rank_, peer, channel)].push_back(m);
  return kDone;
}

bool DeviceTransport::test_send(Request) {
  return true;
}

Transport::Request DeviceTransport::post_recv(int peer, int channel, void* dst, std::size_t bytes) {
  if (peer < 0 || peer >= fabric_.ranks())
    throw InputError(fmt::format("device inproc: rank {}: peer {} is not a rank of the fabric (0..{})", rank_, peer,
                                 fabric_.ranks() - 1));
  return posted_.acquire(PostedRecv{peer, channel, dst, bytes});
}

bool DeviceTransport::test_recv(Request r) {
  const PostedRecv p = posted_.at(r, "device inproc: test_recv");
  DeviceFabric::Message m;
  {
    std::lock_guard<std::mutex> lock(fabric_.mu_);
    auto it = fabric_.queues_.find(queue_key(p.peer, rank_, p.channel));
    if (it == fabric_.queues_.end() || it->second.empty()) return false;
    if (it->second.front().bytes != p.bytes)
      throw InputError(fmt::format(
          "device inproc: rank {} receives {} bytes from rank {} on channel {}, but the next message has {} bytes",
          rank_, p.bytes, p.peer, p.channel, it->second.front().bytes));
    m = it->second.front();
    it->second.pop_front();
  }
  posted_.release(r);
  // The sender's copy first, then ours, then the message's memory goes back to the pool.
  check(cudaStreamWaitEvent(stream_, m.ready, 0), "cudaStreamWaitEvent");
  check(cudaEventDestroy(m.ready), "cudaEventDestroy");  // released once it has completed
  if (m.bytes > 0) {
    check(cudaMemcpyAsync(p.dst, m.data, m.bytes, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync (recv)");
    check(cudaFreeAsync(m.data, stream_), "cudaFreeAsync (message)");
  }
  return true;
}

void DeviceFabric::abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!aborted_.exchange(true)) abort_reason_ = reason;
}

void DeviceTransport::wait(std::chrono::steady_clock::time_point /*deadline*/) {
  if (fabric_.aborted_) {
    std::lock_guard<std::mutex> lock(fabric_.mu_);
    throw Aborted(fmt::format("rank {}: aborted: {}", rank_, fabric_.abort_reason_));
  }
  std::this_thread::yield();
}

}  // namespace topocoll::runtime::cuda
