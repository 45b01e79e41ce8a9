// MSCCL XML: the msccl-tools fixtures verify, every registered algorithm round-trips (export,
// import, the same programs and the same verification result), malformed files are refused with
// one message naming the element and what was expected.
#include "algorithms/ir/msccl_xml.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <sstream>

#include "algorithms/registry.hpp"
#include "algorithms/schedule_file.hpp"
#include "algorithms/testing.hpp"
#include "algorithms/verifier.hpp"
#include "common/errors.hpp"

using namespace topocoll::algo;

namespace {

const std::string kFixtures = std::string(TOPOCOLL_SOURCE_DIR) + "/algorithms/testdata/msccl/";

std::string export_xml(const Schedule& s) {
  std::ostringstream o;
  write_msccl_xml(s, o);
  return o.str();
}

// A small out-of-place program: 2 GPUs, allgather of one chunk each, one channel.
const char* kAllgather2 =
    R"(<algo name="ag2" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allgather" inplace="0">
  <gpu id="0" i_chunks="1" o_chunks="2" s_chunks="0">
    <tb id="0" send="1" recv="1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="s" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="1" o_chunks="2" s_chunks="0">
    <tb id="0" send="0" recv="0" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="s" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="r" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>
)";

// A rank's operations on one channel, in order (what the execution contract orders).
Program on_channel(const Program& p, int ch) {
  Program out;
  for (const Op& op : p)
    if (op.channel == ch) out.push_back(op);
  return out;
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const std::size_t i = s.find(from);
  REQUIRE(i != std::string::npos);
  return s.replace(i, from.size(), to);
}

}  // namespace

TEST_CASE("msccl xml: the msccl-tools ring allreduce (result in the input buffer) is proven at several counts") {
  const MscclProgram p = load_msccl_xml(kFixtures + "ring_8_1.xml");
  CHECK(p.collective == Collective::AllReduce);
  CHECK(p.ngpus == 8);
  CHECK(p.channels == 8);
  CHECK(p.result_in_input);
  CHECK(count_granularity(p) == 8);
  for (std::uint64_t n : {8u, 64u, 8u * 1009u}) {
    const Schedule s = instantiate(p, CollectiveArgs::allreduce(n, DataType::Float32, ReduceOp::Sum, 8));
    const VerifyResult r = verify(s);
    INFO(n, " ", r.message);
    CHECK(r.ok());
    CHECK(s.num_channels() == 8);
  }
  CHECK_THROWS_WITH_AS(instantiate(p, CollectiveArgs::allreduce(12, DataType::Float32, ReduceOp::Sum, 8)),
                       doctest::Contains("count 12 is not a positive multiple of 8"), topocoll::InputError);
  CHECK_THROWS_WITH_AS(instantiate(p, CollectiveArgs::allreduce(8, DataType::Float32, ReduceOp::Sum, 4)),
                       doctest::Contains("ngpus=\"8\"; the call has 4 ranks"), topocoll::InputError);
}

TEST_CASE("msccl xml: the msccl-tools ring of two channels per ring is proven") {
  const MscclProgram p = load_msccl_xml(kFixtures + "ring_2_4.xml");
  CHECK(p.channels == 8);
  CHECK(count_granularity(p) == 32);
  for (std::uint64_t n : {32u, 32u * 1009u}) {
    const Schedule s = instantiate(p, CollectiveArgs::allreduce(n, DataType::Float32, ReduceOp::Sum, 8));
    const VerifyResult r = verify(s);
    INFO(n, " ", r.message);
    CHECK(r.ok());
  }
}

TEST_CASE("msccl xml: a schedule file of MSCCL XML is size-generic and verifies") {
  const ScheduleFile f = load_schedule_file(kFixtures + "ring_8_1.xml");
  CHECK(f.format == "MSCCL XML");
  CHECK(!f.count);
  CHECK(f.granularity == 8);
  CHECK(f.ranks == 8);
  CHECK(verify(f.instantiate(f.args_at(256))).ok());
}

TEST_CASE("msccl xml: an out-of-place program with copies verifies; a broken one does not") {
  const MscclProgram p = parse_msccl_xml(kAllgather2, "ag2.xml");
  CHECK(count_granularity(p) == 1);
  CollectiveArgs a;
  a.collective = Collective::AllGather;
  a.ranks = 2;
  a.count = 5;
  CHECK(verify(instantiate(p, a)).ok());
  // gpu 1 receives into the chunk it owns: the other chunk is never written.
  const std::string broken = replaced(kAllgather2, R"(type="r" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0")",
                                      R"(type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1")");
  CHECK(!verify(instantiate(parse_msccl_xml(broken, "broken.xml"), a)).ok());
}

