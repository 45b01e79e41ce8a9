#include "runtime/testing/run_device_inproc.hpp"

#include <cuda_runtime.h>

#include "runtime/cuda/device_inproc.hpp"
#include "runtime/cuda/device_memory.hpp"
#include "runtime/cuda/status.hpp"

namespace topocoll::runtime::cuda {

namespace {

void check(cudaError_t e, const char* where) {
  throw_if_failed(Status{static_cast<int>(e), where});
}

// The current device's memory over a DeviceFabric; each rank on a stream of its own.
class DeviceWorld final : public InprocWorld {
 public:
  explicit DeviceWorld(int ranks) : device_(current_device()), fabric_(ranks) {}
  // The ranks' buffers: cudaMalloc (DeviceSpace::allocate uses no stream).
  MemorySpace& memory() override { return allocations_; }
  void upload(void* dst, const void* host, std::size_t bytes) override {
    check(cudaMemcpy(dst, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  }
  void download(void* host, const void* src, std::size_t bytes) override {
    check(cudaMemcpy(host, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  }
  // The uploads ran on the legacy stream, which the ranks' non-blocking streams do not wait for.
  void uploaded() override { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (after the uploads)"); }
  void run_rank(const algo::Schedule& s, int r, const Buffers& b, const ExecOptions& o) override {
    check(cudaSetDevice(device_), "cudaSetDevice");
    ScopedStream stream;
    DeviceSpace space(stream.get());
    DeviceTransport transport(fabric_, r, stream.get());
    Plan plan(s, r, space);
    plan.run(b, transport, o);
    check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");
  }
  void abort(const std::string& reason) override { fabric_.abort(reason); }

 private:
  static int current_device() {
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    return device;
  }
  int device_;
  DeviceFabric fabric_;
  DeviceSpace allocations_{nullptr};
};

}  // namespace

RunResult run_device_inproc(const algo::Schedule& s, bool in_place, const ExecOptions& o) {
  DeviceWorld world(s.num_ranks());
  return run_in_world(s, in_place, world, o);
}

}  // namespace topocoll::runtime::cuda
