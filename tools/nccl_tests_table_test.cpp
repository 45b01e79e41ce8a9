// common/nccl_tests_table.hpp against nccl-tests' own output: rows copied from published logs of
// each layout, the header lines from the format strings of nccl-tests' source.
#include "common/nccl_tests_table.hpp"

#include <doctest/doctest.h>

#include "common/errors.hpp"

using namespace topocoll;
using nccl_tests::Layout;

namespace {

nccl_tests::Row allreduce_row(std::uint64_t bytes, double t0, double a0, double b0, double t1, double a1, double b1) {
  return {.bytes = bytes,
          .count = bytes / 4,
          .type = "float",
          .redop = "sum",
          .root = -1,
          .out_of_place = {t0, a0, b0, 0},
          .in_place = {t1, a1, b1, 0}};
}

}  // namespace

TEST_CASE("current layout: rows as nccl-tests 2.18 prints them") {
  // all_reduce_perf, nccl-tests 2.18.0, 2 ranks (a published log).
  CHECK(nccl_tests::row_line(Layout::Current, allreduce_row(8, 4247.13, 0, 0, 4358.92, 0, 0)) ==
        "           8             2     float     sum      -1  4247.13    0.00    0.00       0  4358.92    0.00    "
        "0.00       0\n");
  CHECK(nccl_tests::row_line(Layout::Current, allreduce_row(33554432, 12808.0, 2.62, 2.62, 13145.7, 2.55, 2.55)) ==
        "    33554432       8388608     float     sum      -1  12808.0    2.62    2.62       0  13145.7    2.55    "
        "2.55       0\n");
}

TEST_CASE("classic layout: rows as the earlier releases print them") {
  // all_reduce_perf on 8 GPUs (a published log): %7.1f time above 100 us, %6.2f bandwidths, %5g.
  CHECK(nccl_tests::row_line(Layout::Classic,
                             allreduce_row(1073741824, 8687.1, 123.60, 216.30, 8719.1, 123.15, 215.51)) ==
        "  1073741824     268435456     float     sum      -1   8687.1  123.60  216.30      0   8719.1  123.15  "
        "215.51      0\n");
}

TEST_CASE("#wrong N/A when not checked; float_str as getFloatStr") {
  nccl_tests::Row r = allreduce_row(8, 38, 0, 0, 38, 0, 0);
  r.out_of_place.wrong.reset();
  r.in_place.wrong.reset();
  CHECK(nccl_tests::row_line(Layout::Current, r)
            .ends_with("    38.00    0.00    0.00    N/A    38.00    0.00    0.00    N/A\n"));
  CHECK(nccl_tests::row_line(Layout::Classic, r)
            .ends_with("    38.00    0.00    0.00    N/A    38.00    0.00    0.00    N/A\n"));
  CHECK(nccl_tests::float_str(99999.0, 7) == "99999.0");
  CHECK(nccl_tests::float_str(1234567.0, 7) == "1234567");
  CHECK(nccl_tests::float_str(12345678.0, 7) == "1.2e+07");
  CHECK(nccl_tests::float_str(1234.5, 6) == "1234.5");
}

TEST_CASE("footer, NCCL_TESTS_MIN_BW and the column header") {
  const nccl_tests::Footer f{.program = "all_reduce_perf", .failed_checks = 0, .avg_busbw = 67.9217, .min_bw = {}};
  CHECK(nccl_tests::footer(Layout::Classic, f) ==
        "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 67.9217 \n#\n\n");
  CHECK(nccl_tests::footer(Layout::Current, f) ==
        "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 67.9217 \n#\n# Collective test concluded: "
        "all_reduce_perf\n");
  nccl_tests::Footer slow = f;
  slow.min_bw = 80.0;  // 67.9 < 0.9 x 80 = 72: FAILED
  CHECK(nccl_tests::footer(Layout::Current, slow).find("67.9217 FAILED\n") != std::string::npos);
  CHECK(nccl_tests::footer_failed(slow));
  slow.min_bw = 75.0;  // 67.9 >= 0.9 x 75 = 67.5: OK
  CHECK(nccl_tests::footer(Layout::Current, slow).find("67.9217 OK\n") != std::string::npos);
  CHECK_FALSE(nccl_tests::footer_failed(slow));
  CHECK(nccl_tests::min_bw_from(nullptr) == std::nullopt);
  CHECK(nccl_tests::min_bw_from("12.5") == 12.5);
  CHECK_THROWS_AS(nccl_tests::min_bw_from("fast"), InputError);
  CHECK_THROWS_AS(nccl_tests::min_bw_from("-1"), InputError);
  CHECK(nccl_tests::column_header(Layout::Classic)
            .find("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
                  "algbw   busbw #wrong\n") != std::string::npos);
  CHECK(nccl_tests::column_header(Layout::Current)
            .find("#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   "
                  "algbw   busbw  #wrong \n") != std::string::npos);
  CHECK_THROWS_AS(nccl_tests::parse_layout("2.9", "--nccl-tests-layout"), InputError);
}

TEST_CASE("-J document: nccl-tests' keys and quirks") {
  nccl_tests::JsonRun run;
  run.header.program = "all_reduce_perf";
  run.experiment_name = "ring";
  const auto j = nccl_tests::json_document(run, {allreduce_row(8, 1, 2, 3, 4, 5, 6)}, {.avg_busbw = 4.5});
  CHECK(j["version"] == 2);
  CHECK(j["results"][0]["root"] == "    -1");
  CHECK(j["results"][0]["in_place"]["bus_bw"] == 6.0);
  CHECK(j["out_of_bounds"]["okay"] == "true");
  CHECK(j["average_bus_bandwidth"]["okay"] == "unchecked");
  CHECK(j["config"]["step_factor"] == 2);
}
