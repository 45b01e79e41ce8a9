#include "runtime/cuda/nccl_transport.hpp"

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include <cstdlib>
#include <optional>
#include <thread>

#include "common/errors.hpp"

namespace topocoll::runtime::cuda {

namespace {

void check_nccl(ncclResult_t r, const char* where, ncclComm* comm = nullptr) {
  if (r == ncclSuccess || r == ncclInProgress) return;
  const char* last = comm ? ncclGetLastError(comm) : nullptr;
  throw NcclError(fmt::format("{}: {}{}{}", where, ncclGetErrorString(r), last && *last ? ": " : "", last ? last : ""));
}

void check_cuda(cudaError_t e, const char* where) {
  throw_if_failed(Status{static_cast<int>(e), where});
}

void check_mpi(int rc, const char* where) {
  if (rc != MPI_SUCCESS) throw NcclError(fmt::format("{}: MPI error {}", where, rc));
}

// Sets an environment variable for the lifetime of the object, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  // NCCL_VERSION(X,Y,Z): X*10000 + Y*100 + Z since 2.9 (X*1000 + Y*100 + Z before).
  return v >= 20900 ? fmt::format("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100)
                    : fmt::format("{}.{}.{}", v / 1000, (v % 1000) / 100, v % 100);
}

NcclComm::NcclComm(MPI_Comm comm, const std::string& force_algo) {
  check_mpi(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size_), "MPI_Comm_size");
  check_cuda(cudaGetDevice(&device_), "cudaGetDevice");
  ncclUniqueId id{};
  if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  check_mpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm), "MPI_Bcast (ncclUniqueId)");
  std::optional<ScopedEnv> algo;
  if (!force_algo.empty()) algo.emplace("NCCL_ALGO", force_algo);
  ncclComm_t c = nullptr;
  check_nccl(ncclCommInitRank(&c, size_, id, rank_),
             force_algo.empty() ? "ncclCommInitRank" : "ncclCommInitRank (with NCCL_ALGO forced)");
  comm_ = c;
}

void NcclComm::abort() {
  if (comm_) ncclCommAbort(comm_);
  comm_ = nullptr;
}

NcclComm::~NcclComm() {
  if (comm_) {
    ncclCommFinalize(comm_);
    ncclCommDestroy(comm_);
  }
}

NcclTransport::NcclTransport(NcclComm& comm, Stream stream) : comm_(comm), stream_(stream) {}

// Pending is an aggregate: {kind, peer, src, dst, bytes, count, dtype, op}.
void NcclTransport::send(int peer, const void* data, std::size_t bytes) {
  step_.push_back({Pending::Kind::Send, peer, data, nullptr, bytes, 0, {}, {}});
}

void NcclTransport::recv(int peer, void* dst, std::size_t bytes) {
  step_.push_back({Pending::Kind::Recv, peer, nullptr, dst, bytes, 0, {}, {}});
}

void NcclTransport::recv_reduce(int peer, void* dst, std::size_t count, algo::DataType t, algo::ReduceOp op) {
  step_.push_back({Pending::Kind::RecvReduce, peer, nullptr, dst, count * algo::size_of(t), count, t, op});
}

void NcclTransport::end_step() {
  if (step_.empty()) return;
  cudaStream_t stream = stream_;
  for (const Pending& p : step_)
    if (p.peer < 0 || p.peer >= comm_.size())
      throw InputError(fmt::format("nccl transport: rank {}: peer {} is not a rank of the communicator (0..{})",
                                   comm_.rank(), p.peer, comm_.size() - 1));
  // Staging for the receive-reduces: stream-ordered, so it is reused as soon as the reduce ran.
  staging_.assign(step_.size(), nullptr);
  for (std::size_t i = 0; i < step_.size(); ++i)
    if (step_[i].kind == Pending::Kind::RecvReduce && step_[i].bytes > 0)
      check_cuda(cudaMallocAsync(&staging_[i], step_[i].bytes, stream), "cudaMallocAsync (recv_reduce staging)");
  // One group: every transfer of the step progresses together.
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (std::size_t i = 0; i < step_.size(); ++i) {
    const Pending& p = step_[i];
    if (p.bytes == 0) continue;
    if (p.kind == Pending::Kind::Send)
      check_nccl(ncclSend(p.src, p.bytes, ncclUint8, p.peer, comm_.get(), stream), "ncclSend", comm_.get());
    else
      check_nccl(ncclRecv(p.kind == Pending::Kind::Recv ? p.dst : staging_[i], p.bytes, ncclUint8, p.peer, comm_.get(),
                          stream),
                 "ncclRecv", comm_.get());
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd", comm_.get());
  // Then the reductions, in stream order after the group.
  for (std::size_t i = 0; i < step_.size(); ++i) {
    const Pending& p = step_[i];
    if (p.kind != Pending::Kind::RecvReduce || p.bytes == 0) continue;
    throw_if_failed(reduce(p.dtype, p.op, p.dst, staging_[i], p.count, stream_));
    check_cuda(cudaFreeAsync(staging_[i], stream), "cudaFreeAsync (recv_reduce staging)");
  }
  step_.clear();
}

void NcclTransport::synchronize() {
  check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

void NcclTransport::synchronize(std::chrono::milliseconds timeout, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const cudaError_t e = cudaStreamQuery(stream_);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) check_cuda(e, "cudaStreamQuery");
    ncclResult_t async = ncclSuccess;
    check_nccl(ncclCommGetAsyncError(comm_.get(), &async), "ncclCommGetAsyncError", comm_.get());
    if (async != ncclSuccess && async != ncclInProgress) {
      const std::string why = ncclGetErrorString(async);
      comm_.abort();
      throw NcclError(fmt::format("{}: NCCL reports {}; communicator aborted", what, why));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      comm_.abort();
      throw NcclError(fmt::format("{}: no progress for {} ms; communicator aborted", what, timeout.count()));
    }
    std::this_thread::yield();
  }
}

NcclRoundTransport::~NcclRoundTransport() {
  for (CUevent_st* e : events_) cudaEventDestroy(e);
}

void NcclRoundTransport::end_round() {
  t_.end_step();
  if (static_cast<std::size_t>(rounds_) == events_.size()) {
    cudaEvent_t e = nullptr;
    check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    events_.push_back(e);
  }
  check_cuda(cudaEventRecord(events_[static_cast<std::size_t>(rounds_)], t_.stream()), "cudaEventRecord");
  ++rounds_;
}

int NcclRoundTransport::first_unfinished() const {
  for (int k = 0; k < rounds_; ++k)
    if (cudaEventQuery(events_[static_cast<std::size_t>(k)]) != cudaSuccess) return k;
  return rounds_;
}

}  // namespace topocoll::runtime::cuda
