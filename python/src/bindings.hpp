// The parts of topocoll._topocoll that live in translation units of their own (python/src/).
#pragma once
#include <nanobind/nanobind.h>

namespace topocoll::python {

// MSCCL XML interchange (algorithms/ir/msccl_xml.hpp): msccl.cpp binds it where the library has
// it, msccl_absent.cpp binds nothing (python/CMakeLists.txt picks one).
void bind_msccl(nanobind::module_& m);

}  // namespace topocoll::python
