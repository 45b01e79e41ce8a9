// The SimGrid engine: a schedule executed on SimGrid's flow model of the topology, event by
// event. SimGrid itself is behind simgrid_adapter.hpp (beside it); this file holds the execution
// contract (algorithms/ir/schedule.hpp) and nothing of SimGrid's API.
//
// ======================================== Execution =========================================
//
// Each (rank, channel) walks its operations in order (rule 1); channels run concurrently. No
// actor or thread per rank: the walk is advanced from SimGrid's completion callbacks and from
// timers, on SimGrid's simulated clock.
//
//   send(peer, B)      issued when its channel reaches it; the channel goes on at once (rule 2).
//                      The message joins its connection (rank, peer, channel): a connection
//                      carries its messages one after the other, in order (rule 4), each as a
//                      SimGrid transfer from the sender's GPU to the receiver's on the Router's
//                      route. A message starts when the previous one of its connection has left
//                      (its last byte pushed) and lands `latency + step_overhead` after its own
//                      last byte left: latency (the route's, calibrated) and the per-hop
//                      overhead are paid once per hop of a pipeline, not once per slice.
//   recv / recv_reduce blocks its channel until the connection's next message has landed
//                      (rule 3); ends at max(reached, landed).
//   copy / reduce      B / reduce_gbps on the GPU (a SimGrid execution, one core per channel);
//                      instantaneous when reduce_gbps is 0 (fused into transfers on GPUs).
//   start              every channel starts at launch_overhead.
//
// These are the analytic engine's rules (analytic.cpp) with SimGrid's dynamic link sharing in
// place of its static sharing: a transfer's bandwidth is its max-min fair share of every link it
// crosses, recomputed whenever a transfer starts or ends anywhere.
//
// The result: time_s is the last end of any operation (a send ends when its last byte left).
// Trace: a send spans from when its message starts leaving to when its last byte left.
//
// =========================================== Speed ===========================================
//
// A 1 GiB allreduce on 1024 GPUs is millions of transfers (a ring: 2 (p - 1) per rank and
// channel), and each SimGrid comm costs microseconds. Two fast paths, on by default and both
// exact (SimOptions::simgrid_fast_paths; `topocoll sim --simgrid-plain` turns them off, and
// every SimGrid engine test runs both ways and compares):
//  - Islands (struct Island). Connections whose links no other connection of the schedule
//    crosses, all crossing one common set of links, each group of identical routes with links of
//    its own beyond them: typically the channels of one GPU pair on a path of their own, or a PXN
//    route and an NVLink route sharing their NVLink hops. SimGrid's max-min sharing of those
//    links involves their transfers alone and is a closed form (water-filling), so the engine
//    computes it instead of making SimGrid comms; every other transfer is a SimGrid comm as
//    before. Islands are found once, from the whole schedule, before the run.
//  - SimGrid 3.32's list of detached transfers is kept empty (simgrid_adapter.hpp, "Activities"),
//    which removes a cost linear in the transfers in flight from every completion.
// SimResult::island_transfers says how many transfers took the first path. When every transfer
// would take it (no switch groups, reductions free: SimGrid would only keep the clock), the run
// is the analytic engine's on islands (sim::run_on_islands): the same closed forms, on the
// symmetric quotient where one holds, and no platform or SimGrid process at all. Tests compare
// it with --simgrid-plain (every transfer a SimGrid comm) as they do the fast paths.
//
// ====================================== One process each =====================================
//
// SimGrid's engine is a process-wide singleton that cannot be created twice, and a run needs a
// platform of its own: every run() forks a child that builds the platform, simulates and sends
// back the result (sg::run_isolated). The parent's memory is untouched by a run.
#include "simulator/simgrid/simgrid_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <string_view>
#include <unordered_map>

#include "algorithms/ir/program_index.hpp"
#include "common/errors.hpp"
#include "common/log.hpp"
#include "simulator/engine.hpp"
#include "simulator/islands.hpp"
#include "simulator/routes.hpp"
#include "simulator/simgrid/simgrid_adapter.hpp"
#include "simulator/switch_plan.hpp"

