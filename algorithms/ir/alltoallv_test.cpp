// All-to-allv: the size matrix (displacements, symmetry, parsing and its errors), the verifier's
// postcondition on it, the schedule JSON round trip of its header, and the generator's refusals.
#include <doctest/doctest.h>

#include <sstream>

#include "algorithms/ir/schedule_json.hpp"
#include "algorithms/registry.hpp"
#include "algorithms/testing.hpp"
#include "algorithms/verifier.hpp"
#include "common/errors.hpp"

using namespace topocoll::algo;
using topocoll::InputError;

TEST_CASE("alltoallv sizes: displacements are the prefix sums of rows and columns") {
  // rank 0 sends 1, 2, 3; rank 1 sends 4, 0, 6; rank 2 sends 7, 8, 9
  const auto m = AllToAllVSizes::make(3, {1, 2, 3, 4, 0, 6, 7, 8, 9});
  CHECK(m->count(1, 2) == 6);
  CHECK(m->send_displ(1, 2) == 4);  // after 4 + 0
  CHECK(m->recv_displ(2, 1) == 3);  // rank 2 receives 3 from rank 0 first
  CHECK(m->sent(0) == 6);
  CHECK(m->received(0) == 12);
  CHECK(m->max_sent() == 24);
  CHECK(m->max_received() == 18);
  CHECK(m->total() == 40);
  CHECK_FALSE(m->symmetric());
  // The source of each output element of rank 1: 2 from rank 0, none from 1, 8 from 2.
  CHECK(m->source_at(1, 0) == 0);
  CHECK(m->source_at(1, 1) == 0);
  CHECK(m->source_at(1, 2) == 2);  // rank 1's own block is empty: the next one starts here
  CHECK(m->source_at(1, 9) == 2);
  CHECK(AllToAllVSizes::make(2, {1, 5, 5, 0})->symmetric());

  CollectiveArgs a = alltoallv_args(m, DataType::Float32);
  CHECK(a.ranks == 3);
  CHECK(a.input_count() == 24);
  CHECK(a.output_count() == 18);
  CHECK(a.defined_output_count(0) == 12);
  CHECK(nccl_tests_bytes(a) == 24 * 4);
  CHECK_THROWS_WITH_AS(nccl_tests_args(Collective::AllToAllV, 1024, DataType::Float32, ReduceOp::Sum, 3),
                       doctest::Contains("takes its sizes from a size matrix"), InputError);
  CHECK(parse_collective("alltoallv") == Collective::AllToAllV);
  CHECK(to_string(Collective::AllToAllV) == "alltoallv");
}

TEST_CASE("alltoallv sizes: the text form and its errors") {
  const auto m = parse_alltoallv_sizes("# tokens per expert\n1, 2\n\n3\t4  # the second row\n", "m.csv");
  CHECK(*m == *AllToAllVSizes::make(2, {1, 2, 3, 4}));
  CHECK(*parse_alltoallv_sizes(format_alltoallv_sizes(*m), "again") == *m);
  struct Bad {
    const char* text;
    const char* message;
  };
  for (const Bad& b : {Bad{"", "m.csv: no size matrix"}, Bad{"1 2\n3\n", "m.csv:2: a row of 1 counts: expected 2"},
                       Bad{"1 2\n3 4\n5 6\n", "3 rows of 2 counts: expected a square matrix"},
                       Bad{"1 -2\n3 4\n", "m.csv:1: '-2' is not an element count"},
                       Bad{"1 x\n3 4\n", "m.csv:1: 'x' is not an element count"},
                       Bad{"1 99999999999999999999\n3 4\n", "'99999999999999999999' is not an element count"},
                       Bad{"1 1152921504606846976\n3 4\n", "rank 0 sends more than"}}) {
    CAPTURE(b.text);
    CHECK_THROWS_WITH_AS(parse_alltoallv_sizes(b.text, "m.csv"), doctest::Contains(b.message), InputError);
  }
  CHECK_THROWS_WITH_AS(AllToAllVSizes::make(2, {1, 2, 3}), doctest::Contains("3 counts given, expected 2 x 2 = 4"),
                       InputError);
  CHECK_THROWS_WITH_AS(load_alltoallv_sizes("/nonexistent/m.csv"), doctest::Contains("cannot read the size matrix"),
                       InputError);
}

