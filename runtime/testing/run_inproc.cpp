#include "runtime/testing/run_inproc.hpp"

#include <fmt/format.h>

#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "common/errors.hpp"
#include "runtime/inproc.hpp"
#include "runtime/test_data.hpp"

namespace topocoll::runtime {

using algo::Collective;

namespace {

constexpr std::byte kOutputPoison{0xA5};
constexpr std::byte kScratchPoison{0x5A};

// One rank's memory in the world's space. In place, one allocation holds both input and output,
// aliased as NCCL's in-place calls do (executor.hpp); `buffers` points into it.
struct RankMemory {
  SpaceBuffer input, output, scratch;
  Buffers buffers;
  std::size_t output_bytes = 0;
};

// The host image of each allocation is built here, then uploaded.
RankMemory prepare_rank(const algo::Schedule& s, int r, bool in_place, InprocWorld& world) {
  const algo::CollectiveArgs& a = s.args();
  const std::size_t elem = algo::size_of(a.dtype);
  const std::size_t in_n = static_cast<std::size_t>(a.input_count()),
                    out_n = static_cast<std::size_t>(a.output_count());
  const std::size_t block = static_cast<std::size_t>(a.count) * static_cast<std::size_t>(r) * elem;
  auto upload = [&](const std::vector<std::byte>& host) {
    SpaceBuffer b(world.memory(), host.size());
    if (!host.empty()) world.upload(b.data(), host.data(), host.size());
    return b;
  };
  RankMemory m;
  m.output_bytes = out_n * elem;
  m.scratch = upload(std::vector<std::byte>(static_cast<std::size_t>(s.scratch_count()) * elem, kScratchPoison));
  m.buffers.scratch = m.scratch.data();
  std::vector<std::byte> host;
  if (!in_place) {
    host.resize(in_n * elem);
    fill_collective_input(a, r, 0, host.data(), in_n);
    m.input = upload(host);
    m.output = upload(std::vector<std::byte>(out_n * elem, kOutputPoison));
    m.buffers.input = m.input.data();
    m.buffers.output = m.output.data();
    return m;
  }
  switch (a.collective) {
    case Collective::ReduceScatter:  // the output is block r of the input
      host.resize(in_n * elem);
      fill_collective_input(a, r, 0, host.data(), in_n);
      m.input = upload(host);
      m.buffers.input = m.input.data();
      m.buffers.output = m.input.data() + block;
      break;
    case Collective::AllGather:  // the input is block r of the output
      host.assign(out_n * elem, kOutputPoison);
      fill_collective_input(a, r, 0, host.data() + block, in_n);
      m.output = upload(host);
      m.buffers.output = m.output.data();
      m.buffers.input = m.output.data() + block;
      break;
    default:  // allreduce, broadcast, reduce, alltoall: one buffer
      host.resize(out_n * elem);
      fill_collective_input(a, r, 0, host.data(), in_n);
      m.output = upload(host);
      m.buffers.input = m.buffers.output = m.output.data();
      break;
  }
  return m;
}

bool is_aborted(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const Aborted&) {
    return true;
  } catch (...) {
    return false;
  }
}

std::string describe(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown exception";
  }
}

// Host memory over an InprocFabric.
class HostWorld final : public InprocWorld {
 public:
  explicit HostWorld(int ranks, bool push = false) : fabric_(ranks, push) {}
  std::uint64_t pushed() const { return fabric_.pushed(); }
  MemorySpace& memory() override { return host_memory(); }
  void upload(void* dst, const void* host, std::size_t bytes) override { std::memcpy(dst, host, bytes); }
  void download(void* host, const void* src, std::size_t bytes) override { std::memcpy(host, src, bytes); }
  void run_rank(const algo::Schedule& s, int r, const Buffers& b, const ExecOptions& o) override {
    InprocTransport transport(fabric_, r);
    execute(s, r, b, transport, o);
  }
  void abort(const std::string& reason) override { fabric_.abort(reason); }

 private:
  InprocFabric fabric_;
};

}  // namespace

RunResult run_in_world(const algo::Schedule& s, bool in_place, InprocWorld& world, const ExecOptions& o) {
  const int p = s.num_ranks();
  std::vector<RankMemory> memory;
  memory.reserve(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) memory.push_back(prepare_rank(s, r, in_place, world));
  world.uploaded();

  // The failure rule: the first failure (in time) that is not an Aborted wins. A rank that fails
  // aborts the fabric, and every rank then waiting throws Aborted: those are consequences, and
  // reporting one would hide the cause. Among real failures the earliest is the likely cause (a
  // later one may follow from it, e.g. a peer that receives a half-sent message). An Aborted is
  // kept only while nothing else was recorded, so a run never loses its error.
  std::mutex error_mu;
  std::exception_ptr first_error;
  bool first_is_aborted = false;
  auto record = [&](std::exception_ptr e, const std::string& who) {
    const bool aborted = is_aborted(e);
    const std::string reason = fmt::format("{} failed: {}", who, describe(e));
    {
      std::lock_guard<std::mutex> lock(error_mu);
      if (!first_error || (first_is_aborted && !aborted)) {
        first_error = std::move(e);
        first_is_aborted = aborted;
      }
    }
    world.abort(reason);
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(p));
  try {
    for (int r = 0; r < p; ++r)
      threads.emplace_back([&, r] {
        try {
          world.run_rank(s, r, memory[static_cast<std::size_t>(r)].buffers, o);
        } catch (...) {
          record(std::current_exception(), fmt::format("rank {}", r));
        }
      });
  } catch (...) {  // a thread could not start: stop the ones that did
    record(std::current_exception(), "starting the rank threads");
  }
  for (std::thread& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);

  RunResult result;
  result.outputs.reserve(static_cast<std::size_t>(p));
  for (const RankMemory& m : memory) {
    std::vector<std::byte> out(m.output_bytes);
    if (!out.empty()) world.download(out.data(), m.buffers.output, out.size());
    result.outputs.push_back(std::move(out));
  }
  return result;
}

RunResult run_inproc(const algo::Schedule& s, bool in_place, const ExecOptions& o) {
  HostWorld world(s.num_ranks());
  return run_in_world(s, in_place, world, o);
}

RunResult run_inproc_push(const algo::Schedule& s, bool in_place, std::uint64_t& pushed, const ExecOptions& o) {
  HostWorld world(s.num_ranks(), true);
  RunResult r = run_in_world(s, in_place, world, o);
  pushed = world.pushed();
  return r;
}

std::size_t count_wrong_outputs(const algo::Schedule& s, const RunResult& r) {
  const algo::CollectiveArgs& a = s.args();
  const std::size_t out_bytes = static_cast<std::size_t>(a.output_count()) * algo::size_of(a.dtype);
  if (r.outputs.size() != static_cast<std::size_t>(a.ranks))
    throw InputError(fmt::format("count_wrong_outputs: {} outputs for {} ranks", r.outputs.size(), a.ranks));
  std::size_t wrong = 0;
  // Each rank's output against its closed-form expectation (test_data's per-collective numbering).
  for (int rank = 0; rank < a.ranks; ++rank) {
    const std::vector<std::byte>& got = r.outputs[static_cast<std::size_t>(rank)];
    if (got.size() != out_bytes)
      throw InputError(
          fmt::format("count_wrong_outputs: rank {} has {} output bytes, expected {}", rank, got.size(), out_bytes));
    wrong += static_cast<std::size_t>(count_wrong_output(a, rank, got.data()));
  }
  return wrong;
}

}  // namespace topocoll::runtime
