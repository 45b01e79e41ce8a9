// The one place that talks to SimGrid (3.32, S4U). The SimGrid engine (simgrid_engine.cpp) sees
// only this interface: a platform built from a Topology, transfers and computations it starts,
// and the callbacks that tell it what finished. An upgrade to SimGrid 4.x touches
// simgrid_adapter.cpp alone.
//
// ====================================== The platform ========================================
//
//   zone "cluster" (Empty: routes only through bypass routes, one per GPU pair that talks across nodes)
//     zone "n0" (Full: one route per GPU pair of the node that talks, gateways = the two GPUs)
//       zone "n0/gpu0:zone" (Full)   host  "n0/gpu0"           a GPU (rank)
//                                    router "n0/nic0@n0/gpu0"  where that GPU's traffic leaves
//                                                              the node: its NIC (its rail)
//                                    routes gpu -> NIC and NIC -> gpu: the model's path
//       zone "n0/gpu1:zone" ...
//     zone "n1" ...
//
//     cross-node route, GPU a (node i) -> GPU b (node j), as SimGrid assembles it:
//       [n_i/gpu_a:zone]  a -> NIC(a)              the path inside node i to a's own rail
//       [cluster bypass]  NIC(a) -> leaf [-> spine -> leaf] -> NIC(b)   the fabric links
//       [n_j/gpu_b:zone]  NIC(b) -> b              the path inside node j from b's rail
//     same-node route a -> b: the node zone's route, the model's path between the two GPUs.
//
// Why this shape. A SimGrid zone route joins two zones through ONE pair of gateways, but the
// NIC a GPU's traffic uses (its rail) depends on the GPU, and the spine between two leaves on
// the pair of leaves. A zone per GPU, holding the GPU and its NIC as gateway, makes the part
// inside each node exact; the fabric part, which depends on the two rails, is a bypass route of
// the top zone keyed by the two GPU zones (SimGrid looks bypass routes up by zone pairs before
// any zone route). Every link sequence is therefore exactly Router::route(a, b) (tested).
//
// Why it scales. Nothing is built for a pair of ranks that does not exchange data: the bypass
// routes are added for the (source, destination) pairs the schedule sends on, and node zones
// hold routes for the pairs of their own GPUs that talk. A ring, a tree or a hierarchical
// schedule talks to O(1) peers per rank and channel, so the platform is O(ranks + nodes +
// links used), never O(ranks^2): 1024 GPUs build in well under a second. Links are created
// only for the model edges some route uses.
//
// Links: one split-duplex SimGrid link per model edge, named as in topologies/export.hpp
// ("<a>--<b>", UP from a to b, "#k" for parallel edges); bandwidth = bw_gbps * 1e9 * the
// calibration's efficiency for the link's kind; latency = latency_us + the calibration's extra.
//
// ==================================== The network model ======================================
//
// CM02 with TCP-gamma 0 (no window bound) and cross-traffic off, as the design asks; and
// network/latency-factor 0, so that a SimGrid transfer is its bandwidth phase only and the
// engine adds the route's latency after it (the data takes `latency` to land once pushed).
// Two reasons, both measured on SimGrid 3.32:
//  1. CM02 shares a link in proportion to 1/latency of each flow's route (it models TCP's RTT
//     unfairness): a flow over a 1 us route and one over an 11 us route sharing a link get
//     11:1 of it, not 1:1. GPU fabrics (NVLink, credit-based InfiniBand) share fairly.
//  2. A connection carries its messages in order (contract rule 4); with latency inside the
//     transfer, message k+1 could only start after message k's latency, paying the route
//     latency once per pipelined slice instead of once per connection.
// Route latencies are still on the links (Host::route_to reports them; the tests check them).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "simulator/calibration.hpp"
#include "simulator/routes.hpp"
#include "topologies/topology.hpp"

namespace topocoll::sim::sg {

// What SimGrid reports back. Called from SimGrid's main loop (maestro), in simulated-time order,
// at a point where new transfers and computations may be started.
class Listener {
 public:
  virtual ~Listener() = default;
  // The transfer started with `tag` has pushed its last byte (its bandwidth phase is over).
  virtual void transfer_done(std::uint32_t tag) = 0;
  // The computation started with `tag` is over.
  virtual void compute_done(std::uint32_t tag) = 0;
  // A time asked for with wake_at() has come (now() >= it). Several requests may be answered
  // by one call.
  virtual void wake() = 0;
};

struct PlatformSpec {
  const topo::Topology* topology = nullptr;
  const Calibration* calibration = nullptr;
  // (source rank, destination rank) pairs that will exchange data; routes exist for these only.
  std::vector<std::pair<int, int>> pairs;
  // GPU hosts: each core computes `gpu_core_speed` bytes per second (a local copy or reduce of B
  // bytes takes B / speed); `gpu_cores` concurrent computations run at full speed (one per channel).
  double gpu_core_speed = 1e9;
  int gpu_cores = 1;
};

// One SimGrid simulation. SimGrid's engine is a process-wide singleton that cannot be created
// twice, so a process holds at most one Simulation in its life: run each in run_isolated().
class Simulation {
 public:
  Simulation(const PlatformSpec& spec, Listener& listener);
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  // Starts moving `bytes` from rank src's GPU to rank dst's GPU now, at most at `max_rate`
  // bytes/s (<= 0: no cap). (src, dst) must be one of the spec's pairs.
  void transfer(int src, int dst, double bytes, double max_rate, std::uint32_t tag);
  // Starts computing `bytes` on rank's GPU now.
  void compute(int rank, double bytes, std::uint32_t tag);
  // Asks for a Listener::wake() call at simulated time t (>= now()).
  void wake_at(double t);
  double now() const;
  // Runs until nothing is left to simulate.
  void run();

  // SimGrid's own route between two ranks' GPUs (Host::route_to): link names ("a--b_UP") in
  // order, and the summed latency (seconds).
  struct RouteView {
    std::vector<std::string> links;
    double latency_s = 0.0;
  };
  RouteView route(int src, int dst) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The SimGrid names of the links of a Router route, in order ("n0/gpu0--n0/pcie0_UP"): what
// Simulation::route() must return for that pair.
std::vector<std::string> link_names(const topo::Topology& t, const Route& r);

// Runs `work` in a child process (fork) and returns the bytes it appended to its argument. An
// InputError thrown by `work` is rethrown here as an InputError with the same message, anything
// else as std::runtime_error; a child that dies (SimGrid aborts on internal errors, after
// printing why) is reported as std::runtime_error naming the signal or exit status.
std::string run_isolated(const std::function<void(std::string& out)>& work);

}  // namespace topocoll::sim::sg
