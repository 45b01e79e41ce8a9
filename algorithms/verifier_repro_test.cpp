// The verifier checks its own arithmetic: the checked helpers, the header limits a Schedule is
// built under, and the fuzzing reproducers of algorithms/testdata/repros/ (README.md there), each
// loaded through the reader the command line uses.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "algorithms/ir/program_index.hpp"
#include "algorithms/ir/schedule_json.hpp"
#include "algorithms/verifier.hpp"
#include "common/checked.hpp"
#include "common/errors.hpp"

using namespace topocoll;
using namespace topocoll::algo;

namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

std::string repro(const char* name) {
  return std::string(TOPOCOLL_SOURCE_DIR) + "/algorithms/testdata/repros/" + name;
}

// The InputError message of loading and verifying `name`, or "" when it verified (or failed) without one.
std::string input_error_of(const char* name, bool in_place) {
  try {
    const Schedule s = load_schedule_json(repro(name));
    VerifyOptions o;
    o.in_place = in_place;
    (void)verify(s, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string header_error(CollectiveArgs a, int channels, std::uint64_t scratch = 0) {
  try {
    validate_header("t", a, channels, scratch);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("checked_add and checked_mul are exact or nullopt") {
  CHECK(checked_add(1, 2) == 3u);
  CHECK(checked_add(kMax, 0) == kMax);
  CHECK_FALSE(checked_add(kMax, 1).has_value());
  CHECK_FALSE(checked_add(std::uint64_t{1} << 63, std::uint64_t{1} << 63).has_value());
  CHECK(checked_mul(0, kMax) == 0u);
  CHECK(checked_mul(kMax, 1) == kMax);
  CHECK(checked_mul(std::uint64_t{1} << 32, (std::uint64_t{1} << 32) - 1) == kMax - (std::uint64_t{1} << 32) + 1);
  CHECK_FALSE(checked_mul(std::uint64_t{1} << 32, std::uint64_t{1} << 32).has_value());
  CHECK_FALSE(checked_mul(9223372036854775809u, 2).has_value());  // the allgather repro's count x ranks
}

TEST_CASE("CollectiveArgs refuses a count x ranks that wraps") {
  CollectiveArgs a = CollectiveArgs::allreduce(9223372036854775808u, DataType::Float32, ReduceOp::Sum, 2);
  CHECK(a.input_count() == 9223372036854775808u);  // allreduce: no product
  a.collective = Collective::AllGather;
  CHECK(a.input_count() == 9223372036854775808u);
  CHECK_THROWS_AS((void)a.output_count(), InputError);
  a.collective = Collective::ReduceScatter;
  CHECK_THROWS_AS((void)a.input_count(), InputError);
  CHECK(a.output_count() == 9223372036854775808u);
}

TEST_CASE("every header field is validated where a Schedule is built") {
  const CollectiveArgs ok = CollectiveArgs::allreduce(1024, DataType::Float32, ReduceOp::Sum, 4);
  CHECK(header_error(ok, 1).empty());
  CollectiveArgs a = ok;
  a.ranks = 0;
  CHECK(header_error(a, 1).find("ranks 0 is outside 1..1048576") != std::string::npos);
  a.ranks = kMaxRanks + 1;
  CHECK(header_error(a, 1).find("ranks 1048577 is outside") != std::string::npos);
  a.ranks = kMaxRanks;
  CHECK(header_error(a, 1).empty());
  CHECK(header_error(ok, 0).find("channels 0 is outside 1..1024") != std::string::npos);
  CHECK(header_error(ok, kMaxChannels).empty());
  CHECK(header_error(ok, kMaxChannels + 1).find("channels 1025 is outside") != std::string::npos);
  a = ok;
  a.root = 4;
  CHECK(header_error(a, 1).find("root 4 is not a rank of 0..3") != std::string::npos);
  a.root = -1;
  CHECK(header_error(a, 1).find("root -1") != std::string::npos);
  // Buffers: bytes below 2^60, products exact.
  a = ok;
  a.count = (std::uint64_t{1} << 58) - 1;  // 4 bytes each: just below 2^60 bytes
  CHECK(header_error(a, 1).empty());
  a.count = std::uint64_t{1} << 58;
  CHECK(header_error(a, 1).find("the input buffer (count 288230376151711744 elements, 4 bytes each)") !=
        std::string::npos);
  a = ok;
  a.collective = Collective::AllGather;
  a.count = std::uint64_t{1} << 56;  // input fits, output = count x 4 ranks x 4 bytes = 2^60
  CHECK(header_error(a, 1).find("the output buffer (count 72057594037927936 x ranks 4 elements") != std::string::npos);
  CHECK(header_error(ok, 1, kMax).find("the scratch buffer (scratch_count 18446744073709551615") != std::string::npos);
  // The constructors refuse too (from_programs before it looks at the programs).
  a = ok;
  a.ranks = 0;
  CHECK_THROWS_AS(Schedule::from_programs("t", a, 1, 0, {}), InputError);
  CHECK_THROWS_AS(Schedule("t", ok, 0, 0, [](int, Program&) {}), InputError);
}

TEST_CASE("a chunk whose offset + count wraps is out of bounds, not inside") {
  const CollectiveArgs a = CollectiveArgs::allreduce(8, DataType::Float32, ReduceOp::Sum, 2);
  Op bad{OpKind::Send, 0, 1, Chunk{BufferId::Output, kMax, 2}, Chunk{}};
  const Schedule s = Schedule::from_programs("wrap", a, 1, 0, {{bad}, {}});
  const VerifyResult r = verify(s);
  CHECK(r.failure == Failure::OutOfBounds);
  CHECK(r.message.find("does not fit in 64 bits") != std::string::npos);
}

TEST_CASE("fuzzing reproducers: each is refused naming the field, never OK") {
  struct Case {
    const char* file;
    const char* field;
  };
  // The JSON reader refuses each first, naming the file's field and the IR's buffer limit.
  const Case cases[] = {
      {"schedule-allgather-count-overflow-false-ok.json",
       "\"count\" 9223372036854775809 is more than 144115188075855871 (the limit kMaxBufferBytes"},
      {"schedule-allgather-inplace-bad-free.json", "\"count\" 9223372036854775808 is more than"},
      {"schedule-10-sanitizer.json", "\"count\" 9223372036854775808 is more than"},
      {"verify-count-2e62.json",
       "\"count\" 4611686018427387904 is more than 144115188075855871 (the limit kMaxBufferBytes"},
      {"verify-rs-overflow.json", "\"count\" 9223372036854775808 is more than"},
  };
  for (const Case& c : cases)
    for (const bool in_place : {false, true}) {
      CAPTURE(c.file);
      CAPTURE(in_place);
      const std::string message = input_error_of(c.file, in_place);
      CHECK(message.find(c.field) != std::string::npos);
    }
}
