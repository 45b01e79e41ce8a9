#include "algorithms/ir/schedule_json.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <sstream>

#include "algorithms/registry.hpp"
#include "algorithms/testing.hpp"
#include "algorithms/verifier.hpp"
#include "common/errors.hpp"

using namespace topocoll::algo;

TEST_CASE("schedule json: every registered algorithm round-trips op for op") {
  for (const Algorithm& alg : registry()) {
    // One node for nvls (one NVLink domain), three for the others.
    const Layout l =
        alg.name == "nvls" ? uniform_layout(1, 6, {.nvls = true}) : uniform_layout(3, 2, {.nvls = true, .sharp = true});
    CollectiveArgs a;
    a.collective = alg.collective;
    a.ranks = l.ranks;
    a.count = 37;
    a.root = 1;
    a.dtype = DataType::BFloat16;
    a.op = ReduceOp::Max;
    if (a.collective == Collective::AllToAllV) a.sizes = testing::skewed_alltoallv_sizes(l.ranks, 37, false);
    Tuning t;
    t.channels = 3;
    t.slice_bytes = 16;
    REQUIRE_MESSAGE(alg.supports(l, a, t).ok, alg.name);
    const Schedule s = alg.generate(l, a, t);
    std::ostringstream os;
    write_schedule_json(s, os);
    const Schedule back = read_schedule_json(os.str(), "mem.json");
    CHECK(back.name() == s.name());
    CHECK(back.num_channels() == s.num_channels());
    CHECK(back.scratch_count() == s.scratch_count());
    CHECK(back.args().count == a.count);
    CHECK(back.args().dtype == a.dtype);
    CHECK(back.args().op == a.op);
    CHECK(back.args().collective == a.collective);
    CHECK(back.args().root == a.root);
    for (int r = 0; r < l.ranks; ++r) CHECK(back.program(r) == s.program(r));
    for (int ch = 0; ch < s.num_channels(); ++ch) CHECK(back.pattern(ch) == s.pattern(ch));
    CHECK(back.switch_groups() == s.switch_groups());
    CHECK(verify(back).ok());
  }
}

TEST_CASE("schedule json: switch groups and switch ops, and their bad input") {
  const std::string text = R"({"format": "topocoll-schedule", "version": 1, "name": "sharp", "collective": "allreduce",
 "count": 4, "dtype": "float", "op": "sum", "ranks": 2, "channels": 1,
 "switch_groups": [{"kind": "sharp", "contributors": [0, 1], "receivers": [1, 0]}],
 "programs": [
  [["switch_send", 0, 0, "input", 0, 4], ["switch_recv", 0, 0, "output", 0, 4]],
  [["switch_send", 0, 0, "input", 0, 4], ["switch_recv", 0, 0, "output", 0, 4]]
 ]})";
  const Schedule s = read_schedule_json(text, "s.json");
  REQUIRE(s.switch_groups().size() == 1);
  CHECK(s.switch_groups()[0] == SwitchGroup{SwitchKind::Sharp, {0, 1}, {1, 0}});
  CHECK(s.program(1)[1] == Op{OpKind::SwitchRecv, 0, 0, {}, {BufferId::Output, 0, 4}});
  CHECK(verify(s).ok());
  std::ostringstream os;
  write_schedule_json(s, os);
  CHECK(os.str().find(R"("switch_groups": [{"contributors":[0,1],"kind":"sharp","receivers":[1,0]}])") !=
        std::string::npos);
  CHECK(os.str().find(R"(["switch_send",0,0,"input",0,4])") != std::string::npos);
  auto bad = [&](const std::string& from, const std::string& to, const std::string& expected) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    CHECK_THROWS_WITH_AS(read_schedule_json(t, "s.json"), expected.c_str(), topocoll::InputError);
  };
  bad(R"("kind": "sharp")", R"("kind": "nvswitch")",
      "s.json: switch_groups[0]: unknown switch kind 'nvswitch': expected nvls or sharp");
  bad("\"contributors\": [0, 1]", "\"contributors\": [0, 7]",
      "s.json: switch_groups[0]: contributors rank 7 is more than 1 (the limit \"ranks\" - 1)");
  bad("\"receivers\": [1, 0]", "\"receivers\": [1, 1]",
      "s.json: switch_groups[0]: schedule 'sharp': switch group 0 names rank 1 twice among its receivers");
  bad("\"receivers\": [1, 0]", "\"receivers\": []",
      "s.json: switch_groups[0]: schedule 'sharp': switch group 0 has no receivers: expected at least one rank");
  bad(R"(["switch_recv", 0, 0, "output", 0, 4]],
  [)",
      R"(["switch_recv", 0, 3, "output", 0, 4]],
  [)",
      "s.json: programs[0][1]: switch group 3 is not one of the 1 in \"switch_groups\" (0..0)");
  bad(R"({"kind": "sharp", "contributors": [0, 1], "receivers": [1, 0]})", R"({"kind": "sharp"})",
      "s.json: switch_groups[0]: expected {\"kind\": \"nvls\" or \"sharp\", \"contributors\": [ranks], \"receivers\": "
      "[ranks]}, got {\"kind\":\"sharp\"}");
}

