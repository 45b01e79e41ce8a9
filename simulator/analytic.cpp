// The analytic engine: an alpha-beta event simulation of the schedule on the Router's routes.
//
// Every operation gets a start and an end time; nothing is solved globally:
//   send  of B bytes on (rank, channel) at time t: the channel pushes the data for B / bw and
//         the data lands after the route's latency:
//             start = t, busy until start + B / bw, arrival = start + B / bw + latency
//   recv / recv_reduce: ends at max(channel time, arrival of the FIFO-matched send) plus the
//         per-step overhead (one step = one received chunk);
//   copy / reduce: B / reduce_gbps (free when reduce_gbps is 0: fused into transfers on GPUs).
// bw is the route's bottleneck after link sharing: every distinct (source, destination,
// channel) flow of the schedule is assumed active at once, and a link direction carrying k
// flows gives each 1/k of its calibrated rate (efficiency x rate), capped by the per-channel
// cap of the link's kind. That is exact for rings and pipelined trees, whose flows all run
// together, and pessimistic where phases do not overlap; SimGrid's engine shares links
// dynamically, and the two are compared in the tests and docs/validation.md.
#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "simulator/engine.hpp"
#include "simulator/routes.hpp"

namespace topocoll::sim {

namespace {

using algo::Op;
using algo::OpKind;

struct FlowKey {
  int src, dst, channel;
  bool operator==(const FlowKey&) const = default;
};
struct FlowKeyHash {
  std::size_t operator()(const FlowKey& k) const {
    return (static_cast<std::size_t>(k.src) * 1000003u + static_cast<std::size_t>(k.dst)) * 131u + static_cast<std::size_t>(k.channel);
  }
};

struct Flow {
  const Route* route = nullptr;
  double bw_bytes_per_s = 0.0;
  double latency_s = 0.0;
  std::deque<double> arrivals;  // FIFO of arrival times of sent messages
};

class AnalyticEngine final : public Engine {
 public:
  std::string name() const override { return "analytic"; }

