// Running an experiment's grid: every point not already written, a record each, with the
// simulator (engine analytic | simgrid, plus a stock-NCCL model row per size) or measured
// (engine real: mpirun ... topocoll-bench).
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "experiments/runner/spec.hpp"
#include "experiments/runner/store.hpp"

namespace topocoll::experiments {

// What a run tells its caller as it goes (the command line prints it; none is required).
struct RunCallbacks {
  std::function<void()> start;                        // once, before the first point (after engine real's checks)
  std::function<void(std::size_t points)> advance;    // points done: written, or skipped as not supported
  std::function<void(const std::string& note)> note;  // each distinct note once (an algorithm not supported)
};

// Engine analytic or simgrid: a record per point not in `existing`, appended through `writer`.
void run_simulated(const ExpSpec& s, const std::string& commit, const Existing& existing, RecordWriter& writer,
                   const RunCallbacks& callbacks);

// Engine real: one mpirun ... topocoll-bench per (ranks, dtype, channels, repetition) with
// points left; its scratch files go to `out_dir`. InputError when topocoll-bench rejects the
// grid (checked with one small run before the first point).
void run_real(const ExpSpec& s, const std::string& commit, const Existing& existing, RecordWriter& writer,
              const std::string& out_dir, const RunCallbacks& callbacks);

}  // namespace topocoll::experiments