namespace topocoll::sim {

namespace {

using algo::OpKind;

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

// One operation, as the walk needs it, packed in 8 bytes: the walk of a large run (a 1024-rank
// ring has millions) reads them from memory.
// (kind: 3 bits, connection: 23 bits, bytes: 38 bits)
class Step {
 public:
  static constexpr std::uint64_t kMaxBytes = (std::uint64_t{1} << 38) - 1;  // 256 GiB
  static constexpr std::uint32_t kMaxConn = (1u << 23) - 2;                 // 8.4 M connections
  Step() = default;
  Step(OpKind kind, std::uint64_t bytes, std::uint32_t conn)
      : bits_(static_cast<std::uint64_t>(kind) | (static_cast<std::uint64_t>(conn == kNone ? kNoConn : conn) << 3) |
              (bytes << 26)) {}
  OpKind kind() const { return static_cast<OpKind>(bits_ & 7u); }
  std::uint32_t conn() const {  // send / recv / recv_reduce: the connection; kNone otherwise
    const auto c = static_cast<std::uint32_t>((bits_ >> 3) & kNoConn);
    return c == kNoConn ? kNone : c;
  }
  std::uint64_t bytes() const { return bits_ >> 26; }

 private:
  static constexpr std::uint32_t kNoConn = (1u << 23) - 1;
  std::uint64_t bits_ = 0;
};
static_assert(sizeof(Step) == 8);

// A first-in first-out queue that empties often: a vector and a read position.
template <typename T>
class Fifo {
 public:
  bool empty() const { return head_ == items_.size(); }
  const T& front() const { return items_[head_]; }
  void push(T x) { items_.push_back(x); }
  T pop() {
    T x = items_[head_++];
    if (empty()) items_.clear(), head_ = 0;
    return x;
  }

 private:
  std::vector<T> items_;
  std::size_t head_ = 0;
};

// A connection: the messages of one (source, destination, channel), in order.
struct Connection {
  int src = 0, dst = 0, channel = 0;
  double latency_s = 0.0;        // from last byte left to landed: route latency (calibrated) + step overhead
  bool busy = false;             // a message is being pushed
  std::uint32_t island = kNone;  // its island, or kNone: its transfers go to SimGrid
  std::uint32_t group = 0;       // its group in the island
  std::uint32_t lane = kNone;    // its landings' lane in the EventQueue, or kNone
  std::uint64_t landed = 0, consumed = 0;
  std::uint32_t waiter = kNone;  // channel blocked on the next message
  Fifo<std::uint64_t> queued;    // bytes of issued messages not started yet
  Fifo<std::uint32_t> in_trace;  // trace entries of sends whose last byte has not left (tracing only)
  // Switch flows (switch_plan.hpp): the plan's flow, and the bytes of the message being pushed
  // and of those that left but have not landed (an up or agg landing forwards them).
  std::uint32_t switch_flow = kNone;
  std::uint64_t pushing = 0;
  Fifo<std::uint64_t> landing;
};

// One (rank, channel): its steps [begin, end) and where it is.
struct Channel {
  std::uint32_t begin = 0, end = 0, next = 0;
  int rank = 0, channel = 0;
  double reached_s = 0.0;  // when the channel reached steps[next]
  bool blocked = false;    // steps[next] waits: for a message (recv) or a computation
};

// The result as it travels from the simulation process.
struct ScheduleWhere {
  int rank = -1, channel = -1;
  std::size_t op_index = ScheduleError::kNoOp;
};
struct ResultHeader {
  double time_s = 0.0;
  std::uint64_t transfers = 0;
  std::uint64_t trace_events = 0;
  std::uint64_t island_transfers = 0;
};

class Execution final : public sg::Listener {
 public:
  Execution(const topo::Topology& t, const algo::Schedule& s, const Calibration& c, const SimOptions& o)
      : t_(t), s_(s), c_(c), o_(o) {}

