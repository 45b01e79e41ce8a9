#include "runtime/cuda/status.hpp"

#include <cuda_runtime.h>
#include <fmt/format.h>

namespace topocoll::runtime::cuda {

std::string to_string(const Status& s) {
  if (s.ok()) return "ok";
  const auto e = static_cast<cudaError_t>(s.code);
  return fmt::format("{}: {} ({})", s.where, cudaGetErrorString(e), cudaGetErrorName(e));
}

bool device_available(std::string* why) {
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    if (why) *why = to_string(Status{static_cast<int>(e), "cudaGetDeviceCount"});
    return false;
  }
  if (count == 0) {
    if (why) *why = "cudaGetDeviceCount: 0 devices";
    return false;
  }
  return true;
}

}  // namespace topocoll::runtime::cuda