TEST_CASE("alltoallv: the verifier proves the pairwise schedule and refuses broken ones") {
  const Algorithm& alg = find_algorithm("alltoallv-pairwise");
  CHECK(alg.collective == Collective::AllToAllV);
  const Layout l = uniform_layout(2, 3);
  Tuning t;
  t.channels = 2;
  t.slice_bytes = 8;
  const CollectiveArgs a = testing::conformance_args(Collective::AllToAllV, 6, 7, 0, false);
  REQUIRE(alg.supports(l, a, t).ok);
  const Schedule s = alg.generate(l, a, t);
  VerifyOptions o;
  o.node_of = l.node_of;
  const VerifyResult r = verify(s, o);
  CHECK_MESSAGE(r.ok(), r.message);
  const CostSheet c = alg.cost(l, a, t);
  CHECK(c.bytes_sent == r.max_bytes_sent);
  CHECK(c.inter_bytes_sent == r.max_inter_bytes_sent);

  // In place needs a symmetric matrix: refused with the reason, not a verifier failure.
  VerifyOptions ip = o;
  ip.in_place = true;
  CHECK_THROWS_WITH_AS(verify(s, ip), doctest::Contains("needs a symmetric size matrix"), InputError);
  const CollectiveArgs sym = testing::conformance_args(Collective::AllToAllV, 6, 7, 0, true);
  const VerifyResult rs = verify(alg.generate(l, sym, t), ip);
  CHECK_MESSAGE(rs.ok(), rs.message);

  // The same programs under a matrix with one block swapped: the verifier names the misplaced data.
  std::vector<std::uint64_t> counts;
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) counts.push_back(a.sizes->count(i, j));
  std::vector<Program> programs;
  for (int rank = 0; rank < 6; ++rank) programs.push_back(s.program(rank));
  std::swap(counts[0 * 6 + 1], counts[0 * 6 + 2]);
  if (counts[1] != counts[2]) {
    CollectiveArgs other = a;
    other.sizes = AllToAllVSizes::make(6, counts);
    const VerifyResult bad =
        verify(Schedule::from_programs("swapped", other, s.num_channels(), s.scratch_count(), programs), o);
    CHECK_FALSE(bad.ok());
  }
  // Dropping the last copy of rank 0 leaves part of its output unwritten.
  std::vector<Program> missing = programs;
  missing[0].pop_back();
  const VerifyResult m = verify(Schedule::from_programs("missing", a, s.num_channels(), s.scratch_count(), missing), o);
  CHECK_FALSE(m.ok());

  // Without a matrix, or with one of other ranks: refused with a reason.
  CollectiveArgs none = a;
  none.sizes = nullptr;
  CHECK_FALSE(alg.supports(l, none, t).ok);
  CHECK_THROWS_WITH_AS(Schedule::from_programs("x", none, 1, 0, std::vector<Program>(6)),
                       doctest::Contains("without a size matrix"), InputError);
  CollectiveArgs wrong = a;
  wrong.sizes = testing::skewed_alltoallv_sizes(4, 7, false);
  CHECK(alg.supports(l, wrong, t).reason.find("for 4 ranks, the job has 6") != std::string::npos);
}

TEST_CASE("alltoallv: schedule JSON carries the size matrix") {
  const Layout l = uniform_layout(1, 4);
  Tuning t;
  const CollectiveArgs a = testing::conformance_args(Collective::AllToAllV, 4, 9, 0, false);
  const Schedule s = find_algorithm("alltoallv-pairwise").generate(l, a, t);
  std::ostringstream out;
  write_schedule_json(s, out);
  const Schedule back = read_schedule_json(out.str(), "a2av.json");
  REQUIRE(back.args().sizes);
  CHECK(*back.args().sizes == *a.sizes);
  for (int r = 0; r < 4; ++r) CHECK(back.program(r) == s.program(r));
  CHECK(verify(back, {}).ok());
  // Without "sizes", or with a ragged row: one clear error.
  std::string text = out.str();
  const std::size_t at = text.find(",\n \"sizes\"");
  const std::size_t end = text.find(",\n \"programs\"");
  REQUIRE(at != std::string::npos);
  REQUIRE(end != std::string::npos);
  CHECK_THROWS_WITH_AS(read_schedule_json(text.substr(0, at) + text.substr(end), "a2av.json"),
                       doctest::Contains("an alltoallv schedule needs \"sizes\""), InputError);
  std::string ragged = text;
  ragged.replace(at, end - at, ",\n \"sizes\": [[1,2,3,4],[1,2,3],[1,2,3,4],[1,2,3,4]]");
  CHECK_THROWS_WITH_AS(read_schedule_json(ragged, "a2av.json"), doctest::Contains("\"sizes\"[1] must be a row of 4"),
                       InputError);
}