TEST_CASE("msccl xml: every registered algorithm round-trips (export, import: the same programs and verification)") {
  std::size_t round_trips = 0, refused = 0;
  for (const Algorithm& alg : registry()) {
    for (int p : {2, 3, 4, 8}) {
      const Layout layout = uniform_layout(p >= 4 ? 2 : 1, p >= 4 ? p / 2 : p, {.nvls = true, .sharp = true});
      for (std::uint64_t n : {std::uint64_t{1}, static_cast<std::uint64_t>(p) + 1, std::uint64_t{1009}}) {
        Tuning t;
        t.channels = n % 2 == 0 ? 1 : 2;
        t.slice_bytes = 16;
        const CollectiveArgs a = testing::conformance_args(alg.collective, p, n, p / 2, false);
        if (!alg.supports(layout, a, t).ok) continue;
        const Schedule s = alg.generate(layout, a, t);
        INFO(alg.name, " p=", p, " n=", n);
        if (s.uses_switch() || a.collective == Collective::AllToAllV) {
          CHECK_THROWS_AS(export_xml(s), topocoll::InputError);
          ++refused;
          continue;
        }
        const std::string xml = export_xml(s);
        const MscclProgram prog = parse_msccl_xml(xml, alg.name + ".xml");
        REQUIRE(a.count % count_granularity(prog) == 0);
        const Schedule back = instantiate(prog, a);
        REQUIRE(back.num_channels() == s.num_channels());
        CHECK(back.scratch_count() == s.scratch_count());
        for (int ch = 0; ch < s.num_channels(); ++ch) CHECK(back.pattern(ch) == s.pattern(ch));
        for (int r = 0; r < p; ++r)
          for (int ch = 0; ch < s.num_channels(); ++ch)
            REQUIRE(on_channel(back.program(r), ch) == on_channel(s.program(r), ch));
        VerifyOptions o;
        o.node_of = layout.node_of;
        const VerifyResult v1 = verify(s, o), v2 = verify(back, o);
        CHECK(v1.failure == v2.failure);
        CHECK(v1.steps == v2.steps);
        CHECK(v1.max_bytes_sent == v2.max_bytes_sent);
        ++round_trips;
      }
    }
  }
  MESSAGE(round_trips, " round trips, ", refused, " refused (switch groups, size matrices)");
  CHECK(round_trips > 100);
}

