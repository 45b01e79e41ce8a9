// A thread that drives started plans (Plan::start) to their end, so that the caller computes
// while its collective progresses: the "progress thread" option of the non-blocking API, beside
// caller-driven progress (Plan::test from the compute loop).
//
//   plan.start(buffers, transport);   progress.drive(plan);   ... compute ...   progress.wait();
//
// While the thread drives a plan it is the only user of that plan's transport: the caller must not
// call the transport (nor test / wait the plan) until wait() returned. That suits a transport
// that may be used from any one thread at a time: the in-process one; an MPI transport when MPI
// was initialised with MPI_THREAD_SERIALIZED or higher. UCX workers here are created
// UCS_THREAD_MODE_SINGLE (runtime/ucx_transport.cpp) and must not be driven from this thread.
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "runtime/executor.hpp"

namespace topocoll::runtime {

class ProgressThread {
 public:
  ProgressThread();
  ~ProgressThread();  // finishes the plan it drives (as wait(), but an exception is dropped), joins
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;

  // Hands a started plan to the thread, which runs Plan::wait() on it. InputError when the plan
  // is not started or the thread still drives another.
  void drive(Plan& plan);
  // Non-blocking: true once the plan handed over has finished (or failed); true when none is.
  bool done();
  // Blocks until that plan has finished; rethrows what its run threw (PeerTimeout, the transport's
  // errors). Nothing to wait for: returns at once.
  void wait();

 private:
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;
  Plan* plan_ = nullptr;  // handed over, not finished
  bool stop_ = false;
  std::exception_ptr failure_;
  std::thread thread_;
};

}  // namespace topocoll::runtime
