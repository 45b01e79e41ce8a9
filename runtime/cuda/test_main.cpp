// The doctest main of the CUDA tests: without a usable GPU it prints why and exits 77, which CTest
// reports as skipped (SKIP_RETURN_CODE 77), so a machine without a GPU neither passes nor fails
// them.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "runtime/cuda/status.hpp"

int main(int argc, char** argv) {
  std::string why;
  if (!topocoll::runtime::cuda::device_available(&why)) {
    std::printf("SKIP: no usable CUDA device: %s\n", why.c_str());
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