TEST_CASE("msccl xml: malformed programs are refused with one message naming the element") {
  struct Case {
    std::string from, to, expected;
  };
  const std::vector<Case> cases = {
      {"</algo>", "", "not well-formed XML"},
      {R"(coll="allgather")", R"(coll="allscatter")", R"(coll="allscatter": expected allreduce)"},
      {R"(ngpus="2")", R"(ngpus="two")", R"(ngpus="two": expected an integer)"},
      {R"(nchunksperloop="2" )", "", "missing attribute nchunksperloop"},
      {R"(<gpu id="1" i_chunks="1")", R"(<gpu id="0" i_chunks="1")", "<gpu id=0>: a second <gpu>"},
      {R"(<gpu id="1" i_chunks="1")", R"(<gpu id="1" i_chunks="2")", R"(<gpu id=1>: i_chunks="2": expected 1)"},
      {R"(type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0")",
       R"(type="cpx" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0")", R"(<tb id=0> <step s=0>: type="cpx")"},
      {R"(srcbuf="i" srcoff="0" dstbuf="o" dstoff="1")", R"(srcbuf="q" srcoff="0" dstbuf="o" dstoff="1")",
       R"(<gpu id=1> <tb id=0> <step s=0>: srcbuf="q": expected a buffer)"},
      {R"(type="r" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0")",
       R"(type="r" srcbuf="o" srcoff="0" dstbuf="o" dstoff="2")",
       R"(<gpu id=1> <tb id=0> <step s=2>: dstbuf="o" dstoff="2" cnt="1": outside the buffer)"},
      {R"(type="r" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0")",
       R"(type="r" srcbuf="o" srcoff="0" dstbuf="i" dstoff="0")",
       R"(writes dstbuf="i": the input buffer is read-only)"},
      {R"(<tb id="0" send="0" recv="0" chan="0">)", R"(<tb id="0" send="0" recv="-1" chan="0">)",
       R"(<gpu id=1> <tb id=0> <step s=2>: type="r" receives, but the tb has recv="-1")"},
      {R"(<tb id="0" send="0" recv="0" chan="0">)", R"(<tb id="0" send="1" recv="0" chan="0">)",
       "a gpu does not send to or receive from itself"},
      {R"(<tb id="0" send="0" recv="0" chan="0">)", R"(<tb id="0" send="0" recv="0" chan="0" pattern="ring">)",
       R"(pattern="ring": expected pipeline or tree)"},
      {R"(cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="s" srcbuf="o" srcoff="1")",
       R"(cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="3" type="s" srcbuf="o" srcoff="1")",
       R"(<gpu id=1> <tb id=0> <step s=3>: expected s="1")"},
      {R"(srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1")",
       R"(srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="4" deps="0")", R"(depid="4": no tb of that id on gpu 0)"},
      {R"(srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1")",
       R"(srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="0" deps="7")", R"(deps="7": tb 0 has steps 0 to 2)"},
      {R"(<gpu id="1" i_chunks="1" o_chunks="2" s_chunks="0">)",
       R"(<gpu id="3" i_chunks="1" o_chunks="2" s_chunks="0">)", R"(id="3": expected a rank below ngpus)"},
  };
  for (const Case& c : cases) {
    INFO(c.expected);
    const std::string text = replaced(kAllgather2, c.from, c.to);
    CHECK_THROWS_WITH_AS(parse_msccl_xml(text, "bad.xml"), doctest::Contains(c.expected.c_str()), topocoll::InputError);
    try {
      parse_msccl_xml(text, "bad.xml");
    } catch (const topocoll::InputError& e) {
      CHECK(std::string(e.what()).rfind("bad.xml: ", 0) == 0);
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
    }
  }
}

TEST_CASE("msccl xml: programs that parse but cannot run are refused when instantiated") {
  CollectiveArgs a;
  a.collective = Collective::AllGather;
  a.ranks = 2;
  a.count = 4;
  SUBCASE("a receive whose send has another count") {
    const std::string t = replaced(kAllgather2, R"(type="r" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1")",
                                   R"(type="r" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="2")");
    CHECK_THROWS_WITH_AS(instantiate(parse_msccl_xml(t, "cnt.xml"), a),
                         doctest::Contains("cnt.xml: <gpu id=1> <tb id=0> <step s=2> receives cnt=\"2\""),
                         topocoll::InputError);
  }
  SUBCASE("a dependency cycle deadlocks") {
    std::string t = replaced(kAllgather2, R"(dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1")",
                             R"(dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="1" send="-1" recv="-1" chan="0">
      <step s="0" type="nop" srcbuf="i" srcoff="-1" dstbuf="o" dstoff="-1" cnt="0" depid="0" deps="2" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1")");
    t = replaced(t,
                 R"(<step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1")",
                 R"(<step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="1" deps="0")");
    CHECK_THROWS_WITH_AS(instantiate(parse_msccl_xml(t, "cycle.xml"), a),
                         doctest::Contains("cycle.xml: the program deadlocks"), topocoll::InputError);
  }
  SUBCASE("another collective") {
    a.collective = Collective::AllReduce;
    CHECK_THROWS_WITH_AS(instantiate(parse_msccl_xml(kAllgather2, "ag.xml"), a),
                         doctest::Contains("an MSCCL allgather program; the call is allreduce"), topocoll::InputError);
  }
}

TEST_CASE("msccl xml: a document of another root element is refused") {
  CHECK_THROWS_WITH_AS(parse_msccl_xml("<system version=\"1\"/>", "topo.xml"),
                       doctest::Contains("topo.xml: root element <system>: expected <algo>"), topocoll::InputError);
}

TEST_CASE("msccl xml: looks_like_xml") {
  CHECK(looks_like_xml("  \n<algo>"));
  CHECK(looks_like_xml("\xEF\xBB\xBF<algo>"));
  CHECK(!looks_like_xml("{\"format\": 1}"));
  CHECK(!looks_like_xml(""));
}
