// make_engine in a program without the SimGrid engine (this test binary links
// topocoll_simulator alone, which has no SimGrid): a clear InputError, not a link error.
#include "simulator/engine.hpp"

#include <doctest/doctest.h>

#include "common/errors.hpp"

using namespace topocoll;

TEST_CASE("make_engine: analytic always; simgrid only where the SimGrid engine is linked and registered") {
  CHECK(sim::make_engine("analytic")->name() == "analytic");
  CHECK_THROWS_WITH_AS(sim::make_engine("simgrid"), doctest::Contains("built without the SimGrid engine"), InputError);
  CHECK_THROWS_WITH_AS(sim::make_engine("ns3"), doctest::Contains("unknown engine 'ns3'"), InputError);
}
