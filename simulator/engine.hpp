// Executing a schedule in simulated time. Two engines share this interface and the same routes
// and calibration: `analytic` (an alpha-beta event simulation with static link sharing) and
// `simgrid` (SimGrid 3.32's CM02 flow model, in simulator/simgrid/). The NCCL reference model is separate
// (nccl_model.hpp): it predicts stock NCCL, not a schedule.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/ir/schedule.hpp"
#include "simulator/calibration.hpp"
#include "topologies/topology.hpp"

namespace topocoll::sim {

struct TraceEvent {
  int rank = 0;
  int channel = 0;
  algo::OpKind kind = algo::OpKind::Send;
  int peer = -1;
  std::uint64_t bytes = 0;
  double start_s = 0.0;
  double end_s = 0.0;
};

struct SimOptions {
  bool trace = false;  // record one TraceEvent per operation
  // With trace: only the operations of these ranks (inclusive ranges; empty: every rank), so a
  // trace of a few ranks of a large job costs what those ranks' events cost.
  std::vector<std::pair<int, int>> trace_ranks;
  bool traces(int rank) const {
    if (!trace) return false;
    if (trace_ranks.empty()) return true;
    for (const auto& [lo, hi] : trace_ranks)
      if (rank >= lo && rank <= hi) return true;
    return false;
  }
  // SimGrid engine: transfers on islands are computed by the engine, and SimGrid 3.32's
  // list of detached transfers is kept short (simgrid_engine.cpp, "Speed"). Same results;
  // false runs every transfer through SimGrid as shipped, for checking (`topocoll sim
  // --simgrid-plain`).
  bool simgrid_fast_paths = true;
  // SimGrid engine, with the fast paths: a schedule whose every transfer is on an island is
  // answered by sim::run_on_islands (the analytic engine's island result) instead of the
  // engine's own walk under SimGrid. Same results; false keeps the engine's walk, so that a test
  // can compare the two walks (engines_agree_test).
  bool simgrid_answer_islands_analytically = true;
  // Analytic engine: when shifting the ranks maps the run onto itself, simulate one rank of each
  // orbit (analytic.cpp, "Symmetry"). Same results; false runs every rank (`topocoll sim
  // --no-symmetry`).
  bool symmetry = true;
  // run_fastest: an exact time the caller already has from another run of the same point. An
  // engine may leave unfinished a run whose lower bound lies above it, as it cannot be the
  // fastest; when that leaves none, the result's time_s is +infinity. Infinity: no such time.
  double faster_than_s = std::numeric_limits<double>::infinity();
  // Analytic engine: threads one run may use. With 2 or more, a large run finds its islands
  // beside its max-min rates, and starts the exact walk on a second thread while its passes
  // decide whether the walk is needed (analytic.cpp, "Threads"). Same results.
  int threads = 1;
};

struct SimResult {
  double time_s = 0.0;                 // simulated completion time of the collective
  std::uint64_t transfers = 0;         // point-to-point transfers simulated
  std::uint64_t island_transfers = 0;  // simgrid: of those, computed on islands (simgrid_engine.cpp, "Speed")
  std::uint32_t runs_skipped = 0;      // run_fastest: runs left unfinished, as they could not be the fastest
  std::uint32_t ranks_simulated = 0;   // analytic: ranks whose programs ran (fewer than the schedule's: a quotient)
  std::uint32_t threads_used = 1;      // analytic: threads the run used (SimOptions::threads)
  std::vector<TraceEvent> trace;       // when SimOptions::trace
  std::string engine;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;
  // Rank r of the schedule runs on t.rank(r).gpu.
  virtual SimResult run(const topo::Topology& t, const algo::Schedule& s, const Calibration& c,
                        const SimOptions& o) = 0;
  // Runs s under each calibration of cs and returns the fastest result, the first of cs on a
  // tie, with its index in `won`: what run() under each and keeping the fastest returns (this
  // default does that). An engine may share work between the runs and skip what cannot change
  // the answer (the analytic engine prepares the schedule once and skips the exact walk of a
  // run whose lower bound exceeds another's exact time: analytic.cpp). cs is not empty.
  virtual SimResult run_fastest(const topo::Topology& t, const algo::Schedule& s,
                                const std::vector<const Calibration*>& cs, const SimOptions& o, std::size_t& won);
};

std::unique_ptr<Engine> make_analytic_engine();

// The analytic engine's run when every transfer of s is on an island (islands.hpp) and s has no
// switch groups: then its result is the exact dynamic sharing (pass 1 where that is exact, else
// the time-ordered walk, on the symmetric quotient where one holds), the same closed forms the
// SimGrid engine computes for island transfers itself, with no SimGrid comm left to make.
// nullopt otherwise, found before any pass runs. The SimGrid engine answers such schedules
// with it (simgrid_engine.cpp, "Speed").
std::optional<SimResult> run_on_islands(const topo::Topology& t, const algo::Schedule& s, const Calibration& c,
                                        const SimOptions& o);

// "analytic" | "simgrid"; InputError otherwise. The SimGrid engine lives in its own library
// (topocoll_simgrid, simulator/simgrid/), the only one that links SimGrid: a program that links
// it makes "simgrid" available with one explicit call in main(),
// register_simgrid_engine() (simulator/simgrid/simgrid_engine.hpp). In a program that does
// not, make_engine("simgrid") throws InputError saying so. (An explicit call, not a static
// registration object: a static library drops an object nothing refers to.)
std::unique_ptr<Engine> make_engine(const std::string& name);

// Makes make_engine(name) return factory(). Call from main() before any thread starts.
using EngineFactory = std::unique_ptr<Engine> (*)();
void register_engine(const std::string& name, EngineFactory factory);

}  // namespace topocoll::sim
