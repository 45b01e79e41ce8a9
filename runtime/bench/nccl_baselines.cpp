// The NCCL baselines of the measured bench (contract in nccl_baselines.hpp). Built only with NCCL.
#include "runtime/bench/nccl_baselines.hpp"

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <stdexcept>
#include <thread>

#include "common/errors.hpp"
#include "runtime/bench/placement.hpp"
#include "runtime/cuda/device_memory.hpp"
#include "runtime/cuda/nccl_transport.hpp"
#include "runtime/cuda/reducer.hpp"
#include "runtime/cuda/status.hpp"
#include "runtime/rounds.hpp"
#include "runtime/test_data.hpp"

namespace topocoll::runtime {

namespace {

void check(cudaError_t e, const char* where) {
  cuda::throw_if_failed(cuda::Status{static_cast<int>(e), where});
}

void check_nccl(ncclResult_t r, const char* where, ncclComm_t comm) {
  if (r == ncclSuccess) return;
  const char* last = ncclGetLastError(comm);
  throw cuda::NcclError(
      fmt::format("{}: {}{}{}", where, ncclGetErrorString(r), last && *last ? ": " : "", last ? last : ""));
}

ncclDataType_t nccl_type(algo::DataType t) {
  switch (t) {
    case algo::DataType::Int8:
      return ncclInt8;
    case algo::DataType::Uint8:
      return ncclUint8;
    case algo::DataType::Int32:
      return ncclInt32;
    case algo::DataType::Uint32:
      return ncclUint32;
    case algo::DataType::Int64:
      return ncclInt64;
    case algo::DataType::Uint64:
      return ncclUint64;
    case algo::DataType::Float16:
      return ncclFloat16;
    case algo::DataType::BFloat16:
      return ncclBfloat16;
    case algo::DataType::Float32:
      return ncclFloat32;
    case algo::DataType::Float64:
      return ncclFloat64;
  }
  throw InternalError(fmt::format("nccl_type: unknown DataType {}", static_cast<int>(t)));
}

ncclRedOp_t nccl_op(algo::ReduceOp op) {
  switch (op) {
    case algo::ReduceOp::Sum:
    case algo::ReduceOp::Avg:
      return ncclSum;  // avg: finish_avg afterwards (see the header)
    case algo::ReduceOp::Prod:
      return ncclProd;
    case algo::ReduceOp::Min:
      return ncclMin;
    case algo::ReduceOp::Max:
      return ncclMax;
  }
  throw InternalError(fmt::format("nccl_op: unknown ReduceOp {}", static_cast<int>(op)));
}

// The NCCL_ALGO each baseline forces ("" = NCCL's own choice).
std::string forced_algo(const std::string& name) {
  if (name == "nccl-ring") return "Ring";
  if (name == "nccl-tree") return "Tree";
  return "";
}

// Picks the GPU before anything allocates on it.
int select_device(int local_rank) {
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  const int device = local_rank % devices;
  check(cudaSetDevice(device), "cudaSetDevice");
  return device;
}

class Baselines final : public NcclBaselines {
 public:
  Baselines(MPI_Comm comm, int local_rank, std::uint64_t max_bytes, const std::vector<std::string>& names,
            std::chrono::milliseconds timeout)
      : device_(select_device(local_rank)),
        input_(max_bytes),
        output_(max_bytes),
        host_(kHostChunkBytes),
        expected_(kHostChunkBytes),
        timeout_(timeout) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &ranks_);
    bool schedules = false;
    for (const std::string& name : names) {  // mpi is not ours; other names are topocoll's schedules
      if (is_nccl_baseline(name) && !comms_.count(name))
        comms_.emplace(name, std::make_unique<cuda::NcclComm>(comm, forced_algo(name)));
      schedules = schedules || (!is_nccl_baseline(name) && name != "mpi");
    }
    if (schedules) {
      schedule_comm_ = std::make_unique<cuda::NcclComm>(comm);
      transport_ = std::make_unique<cuda::NcclTransport>(*schedule_comm_, stream_.get());
      rounds_ = std::make_unique<cuda::NcclRoundTransport>(*transport_);
    }
  }

