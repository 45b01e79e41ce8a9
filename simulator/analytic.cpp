// The analytic engine: an alpha-beta event simulation of the schedule on the Router's routes.
//
// Every operation gets a start and an end time; nothing is solved globally:
//   send  of B bytes on (rank, channel) at time t is non-blocking (contract rule 2): the channel
//         goes on at once, the data goes out on its flow (source, destination, channel) when the
//         flow's previous message has left, and lands after the route's latency:
//             start = max(t, flow free), flow free = start + B / bw, arrival = flow free + latency
//   recv / recv_reduce: ends at max(channel time, arrival of the FIFO-matched send);
//         the per-step overhead is part of each hop's latency (it pipelines like latency:
//         a chain of h hops pays it h times, not once per slice);
//   copy / reduce: B / reduce_gbps (free when reduce_gbps is 0: fused into transfers on GPUs).
// bw is the route's bottleneck after link sharing, in two passes. Pass 1 takes every distinct
// (source, destination, channel) flow as active at once: a link direction carrying k flows
// gives each 1/k of its calibrated rate, capped by the per-channel cap of the link's kind.
// Pass 2 counts, per flow and link, only the flows whose active span in pass 1 overlaps its
// own, so phases that do not overlap (a tree's up and down waves, hierarchical's stages) stop
// slowing each other down. Exact for rings (all flows run together); an approximation
// otherwise: SimGrid's engine shares links dynamically, and the two are compared in the tests
// and docs/validation.md.
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <unordered_map>

#include "algorithms/ir/program_index.hpp"
#include "common/errors.hpp"
#include "simulator/engine.hpp"
#include "simulator/routes.hpp"

namespace topocoll::sim {

namespace {

using algo::Op;
using algo::OpKind;

struct Flow {
  const Route* route = nullptr;
  double bw_bytes_per_s = 0.0;
  double latency_s = 0.0;
  std::deque<double> arrivals;  // FIFO of arrival times of sent messages
  double free_at = 0.0;         // when the flow's last message has left the sender
};

class AnalyticEngine final : public Engine {
 public:
  std::string name() const override { return "analytic"; }