  // Builds the walk, the platform, runs, and appends the result to `out`.
  void run(std::string& out) {
    const auto t0 = std::chrono::steady_clock::now();
    auto seconds_since = [](auto t) {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    };
    load_schedule();
    const double load_s = seconds_since(t0);
    sg::PlatformSpec spec;
    spec.topology = &t_;
    spec.calibration = &c_;
    spec.channels = s_.num_channels();
    spec.connections.reserve(conns_.size());
    for (std::uint32_t i = 0; i < switch_base_; ++i)
      spec.connections.push_back({conns_[i].src, conns_[i].dst, conns_[i].channel, conns_[i].island == kNone});
    // The endpoints that compute (a copy or reduce of some bytes, when reductions have a cost):
    // with the islands' ends left out, the platform holds only what SimGrid simulates.
    spec.computes.assign(channels_.size(), 0);
    if (c_.reduce_gbps > 0)
      for (std::size_t k = 0; k < channels_.size(); ++k)
        for (std::uint32_t i = channels_[k].begin; i < channels_[k].end && !spec.computes[k]; ++i)
          if ((steps_[i].kind() == OpKind::Copy || steps_[i].kind() == OpKind::Reduce) && steps_[i].bytes() > 0)
            spec.computes[k] = 1;
    if (plan_)
      for (const SwitchFlow& f : plan_->flows()) {
        const SwitchPath& path = plan_->paths()[f.path];
        sg::PathConnection pc{path.from, path.links, path.cap, 0.0, {}, static_cast<std::int64_t>(f.path)};
        if (path.reduce_port >= 0) {
          const ReducePort& port = plan_->reduce_ports()[static_cast<std::size_t>(path.reduce_port)];
          pc.reduce_rate = port.rate;
          pc.reduce_name = port.name;
        }
        spec.paths.push_back(std::move(pc));
      }
    spec.compute_speed = c_.reduce_gbps > 0 ? c_.reduce_gbps * 1e9 : 1e9;
    spec.list_workaround = o_.simgrid_fast_paths;
    sim_ = std::make_unique<sg::Simulation>(spec, *this);
    const double platform_s = seconds_since(t0) - load_s;
    const double launch_s = c_.launch_overhead_us * 1e-6;
    for (std::uint32_t ch = 0; ch < channels_.size(); ++ch) push({launch_s, 0, ch, 0, EventKind::Resume});
    arm();
    sim_->run();
    TC_LOG_INFO("sim", "simgrid: wall time: schedule {:.2f} s, platform {:.2f} s, simulation {:.2f} s", load_s,
                platform_s, seconds_since(t0) - load_s - platform_s);
    check_complete();
    ResultHeader h{time_s_, transfers_, o_.trace ? trace_.size() : 0, island_transfers_};
    TC_LOG_INFO("sim", "simgrid: {} transfers, {} of them on islands (computed by the engine)", transfers_,
                island_transfers_);
    out.append(reinterpret_cast<const char*>(&h), sizeof h);
    if (o_.trace) out.append(reinterpret_cast<const char*>(trace_.data()), trace_.size() * sizeof(TraceEvent));
  }

  // sg::Listener
  void transfers_done(const std::vector<std::uint32_t>& ids) override {
    const double now = sim_->now();
    for (std::uint32_t id : ids) __builtin_prefetch(&conns_[id]);  // as in wake()
    for (std::uint32_t id : ids) depart(id, now);
    arm();
  }

  void compute_done(std::uint32_t id) override {
    Channel& ch = channels_[id];
    const double now = sim_->now();
    finish(ch, now);
    ++ch.next;
    ch.blocked = false;
    advance(id, now);
    arm();
  }

  void wake() override {
    const double now = sim_->now();
    while (!armed_.empty() && armed_.top() <= now) armed_.pop();
    // The events due, a batch at a time (in order: events pushed meanwhile come after the batch
    // in the queue's order too). Before handling a batch, the memory it will touch is fetched
    // for all its events at once: each is a chain of dependent loads (landing -> its
    // connection -> the channel waiting -> that channel's next operation), all far apart in a
    // large run, and fetching them one event at a time left the core waiting on memory.
    for (;;) {
      due_.clear();
      events_.take_due(now, due_);
      if (due_.empty()) break;
      for (const Event& e : due_)
        if (e.kind == EventKind::Land) __builtin_prefetch(&conns_[e.id]);
      for (const Event& e : due_)
        if (const std::uint32_t ch = channel_of(e); ch != kNone) __builtin_prefetch(&channels_[ch]);
      for (const Event& e : due_)
        if (const std::uint32_t ch = channel_of(e); ch != kNone && channels_[ch].next < steps_.size())
          __builtin_prefetch(&steps_[channels_[ch].next]);
      for (const Event& e : due_) {
        switch (e.kind) {
          case EventKind::Land:
            land(e.id, e.time);
            break;
          case EventKind::Resume:
            advance(e.id, e.time);
            break;
          case EventKind::Route:
            island_done(e.id, e.version, e.time);
            break;
          case EventKind::Deliver:
            deliver(e.id, e.time);
            break;
          case EventKind::Computed:  // SimGrid runs computations (compute_done)
            break;
        }
      }
    }
    arm();
  }

