// The status of a CUDA runtime call, carried across headers that must not include CUDA's (style
// rule 7: host code that links the CUDA parts sees no CUDA types). At the C boundary every call
// propagates it (rule 11):
//
//   if (auto s = cuda::reduce(...); !s.ok()) return s;
//
// `code` is the cudaError_t value (0: cudaSuccess); `where` names the call.
#pragma once

#include <stdexcept>
#include <string>

#include "common/errors.hpp"

namespace topocoll::runtime::cuda {

struct [[nodiscard]] Status {
  int code = 0;
  const char* where = "";  // the call that failed, a string literal
  bool ok() const { return code == 0; }
};

// "cudaMemcpyAsync: invalid argument (cudaErrorInvalidValue)" or "ok".
std::string to_string(const Status& s);

// A failed CUDA call where the caller cannot return a status (constructors, test runners).
class CudaError : public RuntimeFailure {
 public:
  explicit CudaError(const Status& s) : RuntimeFailure(to_string(s)), status_(s) {}
  const Status& status() const { return status_; }

 private:
  Status status_;
};

inline void throw_if_failed(const Status& s) {
  if (!s.ok()) throw CudaError(s);
}

// Whether a CUDA device can be used here; `why` gets the reason when not ("cudaGetDeviceCount: no
// CUDA-capable device is detected (cudaErrorNoDevice)").
bool device_available(std::string* why);

}  // namespace topocoll::runtime::cuda
