// MSCCL XML (`topocoll verify --schedule FILE.xml --count N`, schedule files of sim and bench): the
// parser, the instantiation at the program's smallest count, then the verifier out of place and
// in place. "The program deadlocks" and "the schedule is wrong" are normal outcomes.
#include "algorithms/ir/msccl_xml.hpp"
#include "algorithms/verifier.hpp"
#include "fuzz/harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return topocoll::fuzz::guarded([&] {
    using namespace topocoll::algo;
    const MscclProgram p = parse_msccl_xml(topocoll::fuzz::as_text(data, size), "fuzz.xml");
    CollectiveArgs a;
    a.collective = p.collective;
    a.ranks = p.ngpus;
    a.root = p.root;
    a.count = count_granularity(p);
    const Schedule s = instantiate(p, a);
    for (const bool in_place : {false, true}) {
      VerifyOptions o;
      o.in_place = in_place;
      (void)verify(s, o);
    }
  });
}
