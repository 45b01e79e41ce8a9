// Calibration files: what the reader refuses, in one line naming the key.
#include "simulator/calibration.hpp"

#include <doctest/doctest.h>

#include <string>

#include "common/errors.hpp"

using namespace topocoll;

namespace {

std::string error_of(const std::string& text) {
  try {
    (void)sim::parse_calibration(text, "c.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("calibration: numbers beyond a double and keys with control characters are input errors of one line") {
  CHECK(error_of("1e309").starts_with("c.json: not valid JSON"));
  CHECK(error_of("{\"reduce_gbps\": 1e400}").starts_with("c.json: not valid JSON"));
  CHECK(error_of("{\"reduce_gbps\": 1e300}") == "c.json: 'reduce_gbps' = 1e+300 is outside [0, 1000000]");
  const std::string e = error_of(R"({"channel_cap_gbps": {"nvl\nk": 38.7}})");
  CHECK(e.find('\n') == std::string::npos);
  CHECK(e.find("'channel_cap_gbps.nvl\\nk': unknown link kind") != std::string::npos);
  CHECK(error_of(R"({"co\u0000mment": 1})").find("unknown key 'co\\u0000mment'") != std::string::npos);
  CHECK(error_of(R"({"links": {"pcie": {"efficiency": "high"}}})") ==
        "c.json: 'links.pcie.efficiency' must be a number, got \"high\"");
}

TEST_CASE("calibration: the fuzzing reproducers are input errors of one line") {
  for (const char* name : {"calibration-01-internal-error.json", "calibration-02-unclear.json"}) {
    CAPTURE(name);
    try {
      (void)sim::load_calibration(std::string(TOPOCOLL_SOURCE_DIR) + "/fuzz/repros/" + name);
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
    }
  }
}
