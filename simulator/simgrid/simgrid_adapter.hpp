// The one place that talks to SimGrid (3.32, S4U). The SimGrid engine (simgrid_engine.cpp) sees
// only this interface: a platform built from a Topology, transfers and computations it starts,
// and the callbacks that tell it what finished. An upgrade to SimGrid 4.x touches
// simgrid_adapter.cpp alone.
//
// ====================================== The platform ========================================
//
//   zone "cluster" (Empty: its routes are bypass routes, one per connection across nodes)
//     zone "n0" (Full: one route per connection inside the node; gateways: the two endpoints)
//       zone "n0/gpu0/ch0:zone"      host   "n0/gpu0/ch0"          channel 0 of GPU 0: a CUDA
//       (Full)                                                     block, with its own core for
//                                                                  local copies and reductions
//                                    router "n0/gpu0/ch0@n0/nic0"  a NIC this endpoint's traffic
//                                                                  crosses (its rail; with PXN,
//                                                                  the receiver's rail too)
//                                    routes host -> router, router -> host: the model's path
//                                    between the GPU and that NIC
//       zone "n0/gpu0/ch1:zone" ...
//     zone "n1" ...
//
//   A connection (a, b, channel c) is a pair of endpoints; its route, as SimGrid assembles it:
//     same node:   the node zone's route: the model's path from GPU a to GPU b;
//     other nodes: [zone a/c]       a -> NIC                the Router's path to the NIC it uses
//                  [cluster bypass] NIC -> leaf [-> spine -> leaf] -> NIC(b)   the fabric
//                  [zone b/c]       NIC(b) -> b             b's path from its NIC
//   plus, when the calibration caps one channel's rate on the route's link kinds, a private link
//   of that rate "<a/c>-><b/c>:cap" (a connection carries one message at a time, so its private
//   link caps each transfer, never two transfers together).
//
//   A switch flow (simulator/switch_plan.hpp: a part up to an NVSwitch or a leaf, a reduced
//   stream to a spine, a result down) runs between two hosts of a zone of its own under the top
//   zone, "switch-flowK:from" -> "switch-flowK:to", on the model's links of its path, plus its cap
//   link and, for NVLS parts that reduce, the NVSwitch's reduction port of that GPU
//   ("<nvswitch>:reduce@<gpu>", a link of the port's reduction rate).
//
// Why this shape. A SimGrid zone route joins two zones through ONE pair of gateways, but the
// NIC a GPU's traffic uses (its rail, or the receiver's with PXN) depends on the GPU and its
// peer, and the spine on the pair of NICs. A zone per endpoint, holding it and the NICs it uses
// as gateways, makes the parts inside nodes exact; the fabric part is a bypass route of the top
// zone keyed by the two endpoint zones, naming the gateways (SimGrid looks bypass routes up by
// zone pairs before any zone route). Every link sequence is exactly Router::route(a, b), tested.
// (Comm::set_rate cannot cap a transfer: 3.32 ignores the rate of host-to-host comms.)
//
// Why it scales. Nothing is built for a pair of endpoints that does not exchange data: routes
// exist for the connections the schedule sends on. A ring, a tree or a hierarchical schedule
// talks to O(1) peers per rank and channel, so the platform is O(ranks x channels + links
// used), never O(ranks^2). Node zones' tables are (GPUs x channels per node)^2; the top zone has
// no table. Links are created only for the model edges some route uses.
//
// Links: one split-duplex SimGrid link per model edge, named as in topologies/export.hpp
// ("<a>--<b>", UP from a to b, "#k" for parallel edges); bandwidth = Calibration::rate_bytes_per_s
// (bw_gbps * 1e9 * the efficiency of the link's kind, NVLink by GPU generation); latency = latency_us + the
// calibration's extra.
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
// And surf/precision 1e-13 s instead of SimGrid's 1e-9: transfers here last tens of
// nanoseconds to milliseconds, and a 1 ns time quantum merges events less than 1 ns apart. In a
// pipeline whose channels carry chunks a few bytes apart that keeps the channels in lockstep
// where exact arithmetic lets them drift, and the collective's time moves by percents: 1 DGX
// H100, ring, 20 channels, 2 MiB: 65.895 us at 1e-9, 64.944 us at 1e-13, which is what the
// engine's islands (exact max-min, simgrid_engine.cpp) give. Same speed (dbt at 1024 GPUs).
//
// ======================================= Activities ==========================================
//
// No actor: transfers are Comm::sendto_init(...)->detach() and computations Exec::start(),
// started from SimGrid's main loop (maestro). What 3.32 offers and does not:
//  - Activity::on_completion fires for executions started by maestro, not for host-to-host
//    comms. A finished transfer is seen through Link::on_communication_state_change (its
//    action, whose activity identifies it), in the middle of SimGrid's model update; it is
//    handed to the Listener from a kernel timer at the same date, where starting new
//    activities is safe.
//  - Comm::set_rate is ignored for host-to-host comms (hence the private cap links above).
//  - Cost, and the list workaround. The main path is the public API above. 3.32 detaches every
//    host-to-host comm in Comm::sendto_init() itself: CommImpl::detach() pushes it on
//    maestro's activity list (a std::list, ActorImpl::activities_ in 3.32's sources), and
//    CommImpl::finish() takes it off with std::list::remove, which walks the whole list. Each
//    completed transfer therefore costs O(transfers in flight), whatever the caller does; the
//    public API has no other host-to-host transfer (mailbox comms need an actor on each side;
//    parallel tasks need the ptask_L07 model, not CM02). SimGrid 4.1 keeps that list a
//    std::set (its sources: ActorImpl::activities_, ActivityImpl::detach), so there the public
//    path is the whole story. At 1024 GPUs and ~1000 transfers in flight that walk was
//    40-65 % of the run, so for 3.32 alone the adapter has a fallback (MaestroList in the .cpp):
//    right after starting a transfer, move the reference the list just received at its back
//    into our table of transfers in flight, so the list stays empty and the walk ends at once;
//    the reference is dropped once SimGrid has finished with the comm. It is compiled only
//    against 3.32's headers (SIMGRID_VERSION_MAJOR/MINOR), used only when the library loaded is
//    3.32 (sg_version_get) and the first transfer confirmed the list's place and layout
//    (otherwise off, with a warning), and TOPOCOLL_SIMGRID_LIST_WORKAROUND=0 or
//    PlatformSpec::list_workaround = false turns it off. Same results either way (tested). The
//    run logs the average in flight and which path ran (TOPOCOLL_LOG=info).
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
  // The messages being sent on these connections have pushed their last byte (their bandwidth
  // phase is over), all at now(); each connection may send its next one.
  virtual void transfers_done(const std::vector<std::uint32_t>& connections) = 0;
  // The computation started with `tag` is over.
  virtual void compute_done(std::uint32_t tag) = 0;
  // A time asked for with wake_at() has come (now() >= it). Several requests may be answered
  // by one call.
  virtual void wake() = 0;
};

