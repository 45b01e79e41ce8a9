// The NCCL transport (issue 5): ncclSend / ncclRecv on device buffers, grouped per step on one CUDA
// stream, over a communicator bootstrapped with MPI.
//
//   rank 0: ncclGetUniqueId ──MPI_Bcast──> every rank: ncclCommInitRank(size, id, rank) on its
//                                          current CUDA device
//
//   step k:  send(peer, buf) / recv(peer, buf) / recv_reduce(peer, buf)  queued on the host
//   end_step():  ncclGroupStart; the queued ncclSend / ncclRecv; ncclGroupEnd   (on the stream)
//                then the step's reductions (CUDA reducer, from stream-ordered staging buffers)
//
// Why steps. Without a group, ncclSend of a large message waits on the GPU for the peer's
// ncclRecv; two ranks that each send before they receive on one stream deadlock. Inside a group
// the operations progress together, so a step must not hold two operations where one depends on
// the other (receive x, then send x): the caller ends the step in between. Matching is NCCL's:
// per pair of ranks, sends and receives match in the order they were issued (there are no channels
// or tags), so both sides must issue in the same order.
//
// Completion is stream-ordered: after end_step, the data is in place for everything enqueued on
// the stream later; synchronize() waits for it on the host.
//
// Host-only header (style rule 7): no NCCL or CUDA types (ncclComm_t is ncclComm*, cudaStream_t
// is CUstream_st*). Failures throw NcclError / CudaError naming the call.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/ir/types.hpp"
#include "common/errors.hpp"
#include "runtime/cuda/reducer.hpp"
#include "runtime/transport.hpp"

struct ncclComm;
struct CUevent_st;

namespace topocoll::runtime::cuda {

class NcclError : public RuntimeFailure {
 public:
  explicit NcclError(const std::string& what) : RuntimeFailure(what) {}
};

// NCCL's version as "2.28.9" (of the library loaded, not of the header).
std::string nccl_version();

// A communicator over the ranks of an MPI communicator, one GPU per rank (the current CUDA
// device; NCCL refuses two ranks on one GPU). Collective: every rank of `comm` constructs it.
//
// `force_algo` (e.g. "Ring", "Tree"): NCCL_ALGO for this communicator only. NCCL reads NCCL_ALGO
// when a communicator is initialised (ncclTopoTuneModel / the tuning cost-model init, through
// ncclGetEnv, i.e. getenv at that moment), not once per process; so the constructor sets
// NCCL_ALGO, calls ncclCommInitRank and restores the previous value, and several communicators
// with different forced algorithms live side by side. Empty: the environment as it is (NCCL's own
// choice unless the user set NCCL_ALGO). Not thread-safe (setenv): construct from one thread.
class NcclComm {
 public:
  explicit NcclComm(MPI_Comm comm, const std::string& force_algo = {});
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  ncclComm* get() const { return comm_; }
  // ncclCommAbort: what a rank does when its peers stopped (a bounded wait timed out); the
  // communicator is unusable afterwards.
  void abort();
  int rank() const { return rank_; }
  int size() const { return size_; }
  int device() const { return device_; }

 private:
  ncclComm* comm_ = nullptr;
  int rank_ = 0, size_ = 1, device_ = 0;
};

class NcclTransport {
 public:
  NcclTransport(NcclComm& comm, Stream stream);
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  // Queued for the current step. Buffers are device memory and must stay valid until the step's
  // work has run on the stream. recv_reduce: dst[i] = dst[i] (op) message[i], count elements.
  void send(int peer, const void* data, std::size_t bytes);
  void recv(int peer, void* dst, std::size_t bytes);
  void recv_reduce(int peer, void* dst, std::size_t count, algo::DataType t, algo::ReduceOp op);

  // Enqueues the step on the stream (see above) and starts the next one. Nothing queued: nothing.
  void end_step();
  // Waits on the host until the stream has run everything enqueued so far.
  void synchronize();
  // The same, bounded: polls the stream (and NCCL's asynchronous error) for at most `timeout`;
  // then aborts the communicator and throws NcclError "WHAT: no progress for N ms ..." (a dead or
  // absent peer never matches our transfers: without a bound the stream would wait forever).
  void synchronize(std::chrono::milliseconds timeout, const std::string& what);
  Stream stream() const { return stream_; }

 private:
  struct Pending {
    enum class Kind { Send, Recv, RecvReduce } kind = Kind::Send;
    int peer = -1;
    const void* src = nullptr;
    void* dst = nullptr;
    std::size_t bytes = 0, count = 0;
    algo::DataType dtype{};
    algo::ReduceOp op{};
  };
  NcclComm& comm_;
  Stream stream_;
  std::vector<Pending> step_;
  std::vector<void*> staging_;  // per RecvReduce of the step being issued
};

// A round of a RoundExecutor (runtime/rounds.hpp) as one NCCL step: sends and receives queued,
// end_round() = end_step() (one group on the stream). The executor does its reductions itself
// (on a DeviceSpace of the same stream), so recv_reduce is not used here.
// After each round it records an event, so a stalled run can say which round (and so which
// peers, RoundExecutor::peers) it is stuck in.
class NcclRoundTransport final : public RoundTransport {
 public:
  explicit NcclRoundTransport(NcclTransport& t) : t_(t) {}
  ~NcclRoundTransport() override;
  NcclRoundTransport(const NcclRoundTransport&) = delete;
  NcclRoundTransport& operator=(const NcclRoundTransport&) = delete;
  void send(int peer, const void* src, std::size_t bytes) override { t_.send(peer, src, bytes); }
  void recv(int peer, void* dst, std::size_t bytes) override { t_.recv(peer, dst, bytes); }
  void end_round() override;  // end_step, then an event for this round
  // Starts counting rounds again (before each run).
  void restart() { rounds_ = 0; }
  // The first round whose group has not completed on the GPU; rounds run so far when all have.
  int first_unfinished() const;

 private:
  NcclTransport& t_;
  std::vector<CUevent_st*> events_;  // per round, created once and reused
  int rounds_ = 0;
};

}  // namespace topocoll::runtime::cuda