 private:
  const topo::Topology& t_;
  const algo::Schedule& s_;
  const Calibration& c_;
  const SimOptions& o_;
  std::unique_ptr<sg::Simulation> sim_;

  std::vector<Step> steps_;
  std::vector<Channel> channels_;  // rank * K + channel
  std::vector<Connection> conns_;
  std::vector<Island> islands_;
  std::uint64_t island_transfers_ = 0;
  std::vector<std::uint32_t> done_scratch_;
  std::vector<Event> due_;  // wake(): the batch being handled
  // Switch groups: the plan, where its flows start in conns_, the instances' parts, and per
  // rendezvous the bytes of results waiting out the switch latency (in order).
  std::optional<SwitchPlan> plan_;
  std::optional<SwitchInstances> instances_;
  std::uint32_t switch_base_ = 0;
  std::vector<Fifo<std::uint64_t>> delivering_;

  // The channel an event resumes, when known: a landing's waiting receiver.
  std::uint32_t channel_of(const Event& e) const {
    if (e.kind == EventKind::Resume) return e.id;
    if (e.kind == EventKind::Land) return conns_[e.id].waiter;
    return kNone;
  }
  EventQueue events_;
  std::priority_queue<double, std::vector<double>, std::greater<>> armed_;  // pending wake-ups asked of SimGrid
  std::vector<TraceEvent> trace_;
  double time_s_ = 0.0;
  std::uint64_t transfers_ = 0;

  // -------------------------------------------------------------------------------------------
  // Loading: every rank's program split by channel, every connection with its route's figures.

