// The in-process runner over device memory (runtime/testing/run_inproc.hpp's run_in_world with
// every rank's buffers in the current GPU's memory): a thread per rank runs the executor's Plan
// (runtime/executor.hpp) bound to a DeviceSpace on the rank's own stream (copies and reductions
// there, runtime/cuda/device_memory.hpp), over a DeviceTransport (runtime/cuda/device_inproc.hpp):
// the same executor, contract and checks as the host transports. Built with CUDA only.
#pragma once

#include "algorithms/ir/schedule.hpp"
#include "runtime/executor.hpp"
#include "runtime/testing/run_inproc.hpp"

namespace topocoll::runtime::cuda {

// Runs schedule `s` with every rank's buffers in the current device's memory. Inputs, in-place
// aliasing, output poisoning and the failure rule exactly as run_inproc, so count_wrong_outputs
// checks the result. A schedule that deadlocks stops on the executor's progress timeout (`o`),
// naming the rank, peer and operation. CudaError when a CUDA call fails.
RunResult run_device_inproc(const algo::Schedule& s, bool in_place, const ExecOptions& o = {});

}  // namespace topocoll::runtime::cuda