namespace {

const char* kGood = R"({"format": "topocoll-schedule", "version": 1, "name": "pair", "collective": "allreduce",
 "count": 4, "dtype": "float", "op": "sum", "ranks": 2, "root": 0, "channels": 1, "scratch_count": 0,
 "programs": [
  [["copy", 0, "input", 0, "output", 0, 4], ["send", 0, 1, "input", 0, 4], ["recv_reduce", 0, 1, "output", 0, 4]],
  [["copy", 0, "input", 0, "output", 0, 4], ["send", 0, 0, "input", 0, 4], ["recv_reduce", 0, 0, "output", 0, 4]]
 ]})";

void check_bad(const std::string& text, const std::string& expected) {
  CHECK_THROWS_WITH_AS(read_schedule_json(text, "s.json"), doctest::Contains(expected.c_str()), topocoll::InputError);
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  s.replace(s.find(from), from.size(), to);
  return s;
}

}  // namespace

TEST_CASE("schedule json: a hand-written file verifies; malformed files are rejected with their location") {
  CHECK(verify(read_schedule_json(kGood, "s.json")).ok());
  check_bad("{\"format\": \"topocoll-schedule\",\n \"version\": 1,\n oops}", "s.json:3: not valid JSON");
  check_bad("[1, 2]", "s.json: expected a JSON object with \"format\": \"topocoll-schedule\"");
  check_bad(replace(kGood, "\"version\": 1", "\"version\": 7"), "\"version\" must be 1");
  check_bad(replace(kGood, "\"ranks\": 2", "\"ranks\": 3"), "\"programs\" must be an array of 3 programs");
  check_bad(replace(kGood, "\"dtype\": \"float\"", "\"dtype\": \"float7\""), "s.json: unknown data type 'float7'");
  check_bad(replace(kGood, "[\"send\", 0, 1, \"input\", 0, 4]", "[\"sned\", 0, 1, \"input\", 0, 4]"),
            "s.json: programs[0][1]: unknown operation 'sned'");
  check_bad(replace(kGood, "[\"send\", 0, 1, \"input\", 0, 4]", "[\"send\", 0, 1, \"inbox\", 0, 4]"),
            "programs[0][1]: buffer \"inbox\" is not one of input, output, scratch");
  check_bad(replace(kGood, "[\"send\", 0, 1, \"input\", 0, 4]", "[\"send\", 0, 1, \"input\", -2, 4]"),
            "programs[0][1]: offset -2 is not a non-negative integer");
  check_bad(replace(kGood, "[\"send\", 0, 1, \"input\", 0, 4]", "[\"send\", 0, 1, \"input\", 0]"),
            "'send' takes 6 fields, got 5");
  // recv_reduce_copy: [kind, channel, peer, src buffer, src offset, dst buffer, dst offset, count].
  const std::string rrc = replace(
      replace(kGood,
              "[\"copy\", 0, \"input\", 0, \"output\", 0, 4], [\"send\", 0, 1, \"input\", 0, 4], [\"recv_reduce\", 0, "
              "1, \"output\", 0, 4]",
              "[\"send\", 0, 1, \"input\", 0, 4], [\"recv_reduce_copy\", 0, 1, \"input\", 0, \"output\", 0, 4]"),
      "[\"copy\", 0, \"input\", 0, \"output\", 0, 4], [\"send\", 0, 0, \"input\", 0, 4], [\"recv_reduce\", 0, 0, "
      "\"output\", 0, 4]",
      "[\"send\", 0, 0, \"input\", 0, 4], [\"recv_reduce_copy\", 0, 0, \"input\", 0, \"output\", 0, 4]");
  REQUIRE(rrc != kGood);
  const Schedule rs = read_schedule_json(rrc, "s.json");
  CHECK(rs.program(0).size() == 2);
  CHECK(rs.program(1)[1].kind == OpKind::RecvReduceCopy);
  CHECK(rs.program(1)[1].src == Chunk{BufferId::Input, 0, 4});
  CHECK(verify(rs).ok());
  check_bad(replace(rrc, "[\"recv_reduce_copy\", 0, 1, \"input\", 0, \"output\", 0, 4]",
                    "[\"recv_reduce_copy\", 0, 1, \"output\", 0, 4]"),
            "programs[0][1]: 'recv_reduce_copy' takes 8 fields, got 6");
  check_bad(replace(kGood, "\"channels\": 1", "\"channels\": 0"), "\"channels\" must be at least 1");
  check_bad(replace(kGood, "\"channels\": 1", "\"channels\": 1, \"tree_channels\": [1]"), "\"tree_channels\" entry");
  check_bad(replace(kGood, "\"channels\": 1", "\"channels\": 1, \"tree_channels\": 0"),
            "\"tree_channels\" must be an array of channel numbers, got 0");
  const Schedule tree =
      read_schedule_json(replace(kGood, "\"channels\": 1", "\"channels\": 1, \"tree_channels\": [0]"), "s.json");
  CHECK(tree.pattern(0) == ChannelPattern::Tree);
  CHECK(read_schedule_json(kGood, "s.json").pattern(0) == ChannelPattern::Pipeline);
}