  void load_schedule() {
    const int p = s_.num_ranks(), K = s_.num_channels();
    if (p != t_.num_ranks())
      throw InputError(fmt::format("the schedule has {} ranks but the topology has {} GPUs", p, t_.num_ranks()));
    if (K < 1) throw InputError(fmt::format("the schedule has {} channels: expected at least 1", K));
    const std::uint64_t elem = algo::size_of(s_.args().dtype);
    channels_.resize(static_cast<std::size_t>(p) * static_cast<std::size_t>(K));
    algo::Connections connections(p, K);  // (src, dst, channel) -> connection
    Router router(t_);
    if (s_.uses_switch()) plan_.emplace(t_, s_, c_, router);
    for (int r = 0; r < p; ++r) {
      // The program, checked; its steps channel 0's first, then channel 1's, ... Connections are
      // numbered in program order.
      const algo::ProgramIndex index(s_, r, /*by_channel=*/false);
      std::uint32_t at = static_cast<std::uint32_t>(steps_.size());
      for (int ch = 0; ch < K; ++ch) {
        Channel& c =
            channels_[static_cast<std::size_t>(r) * static_cast<std::size_t>(K) + static_cast<std::size_t>(ch)];
        c.rank = r;
        c.channel = ch;
        c.begin = c.next = c.end = at;
        at += static_cast<std::uint32_t>(index.channel_size(ch));
      }
      steps_.resize(at);
      for (const algo::Op& op : index.program()) {
        Channel& c = channels_[static_cast<std::size_t>(r) * static_cast<std::size_t>(K) + op.channel];
        const std::uint64_t bytes = op.count() * elem;
        if (bytes > Step::kMaxBytes)
          throw InputError(fmt::format("rank {}: {} moves {} bytes: the SimGrid engine takes at most {} per operation",
                                       r, algo::describe(op), bytes, Step::kMaxBytes));
        std::uint32_t conn = kNone;
        if (op.is_switch()) {
          if (!plan_ || op.peer < 0 || op.peer >= static_cast<int>(s_.switch_groups().size()))
            throw ScheduleError(fmt::format("rank {}: {} names no switch group of the schedule's {}", r,
                                            algo::describe(op), s_.switch_groups().size()),
                                r, op.channel);
          const std::uint32_t rv = plan_->use(op.peer, op.channel);
          conn =
              op.kind == OpKind::SwitchSend ? plan_->up_flow(rv, r) : plan_->down_flow(rv, r);  // + switch_base_ below
        } else if (algo::is_transfer(op.kind)) {
          conn = connections.id_of(r, op);
          if (conn > Step::kMaxConn)
            throw InputError(
                fmt::format("the schedule uses more than {} connections (rank, peer, channel): more than "
                            "the SimGrid engine takes",
                            Step::kMaxConn + 1));
          if (conn == conns_.size()) {
            conns_.emplace_back();
            conns_.back().src = connections.key(conn).src;
            conns_.back().dst = connections.key(conn).dst;
            conns_.back().channel = connections.key(conn).channel;
          }
        }
        steps_[c.end++] = Step(op.kind, bytes, conn);
      }
    }
    // Switch flows after the point-to-point connections; their steps named the plan's flow.
    switch_base_ = static_cast<std::uint32_t>(conns_.size());
    if (plan_) {
      if (switch_base_ + plan_->flows().size() > Step::kMaxConn)
        throw InputError(
            fmt::format("the schedule uses more than {} connections and switch flows: more than the "
                        "SimGrid engine takes",
                        Step::kMaxConn + 1));
      for (Step& st : steps_)
        if (st.kind() == OpKind::SwitchSend || st.kind() == OpKind::SwitchRecv)
          st = Step(st.kind(), st.bytes(), st.conn() + switch_base_);
      for (std::uint32_t f = 0; f < plan_->flows().size(); ++f) {
        conns_.emplace_back();
        Connection& conn = conns_.back();
        conn.switch_flow = f;
        conn.latency_s = plan_->paths()[plan_->flows()[f].path].latency_s;
        if (conn.latency_s > 0) conn.lane = events_.lane_for(conn.latency_s);
      }
      instances_.emplace(*plan_);
      delivering_.resize(plan_->rendezvous().size());
    }
    // Each connection's latency: the Router's route, calibrated, and the per-hop overhead.
    const auto& g = t_.graph();
    for (std::uint32_t i = 0; i < switch_base_; ++i) {
      Connection& conn = conns_[i];
      const Route& route = router.route(conn.src, conn.dst, conn.channel);
      conn.latency_s = c_.route_latency_s(g, route.links);
      if (conn.latency_s > 0) conn.lane = events_.lane_for(conn.latency_s);
    }
    if (o_.simgrid_fast_paths && !plan_) find_islands(router);  // switch flows cross links islands would own
    if (o_.trace) trace_.reserve(steps_.size());
    TC_LOG_INFO("sim", "simgrid: {} ranks x {} channels, {} operations, {} connections ({} on {} islands)", p, K,
                steps_.size(), conns_.size(),
                std::count_if(conns_.begin(), conns_.end(), [](const Connection& c) { return c.island != kNone; }),
                islands_.size());
  }

  // The islands (simulator/islands.hpp) among the connections.
  void find_islands(Router& router) {
    std::vector<IslandEnd> ends;
    ends.reserve(conns_.size());
    for (const Connection& conn : conns_) ends.push_back({conn.src, conn.dst, conn.channel});  // no switch flows here
    IslandMap map = sim::find_islands(t_, router, c_, ends);
    islands_ = std::move(map.islands);
    for (std::size_t i = 0; i < conns_.size(); ++i) {
      conns_[i].island = map.island[i] == kNoIsland ? kNone : map.island[i];
      conns_[i].group = map.group[i];
    }
  }

  // -------------------------------------------------------------------------------------------
  // The walk

  void push(Event e) { events_.push(e); }

  // Asks SimGrid for a wake-up at the earliest pending event, unless one is pending already.
  void arm() {
    const double next = events_.next_time();
    if (next == std::numeric_limits<double>::infinity()) return;
    if (!armed_.empty() && armed_.top() <= next) return;
    armed_.push(next);
    sim_->wake_at(next);
  }

