// The overlap benchmark (topocoll-bench --overlap): how much of a collective hides behind compute
// when it is started, driven from the compute loop and then completed, as an application that
// "hides communication behind compute" runs it (Plan::start / test / wait; MPI_Iallreduce &
// MPI_Test for the mpi baseline).
//
// Per algorithm and size, out of place, with the collective's own time C (the bench's median):
//   compute   a fixed floating-point loop, sized on each rank to take about C alone; its time P is
//             measured alone (median over iterations of the max over ranks)
//   overlap   barrier; start; the compute loop in kOverlapSlices slices with one test() after each;
//             wait; its wall time W (median of the max over ranks)
//   efficiency = (P + C - W) / min(P, C): 1 when the shorter hides wholly behind the longer, 0 when
//   they run one after the other (W = P + C), negative when overlapping costs more than that.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace topocoll::runtime {

inline constexpr int kOverlapSlices = 64;  // test() calls per compute loop: progress granularity

struct OverlapTimes {
  double collective_us = 0;  // C: the collective alone
  double compute_us = 0;     // P: the compute loop alone
  double overlapped_us = 0;  // W: both, overlapped
  // (P + C - W) / min(P, C); 0 when either is 0.
  double efficiency() const;
};

// What measure_overlap drives: the collective's non-blocking calls and the job's barrier and
// max-over-ranks reduction of a vector.
struct OverlapHooks {
  std::function<void()> start;  // starts the collective on fresh-enough inputs
  std::function<bool()> test;   // advances it without blocking; true once it has finished
  std::function<void()> wait;   // blocks until it has finished
  std::function<void()> barrier;
  std::function<void(std::vector<double>&)> max_over_ranks;
};

// The compute loop: `units` rounds of a multiply-add chain over a small array (no memory traffic
// beyond L1, so it competes with the collective for cores, not for memory bandwidth); returns
// a value the caller keeps so the loop is not optimised away. `after_slice` is called after each
// of `slices` equal slices (test() in the overlapped run; nothing alone).
double compute_units(std::uint64_t units, int slices, const std::function<void()>& after_slice);

// Sizes the compute loop to `collective_us` on this rank, then measures P and W over `iters`
// iterations (collective: every rank calls it alike).
OverlapTimes measure_overlap(const OverlapHooks& h, double collective_us, int iters);

}  // namespace topocoll::runtime