TEST_CASE("schedule: dbt marks every channel a tree, ring none") {
  const Layout l = uniform_layout(2, 4);
  CollectiveArgs a = CollectiveArgs::allreduce(1024, DataType::Float32, ReduceOp::Sum, l.ranks);
  Tuning t;
  t.channels = 4;
  const Schedule dbt = find_algorithm("dbt").generate(l, a, t), ring = find_algorithm("ring").generate(l, a, t);
  for (int ch = 0; ch < 4; ++ch) {
    CHECK(dbt.pattern(ch) == ChannelPattern::Tree);
    CHECK(ring.pattern(ch) == ChannelPattern::Pipeline);
  }
}

TEST_CASE("schedule json: a well-formed but wrong schedule loads, and the verifier names the fault") {
  const Schedule s = read_schedule_json(replace(kGood, "[\"send\", 0, 0, \"input\", 0, 4], ", ""), "s.json");
  const VerifyResult r = verify(s);
  CHECK(r.failure == Failure::UnmatchedRecv);
  CHECK(r.message.find("rank 0 channel 0 op 2") != std::string::npos);
}

TEST_CASE("schedule json: header fields are range-checked, never truncated (limits named)") {
  check_bad(replace(kGood, "\"ranks\": 2", "\"ranks\": 4294967298"),
            "\"ranks\" 4294967298 is more than 65536 (the limit kMaxScheduleRanks)");
  check_bad(replace(kGood, "\"channels\": 1", "\"channels\": 4294967297"), "the limit kMaxScheduleChannels");
  check_bad(replace(kGood, "\"channels\": 1", "\"channels\": 100000000"), "the limit kMaxScheduleChannels");
  check_bad(replace(kGood, "\"count\": 4", "\"count\": 9223372036854775809"), "\"count\" 9223372036854775809 is more");
  check_bad(replace(kGood, "\"count\": 4", "\"count\": 1e400"), "s.json: not valid JSON");
  check_bad(replace(kGood, "\"count\": 4", "\"count\": 4.5"), "\"count\" 4.5 is not an integer");
  check_bad(replace(kGood, "\"version\": 1", "\"version\": \"1\""), "\"version\" must be 1, got \"1\"");
  check_bad(replace(kGood, "\"name\": \"pair\"", "\"name\": 5"), "\"name\" 5: expected a string");
  check_bad(replace(kGood, "\"format\": \"topocoll-schedule\"", "\"format\": 42"), "expected a JSON object with");
  check_bad(replace(kGood, "\"root\": 0", "\"root\": -1"), "\"root\" -1 is not a non-negative integer");
  check_bad(replace(kGood, "\"root\": 0", "\"root\": 2"), "\"root\" 2 is more than 1 (the limit \"ranks\" - 1)");
  check_bad(replace(kGood, "\"dtype\": \"float\"", "\"dtype\": null"), "\"dtype\" null: expected a string");
  check_bad(replace(kGood, "[\"send\", 0, 1, \"input\", 0, 4]", "[\"send\", 0, 4294967297, \"input\", 0, 4]"),
            "peer 4294967297 is more than");
  check_bad(replace(kGood, "[\"send\", 0, 1, \"input\", 0, 4]", "[\"send\", 0, 1, \"input\", 4611686018427387905, 4]"),
            "the limit kMaxScheduleElements");
  check_bad(replace(kGood, "[\"send\", 0, 1, \"input\", 0, 4]", "[\"se\\nnd\", 0, 1, \"input\", 0, 4]"),
            "unknown operation 'se\\nnd'");
}

TEST_CASE("schedule json: the fuzzing reproducers are input errors of one line") {
  namespace fs = std::filesystem;
  int n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(TOPOCOLL_SOURCE_DIR) / "fuzz" / "repros")) {
    const std::string name = e.path().filename().string();
    if (!(name.starts_with("schedule-") || name.starts_with("verify-")) || name.find("window") != std::string::npos)
      continue;
    CAPTURE(name);
    try {
      (void)load_schedule_json(e.path().string());
      FAIL("accepted");
    } catch (const topocoll::InputError& err) {
      CHECK(std::string(err.what()).find('\n') == std::string::npos);
    }
    ++n;
  }
  CHECK(n == 19);
}
