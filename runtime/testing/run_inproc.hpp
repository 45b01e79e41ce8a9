// The in-process runner for multi-rank tests (style rule 15: Gloo's base_test, UCC's UccJob): every
// rank of a schedule in a thread of its own, in one process, with its buffers in a memory space
// (runtime/memory_space.hpp): host memory (run_inproc, over runtime/inproc.hpp's fabric) or one
// GPU's (cuda::run_device_inproc, runtime/testing/run_device_inproc.hpp). One memory layout, one
// failure rule and one check serve both; what differs is an InprocWorld. Test code: it lives in
// topocoll_runtime_testing, not in the runtime libraries.
//
//   caller:   prepare_rank per rank (host image -> upload into the world's memory) -> uploaded()
//   rank r:   world.run_rank(r): a transport of the world's fabric, the executor, wait for its work
//   caller:   join; rethrow the failure (rule below) or download every output
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/ir/schedule.hpp"
#include "runtime/executor.hpp"
#include "runtime/memory_space.hpp"

namespace topocoll::runtime {

struct RunResult {
  std::vector<std::vector<std::byte>> outputs;  // per rank: its output buffer (output_count elements)
};

// What the runner needs from a kind of memory and its in-process fabric, for one run.
class InprocWorld {
 public:
  virtual ~InprocWorld() = default;
  // Where the ranks' buffers are allocated (on the caller's thread, before the rank threads start).
  virtual MemorySpace& memory() = 0;
  // Host bytes into the world's memory, and back.
  virtual void upload(void* dst, const void* host, std::size_t bytes) = 0;
  virtual void download(void* host, const void* src, std::size_t bytes) = 0;
  // After every rank's memory is uploaded, before the rank threads start.
  virtual void uploaded() {}
  // On rank r's thread: runs r's part of `s` on `b` over the world's fabric; returns once its work
  // is complete (for a device: its stream synchronised).
  virtual void run_rank(const algo::Schedule& s, int r, const Buffers& b, const ExecOptions& o) = 0;
  // Wakes every waiting rank; their next wait throws Aborted naming `reason`.
  virtual void abort(const std::string& reason) = 0;
};

// Runs schedule `s` on every rank in its own thread of `world`. Inputs come from test_data's
// fill_input (rank r's input holds global elements from r * count for allgather, from 0
// otherwise), outputs start as a 0xA5 pattern (out of place), scratch as 0x5A. `in_place` aliases
// the buffers as NCCL does (see executor.hpp). A rank that throws aborts the others; once every
// thread has joined, the first failure that is not an Aborted is rethrown here.
RunResult run_in_world(const algo::Schedule& s, bool in_place, InprocWorld& world, const ExecOptions& o = {});

// run_in_world over host memory and an InprocFabric (runtime/inproc.hpp).
RunResult run_inproc(const algo::Schedule& s, bool in_place, const ExecOptions& o = {});
// The same over a fabric with push on (runtime/push_plan.hpp); `pushed`: how many sends were
// written straight into their receiver's buffer.
RunResult run_inproc_push(const algo::Schedule& s, bool in_place, std::uint64_t& pushed, const ExecOptions& o = {});

// The number of output elements, over all ranks, that differ bit for bit from test_data's exact
// expectation: allreduce fill_expected; reduce_scatter fill_expected of the rank's block;
// allgather block j = rank j's fill_input; broadcast the root's fill_input on every rank; reduce
// fill_expected on the root only (other ranks' outputs are unspecified).
std::size_t count_wrong_outputs(const algo::Schedule& s, const RunResult& r);

}  // namespace topocoll::runtime