  void start_transfer(std::uint32_t id, std::uint64_t bytes, double now) {
    Connection& conn = conns_[id];
    conn.busy = true;
    conn.pushing = bytes;
    // (Switch flows the switch itself sends on, agg / bcast / down, have no trace entries.)
    if (o_.trace && !conn.in_trace.empty()) trace_[conn.in_trace.front()].start_s = now;
    if (conn.island == kNone) {
      sim_->transfer(id, static_cast<double>(bytes));
      return;
    }
    ++island_transfers_;
    Island& is = islands_[conn.island];
    is.advance_to(now);
    Island::Group& gr = is.groups[conn.group];
    gr.flying.emplace_back(gr.work + static_cast<double>(bytes), id);
    is.share();
    schedule(conn.island);
  }

  // Schedules island `id`'s next end of transfer (rates as share() left them).
  void schedule(std::uint32_t id) {
    Island& is = islands_[id];
    if (is.reschedule()) push_island_event(id);
  }

  void push_island_event(std::uint32_t id) {
    Island& is = islands_[id];
    is.pending = is.due;
    push({is.due, 0, id, ++is.version, EventKind::Route});
  }

  // Island `id`'s live event at `time`: the earliest transfer(s) pushed their last byte, unless
  // a start since moved that later.
  void island_done(std::uint32_t id, std::uint32_t version, double time) {
    Island& is = islands_[id];
    if (version != is.version) return;  // stale: a later push replaced it
    is.pending = Island::kInf;
    if (is.due > time) {
      if (is.due < Island::kInf) push_island_event(id);
      return;
    }
    std::vector<std::uint32_t>& done = done_scratch_;
    is.finish_due(time, done);
    schedule(id);
    for (std::uint32_t conn : done) depart(conn, time);
  }

  // Connection `id`'s message being sent pushed its last byte at `now`: it lands latency later,
  // and the connection sends its next message.
  void depart(std::uint32_t id, double now) {
    Connection& conn = conns_[id];
    if (o_.trace && !conn.in_trace.empty()) trace_[conn.in_trace.pop()].end_s = now;
    if (conn.switch_flow != kNone) conn.landing.push(conn.pushing);
    time_s_ = std::max(time_s_, now);
    conn.busy = false;
    if (conn.latency_s > 0)
      events_.push_landing(conn.lane, {now + conn.latency_s, 0, id, 0, EventKind::Land});
    else
      land(id, now);
    if (!conn.queued.empty()) start_transfer(id, conn.queued.pop(), now);
  }

  // Connection `id`'s next message lands at `time`: wake its receiver if it waits for it.
  void land(std::uint32_t id, double time) {
    Connection& conn = conns_[id];
    time_s_ = std::max(time_s_, time);
    if (conn.switch_flow != kNone) {
      const std::uint64_t bytes = conn.landing.pop();
      const SwitchFlow& sf = plan_->flows()[conn.switch_flow];
      if (sf.role == SwitchRole::Up) return part_landed(sf.rendezvous, sf.member, time, bytes);
      if (sf.role == SwitchRole::Agg) {
        double ready = 0.0;
        if (instances_->stream_landed(sf.rendezvous, sf.member, time, ready)) result_ready(sf.rendezvous, bytes, time);
        return;
      }
      if (sf.role == SwitchRole::Bcast) {  // the result reached a leaf: one copy to each of its receivers
        const std::uint32_t down0 = switch_base_ + plan_->down_base(sf.rendezvous);
        for (std::uint32_t k : plan_->group(plan_->rendezvous()[sf.rendezvous].group).receivers_of_bcast[sf.member])
          send_on(down0 + k, bytes, time);
        return;
      }
    }
    ++conn.landed;
    if (conn.waiter == kNone) return;
    const std::uint32_t ch = conn.waiter;
    conn.waiter = kNone;
    advance(ch, time);
  }

