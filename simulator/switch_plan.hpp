// In-network reduction as both engines time it (docs/simulator.md, "Switch operations"). A
// switch group's instance is made of flows like any transfer's, on the model's links:
//   up:   each contributor's part from its GPU to the group's aggregation point: NVLS, up the
//         GPU's NVLink to the (merged) NVSwitch; SHARP, GPU -> NIC -> its leaf switch;
//   agg:  SHARP across leaves: each leaf with contributors sends one reduced stream to the root
//         spine (the aggregation tree); none for NVLS or a group under one leaf;
//   bcast: SHARP across leaves: the root spine sends one copy of the result down to each leaf
//         with receivers;
//   down: the result to every receiver (multicast: one copy per receiver port): NVLS,
//         NVSwitch -> GPU; SHARP, leaf -> NIC -> GPU.
// An instance's result leaves the root `switch_latency` after its last part (or reduced stream)
// landed there. Reducing parts (two contributors or more) also cross a reduction port of the
// NVSwitch, one per GPU port, whose rate is the switch's reduction rate for that port
// (Calibration::nvls_reduce_efficiency): a resource shared max-min like a link.
// The plan is built once per run from the schedule and topology; flows exist only for the
// (group, channel) pairs the programs use. Engines number these flows after their
// point-to-point connections.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "algorithms/ir/schedule.hpp"
#include "simulator/calibration.hpp"
#include "simulator/routes.hpp"
#include "topologies/topology.hpp"

namespace topocoll::sim {

// A walk on the model's links, from vertex `from` (a GPU, a leaf or the root switch).
struct SwitchPath {
  topo::Vertex from = 0;
  std::vector<topo::Edge> links;
  std::vector<bool> forward;  // per link, Route::forward's convention (lower to higher vertex)
  double latency_s = 0.0;     // Calibration::route_latency_s of the links
  double cap = 0.0;           // per-channel cap of the links, bytes/s (0: none)
  int reduce_port = -1;       // the reduction port it crosses (up paths of reducing groups), or -1
};

enum class SwitchRole : std::uint8_t { Up, Agg, Bcast, Down };

struct SwitchFlow {
  SwitchRole role = SwitchRole::Up;
  std::uint32_t rendezvous = 0;  // the (group, channel) it belongs to
  std::uint32_t member = 0;      // Up: contributor; Agg: aggregator; Bcast: leaf (bcast_path); Down: receiver
  std::uint32_t path = 0;        // into SwitchPlan::paths()
};

// One reduction port of an NVSwitch: its rate, bytes/s.
struct ReducePort {
  double rate = 0.0;
  std::string name;  // "n0/nvswitch0:reduce@n0/gpu3"
};

class SwitchPlan {
 public:
  // Checks every switch group against the topology: InputError naming the group and what is
  // missing (an NVLS group across nodes, on a node without NVSwitch or with GPUs below sm 90; a
  // SHARP group on a fabric without `sharp`, or whose leaves are not one link from a spine).
  SwitchPlan(const topo::Topology& t, const algo::Schedule& s, const Calibration& c, Router& router);

  // (group, channel) -> rendezvous index, made on first use; and the flows of its instances.
  std::uint32_t use(int group, int channel);
  // The flow of contributor `rank` (Up) or receiver `rank` (Down) of a rendezvous; InputError
  // (rank, op) when the rank is not one of the group's.
  std::uint32_t up_flow(std::uint32_t rendezvous, int rank) const;
  std::uint32_t down_flow(std::uint32_t rendezvous, int rank) const;
  std::uint32_t agg_flow(std::uint32_t rendezvous, std::uint32_t aggregator) const;

  struct GroupInfo {
    algo::SwitchKind kind = algo::SwitchKind::Nvls;
    std::vector<std::uint32_t> aggregator_of;                    // per contributor: its aggregator (0 with one)
    std::vector<std::uint32_t> contributors_of_agg;              // per aggregator: how many contributors
    std::vector<std::uint32_t> up_path, down_path;               // per contributor / receiver
    std::vector<std::uint32_t> agg_path;                         // per aggregator when several (SHARP across leaves)
    std::vector<std::uint32_t> bcast_path;                       // root -> leaf, per leaf with receivers (same case)
    std::vector<std::vector<std::uint32_t>> receivers_of_bcast;  // per bcast leaf: its receivers
    double latency_s = 0.0;                                      // in the switch, per instance
  };
  struct Rendezvous {
    int group = 0, channel = 0;
    std::uint32_t first_flow = 0;  // up flows, then agg flows, then down flows
  };
  const GroupInfo& group(int g) const { return groups_[static_cast<std::size_t>(g)]; }
  const std::vector<Rendezvous>& rendezvous() const { return rendezvous_; }
  const std::vector<SwitchFlow>& flows() const { return flows_; }
  const std::vector<SwitchPath>& paths() const { return paths_; }
  const std::vector<ReducePort>& reduce_ports() const { return ports_; }
  bool aggregates(int g) const { return group(g).agg_path.size() > 1; }
  // Flow numbers within a rendezvous: the first bcast flow and the first down flow.
  std::uint32_t bcast_base(std::uint32_t rv) const;
  std::uint32_t down_base(std::uint32_t rv) const;

 private:
  const topo::Topology& t_;
  const algo::Schedule& s_;
  std::vector<GroupInfo> groups_;
  std::vector<SwitchPath> paths_;
  std::vector<ReducePort> ports_;
  std::vector<SwitchFlow> flows_;
  std::vector<Rendezvous> rendezvous_;
  std::unordered_map<std::uint64_t, std::uint32_t> by_key_;  // group * channels + channel
};

// Counting an instance's parts as they land, the same way in both engines: per rendezvous, a
// FIFO of open instances; each contributor's k-th part belongs to instance k (rule 11).
class SwitchInstances {
 public:
  explicit SwitchInstances(const SwitchPlan& plan);
  // Contributor `member`'s next part landed at its aggregator at `time`: true when it completes
  // that aggregator's share of the instance (`ready` = when its last part landed, `instance`).
  bool part_landed(std::uint32_t rv, std::uint32_t member, double time, double& ready, std::uint64_t& instance);
  // Aggregator `agg`'s next reduced stream landed at the root at `time` (SHARP across leaves;
  // an aggregator's streams land in instance order): true when it completes the instance,
  // `ready` = when the last stream landed.
  bool stream_landed(std::uint32_t rv, std::uint32_t agg, double time, double& ready);

 private:
  struct Instance {
    std::vector<std::uint32_t> left;  // per aggregator: parts not landed
    std::vector<double> ready;        // per aggregator
    std::uint32_t streams_left = 0;
    double root_ready = 0.0;
  };
  struct State {
    std::vector<std::uint64_t> given;    // per contributor: parts landed so far
    std::vector<std::uint64_t> streams;  // per aggregator: reduced streams landed at the root so far
    std::uint64_t first = 0;             // instance index of open.front()
    std::deque<Instance> open;           // instances from `first` (completed ones stay until the front is done)
  };
  const SwitchPlan& plan_;
  std::vector<State> states_;
  Instance& at(std::uint32_t rv, std::uint64_t k);
};

}  // namespace topocoll::sim
