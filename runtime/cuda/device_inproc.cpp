#include "runtime/cuda/device_inproc.hpp"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "common/errors.hpp"
#include "runtime/test_data.hpp"

namespace topocoll::runtime::cuda {

using algo::BufferId;
using algo::Collective;
using algo::OpKind;

namespace {

void check(cudaError_t e, const char* where) { throw_if_failed(Status{static_cast<int>(e), where}); }

std::uint64_t queue_key(int src, int dst, int channel) {
  // 20 bits of rank each, 24 of channel: far beyond any run in one process.
  return (static_cast<std::uint64_t>(src) << 44) | (static_cast<std::uint64_t>(dst) << 24) |
         static_cast<std::uint64_t>(channel);
}

bool overlap(const std::byte* a, const std::byte* b, std::size_t bytes) { return a < b + bytes && b < a + bytes; }

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
    throw InputError(fmt::format("DeviceTransport: rank {} is not a rank of the fabric (0..{})", rank, fabric.ranks() - 1));
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

bool DeviceTransport::test_send(Request) { return true; }

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
      throw InputError(fmt::format("device inproc: rank {} receives {} bytes from rank {} on channel {}, but the next message has {} bytes",
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
  StreamHandle(StreamHandle&& o) noexcept : s(o.s) { o.s = nullptr; }
  ~StreamHandle() {
    if (s) cudaStreamDestroy(s);
  }
};

// The first element (global index) of rank r's input as test_data numbers it (as run_inproc).
std::uint64_t input_offset(const algo::CollectiveArgs& a, int r) {
  return a.collective == Collective::AllGather ? static_cast<std::uint64_t>(r) * a.count : 0;
}

// One rank: its memory (laid out and aliased as run_inproc does), its program bound to device
// pointers, per-channel progress.
struct Rank {
  struct Bound {
    OpKind kind{};
    int peer = -1, channel = 0;
    std::byte* src = nullptr;
    std::byte* dst = nullptr;
    std::size_t count = 0, bytes = 0;
    std::size_t index = 0;  // in the program
  };
  struct Channel {
    std::vector<std::size_t> ops;
    std::size_t next = 0;
    bool posted = false;
    Transport::Request request = Transport::kDone;
    std::byte* staging = nullptr;  // receive-reduce slice
    bool done() const { return next == ops.size(); }
  };
  int rank = 0;
  StreamHandle stream;
  DeviceMemory input, output, scratch, staging;
  std::byte* base[3] = {};
  std::size_t output_bytes = 0;
  algo::Program program;
  std::vector<Bound> ops;
  std::vector<Channel> channels;
  std::unique_ptr<DeviceTransport> transport;
};

// Allocates and fills rank r's buffers: the host image is built as run_inproc builds it, then
// uploaded; in place, one allocation holds input and output.
void prepare_memory(const algo::Schedule& s, bool in_place, Rank& rk) {
  const algo::CollectiveArgs& a = s.args();
  const int r = rk.rank;
  const std::size_t elem = algo::size_of(a.dtype);
  const std::size_t in_n = a.input_count(), out_n = a.output_count();
  const std::size_t block = static_cast<std::size_t>(a.count) * static_cast<std::size_t>(r) * elem;
  rk.output_bytes = out_n * elem;
  auto upload = [&](DeviceMemory& to, const std::vector<unsigned char>& host) {
    to = DeviceMemory(host.size());
    if (!host.empty()) check(cudaMemcpy(to.data, host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  };
  upload(rk.scratch, std::vector<unsigned char>(s.scratch_count() * elem, kScratchPoison));
  rk.base[2] = rk.scratch.data;
  std::vector<unsigned char> host;
  if (!in_place) {
    host.resize(in_n * elem);
    fill_input(a.dtype, a.op, r, a.ranks, input_offset(a, r), host.data(), in_n);
    upload(rk.input, host);
    upload(rk.output, std::vector<unsigned char>(out_n * elem, kOutputPoison));
    rk.base[0] = rk.input.data;
    rk.base[1] = rk.output.data;
    return;
  }
  switch (a.collective) {
    case Collective::ReduceScatter:  // the output is block r of the input
      host.resize(in_n * elem);
      fill_input(a.dtype, a.op, r, a.ranks, 0, host.data(), in_n);
      upload(rk.input, host);
      rk.base[0] = rk.input.data;
      rk.base[1] = rk.input.data + block;
      break;
    case Collective::AllGather:  // the input is block r of the output
      host.assign(out_n * elem, kOutputPoison);
      fill_input(a.dtype, a.op, r, a.ranks, input_offset(a, r), host.data() + block, in_n);
      upload(rk.output, host);
      rk.base[1] = rk.output.data;
      rk.base[0] = rk.output.data + block;
      break;
    default:  // allreduce, broadcast, reduce: one buffer
      host.resize(out_n * elem);
      fill_input(a.dtype, a.op, r, a.ranks, 0, host.data(), in_n);
      upload(rk.output, host);
      rk.base[0] = rk.base[1] = rk.output.data;
      break;
  }
}

// Setup: the program's chunks resolved to device pointers (bounds checked), split per channel,
// one receive-reduce staging slice per channel.
void bind(const algo::Schedule& s, Rank& rk) {
  const algo::CollectiveArgs& a = s.args();
  const std::size_t elem = algo::size_of(a.dtype);
  rk.program = s.program(rk.rank);
  rk.ops.resize(rk.program.size());
  rk.channels.resize(static_cast<std::size_t>(std::max(s.num_channels(), 0)));
  auto where = [&](std::size_t i) { return fmt::format("rank {} op {} ({})", rk.rank, i, algo::describe(rk.program[i])); };
  auto resolve = [&](std::size_t i, const algo::Chunk& c) -> std::byte* {
    if (c.end() > s.buffer_count(c.buffer) || c.end() < c.offset)
      throw InputError(fmt::format("device inproc: {}: {}[{}:{}] is outside the buffer of {} elements", where(i),
                                   algo::to_string(c.buffer), c.offset, c.end(), s.buffer_count(c.buffer)));
    return rk.base[static_cast<int>(c.buffer)] + c.offset * elem;
  };
  std::vector<std::size_t> staging_bytes(rk.channels.size(), 0);
  for (std::size_t i = 0; i < rk.program.size(); ++i) {
    const algo::Op& op = rk.program[i];
    Rank::Bound& b = rk.ops[i];
    if (op.channel >= rk.channels.size())
      throw InputError(fmt::format("device inproc: {}: channel {} of {}", where(i), op.channel, s.num_channels()));
    b.kind = op.kind;
    b.peer = op.peer;
    b.channel = op.channel;
    b.index = i;
    b.count = static_cast<std::size_t>(op.count());
    b.bytes = b.count * elem;
    if (op.kind == OpKind::Send || op.kind == OpKind::Copy || op.kind == OpKind::Reduce) b.src = resolve(i, op.src);
    if (op.kind != OpKind::Send) b.dst = resolve(i, op.dst);
    if ((op.kind == OpKind::Copy || op.kind == OpKind::Reduce) && op.src.count != op.dst.count)
      throw InputError(fmt::format("device inproc: {}: {} elements into {}", where(i), op.src.count, op.dst.count));
    if (op.kind == OpKind::RecvReduce) staging_bytes[op.channel] = std::max(staging_bytes[op.channel], b.bytes);
    rk.channels[op.channel].ops.push_back(i);
  }
  // One allocation for every channel's slice, each slice 256-byte aligned (vector loads).
  std::size_t total = 0;
  for (std::size_t& bytes : staging_bytes) {
    const std::size_t offset = total;
    total += (bytes + 255) / 256 * 256;
    bytes = offset;
  }
  rk.staging = DeviceMemory(total);
  for (std::size_t c = 0; c < rk.channels.size(); ++c) rk.channels[c].staging = rk.staging.data + staging_bytes[c];
}

// Copies `bytes` from src to dst on the stream with memmove semantics (a partial overlap goes
// through a stream-ordered temporary).
void copy_async(std::byte* dst, const std::byte* src, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0 || dst == src) return;
  if (!overlap(dst, src, bytes)) {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync (copy)");
    return;
  }
  void* tmp = nullptr;
  check(cudaMallocAsync(&tmp, bytes, stream), "cudaMallocAsync (staging)");
  check(cudaMemcpyAsync(tmp, src, bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync (staging)");
  check(cudaMemcpyAsync(dst, tmp, bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync (copy)");
  check(cudaFreeAsync(tmp, stream), "cudaFreeAsync (staging)");
}

// Runs one operation of a rank (enqueues its GPU work); false when it is a receive whose message
// has not been sent yet.
bool step(const algo::CollectiveArgs& a, Rank& rk, Rank::Channel& ch, const Rank::Bound& b) {
  cudaStream_t stream = rk.stream.s;
  switch (b.kind) {
    case OpKind::Send:
      rk.transport->post_send(b.peer, b.channel, b.src, b.bytes);
      return true;
    case OpKind::Recv:
    case OpKind::RecvReduce: {
      if (!ch.posted) {
        ch.request = rk.transport->post_recv(b.peer, b.channel, b.kind == OpKind::Recv ? b.dst : ch.staging, b.bytes);
        ch.posted = true;
      }
      if (!rk.transport->test_recv(ch.request)) return false;
      ch.posted = false;
      if (b.kind == OpKind::RecvReduce) throw_if_failed(reduce(a.dtype, a.op, b.dst, ch.staging, b.count, stream));
      return true;
    }
    case OpKind::Copy:
      copy_async(b.dst, b.src, b.bytes, stream);
      return true;
    case OpKind::Reduce: {
      if (b.count == 0) return true;
      if (b.src != b.dst && overlap(b.src, b.dst, b.bytes)) {
        // The reducer takes identical or disjoint operands: reduce from a stream-ordered copy.
        void* tmp = nullptr;
        check(cudaMallocAsync(&tmp, b.bytes, stream), "cudaMallocAsync (staging)");
        check(cudaMemcpyAsync(tmp, b.src, b.bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync (staging)");
        throw_if_failed(reduce(a.dtype, a.op, b.dst, tmp, b.count, stream));
        check(cudaFreeAsync(tmp, stream), "cudaFreeAsync (staging)");
      } else {
        throw_if_failed(reduce(a.dtype, a.op, b.dst, b.src, b.count, stream));
      }
      return true;
    }
  }
  return true;
}

}  // namespace

RunResult run_device_inproc(const algo::Schedule& s, bool in_place) {
  const algo::CollectiveArgs& a = s.args();
  const int p = s.num_ranks();
  DeviceFabric fabric(p);
  std::vector<Rank> ranks(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    Rank& rk = ranks[static_cast<std::size_t>(r)];
    rk.rank = r;
    prepare_memory(s, in_place, rk);
    bind(s, rk);
    rk.transport = std::make_unique<DeviceTransport>(fabric, r, rk.stream.s);
  }
  // The uploads ran on the legacy stream, which the ranks' non-blocking streams do not wait for.
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (after the uploads)");

  // Round-robin over ranks, and within a rank over its channels: each channel runs its ops in
  // order until it finishes or its next op is a receive whose message is not queued yet. Every
  // message is queued by this thread, so a sweep that starts no op can never be unblocked.
  std::size_t unfinished = 0;
  for (const Rank& rk : ranks)
    for (const Rank::Channel& ch : rk.channels) unfinished += ch.done() ? 0 : 1;
  while (unfinished > 0) {
    bool progressed = false;
    for (Rank& rk : ranks)
      for (Rank::Channel& ch : rk.channels) {
        if (ch.done()) continue;
        while (!ch.done() && step(a, rk, ch, rk.ops[ch.ops[ch.next]])) {
          ++ch.next;
          progressed = true;
        }
        if (ch.done()) --unfinished;
      }
    if (progressed) continue;
    std::string stuck;
    for (const Rank& rk : ranks)
      for (const Rank::Channel& ch : rk.channels)
        if (!ch.done()) {
          const std::size_t i = rk.ops[ch.ops[ch.next]].index;
          stuck += fmt::format("{}rank {} op {} ({})", stuck.empty() ? "" : "; ", rk.rank, i, algo::describe(rk.program[i]));
        }
    throw InputError(fmt::format("device inproc: schedule '{}' deadlocks: {}", s.name(), stuck));
  }

  // Avg: divide what was accumulated as a sum, on the ranks whose output is a reduction.
  for (Rank& rk : ranks) {
    const bool reduces = a.collective == Collective::AllReduce || a.collective == Collective::ReduceScatter ||
                         (a.collective == Collective::Reduce && rk.rank == a.root);
    if (a.op == algo::ReduceOp::Avg && reduces)
      throw_if_failed(finish_avg(a.dtype, rk.base[1], static_cast<std::size_t>(a.output_count()), a.ranks, rk.stream.s));
  }

  RunResult result;
  result.outputs.reserve(static_cast<std::size_t>(p));
  for (Rank& rk : ranks) {
    check(cudaStreamSynchronize(rk.stream.s), "cudaStreamSynchronize");
    std::vector<std::byte> out(rk.output_bytes);
    if (!out.empty()) check(cudaMemcpy(out.data(), rk.base[1], out.size(), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    result.outputs.push_back(std::move(out));
  }
  return result;
}

}  // namespace topocoll::runtime::cuda
