#include "runtime/cuda/device_inproc.hpp"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>

#include "common/errors.hpp"
#include "runtime/cuda/device_memory.hpp"
#include "runtime/test_data.hpp"

namespace topocoll::runtime::cuda {

using algo::BufferId;
using algo::Collective;
using algo::OpKind;

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

// ---- the runner -------------------------------------------------------------------------------

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

namespace {

constexpr unsigned char kOutputPoison = 0xA5;
constexpr unsigned char kScratchPoison = 0x5A;

// Device memory, freed with the object.
struct DeviceMemory {
  std::byte* data = nullptr;
  DeviceMemory() = default;
  explicit DeviceMemory(std::size_t bytes) {
    void* p = nullptr;
    check(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
    data = static_cast<std::byte*>(p);
  }
  DeviceMemory(DeviceMemory&& o) noexcept : data(o.data) { o.data = nullptr; }
  DeviceMemory& operator=(DeviceMemory&& o) noexcept {
    std::swap(data, o.data);
    return *this;
  }
  ~DeviceMemory() {
    if (data) cudaFree(data);
  }
};

struct StreamHandle {
  cudaStream_t s = nullptr;
  StreamHandle() { check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"); }
  StreamHandle(const StreamHandle&) = delete;
  StreamHandle& operator=(const StreamHandle&) = delete;
  ~StreamHandle() {
    if (s) cudaStreamDestroy(s);
  }
};

// The first element (global index) of rank r's input as test_data numbers it (as run_inproc).
std::uint64_t input_offset(const algo::CollectiveArgs& a, int r) {
  return a.collective == Collective::AllGather ? static_cast<std::uint64_t>(r) * a.count : 0;
}

// One rank's memory, laid out and aliased as run_inproc lays it out: the host image is built as
// run_inproc builds it, then uploaded; in place, one allocation holds input and output.
struct RankMemory {
  DeviceMemory input, output, scratch;
  Buffers buffers;
  std::size_t output_bytes = 0;
};

RankMemory prepare_memory(const algo::Schedule& s, bool in_place, int r) {
  const algo::CollectiveArgs& a = s.args();
  const std::size_t elem = algo::size_of(a.dtype);
  const std::size_t in_n = a.input_count(), out_n = a.output_count();
  const std::size_t block = static_cast<std::size_t>(a.count) * static_cast<std::size_t>(r) * elem;
  RankMemory m;
  m.output_bytes = out_n * elem;
  auto upload = [&](DeviceMemory& to, const std::vector<unsigned char>& host) {
    to = DeviceMemory(host.size());
    if (!host.empty()) check(cudaMemcpy(to.data, host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  };
  upload(m.scratch, std::vector<unsigned char>(s.scratch_count() * elem, kScratchPoison));
  m.buffers.scratch = m.scratch.data;
  std::vector<unsigned char> host;
  if (!in_place) {
    host.resize(in_n * elem);
    fill_input(a.dtype, a.op, r, a.ranks, input_offset(a, r), host.data(), in_n);
    upload(m.input, host);
    upload(m.output, std::vector<unsigned char>(out_n * elem, kOutputPoison));
    m.buffers.input = m.input.data;
    m.buffers.output = m.output.data;
    return m;
  }
  switch (a.collective) {
    case Collective::ReduceScatter:  // the output is block r of the input
      host.resize(in_n * elem);
      fill_input(a.dtype, a.op, r, a.ranks, 0, host.data(), in_n);
      upload(m.input, host);
      m.buffers.input = m.input.data;
      m.buffers.output = m.input.data + block;
      break;
    case Collective::AllGather:  // the input is block r of the output
      host.assign(out_n * elem, kOutputPoison);
      fill_input(a.dtype, a.op, r, a.ranks, input_offset(a, r), host.data() + block, in_n);
      upload(m.output, host);
      m.buffers.output = m.output.data;
      m.buffers.input = m.output.data + block;
      break;
    default:  // allreduce, broadcast, reduce: one buffer
      host.resize(out_n * elem);
      fill_input(a.dtype, a.op, r, a.ranks, 0, host.data(), in_n);
      upload(m.output, host);
      m.buffers.input = m.buffers.output = m.output.data;
      break;
  }
  return m;
}

}  // namespace

RunResult run_device_inproc(const algo::Schedule& s, bool in_place, const ExecOptions& o) {
  const int p = s.num_ranks();
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  DeviceFabric fabric(p);
  std::vector<RankMemory> memory;
  for (int r = 0; r < p; ++r) memory.push_back(prepare_memory(s, in_place, r));
  // The uploads ran on the legacy stream, which the ranks' non-blocking streams do not wait for.
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (after the uploads)");

  // A thread per rank runs the executor's Plan on its own stream, with device memory as the
  // plan's memory space (device_memory.hpp): the same executor as every other transport.
  RunResult result;
  result.outputs.resize(static_cast<std::size_t>(p));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(p));
  auto rank_main = [&](int r) {
    try {
      check(cudaSetDevice(device), "cudaSetDevice");
      StreamHandle stream;
      DeviceSpace space(stream.s);
      DeviceTransport transport(fabric, r, stream.s);
      Plan plan(s, r, space);
      plan.run(memory[static_cast<std::size_t>(r)].buffers, transport, o);
      check(cudaStreamSynchronize(stream.s), "cudaStreamSynchronize");
      std::vector<std::byte> out(memory[static_cast<std::size_t>(r)].output_bytes);
      if (!out.empty())
        check(cudaMemcpy(out.data(), memory[static_cast<std::size_t>(r)].buffers.output, out.size(),
                         cudaMemcpyDeviceToHost),
              "cudaMemcpy D2H");
      result.outputs[static_cast<std::size_t>(r)] = std::move(out);
    } catch (...) {
      errors[static_cast<std::size_t>(r)] = std::current_exception();
      try {
        throw;
      } catch (const std::exception& e) {
        fabric.abort(fmt::format("rank {} failed: {}", r, e.what()));
      } catch (...) {
        fabric.abort(fmt::format("rank {} failed", r));
      }
    }
  };
  std::vector<std::thread> threads;
  for (int r = 1; r < p; ++r) threads.emplace_back(rank_main, r);
  rank_main(0);
  for (std::thread& t : threads) t.join();
  // The first real failure, not a rank that was only aborted because of it.
  for (const std::exception_ptr& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const Aborted&) {
      continue;
    }
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return result;
}

}  // namespace topocoll::runtime::cuda
