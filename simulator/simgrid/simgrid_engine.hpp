// The SimGrid engine (simgrid_engine.cpp), in topocoll_simgrid: the one library that links
// SimGrid. engine.hpp's make_engine("simgrid") returns it in a program that called
// register_simgrid_engine() once in main().
#pragma once

#include <memory>

#include "simulator/engine.hpp"

namespace topocoll::sim {

std::unique_ptr<Engine> make_simgrid_engine();

// Makes make_engine("simgrid") return make_simgrid_engine().
void register_simgrid_engine();

}  // namespace topocoll::sim