  void bind_schedule(const algo::Schedule& s, int rank) override {
    if (!transport_) throw InputError("nccl: no communicator was set up for topocoll's schedules");
    executor_.reset();
    const std::size_t scratch = s.scratch_count() * algo::size_of(s.args().dtype);
    if (!scratch_.data() || scratch_.size() < scratch) scratch_ = cuda::DeviceBuffer(scratch);
    std::vector<runtime::RoundPlan> plans = runtime::plan_rounds(s);
    executor_.emplace(s, rank, std::move(plans[static_cast<std::size_t>(rank)]), space_);
    executor_name_ = s.name();
    executor_args_ = s.args();
  }

  double run_schedule_us(bool in_place) override {
    if (!executor_) throw InputError("nccl: run_schedule_us before bind_schedule");
    const PlacedBuffers b = placed(executor_args_, in_place);
    rounds_->restart();
    const auto t0 = std::chrono::steady_clock::now();
    executor_->run(runtime::Buffers{b.input, b.output, scratch_.data()}, *rounds_);
    try {
      transport_->synchronize(timeout_, fmt::format("rank {}: {} over NCCL", rank_, executor_name_));
    } catch (const cuda::NcclError& e) {
      // Which round the GPU is stuck in, and so which peers have not matched its transfers.
      const int k = rounds_->first_unfinished();
      std::string peers;
      for (int p : executor_->peers(k)) peers += (peers.empty() ? "" : ",") + std::to_string(p);
      throw cuda::NcclError(fmt::format("{} (round {} of {} unfinished: its transfers with rank(s) {} never matched)",
                                        e.what(), k, executor_->rounds(), peers.empty() ? "none" : peers));
    }
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }

