// A library without MSCCL XML interchange (no algorithms/ir/msccl_xml.hpp): nothing to bind;
// topocoll.HAVE_MSCCL is False and read_msccl_xml / write_msccl_xml say so.
#include "python/src/bindings.hpp"

namespace topocoll::python {

void bind_msccl(nanobind::module_&) {}

}  // namespace topocoll::python
