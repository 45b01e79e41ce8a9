// MSCCL XML interchange from Python (algorithms/ir/msccl_xml.hpp): export a schedule, import a
// program at a count (size-generic: chunks are fractions of the buffers).
#include <nanobind/stl/string.h>

#include <sstream>
#include <string>

#include "algorithms/ir/msccl_xml.hpp"
#include "python/src/bindings.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace topocoll::python {

void bind_msccl(nb::module_& m) {
  m.def(
      "schedule_to_msccl_xml",
      [](const algo::Schedule& s) {
        std::ostringstream os;
        algo::write_msccl_xml(s, os);
        return os.str();
      },
      "schedule"_a);
  m.def(
      "msccl_count_granularity",
      [](const std::string& text, const std::string& source) {
        return algo::count_granularity(algo::parse_msccl_xml(text, source));
      },
      "text"_a, "source_name"_a = "<string>");
  m.def(
      "schedule_from_msccl_xml",
      [](const std::string& text, const std::string& source, std::uint64_t count, const std::string& dtype,
         const std::string& op) {
        const algo::MscclProgram p = algo::parse_msccl_xml(text, source);
        algo::CollectiveArgs a;
        a.collective = p.collective;
        a.count = count;
        a.dtype = algo::parse_dtype(dtype);
        a.op = algo::parse_op(op);
        a.ranks = p.ngpus;
        a.root = p.root;
        return algo::instantiate(p, a);
      },
      "text"_a, "source_name"_a, "count"_a, "dtype"_a = "float32", "op"_a = "sum");
}

}  // namespace topocoll::python