  std::string describe() const override {
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, device_);
    const char* env = std::getenv("NCCL_ALGO");
    return fmt::format(
        "NCCL {}, rank {} on GPU {} ({}); nccl-ring / nccl-tree: NCCL_ALGO=Ring / Tree set at communicator "
        "init; nccl: {}; avg = ncclSum + finish_avg",
        cuda::nccl_version(), rank_, device_, prop.name,
        env ? fmt::format("NCCL_ALGO={} from the environment", env) : std::string("NCCL's own choice"));
  }

  void fill(const algo::CollectiveArgs& a, bool in_place) override {
    const std::size_t elem = algo::size_of(a.dtype), chunk = kHostChunkBytes / elem;
    const PlacedBuffers b = placed(a, in_place);
    const std::uint64_t out_n = a.output_count(), in_n = a.input_count();
    if ((!in_place || a.collective == algo::Collective::AllGather) && out_n > 0)
      check(cudaMemset(b.output, 0xA5, out_n * elem), "cudaMemset");
    for (std::uint64_t off = 0; off < in_n; off += chunk) {
      const std::size_t c = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, in_n - off));
      runtime::fill_collective_input(a, rank_, off, host_.data(), c);
      check(cudaMemcpy(b.input + off * elem, host_.data(), c * elem, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
    }
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }

  double run_us(const std::string& name, const algo::CollectiveArgs& a, bool in_place) override {
    auto it = comms_.find(name);
    if (it == comms_.end()) throw InputError(fmt::format("nccl baselines: '{}' was not set up", name));
    ncclComm_t comm = it->second->get();
    const PlacedBuffers b = placed(a, in_place);
    const auto t0 = std::chrono::steady_clock::now();
    const char* call = start_collective(a, b, comm);
    // Avg's division on the ranks whose output is a reduction (as runtime::finish_avg decides).
    const bool reduced = algo::reduces(a.collective) && (a.collective != algo::Collective::Reduce || rank_ == a.root);
    if (a.op == algo::ReduceOp::Avg && reduced)
      cuda::throw_if_failed(cuda::finish_avg(a.dtype, b.output, a.count, ranks_, stream_.get()));
    wait_bounded(*it->second, fmt::format("rank {}: {} ({})", rank_, name, call));
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }

  std::uint64_t count_wrong(const algo::CollectiveArgs& a, bool in_place) override {
    const std::size_t elem = algo::size_of(a.dtype), chunk = kHostChunkBytes / elem;
    const std::byte* out = placed(a, in_place).output;
    const std::uint64_t out_n = a.defined_output_count(rank_);
    std::uint64_t wrong = 0;
    for (std::uint64_t off = 0; off < out_n; off += chunk) {
      const std::size_t c = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, out_n - off));
      if (!runtime::fill_collective_expected(a, rank_, off, expected_.data(), c)) return 0;
      check(cudaMemcpy(host_.data(), out + off * elem, c * elem, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
      wrong += runtime::count_wrong(a.dtype, host_.data(), expected_.data(), c);
    }
    return wrong;
  }

 private:
  PlacedBuffers placed(const algo::CollectiveArgs& a, bool in_place) {
    return place(bench_placement(a, rank_, in_place), input_.data(), output_.data(), algo::size_of(a.dtype));
  }

  // NCCL's collective of `a` on `b`, enqueued on the stream; returns the call's name.
  const char* start_collective(const algo::CollectiveArgs& a, const PlacedBuffers& b, ncclComm_t comm) {
    const ncclDataType_t type = nccl_type(a.dtype);
    const ncclRedOp_t op = nccl_op(a.op);
    cudaStream_t stream = stream_.get();
    switch (a.collective) {
      case algo::Collective::AllReduce:
        check_nccl(ncclAllReduce(b.input, b.output, a.count, type, op, comm, stream), "ncclAllReduce", comm);
        return "ncclAllReduce";
      case algo::Collective::AllGather:
        check_nccl(ncclAllGather(b.input, b.output, a.count, type, comm, stream), "ncclAllGather", comm);
        return "ncclAllGather";
      case algo::Collective::ReduceScatter:
        check_nccl(ncclReduceScatter(b.input, b.output, a.count, type, op, comm, stream), "ncclReduceScatter", comm);
        return "ncclReduceScatter";
      case algo::Collective::Broadcast:
        check_nccl(ncclBroadcast(b.input, b.output, a.count, type, a.root, comm, stream), "ncclBroadcast", comm);
        return "ncclBroadcast";
      case algo::Collective::Reduce:
        check_nccl(ncclReduce(b.input, b.output, a.count, type, op, a.root, comm, stream), "ncclReduce", comm);
        return "ncclReduce";
      case algo::Collective::AllToAll:
        return start_alltoall(a, b, comm);
      case algo::Collective::AllToAllV:
        return start_alltoallv(a, b, comm);
    }
    throw InternalError(fmt::format("nccl baselines: unknown collective {}", static_cast<int>(a.collective)));
  }

  // ncclAlltoAll where nccl.h has it (2.28 and later), else the grouped sends and receives.
  const char* start_alltoall(const algo::CollectiveArgs& a, const PlacedBuffers& b, ncclComm_t comm) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
    check_nccl(ncclAlltoAll(b.input, b.output, a.count, nccl_type(a.dtype), comm, stream_.get()), "ncclAlltoAll", comm);
    return "ncclAlltoAll";
#else
    return start_alltoall_grouped(a, b, comm);
