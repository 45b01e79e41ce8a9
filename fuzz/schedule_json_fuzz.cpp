// Schedule JSON (`topocoll verify --schedule FILE`): the reader, then the verifier out of place
// and in place, as the command runs it. "The schedule is wrong" is a normal outcome.
#include "algorithms/ir/schedule_json.hpp"
#include "algorithms/verifier.hpp"
#include "fuzz/harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return topocoll::fuzz::guarded([&] {
    const topocoll::algo::Schedule s =
        topocoll::algo::read_schedule_json(topocoll::fuzz::as_text(data, size), "fuzz.json");
    for (const bool in_place : {false, true}) {
      topocoll::algo::VerifyOptions o;
      o.in_place = in_place;
      (void)topocoll::algo::verify(s, o);
    }
  });
}
