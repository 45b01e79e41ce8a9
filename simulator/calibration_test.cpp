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

TEST_CASE("calibration: block caps follow NCCL's per-channel tables, half per block") {
  using algo::ChannelPattern;
  auto caps = [](sim::Protocol p, int sm, int nodes) {
    return sim::with_block_caps(sim::protocol_calibration(sim::base_calibration(), p), sm, nodes).block_cap_gbps;
  };
  // tuning.cc (2.22.3) perChMaxTreeBws Ampere {24.0, 23.6, 17.8}, Hopper {38.7, 41.4, 36.0}.
  CHECK(caps(sim::Protocol::Simple, 80, 2)[static_cast<int>(ChannelPattern::Tree)] == doctest::Approx(23.6 / 2));
  CHECK(caps(sim::Protocol::Simple, 90, 1)[static_cast<int>(ChannelPattern::Tree)] == doctest::Approx(38.7 / 2));
  CHECK(caps(sim::Protocol::Simple, 90, 64)[static_cast<int>(ChannelPattern::Tree)] == doctest::Approx(36.0 / 2));
  CHECK(caps(sim::Protocol::Simple, 90, 64)[static_cast<int>(ChannelPattern::Pipeline)] == 0.0);
  // LL128: perChMaxRingLL128Bws Hopper 36.7; tree min(perChMaxTreeBws, perChMaxTreeLL128Bws 29.0) at 3+ nodes.
  CHECK(caps(sim::Protocol::LL128, 90, 4)[static_cast<int>(ChannelPattern::Pipeline)] == doctest::Approx(36.7 / 2));
  CHECK(caps(sim::Protocol::LL128, 90, 4)[static_cast<int>(ChannelPattern::Tree)] == doctest::Approx(29.0 / 2));
  CHECK(caps(sim::Protocol::LL, 70, 1)[static_cast<int>(ChannelPattern::Tree)] == doctest::Approx(26.5 / 2));
  // A file's own caps are kept.
  const sim::Calibration f = sim::parse_calibration(R"({"block_cap_gbps": {"tree": 5, "pipeline": 7}})", "c.json");
  const auto kept = sim::with_block_caps(f, 90, 2).block_cap_gbps;
  CHECK(kept[0] == 7.0);
  CHECK(kept[1] == 5.0);
  CHECK(error_of(R"({"block_cap_gbps": {"ring": 5}})") ==
        "c.json: 'block_cap_gbps.ring': unknown channel pattern, expected pipeline or tree");
  CHECK(error_of(R"({"host_call_us": -1})") == "c.json: 'host_call_us' = -1 is outside [0, 1000000]");
}

TEST_CASE("calibration: switch latencies and the NVSwitch reduction rate") {
  const sim::Calibration d = sim::default_calibration();
  CHECK(d.switch_latency_us[0] == doctest::Approx(12.5));  // NCCL 2.28 hwLat[NVLINK][NVLS][Simple] / 2
  CHECK(d.switch_latency_us[1] == doctest::Approx(31.0));  // hwLat[NET][CollNetDirect][Simple]
  CHECK(d.nvls_reduce_fraction(90) == doctest::Approx(0.85));
  CHECK(d.nvls_reduce_fraction(100) == doctest::Approx(0.74));
  CHECK(sim::ideal_calibration().nvls_reduce_fraction(90) == 0.0);
  const sim::Calibration f = sim::parse_calibration(
      R"({"switch_latency_us": {"nvls": 2, "sharp": 3}, "nvls_reduce_efficiency": 0.5})", "c.json");
  CHECK(f.switch_latency_us[0] == 2.0);
  CHECK(f.switch_latency_us[1] == 3.0);
  CHECK(f.nvls_reduce_fraction(90) == 0.5);
  // The file's latencies survive the protocol derivation.
  CHECK(sim::protocol_calibration(f, sim::Protocol::LL).switch_latency_us[0] == 2.0);
  CHECK(error_of(R"({"switch_latency_us": {"nvswitch": 1}})") ==
        "c.json: 'switch_latency_us.nvswitch': unknown switch kind, expected nvls or sharp");
  CHECK(error_of(R"({"nvls_reduce_efficiency": 2})") == "c.json: 'nvls_reduce_efficiency' = 2 is outside [1e-06, 1]");
}