#endif
  }

  // An all-to-allv as NCCL users write one (NCCL has no ncclAlltoAllv): one group of a send and a
  // receive per peer, of the matrix's sizes at its displacements (empty blocks skipped).
  const char* start_alltoallv(const algo::CollectiveArgs& a, const PlacedBuffers& b, ncclComm_t comm) {
    const algo::AllToAllVSizes& m = *a.sizes;
    const ncclDataType_t type = nccl_type(a.dtype);
    const std::size_t elem = algo::size_of(a.dtype);
    check_nccl(ncclGroupStart(), "ncclGroupStart", comm);
    for (int peer = 0; peer < ranks_; ++peer) {
      if (const std::uint64_t n = m.count(rank_, peer); n > 0)
        check_nccl(ncclSend(b.input + m.send_displ(rank_, peer) * elem, n, type, peer, comm, stream_.get()), "ncclSend",
                   comm);
      if (const std::uint64_t n = m.count(peer, rank_); n > 0)
        check_nccl(ncclRecv(b.output + m.recv_displ(rank_, peer) * elem, n, type, peer, comm, stream_.get()),
                   "ncclRecv", comm);
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd", comm);
    return "ncclSend / ncclRecv";
  }

  // nccl-tests' alltoall before ncclAlltoAll: one group of a send and a receive per peer.
  const char* start_alltoall_grouped(const algo::CollectiveArgs& a, const PlacedBuffers& b, ncclComm_t comm) {
    const ncclDataType_t type = nccl_type(a.dtype);
    const std::size_t block = a.count * algo::size_of(a.dtype);
    check_nccl(ncclGroupStart(), "ncclGroupStart", comm);
    for (int peer = 0; peer < ranks_; ++peer) {
      const std::size_t at = static_cast<std::size_t>(peer) * block;
      check_nccl(ncclSend(b.input + at, a.count, type, peer, comm, stream_.get()), "ncclSend", comm);
      check_nccl(ncclRecv(b.output + at, a.count, type, peer, comm, stream_.get()), "ncclRecv", comm);
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd", comm);
    return "ncclSend / ncclRecv";
  }

  // The stream, polled for at most the progress timeout; then the communicator is aborted and an
  // NcclError names the call (a dead peer never joins the collective).
  void wait_bounded(cuda::NcclComm& comm, const std::string& what) {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (;;) {
      const cudaError_t e = cudaStreamQuery(stream_.get());
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady) check(e, "cudaStreamQuery");
      if (std::chrono::steady_clock::now() >= deadline) {
        comm.abort();
        throw cuda::NcclError(fmt::format("{}: no progress for {} ms; communicator aborted", what, timeout_.count()));
      }
      std::this_thread::yield();
    }
  }

  static constexpr std::size_t kHostChunkBytes = std::size_t{1} << 22;  // host staging for fill / check
  int device_ = 0;
  int rank_ = 0, ranks_ = 1;
  cuda::DeviceBuffer input_, output_;
  cuda::ScopedStream stream_;
  std::vector<std::byte> host_, expected_;
  std::map<std::string, std::unique_ptr<cuda::NcclComm>> comms_;
  // topocoll's schedules: NCCL's defaults, device memory on the stream, one bound executor.
  std::unique_ptr<cuda::NcclComm> schedule_comm_;
  std::unique_ptr<cuda::NcclTransport> transport_;
  cuda::DeviceSpace space_{stream_.get()};
  cuda::DeviceBuffer scratch_;  // grown by bind_schedule
  std::optional<runtime::RoundExecutor> executor_;
  std::string executor_name_;
  algo::CollectiveArgs executor_args_;
  std::unique_ptr<cuda::NcclRoundTransport> rounds_;
  std::chrono::milliseconds timeout_;
};

}  // namespace

bool nccl_available(std::string* why) {
  return cuda::device_available(why);
}

std::unique_ptr<NcclBaselines> make_nccl_baselines(MPI_Comm comm, int local_rank, std::uint64_t max_bytes,
                                                   const std::vector<std::string>& names,
                                                   std::chrono::milliseconds timeout) {
  return std::make_unique<Baselines>(comm, local_rank, max_bytes, names, timeout);
}

}  // namespace topocoll::runtime