  // A message of `bytes` joins switch flow `conn` (plan flow numbering + switch_base_) at `now`.
  void send_on(std::uint32_t conn, std::uint64_t bytes, double now) {
    ++transfers_;
    if (conns_[conn].busy)
      conns_[conn].queued.push(bytes);
    else
      start_transfer(conn, bytes, now);
  }
  // Contributor `member`'s part landed at its aggregator at `time`.
  void part_landed(std::uint32_t rv, std::uint32_t member, double time, std::uint64_t bytes) {
    double ready = 0.0;
    std::uint64_t instance = 0;
    if (!instances_->part_landed(rv, member, time, ready, instance)) return;
    const int group = plan_->rendezvous()[rv].group;
    if (!plan_->aggregates(group)) return result_ready(rv, bytes, time);
    send_on(switch_base_ + plan_->agg_flow(rv, plan_->group(group).aggregator_of[member]), bytes, time);
  }
  // An instance is reduced at the root at `time`: its result leaves the switch latency later.
  void result_ready(std::uint32_t rv, std::uint64_t bytes, double time) {
    const double latency = plan_->group(plan_->rendezvous()[rv].group).latency_s;
    if (latency <= 0) return deliver_now(rv, bytes, time);
    delivering_[rv].push(bytes);
    push({time + latency, 0, rv, 0, EventKind::Deliver});
  }
  void deliver(std::uint32_t rv, double time) { deliver_now(rv, delivering_[rv].pop(), time); }
  // One copy of the result down to each receiver.
  void deliver_now(std::uint32_t rv, std::uint64_t bytes, double time) {
    const SwitchPlan::GroupInfo& info = plan_->group(plan_->rendezvous()[rv].group);
    if (!info.bcast_path.empty()) {  // across leaves: one copy to each leaf (land() goes on)
      for (std::uint32_t b = 0; b < info.bcast_path.size(); ++b)
        send_on(switch_base_ + plan_->bcast_base(rv) + b, bytes, time);
      return;
    }
    const std::uint32_t down0 = switch_base_ + plan_->down_base(rv);
    for (std::uint32_t k = 0; k < info.down_path.size(); ++k) send_on(down0 + k, bytes, time);
  }

  void record(const Channel& ch, const Step& st, double start, double end) {
    if (!o_.traces(ch.rank)) return;
    int peer = st.conn() == kNone ? -1 : (st.kind() == OpKind::Send ? conns_[st.conn()].dst : conns_[st.conn()].src);
    if (st.conn() != kNone && conns_[st.conn()].switch_flow != kNone)
      peer = plan_->rendezvous()[plan_->flows()[conns_[st.conn()].switch_flow].rendezvous].group;
    trace_.push_back({ch.rank, ch.channel, st.kind(), peer, st.bytes(), start, end});
  }

  void finish(const Channel& ch, double end) {
    record(ch, steps_[ch.next], ch.reached_s, end);
    time_s_ = std::max(time_s_, end);
  }

  // Runs channel `id` from simulated time `now` until it blocks or ends.
  void advance(std::uint32_t id, double now) {
    Channel& ch = channels_[id];
    while (ch.next < ch.end) {
      const Step& st = steps_[ch.next];
      if (!ch.blocked) ch.reached_s = now;
      ch.blocked = false;
      switch (st.kind()) {
        case OpKind::Send:
        case OpKind::SwitchSend: {
          Connection& conn = conns_[st.conn()];
          ++transfers_;
          if (o_.traces(ch.rank)) {
            conn.in_trace.push(static_cast<std::uint32_t>(trace_.size()));
            record(ch, st, now, now);
          }
          time_s_ = std::max(time_s_, now);
          if (conn.busy)
            conn.queued.push(st.bytes());
          else
            start_transfer(st.conn(), st.bytes(), now);
          ++ch.next;
          break;
        }
        case OpKind::Recv:
        case OpKind::RecvReduce:
        case OpKind::RecvReduceCopy:
        case OpKind::SwitchRecv: {
          Connection& conn = conns_[st.conn()];
          if (conn.landed == conn.consumed) {  // wait for the message
            conn.waiter = id;
            ch.blocked = true;
            return;
          }
          ++conn.consumed;
          finish(ch, now);
          ++ch.next;
          break;
        }
        case OpKind::Copy:
        case OpKind::Reduce:
          if (c_.reduce_gbps > 0 && st.bytes() > 0) {
            sim_->compute(ch.rank, ch.channel, static_cast<double>(st.bytes()), id);
            ch.blocked = true;
            return;
          }
          finish(ch, now);
          ++ch.next;
          break;
      }
    }
  }

