// make_engine: the analytic engine, and the engines a program registered (engine.hpp).
#include "simulator/engine.hpp"

#include <fmt/format.h>

#include <map>

#include "common/errors.hpp"

namespace topocoll::sim {

namespace {

std::map<std::string, EngineFactory>& registered() {
  static std::map<std::string, EngineFactory> engines;
  return engines;
}

}  // namespace

SimResult Engine::run_fastest(const topo::Topology& t, const algo::Schedule& s,
                              const std::vector<const Calibration*>& cs, const SimOptions& o, std::size_t& won) {
  TOPOCOLL_ASSERT(!cs.empty(), "Engine::run_fastest: no calibration");
  SimResult best;
  for (std::size_t i = 0; i < cs.size(); ++i) {
    SimResult ri = run(t, s, *cs[i], o);
    if (i == 0 || ri.time_s < best.time_s) {
      best = std::move(ri);
      won = i;
    }
  }
  return best;
}

void register_engine(const std::string& name, EngineFactory factory) {
  TOPOCOLL_ASSERT(factory != nullptr, fmt::format("engine '{}' registered without a factory", name));
  registered()[name] = factory;
}

std::unique_ptr<Engine> make_engine(const std::string& name) {
  if (name == "analytic") return make_analytic_engine();
  if (auto it = registered().find(name); it != registered().end()) return it->second();
  if (name == "simgrid")
    throw InputError(
        "engine 'simgrid': this program was built without the SimGrid engine (it does not link "
        "topocoll_simgrid); use --engine analytic");
  throw InputError(fmt::format("unknown engine '{}': expected simgrid or analytic", name));
}

}  // namespace topocoll::sim
