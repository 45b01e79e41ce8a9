// The GPU side of the measured bench, --backend nccl (issue 5): the stock NCCL baselines (NCCL's
// collective on device buffers, as `mpi` is MPI's) and topocoll's own schedules on the same device
// buffers, run over NCCL send/recv. The collective of a call is its CollectiveArgs': ncclAllReduce,
// ncclAllGather, ncclReduceScatter, ncclBroadcast, ncclReduce, and for alltoall ncclAlltoAll where
// nccl.h has it (NCCL 2.28 and later), else one group of ncclSend / ncclRecv per peer (what
// nccl-tests' alltoall does). Buffers are laid out as placement.hpp says (in place: NCCL's
// aliasing); inputs and the check follow test_data's per-collective numbering.
//
//   topocoll    the schedule cut into rounds (runtime/rounds.hpp): per round one ncclGroup of the
//               rank's sends and receives (cuda::NcclTransport), then the CUDA reductions and
//               copies (cuda::DeviceSpace), all on one stream, on a communicator of NCCL's defaults
//
//   nccl        the collective as NCCL chooses (its tuner; NCCL_ALGO / NCCL_PROTO of the environment
//               apply as usual)
//   nccl-ring   the same on a communicator created with NCCL_ALGO=Ring
//   nccl-tree   the same on a communicator created with NCCL_ALGO=Tree
//
// Forcing. NCCL reads NCCL_ALGO when a communicator is initialised (ncclTopoTuneModel in NCCL
// 2.19-2.28, the tuning cost-model init after; both through ncclGetEnv = getenv at that moment),
// not once per process; so each forced baseline has its own communicator, created with NCCL_ALGO
// set around ncclCommInitRank and the previous value restored (runtime/cuda/nccl_transport.hpp).
// The three coexist in one process.
//
// Avg is ncclSum then the CUDA finish_avg (divide once by the rank count), as `mpi` does: NCCL's
// ncclAvg multiplies each input by 1/p before summing for floating types, which is not the exact
// sum / p of test_data and would show as #wrong without being a bug. Every other dtype and op is
// NCCL's own (bf16 included).
//
// This header has no CUDA or NCCL types and compiles in every build: TOPOCOLL_HAVE_NCCL (0 or 1,
// set for topocoll_bench and its users by runtime/bench/CMakeLists.txt) selects the real
// declarations (nccl_baselines.cpp) or the stubs at the end, which say that the build has no NCCL.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/ir/schedule.hpp"
#include "algorithms/ir/types.hpp"

namespace topocoll::runtime {

// nccl, nccl-ring, nccl-tree.
bool is_nccl_baseline(const std::string& name);
inline const std::vector<std::string>& nccl_baseline_names() {
  static const std::vector<std::string> names = {"nccl", "nccl-ring", "nccl-tree"};
  return names;
}

// The device buffers, stream and communicators of the baselines on one rank, bound once (style
// rule 4); the calls below are the bench loop's: fresh inputs, one timed allreduce, the check.
class NcclBaselines {
 public:
  virtual ~NcclBaselines() = default;
  // One line for the table's header: NCCL version, this rank's GPU, how algorithms are forced.
  virtual std::string describe() const = 0;
  // This rank's input of the call (test_data's fill_collective_input) into the placed device
  // input; the output, where it is not the input, gets the 0xA5 pattern (in place allgather: all
  // of it, then the input block). Waits until done (not part of any timing).
  virtual void fill(const algo::CollectiveArgs& a, bool in_place) = 0;
  // One call of the collective with baseline `name` on the placed buffers, waited for on the host;
  // the microseconds from the call to the end of the stream's work on this rank.
  virtual double run_us(const std::string& name, const algo::CollectiveArgs& a, bool in_place) = 0;
  // Elements of this rank's output that differ bit for bit from test_data's
  // fill_collective_expected (0 where the output is not defined: a reduce's non-root ranks).
  virtual std::uint64_t count_wrong(const algo::CollectiveArgs& a, bool in_place) = 0;
  // A topocoll schedule: its round plan and this rank's executor on the device buffers, bound once
  // per size (no communication). Then run_schedule_us runs it once on the placed buffers of its
  // collective and waits for the stream; the microseconds from the call to the end of the stream's work.
  virtual void bind_schedule(const algo::Schedule& s, int rank) = 0;
  virtual double run_schedule_us(bool in_place) = 0;
};

#if TOPOCOLL_HAVE_NCCL

// Whether the baselines can run here: false with the reason (no GPU: cudaGetDeviceCount's error).
bool nccl_available(std::string* why);

// Collective over `comm` (every rank calls it). Uses GPU local_rank % devices; allocates input and
// output of max_bytes each; creates one communicator per baseline named in `names`, and one of
// NCCL's defaults for topocoll's schedules when `names` holds any other name than mpi. Throws std::runtime_error naming
// the failed call (NCCL refuses two ranks on one GPU: "Duplicate GPU detected"). Every wait for the GPU is bounded by
// `timeout` (the bench's progress timeout): then the communicator is aborted and an NcclError names the call (for a
// schedule: its unfinished round and the peers of that round).
std::unique_ptr<NcclBaselines> make_nccl_baselines(MPI_Comm comm, int local_rank, std::uint64_t max_bytes,
                                                   const std::vector<std::string>& names,
                                                   std::chrono::milliseconds timeout);

#else

inline bool nccl_available(std::string* why) {
  if (why) *why = "this topocoll-bench was built without CUDA + NCCL";
  return false;
}
inline std::unique_ptr<NcclBaselines> make_nccl_baselines(MPI_Comm, int, std::uint64_t, const std::vector<std::string>&,
                                                          std::chrono::milliseconds) {
  return nullptr;
}

#endif

inline bool is_nccl_baseline(const std::string& name) {
  for (const std::string& n : nccl_baseline_names())
    if (n == name) return true;
  return false;
}

}  // namespace topocoll::runtime