// A connection: messages from rank src's GPU to rank dst's GPU on one channel. One the caller
// computes itself (routed = false: an island, simgrid_engine.cpp "Speed") gets no route, and
// its endpoints no host unless another connection or a computation needs them: transfer()
// must not be called for it.
struct Connection {
  int src = 0, dst = 0, channel = 0;
  bool routed = true;
};

// A switch flow (simulator/switch_plan.hpp): a walk on model links from vertex `from` (a GPU
// or a switch), with its private cap link (cap > 0, bytes/s) and the NVSwitch reduction port it
// crosses (reduce_rate > 0: a link of that rate named reduce_name, shared by every path that
// names it). Each gets a zone of its own with two hosts and the one route between them; paths
// with the same `share` (>= 0) and no cap use one zone (their transfers are separate comms on
// the same route, each shared max-min like any other).
struct PathConnection {
  topo::Vertex from = 0;
  std::vector<topo::Edge> links;
  double cap = 0.0;
  double reduce_rate = 0.0;
  std::string reduce_name;
  std::int64_t share = -1;
};

struct PlatformSpec {
  const topo::Topology* topology = nullptr;
  const Calibration* calibration = nullptr;
  int channels = 1;
  // The connections that will carry data; routes exist for these only.
  std::vector<Connection> connections;
  // Switch flows; transfer index connections.size() + k is paths[k].
  std::vector<PathConnection> paths;
  // Each endpoint (GPU, channel) computes a local copy or reduce of B bytes in B / compute_speed.
  double compute_speed = 1e9;
  // The endpoints compute() may be called for, by index rank * channels + channel (nonzero:
  // it may be); empty: every endpoint. Hosts are built for these and for the routed
  // connections' ends only: SimGrid 3.32 checks each new host's name against every zone and
  // seals each zone by a pass over every host, a cost quadratic in the hosts.
  std::vector<std::uint8_t> computes;
  // SimGrid 3.32's detached-transfer list workaround (above, "Activities"); false runs SimGrid
  // as shipped (same results, slower), for checking.
  bool list_workaround = true;
};

// One SimGrid simulation. SimGrid's engine is a process-wide singleton that cannot be created
// twice, so a process holds at most one Simulation in its life: run each in run_isolated().
class Simulation {
 public:
  Simulation(const PlatformSpec& spec, Listener& listener);
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  // Starts sending a message of `bytes` on connection `index` of the spec, now. A connection
  // sends one message at a time.
  void transfer(std::uint32_t index, double bytes);
  // Starts computing `bytes` on channel `channel` of rank's GPU now.
  void compute(int rank, int channel, double bytes, std::uint32_t tag);
  // Asks for a Listener::wake() call at simulated time t (>= now()).
  void wake_at(double t);
  double now() const;
  // Runs until nothing is left to simulate.
  void run();

  // SimGrid's own route of connection `index` (Host::route_to): link names ("a--b_UP") in
  // order, and the summed latency (seconds).
  struct RouteView {
    std::vector<std::string> links;
    double latency_s = 0.0;
  };
  RouteView route(std::uint32_t index) const;
  // The hosts of the platform (SimGrid's count: endpoints and switch flows' ends).
  std::size_t host_count() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The SimGrid names of the links of the Router's route from rank src, in order
// ("n0/gpu0--n0/pcie_switch0_UP"): what Simulation::route() must return for that connection.
std::vector<std::string> link_names(const topo::Topology& t, int src, const Route& r);

// Runs `work` in a child process (fork) and returns the bytes it appended to its argument. An
// InputError thrown by `work` is rethrown here as an InputError with the same message, anything
// else as std::runtime_error; a child that dies (SimGrid aborts on internal errors, after
// printing why) is reported as std::runtime_error naming the signal or exit status.
std::string run_isolated(const std::function<void(std::string& out)>& work);

}  // namespace topocoll::sim::sg