  SimResult run(const topo::Topology& t, const algo::Schedule& s, const Calibration& c, const SimOptions& o) override {
    if (s.num_ranks() != t.num_ranks())
      throw InputError(fmt::format("the schedule has {} ranks but the topology has {} GPUs", s.num_ranks(), t.num_ranks()));
    const int p = s.num_ranks(), K = s.num_channels();
    const std::size_t elem = algo::size_of(s.args().dtype);
    Router router(t);
    const auto& g = t.graph();

    // Programs split by channel.
    std::vector<algo::Program> programs(static_cast<std::size_t>(p));
    std::vector<std::vector<std::vector<std::uint32_t>>> by_channel(static_cast<std::size_t>(p));
    std::unordered_map<FlowKey, Flow, FlowKeyHash> flows;
    for (int r = 0; r < p; ++r) {
      programs[static_cast<std::size_t>(r)] = s.program(r);
      auto& chans = by_channel[static_cast<std::size_t>(r)];
      chans.resize(static_cast<std::size_t>(K));
      const auto& prog = programs[static_cast<std::size_t>(r)];
      for (std::uint32_t i = 0; i < prog.size(); ++i) {
        chans[prog[i].channel].push_back(i);
        if (prog[i].kind == OpKind::Send) flows.try_emplace(FlowKey{r, prog[i].peer, prog[i].channel});
      }
    }

    // Static link sharing: flows per link direction.
    std::map<std::pair<topo::Edge, bool>, int> load;
    for (auto& [key, flow] : flows) {
      flow.route = &router.route(key.src, key.dst);
      for (std::size_t k = 0; k < flow.route->links.size(); ++k) ++load[{flow.route->links[k], flow.route->forward[k]}];
    }
    for (auto& [key, flow] : flows) {
      double bw = std::numeric_limits<double>::infinity();
      double lat = 0.0;
      for (std::size_t k = 0; k < flow.route->links.size(); ++k) {
        const topo::Edge e = flow.route->links[k];
        const topo::LinkKind kind = g[e].kind;
        double rate = g[e].bw_gbps * 1e9 * c.of(kind).efficiency / load[{e, flow.route->forward[k]}];
        if (c.cap(kind) > 0) rate = std::min(rate, c.cap(kind) * 1e9);
        bw = std::min(bw, rate);
        lat += (g[e].latency_us + c.of(kind).extra_latency_us) * 1e-6;
      }
      flow.bw_bytes_per_s = bw;
      flow.latency_s = lat;
    }

    // Event loop: advance every (rank, channel) while it can, as the verifier does.
    SimResult result;
    result.engine = name();
    const double step_s = c.step_overhead_us * 1e-6;
    const double launch_s = c.launch_overhead_us * 1e-6;
    std::vector<std::vector<std::size_t>> next(static_cast<std::size_t>(p), std::vector<std::size_t>(static_cast<std::size_t>(K), 0));
    std::vector<std::vector<double>> clock(static_cast<std::size_t>(p), std::vector<double>(static_cast<std::size_t>(K), launch_s));
    std::deque<std::pair<int, int>> work;
    std::vector<std::vector<char>> queued(static_cast<std::size_t>(p), std::vector<char>(static_cast<std::size_t>(K), 1));
    for (int r = 0; r < p; ++r)
      for (int ch = 0; ch < K; ++ch) work.push_back({r, ch});
    auto local_time = [&](std::uint64_t bytes) { return c.reduce_gbps > 0 ? static_cast<double>(bytes) / (c.reduce_gbps * 1e9) : 0.0; };

    while (!work.empty()) {
      auto [r, ch] = work.front();
      work.pop_front();
      queued[static_cast<std::size_t>(r)][static_cast<std::size_t>(ch)] = 0;
      const auto& prog = programs[static_cast<std::size_t>(r)];
      const auto& list = by_channel[static_cast<std::size_t>(r)][static_cast<std::size_t>(ch)];
      std::size_t& i = next[static_cast<std::size_t>(r)][static_cast<std::size_t>(ch)];
      double& now = clock[static_cast<std::size_t>(r)][static_cast<std::size_t>(ch)];
      while (i < list.size()) {
        const Op& op = prog[list[i]];
        const std::uint64_t bytes = op.count() * elem;
        const double start = now;
        if (op.kind == OpKind::Send) {
          Flow& f = flows.at(FlowKey{r, op.peer, ch});
          const double wire = static_cast<double>(bytes) / f.bw_bytes_per_s;
          now = start + wire;
          f.arrivals.push_back(now + f.latency_s);
          ++result.transfers;
          if (!queued[static_cast<std::size_t>(op.peer)][static_cast<std::size_t>(ch)]) {
            queued[static_cast<std::size_t>(op.peer)][static_cast<std::size_t>(ch)] = 1;
            work.push_back({op.peer, ch});
          }
        } else if (op.kind == OpKind::Recv || op.kind == OpKind::RecvReduce) {
          auto it = flows.find(FlowKey{op.peer, r, ch});
          if (it == flows.end() || it->second.arrivals.empty()) break;  // wait for the sender
          now = std::max(now, it->second.arrivals.front()) + step_s;
          it->second.arrivals.pop_front();
        } else {
          now = start + local_time(bytes);
        }
        if (o.trace) result.trace.push_back({r, ch, op.kind, op.peer, bytes, start, now});
        result.time_s = std::max(result.time_s, now);
        ++i;
      }
    }
    for (int r = 0; r < p; ++r)
      for (int ch = 0; ch < K; ++ch)
        if (next[static_cast<std::size_t>(r)][static_cast<std::size_t>(ch)] < by_channel[static_cast<std::size_t>(r)][static_cast<std::size_t>(ch)].size())
          throw InputError(fmt::format("the schedule does not complete: rank {} channel {} waits forever (run `topocoll verify`)", r, ch));
    return result;
  }
};

}  // namespace

std::unique_ptr<Engine> make_analytic_engine() { return std::make_unique<AnalyticEngine>(); }

std::unique_ptr<Engine> make_engine(const std::string& name) {
  if (name == "analytic") return make_analytic_engine();
  if (name == "simgrid") return make_simgrid_engine();
  throw InputError(fmt::format("unknown engine '{}': expected simgrid or analytic", name));
}

}  // namespace topocoll::sim