  SimResult run(const topo::Topology& t, const algo::Schedule& s, const Calibration& c, const SimOptions& o) override {
    if (s.num_ranks() != t.num_ranks())
      throw InputError(
          fmt::format("the schedule has {} ranks but the topology has {} GPUs", s.num_ranks(), t.num_ranks()));
    const int p = s.num_ranks(), K = s.num_channels();
    const std::size_t elem = algo::size_of(s.args().dtype);
    Router router(t);
    const auto& g = t.graph();

    // Each rank's program, checked (algo::ProgramIndex) and compacted per channel into 16-byte
    // steps that index their flow (a 48-byte Op otherwise; programs are generated one rank at a
    // time and dropped). A flow is a connection (source, destination, channel).
    struct Step {
      std::uint64_t bytes : 61;
      std::uint64_t kind : 3;
      std::uint32_t flow;  // sends: the outgoing flow; receives: the incoming one
      std::int32_t peer;
    };
    static_assert(sizeof(Step) == 16);
    algo::Connections connections(p, K);
    std::vector<std::vector<std::vector<Step>>> steps(static_cast<std::size_t>(p));
    for (int r = 0; r < p; ++r) {
      const algo::ProgramIndex index(s, r, /*by_channel=*/false);  // checked; the steps split it per channel
      auto& chans = steps[static_cast<std::size_t>(r)];
      chans.resize(static_cast<std::size_t>(K));
      for (int ch = 0; ch < K; ++ch) chans[static_cast<std::size_t>(ch)].reserve(index.channel_size(ch));
      for (const Op& op : index.program()) {
        const std::uint32_t f = algo::is_transfer(op.kind) ? connections.id_of(r, op) : 0;
        chans[op.channel].push_back(Step{op.count() * elem, static_cast<std::uint64_t>(op.kind), f, op.peer});
      }
    }
    connections.forget_lookup();
    const std::vector<algo::Connections::Key>& flow_keys = connections.keys();
    std::vector<Flow> flows(flow_keys.size());

    // Link sharing, pass 1: every flow of the schedule is taken as active at once, and a link
    // direction carrying k flows gives each 1/k of its calibrated rate.
    using LinkDir = std::pair<topo::Edge, bool>;
    std::map<LinkDir, std::vector<std::uint32_t>> users;  // flows per link direction
    for (std::size_t f = 0; f < flows.size(); ++f) {
      flows[f].route = &router.route(flow_keys[f].src, flow_keys[f].dst, flow_keys[f].channel);
      for (std::size_t k = 0; k < flows[f].route->links.size(); ++k)
        users[{flows[f].route->links[k], flows[f].route->forward[k]}].push_back(static_cast<std::uint32_t>(f));
    }
    // bw of each flow from a sharing count per (flow, link): the route's slowest share.
    auto assign_bandwidth = [&](const std::function<double(std::uint32_t, const LinkDir&)>& sharers) {
      for (std::size_t f = 0; f < flows.size(); ++f) {
        Flow& flow = flows[f];
        double bw = std::numeric_limits<double>::infinity();
        for (std::size_t k = 0; k < flow.route->links.size(); ++k) {
          const topo::Edge e = flow.route->links[k];
          bw = std::min(bw,
                        c.rate_bytes_per_s(g, e) / sharers(static_cast<std::uint32_t>(f), {e, flow.route->forward[k]}));
        }
        if (const double cap = c.channel_cap_bytes_per_s(g, flow.route->links); cap > 0) bw = std::min(bw, cap);
        flow.bw_bytes_per_s = bw;
        flow.latency_s = c.route_latency_s(g, flow.route->links);
      }
    };
    assign_bandwidth([&](std::uint32_t, const LinkDir& l) { return static_cast<double>(users[l].size()); });

    const double launch_s = c.launch_overhead_us * 1e-6;
    const std::size_t slots = static_cast<std::size_t>(p) * static_cast<std::size_t>(K);
    auto slot = [K](int r, int ch) {
      return static_cast<std::size_t>(r) * static_cast<std::size_t>(K) + static_cast<std::size_t>(ch);
    };
    auto local_time = [&](std::uint64_t bytes) {
      return c.reduce_gbps > 0 ? static_cast<double>(bytes) / (c.reduce_gbps * 1e9) : 0.0;
    };
    std::vector<double> first_send(flows.size()), last_send(flows.size());

    // One pass of the event loop: advance every (rank, channel) while it can, as the verifier does.
    auto run_pass = [&](bool trace) {
      SimResult result;
      result.engine = name();
      for (Flow& f : flows) {
        f.arrivals.clear();
        f.free_at = 0.0;
      }
      std::fill(first_send.begin(), first_send.end(), std::numeric_limits<double>::infinity());
      std::fill(last_send.begin(), last_send.end(), 0.0);
      std::vector<std::size_t> next(slots, 0);
      std::vector<double> clock(slots, launch_s);
      std::vector<char> queued(slots, 1);
      std::deque<std::pair<int, int>> work;
      for (int r = 0; r < p; ++r)
        for (int ch = 0; ch < K; ++ch) work.push_back({r, ch});
      while (!work.empty()) {
        auto [r, ch] = work.front();
        work.pop_front();
        const std::size_t me = slot(r, ch);
        queued[me] = 0;
        const auto& list = steps[static_cast<std::size_t>(r)][static_cast<std::size_t>(ch)];
        std::size_t& i = next[me];
        double& now = clock[me];
        while (i < list.size()) {
          const Step& st = list[i];
          const OpKind kind = static_cast<OpKind>(st.kind);
          double start = now, end = now;
          if (kind == OpKind::Send) {
            Flow& f = flows[st.flow];
            start = std::max(now, f.free_at);
            f.free_at = start + static_cast<double>(st.bytes) / f.bw_bytes_per_s;
            end = f.free_at;
            f.arrivals.push_back(f.free_at + f.latency_s);
            first_send[st.flow] = std::min(first_send[st.flow], start);
            last_send[st.flow] = std::max(last_send[st.flow], end);
            ++result.transfers;
            const std::size_t peer = slot(st.peer, ch);
            if (!queued[peer]) {
              queued[peer] = 1;
              work.push_back({st.peer, ch});
            }
          } else if (kind == OpKind::Recv || kind == OpKind::RecvReduce) {
            Flow& f = flows[st.flow];
            if (f.arrivals.empty()) break;  // wait for the sender
            now = std::max(now, f.arrivals.front());
            f.arrivals.pop_front();
            end = now;
          } else {
            now = start + local_time(st.bytes);
            end = now;
          }
          if (trace) result.trace.push_back({r, ch, kind, st.peer, st.bytes, start, end});
          result.time_s = std::max(result.time_s, end);
          ++i;
        }
      }
      for (int r = 0; r < p; ++r)
        for (int ch = 0; ch < K; ++ch)
          if (next[slot(r, ch)] < steps[static_cast<std::size_t>(r)][static_cast<std::size_t>(ch)].size())
            throw ScheduleError(
                fmt::format("the schedule does not complete: rank {} channel {} waits forever (run `topocoll verify`)",
                            r, ch),
                r, ch);
      return result;
    };

    // Pass 2: a flow shares a link only with the flows whose active span (first to last byte
    // sent) overlaps its own in pass 1. Phases that do not overlap (a tree's reduce-up and
    // broadcast-down, hierarchical's stages) then stop slowing each other down; flows that
    // run together (a ring) keep their pass-1 share. An approximation of dynamic sharing:
    // SimGrid's engine shares links exactly (max-min fairness at every event).
    SimResult result = run_pass(false);
    assign_bandwidth([&](std::uint32_t f, const LinkDir& l) {
      double n = 0;
      for (std::uint32_t other : users[l])
        if (first_send[other] < last_send[f] && first_send[f] < last_send[other]) n += 1;
      return std::max(n, 1.0);
    });
    result = run_pass(o.trace);
    return result;
  }
};

}  // namespace

std::unique_ptr<Engine> make_analytic_engine() {
  return std::make_unique<AnalyticEngine>();
}

}  // namespace topocoll::sim
