// Calibration JSON (`topocoll sim --calibration FILE`).
#include "fuzz/harness.hpp"
#include "simulator/calibration.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return topocoll::fuzz::guarded(
      [&] { (void)topocoll::sim::parse_calibration(topocoll::fuzz::as_text(data, size), "fuzz.json"); });
}