  void check_complete() const {
    std::string stuck;
    int count = 0;
    for (const Channel& ch : channels_) {
      if (ch.next == ch.end) continue;
      if (++count <= 3) {
        const Step& st = steps_[ch.next];
        const int peer = st.conn() == kNone || conns_[st.conn()].switch_flow != kNone ? -1 : conns_[st.conn()].src;
        stuck += fmt::format("{}rank {} channel {} at {} (operation {} of the channel{})", stuck.empty() ? "" : "; ",
                             ch.rank, ch.channel, algo::to_string(st.kind()), ch.next - ch.begin,
                             peer >= 0 ? fmt::format(", from rank {}", peer) : "");
      }
    }
    if (count > 0)
      throw ScheduleError(
          fmt::format("the schedule does not complete: {} channel(s) wait forever: {}{} (run `topocoll verify`)", count,
                      stuck, count > 3 ? "; ..." : ""));
  }
};

class SimGridEngine final : public Engine {
 public:
  std::string name() const override { return "simgrid"; }

  SimResult run(const topo::Topology& t, const algo::Schedule& s, const Calibration& calibration,
                const SimOptions& o) override {
    const Calibration c = calibration.for_schedule(s);  // the schedule's block cap (calibration.hpp)
    if (o.simgrid_fast_paths && o.simgrid_answer_islands_analytically && !o.trace && c.reduce_gbps <= 0 &&
        !s.uses_switch())
      if (std::optional<SimResult> r = run_on_islands(t, s, calibration, o)) {
        TC_LOG_INFO("sim",
                    "simgrid: {} transfers, {} of them on islands (computed by the engine; all of them: no platform, "
                    "no SimGrid comm, sim::run_on_islands)",
                    r->transfers, r->transfers);
        r->engine = name();
        r->island_transfers = r->transfers;
        return std::move(*r);
      }
    // The answer's first byte: 'R' and a result, or 'S' and a ScheduleError (rank, channel, op
    // index and message), thrown again here as what it was.
    const std::string answer = sg::run_isolated([&](std::string& out) {
      const std::size_t start = out.size();  // run_isolated's own status byte comes first
      try {
        out += 'R';
        Execution(t, s, c, o).run(out);
      } catch (const ScheduleError& e) {
        const ScheduleWhere w{e.rank(), e.channel(), e.op_index()};
        out.resize(start);
        out += 'S';
        out.append(reinterpret_cast<const char*>(&w), sizeof w);
        out += e.what();
      }
    });
    TOPOCOLL_ASSERT(!answer.empty(), "empty answer from the simulation process");
    if (answer[0] == 'S') {
      ScheduleWhere w;
      TOPOCOLL_ASSERT(answer.size() >= 1 + sizeof w, "short answer from the simulation process");
      std::memcpy(&w, answer.data() + 1, sizeof w);
      throw ScheduleError(answer.substr(1 + sizeof w), w.rank, w.channel, w.op_index);
    }
    const std::string_view bytes = std::string_view(answer).substr(1);
    ResultHeader h;
    TOPOCOLL_ASSERT(bytes.size() >= sizeof h, "short answer from the simulation process");
    std::memcpy(&h, bytes.data(), sizeof h);
    TOPOCOLL_ASSERT(bytes.size() == sizeof h + h.trace_events * sizeof(TraceEvent),
                    "malformed answer from the simulation process");
    SimResult r;
    r.engine = name();
    r.time_s = h.time_s;
    r.transfers = h.transfers;
    r.island_transfers = h.island_transfers;
    r.trace.resize(h.trace_events);
    if (h.trace_events > 0) std::memcpy(r.trace.data(), bytes.data() + sizeof h, h.trace_events * sizeof(TraceEvent));
    return r;
  }
};

}  // namespace

std::unique_ptr<Engine> make_simgrid_engine() {
  return std::make_unique<SimGridEngine>();
}

void register_simgrid_engine() {
  register_engine("simgrid", &make_simgrid_engine);
}

}  // namespace topocoll::sim
