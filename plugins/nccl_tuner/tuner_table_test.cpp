// The tuner table (tuner_table.hpp): what parses, what is refused and on which line, the row a
// call finds, and that what format_table writes parses back to the same rows.
#include "plugins/nccl_tuner/tuner_table.hpp"

#include <doctest/doctest.h>

using namespace topocoll::tuner;

namespace {

const std::string kHead = std::string(kHeader) + "\n";

// The error of a one-row table, as "line N: message".
std::string row_error(const std::string& row) {
  const ParseResult r = parse_table("# a comment\n" + kHead + row + "\n");
  return r.ok() ? "" : "line " + std::to_string(r.error_line) + ": " + r.error;
}

}  // namespace

TEST_CASE("a table parses: comments, blank lines, spaces, case, CRLF") {
  const ParseResult r = parse_table("# made by hand\n\n" + kHead +
                                    "allreduce,0,4095,nvls,simple,16,2,16\r\n"
                                    "  AllReduce , 4096 , 18446744073709551615 , RING , LL128 , -1 , -1 , -1 \n"
                                    "# between rows\n"
                                    "allgather,0,100,PAT,LL,1,1,8");
  REQUIRE(r.ok());
  REQUIRE(r.rows.size() == 3);
  CHECK(r.rows[0] == Row{Collective::AllReduce, 0, 4095, Algorithm::Nvls, Protocol::Simple, 16, 2, 16});
  CHECK(r.rows[1] == Row{Collective::AllReduce, 4096, UINT64_MAX, Algorithm::Ring, Protocol::LL128, kAny, kAny, kAny});
  CHECK(r.rows[2] == Row{Collective::AllGather, 0, 100, Algorithm::Pat, Protocol::LL, 1, 1, 8});
}

TEST_CASE("a header without rows is an empty table; no header is an error") {
  CHECK(parse_table(kHead).ok());
  CHECK(parse_table(kHead).rows.empty());
  const ParseResult none = parse_table("# only comments\n");
  CHECK_FALSE(none.ok());
  CHECK(none.error.find("no header line") != std::string::npos);
  const ParseResult other = parse_table("allreduce,0,65536,tree,simple,2,1,-1,-1,1\n");  // NCCL example's format
  CHECK(other.error_line == 1);
  CHECK(other.error.find("expected the header line") != std::string::npos);
}

TEST_CASE("bad rows are named by line and field") {
  CHECK(row_error("allreduce,0,10,RING,SIMPLE,4,1") == "line 3: 7 fields, expected 8 (" + std::string(kHeader) + ")");
  CHECK(row_error("allreduc,0,10,RING,SIMPLE,4,1,8").rfind("line 3: collective 'allreduc': expected broadcast", 0) ==
        0);
  CHECK(row_error("allreduce,-1,10,RING,SIMPLE,4,1,8") == "line 3: min_bytes '-1': expected a whole number of bytes");
  CHECK(row_error("allreduce,0,1K,RING,SIMPLE,4,1,8") == "line 3: max_bytes '1K': expected a whole number of bytes");
  CHECK(row_error("allreduce,0,18446744073709551616,RING,SIMPLE,4,1,8") ==
        "line 3: max_bytes '18446744073709551616': expected a whole number of bytes");
  CHECK(row_error("allreduce,10,9,RING,SIMPLE,4,1,8") == "line 3: max_bytes 9 is below min_bytes 10");
  CHECK(row_error("allreduce,0,10,RINGG,SIMPLE,4,1,8") ==
        "line 3: algorithm 'RINGG': expected TREE, RING, COLLNET_DIRECT, COLLNET_CHAIN, NVLS, NVLS_TREE or PAT");
  CHECK(row_error("allreduce,0,10,RING,LL64,4,1,8") == "line 3: protocol 'LL64': expected LL, LL128 or SIMPLE");
  CHECK(row_error("allreduce,0,10,RING,SIMPLE,0,1,8") == "line 3: channels '0': expected 1 to 64, or -1 (NCCL's own)");
  CHECK(row_error("allreduce,0,10,RING,SIMPLE,65,1,8") ==
        "line 3: channels '65': expected 1 to 64, or -1 (NCCL's own)");
  CHECK(row_error("allreduce,0,10,RING,SIMPLE,4,-2,8") ==
        "line 3: nodes '-2': expected a node count (1 or more), or -1 (any)");
  CHECK(row_error("allreduce,0,10,RING,SIMPLE,4,1,x") ==
        "line 3: ranks 'x': expected a rank count (1 or more), or -1 (any)");
}

TEST_CASE("one bad row refuses the whole table") {
  const ParseResult r = parse_table(kHead + "allreduce,0,10,RING,SIMPLE,4,1,8\nallreduce,11,20,RING,SIMPLE,4,1\n");
  CHECK_FALSE(r.ok());
  CHECK(r.error_line == 3);
  CHECK(r.rows.empty());
}

TEST_CASE("find_row: collective, inclusive range, job, first match wins") {
  const std::vector<Row> rows = {
      {Collective::AllReduce, 0, 99, Algorithm::Tree, Protocol::LL, 2, 2, 16},
      {Collective::AllReduce, 50, 1000, Algorithm::Ring, Protocol::Simple, 8, kAny, kAny},
      {Collective::AllGather, 0, 1000, Algorithm::Pat, Protocol::Simple, kAny, 2, 16},
  };
  CHECK(find_row(rows, Collective::AllReduce, 0, 2, 16) == &rows[0]);
  CHECK(find_row(rows, Collective::AllReduce, 99, 2, 16) == &rows[0]);
  CHECK(find_row(rows, Collective::AllReduce, 100, 2, 16) == &rows[1]);
  CHECK(find_row(rows, Collective::AllReduce, 50, 4, 32) == &rows[1]);  // rows[0] is for another job
  CHECK(find_row(rows, Collective::AllReduce, 1001, 2, 16) == nullptr);
  CHECK(find_row(rows, Collective::AllGather, 5, 2, 16) == &rows[2]);
  CHECK(find_row(rows, Collective::AllGather, 5, 2, 8) == nullptr);
  CHECK(find_row(rows, Collective::Broadcast, 5, 2, 16) == nullptr);
}

TEST_CASE("format_table writes what parse_table reads; the NCCL example format in lower case") {
  const std::vector<Row> rows = {
      {Collective::AllReduce, 0, 65535, Algorithm::NvlsTree, Protocol::Simple, 16, 2, 16},
      {Collective::AllReduce, 65536, UINT64_MAX, Algorithm::CollNetDirect, Protocol::LL128, kAny, 2, 16},
  };
  const std::string text = format_table(rows, {"made by a test"});
  CHECK(text.rfind("# made by a test\n" + kHead, 0) == 0);
  const ParseResult back = parse_table(text);
  REQUIRE(back.ok());
  CHECK(back.rows == rows);
  const std::string example = format_nccl_example(rows, {std::string(300, 'x')});
  CHECK(example.find("allreduce,0,65535,nvls_tree,simple,16,2,16\n") != std::string::npos);
  CHECK(example.find("allreduce,65536,18446744073709551615,collnet_direct,ll128,-1,2,16\n") != std::string::npos);
  CHECK(example.find(std::string(201, 'x')) == std::string::npos);  // lines the example reads whole
}
