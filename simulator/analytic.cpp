// The analytic engine: an alpha-beta event simulation of the schedule on the Router's routes.
//
// Every operation gets a start and an end time; nothing is solved globally:
//   send  of B bytes on (rank, channel) at time t is non-blocking (contract rule 2): the channel
//         goes on at once, the data goes out on its flow (source, destination, channel) when the
//         flow's previous message has left, and lands after the route's latency:
//             start = max(t, flow free), flow free = start + B / bw, arrival = flow free + latency
//   recv / recv_reduce / recv_reduce_copy: ends at max(channel time, arrival of the FIFO-matched send);
//         the per-step overhead is part of each hop's latency (it pipelines like latency:
//         a chain of h hops pays it h times, not once per slice);
//   copy / reduce: B / reduce_gbps (free when reduce_gbps is 0: fused into transfers on GPUs).
// bw is the route's max-min fair share (SimGrid's sharing, solved once for the whole run
// instead of at every event). Pass 1 takes every distinct (source, destination, channel) flow as
// active at once: each link direction's calibrated rate is shared max-min among its flows, with
// each flow's per-channel cap as its own bound.
//
// When every flow is on an island (islands.hpp; rings and hierarchical on rail and fat trees
// are), the result must be SimGrid's dynamic sharing exactly, and pass 1 decides how to get it:
//   - on every island all flows transfer at the same moments (equal signatures of their message
//     times): the static shares are the dynamic ones; pass 1 is the answer;
//   - else a pass with every transfer at its rate alone: the dynamic result lies between the two
//     (a transfer never gets less than its all-active share nor more than its rate alone, and
//     the walk's times only grow with durations); when they meet, pass 1 is the answer;
//   - else IslandWalk: the walk in time order with each island's links re-shared at every start
//     and end, as the SimGrid engine computes islands. A ring whose steps are one message each
//     (store and forward) with channels out of step on a GPU's NVLink port needs it: its
//     transfers are on and off, and a transfer alone gets the whole port (docs/simulator.md,
//     "Closed forms the engines must meet").
// Otherwise pass 2 lets a link constrain together only the flows whose active spans in pass 1
// overlap, so phases that do not overlap (a tree's up and down waves) stop slowing each other
// down; an approximation of SimGrid's dynamic sharing, compared in the tests and
// docs/validation.md.
//
// Symmetry. When shifting every rank by d (r -> r + d mod p, d a divisor of p) maps every
// program onto another (same steps, same sizes, peers shifted by d) and every flow onto one with
// the same latency, rate, rate alone and island shape, then ranks r and r + d have the same
// times in every pass and in the walk: each depends only on its own steps and on what its flows
// deliver, and those are equal step for step (induction on the events). The passes then run
// only ranks 0..d-1 (the quotient): a flow stands for its orbit, whose representative is the
// member sent by one of those ranks, and a send wakes the receiver's representative (its rank
// mod d). The smallest such d is taken; the checks are exact (equal doubles), so the answer is
// the full run's (`topocoll sim --no-symmetry` runs every rank, for comparison; a test does so
// over the registry). A NCCL ring on a rail fat tree shifts by the ranks under one leaf, a
// single-switch cluster's by one node; a tree has no such shift and runs in full.
//
// Rotation. The shift may come with a rotation tau = (sigma, pi): sigma moves every rank one
// place along its node's ring order (algo::Layout::node_ranks), pi permutes the channels, and
// rank sigma(r)'s program on channel pi(c) is rank r's on channel c with the peers moved by
// sigma (a NCCL ring's channel c enters each node at its c-th GPU: channel c + 1 is channel c
// one GPU on). With pi^G the identity (G ranks per node) and the shift a whole number of nodes,
// tau and the shift generate a group that moves every rank (it acts freely), so each orbit of
// flows has one member sent by a rank in the first place of one of the first d / G nodes: the
// quotient runs those ranks only, every channel, and a send wakes the slot its receiver's
// group element maps it to. The checks are the shift's (flows' figures equal their
// representatives', islands map onto islands of representatives only), so the answer is again
// the full run's bit for bit; a trace takes the shift alone.
//
// Declared. Where the schedule declares its symmetry (algo::ProgramSymmetry), only the
// representatives' programs are generated (Prepared::declared): every rank's flows are the
// images of theirs, the quotient's slots share their step lists (SlotView), and a run with no
// quotient generates every rank and starts again (NeedEveryRank). Flows are numbered in
// (source, destination, channel) order on both paths, so both give the same bits.
//
// Threads. A run may use a second thread (SimOptions::threads >= 2: `topocoll sim` gives a point
// the workers its sweep leaves idle) once it is large enough to pay for one (kThreadsFromFlows
// flows, kThreadsFromSteps steps run). find_islands then runs beside max-min, and a run whose
// flows are all on islands starts its exact walk at once on the second thread while pass 1 and
// the rates-alone pass decide whether the walk's answer is needed (each pass costs a fifth of
// the walk or less); when pass 1 is exact the walk is stopped. The walk's input is the same
// either way (the islands as found, the flows' latencies), so the answer is the single-threaded
// run's bit for bit.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "algorithms/ir/layout.hpp"
#include "algorithms/ir/program_index.hpp"
#include "algorithms/ir/symmetry.hpp"
#include "common/errors.hpp"
#include "common/log.hpp"
#include "simulator/engine.hpp"
#include "simulator/islands.hpp"
#include "simulator/routes.hpp"
#include "simulator/switch_plan.hpp"

namespace topocoll::sim {

namespace {

using algo::Op;
using algo::OpKind;

// A FIFO that keeps its storage: emptied, it starts again at the front, so a pass allocates
// only while a flow's backlog grows (a std::deque allocated and freed its blocks as messages came
// and went, in the engine's inner loop), and an unused one holds no memory (a std::deque
// allocates on construction: two per flow of a 131,072-GPU ring were gigabytes).
template <class T>
class Fifo {
 public:
  bool empty() const { return head_ == items_.size(); }
  T front() const { return items_[head_]; }
  T back() const { return items_.back(); }
  void push_back(T v) {
    if (empty()) {
      items_.clear();
      head_ = 0;
    }
    items_.push_back(v);
  }
  void pop_front() { ++head_; }
  void clear() {
    items_.clear();
    head_ = 0;
  }

 private:
  std::vector<T> items_;
  std::size_t head_ = 0;
};
using TimeFifo = Fifo<double>;

// The (rank, channel) slots a pass has still to advance, first in first out; each slot at most
// once at a time, so `capacity` places (one per slot) never overflow.
class SlotQueue {
 public:
  explicit SlotQueue(std::size_t capacity) : items_(std::max<std::size_t>(capacity, 1)) {}
  bool empty() const { return size_ == 0; }
  std::pair<int, int> front() const { return items_[head_]; }
  void pop_front() {
    head_ = head_ + 1 == items_.size() ? 0 : head_ + 1;
    --size_;
  }
  void push_back(std::pair<int, int> slot) {
    TOPOCOLL_ASSERT(size_ < items_.size(), "a slot queued twice");
    std::size_t at = head_ + size_;
    if (at >= items_.size()) at -= items_.size();
    items_[at] = slot;
    ++size_;
  }

 private:
  std::vector<std::pair<int, int>> items_;
  std::size_t head_ = 0, size_ = 0;
};

struct Flow {
  const Route* route = nullptr;
  double bw_bytes_per_s = 0.0;
  double latency_s = 0.0;
  TimeFifo arrivals;  // FIFO of arrival times of sent messages
  // In the pass (beside the flow's other state: one cache line less per send): when its first
  // message started and its last one's last byte left, and a signature of its messages' (start,
  // end) times: flows whose signatures are equal transfer at exactly the same moments.
  double first_send = 0.0, last_send = 0.0;
  std::uint64_t rhythm = 0;
  double free_at = 0.0;  // when the flow's last message has left the sender
};

// One operation of a (rank, channel), compacted: 16 bytes instead of a 48-byte Op.
struct Step {
  std::uint64_t bytes : 61;
  std::uint64_t kind : 3;
  std::uint32_t flow;  // sends: the outgoing flow; receives: the incoming one
  std::int32_t peer;
};
static_assert(sizeof(Step) == 16);
using Steps = std::vector<std::vector<std::vector<Step>>>;  // [rank][channel]

// What a pass or the walk runs on a (rank, channel) slot: its steps, and where they are a
// representative's shared by several slots (the declared quotient: Prepared::declared), per
// connection index (a step's `flow` there) the flow and, for sends, the receiver's slot.
struct SlotView {
  const Step* steps = nullptr;
  std::size_t size = 0;
  const std::uint32_t* flow_of = nullptr;  // null: a step's `flow` is the flow
  const std::uint32_t* to = nullptr;       // with flow_of: per connection, the receiving slot
};
using SlotViews = std::vector<SlotView>;  // [rank * K + channel]
SlotViews views_of(const Steps& steps, int ranks, int K) {
  SlotViews v(static_cast<std::size_t>(ranks) * static_cast<std::size_t>(K));
  for (int r = 0; r < ranks; ++r)
    for (int ch = 0; ch < K; ++ch) {
      const std::vector<Step>& l = steps[static_cast<std::size_t>(r)][static_cast<std::size_t>(ch)];
      v[static_cast<std::size_t>(r) * static_cast<std::size_t>(K) + static_cast<std::size_t>(ch)] = {l.data(),
                                                                                                     l.size()};
    }
  return v;
}

// The walk with dynamic sharing, for a schedule whose flows are all on islands (islands.hpp):
// events in time order, and each island's links shared max-min among the transfers in flight
// at every start and end, as the SimGrid engine computes islands (its fast path, checked there
// against SimGrid's own flow model). The rules are the static walk's (above): a send goes on at
// once, a flow carries its messages one after the other, each landing `latency` after its last
// byte left; a receive waits for its flow's next landing; a copy or reduce takes bytes /
// reduce_gbps.
class IslandWalk {
 public:
  IslandWalk(const SlotViews& views, int ranks, int channels, const std::vector<algo::Connections::Key>& keys,
             const std::vector<Flow>& flows, IslandMap map, const Calibration& c, const SimOptions* trace)
      : K_(channels), keys_(keys), map_(std::move(map)), c_(c), trace_(trace) {
    flow_.resize(flows.size());
    for (std::size_t f = 0; f < flows.size(); ++f) {
      flow_[f].latency_s = flows[f].latency_s;
      if (flows[f].latency_s > 0) flow_[f].lane = events_.lane_for(flows[f].latency_s);
    }
    slot_.resize(static_cast<std::size_t>(ranks) * static_cast<std::size_t>(K_));
    for (std::uint32_t id = 0; id < slot_.size(); ++id) {
      slot_[id].steps = views[id].steps;
      slot_[id].size = views[id].size;
      slot_[id].flow_of = views[id].flow_of;
    }
  }

  // stop: checked between batches of events; once it is set, the walk returns what it has (the
  // caller drops it: WalkAhead).
  SimResult run(const std::string& engine, const std::atomic<bool>* stop = nullptr) {
    result_.engine = engine;
    result_.ranks_simulated = static_cast<std::uint32_t>(slot_.size() / static_cast<std::size_t>(K_));
    const double launch_s = c_.launch_overhead_us * 1e-6;
    for (std::uint32_t id = 0; id < slot_.size(); ++id) events_.push({launch_s, 0, id, 0, EventKind::Resume});
    // The events due at the earliest time, a batch at a time; the memory each will touch is
    // fetched for the whole batch first (as the SimGrid engine does: each event is a chain of
    // dependent loads far apart in a large run).
    for (;;) {
      const double now = events_.next_time();
      if (now == std::numeric_limits<double>::infinity()) break;
      if (stop != nullptr && stop->load(std::memory_order_relaxed)) return std::move(result_);
      due_.clear();
      events_.take_due(now, due_);
      for (const Event& e : due_)
        if (e.kind == EventKind::Land) __builtin_prefetch(&flow_[e.id]);
      for (const Event& e : due_)
        if (const std::uint32_t sl = slot_of(e); sl != kNone) __builtin_prefetch(&slot_[sl]);
      for (const Event& e : due_)
        if (const std::uint32_t sl = slot_of(e); sl != kNone && slot_[sl].next < slot_[sl].size)
          __builtin_prefetch(&slot_[sl].steps[slot_[sl].next]);
      for (const Event& e : due_) handle(e);
    }
    for (std::uint32_t id = 0; id < slot_.size(); ++id)
      if (slot_[id].next < slot_[id].size) {
        const int r = static_cast<int>(id / static_cast<std::uint32_t>(K_)),
                  ch = static_cast<int>(id % static_cast<std::uint32_t>(K_));
        throw ScheduleError(
            fmt::format("the schedule does not complete: rank {} channel {} waits forever (run `topocoll verify`)", r,
                        ch),
            r, ch);
      }
    return std::move(result_);
  }

 private:
  void handle(const Event& e) {
    switch (e.kind) {
      case EventKind::Resume:
        advance(e.id, e.time);
        break;
      case EventKind::Computed: {
        Slot& sl = slot_[e.id];
        record(e.id, step_of(e.id), sl.reached_s, e.time);
        ++sl.next;
        sl.blocked = false;
        advance(e.id, e.time);
        break;
      }
      case EventKind::Land:
        land(e.id, e.time);
        break;
      case EventKind::Route:
        island_done(e.id, e.version, e.time);
        break;
      case EventKind::Deliver:  // switch schedules take the static passes
        break;
    }
  }
  // The slot an event resumes, when known: a landing's waiting receiver.
  std::uint32_t slot_of(const Event& e) const {
    if (e.kind == EventKind::Resume || e.kind == EventKind::Computed) return e.id;
    if (e.kind == EventKind::Land) return flow_[e.id].waiter;
    return kNone;
  }

  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  struct FlowState {
    double latency_s = 0.0;
    bool busy = false;  // a message is being pushed
    std::uint64_t landed = 0, consumed = 0;
    std::uint32_t waiter = kNone;  // slot blocked on the next landing
    std::uint32_t lane = kNoLane;  // its landings' lane in the EventQueue
    Fifo<std::uint64_t> queued;    // bytes of issued messages not started yet
    Fifo<std::size_t> in_trace;    // trace entries of sends whose last byte has not left
  };
  struct Slot {
    const Step* steps = nullptr;
    std::size_t size = 0;
    const std::uint32_t* flow_of = nullptr;  // SlotView::flow_of
    std::size_t next = 0;
    double reached_s = 0.0;
    bool blocked = false;  // waits for a landing or a computation
  };

  const int K_;
  const std::vector<algo::Connections::Key>& keys_;
  IslandMap map_;
  const Calibration& c_;
  const SimOptions* trace_;  // null: no trace; else which ranks (SimOptions::traces)
  bool traces(std::uint32_t id) const {
    return trace_ && trace_->traces(static_cast<int>(id / static_cast<std::uint32_t>(K_)));
  }
  std::vector<FlowState> flow_;
  std::vector<Slot> slot_;
  EventQueue events_;
  std::vector<Event> due_;
  SimResult result_;

  const Step& step_of(std::uint32_t id) const { return slot_[id].steps[slot_[id].next]; }
  void record(std::uint32_t id, const Step& st, double start, double end) {
    result_.time_s = std::max(result_.time_s, end);
    if (!traces(id)) return;
    result_.trace.push_back({static_cast<int>(id / static_cast<std::uint32_t>(K_)),
                             static_cast<int>(id % static_cast<std::uint32_t>(K_)), static_cast<OpKind>(st.kind),
                             st.peer, st.bytes, start, end});
  }

  void advance(std::uint32_t id, double now) {
    Slot& sl = slot_[id];
    while (sl.next < sl.size) {
      const Step& st = sl.steps[sl.next];
      if (!sl.blocked) sl.reached_s = now;
      sl.blocked = false;
      const OpKind kind = static_cast<OpKind>(st.kind);
      const bool transfer = algo::is_transfer(kind);
      const std::uint32_t flow = transfer && sl.flow_of ? sl.flow_of[st.flow] : st.flow;
      if (kind == OpKind::Send) {
        FlowState& f = flow_[flow];
        ++result_.transfers;
        if (traces(id)) f.in_trace.push_back(result_.trace.size());
        record(id, st, now, now);
        if (f.busy)
          f.queued.push_back(st.bytes);
        else
          start(flow, st.bytes, now);
      } else if (algo::is_receive(kind)) {
        FlowState& f = flow_[flow];
        if (f.landed == f.consumed) {
          f.waiter = id;
          sl.blocked = true;
          return;
        }
        ++f.consumed;
        record(id, st, sl.reached_s, now);
      } else {
        if (c_.reduce_gbps > 0 && st.bytes > 0) {
          events_.push({now + static_cast<double>(st.bytes) / (c_.reduce_gbps * 1e9), 0, id, 0, EventKind::Computed});
          sl.blocked = true;
          return;
        }
        record(id, st, now, now);
      }
      ++sl.next;
    }
  }

  void start(std::uint32_t f, std::uint64_t bytes, double now) {
    FlowState& fs = flow_[f];
    fs.busy = true;
    if (!fs.in_trace.empty()) result_.trace[fs.in_trace.front()].start_s = now;
    const std::uint32_t id = map_.island[f];
    Island& is = map_.islands[id];
    is.advance_to(now);
    Island::Group& gr = is.groups[map_.group[f]];
    gr.flying.emplace_back(gr.work + static_cast<double>(bytes), f);
    is.share();
    schedule(id);
  }

  // The island's next end of a transfer (rates as share() left them); a new live event only
  // when it comes earlier than the live one (a later one is pushed when the live one fires).
  void schedule(std::uint32_t id) {
    Island& is = map_.islands[id];
    if (is.reschedule()) push_island_event(id);
  }
  void push_island_event(std::uint32_t id) {
    Island& is = map_.islands[id];
    is.pending = is.due;
    events_.push({is.due, 0, id, ++is.version, EventKind::Route});
  }
  void island_done(std::uint32_t id, std::uint32_t version, double time) {
    Island& is = map_.islands[id];
    if (version != is.version) return;  // stale
    is.pending = Island::kInf;
    if (is.due > time) {
      if (is.due < Island::kInf) push_island_event(id);
      return;
    }
    is.finish_due(time, done_);
    schedule(id);
    for (std::uint32_t f : done_) depart(f, time);
  }
  std::vector<std::uint32_t> done_;

  // Flow f's message pushed its last byte at `now`: it lands latency later; the next starts.
  void depart(std::uint32_t f, double now) {
    FlowState& fs = flow_[f];
    if (!fs.in_trace.empty()) {
      result_.trace[fs.in_trace.front()].end_s = now;
      fs.in_trace.pop_front();
    }
    result_.time_s = std::max(result_.time_s, now);
    fs.busy = false;
    if (fs.latency_s > 0)
      events_.push_landing(fs.lane, {now + fs.latency_s, 0, f, 0, EventKind::Land});
    else
      land(f, now);
    if (!fs.queued.empty()) {
      const std::uint64_t bytes = fs.queued.front();
      fs.queued.pop_front();
      start(f, bytes, now);
    }
  }
  void land(std::uint32_t f, double time) {
    FlowState& fs = flow_[f];
    ++fs.landed;
    result_.time_s = std::max(result_.time_s, time);
    if (fs.waiter == kNone) return;
    const std::uint32_t w = fs.waiter;
    fs.waiter = kNone;
    advance(w, time);
  }
};

// A run uses a second thread from these sizes on (the file's header, "Threads"): about 50 ms of
// work on either side, against tens of microseconds to start a thread.
constexpr std::size_t kThreadsFromFlows = std::size_t{1} << 16;
constexpr std::size_t kThreadsFromSteps = std::size_t{1} << 20;

// The walk run ahead on a thread of its own while the passes decide whether its answer is needed
// (SimOptions::threads; the file's header, "Threads"): stopped and joined when it is not, or
// when the run ends early (an error). The walk reads only what outlives it (the prepared
// schedule's steps and keys, the run's calibration) and owns its state.
class WalkAhead {
 public:
  WalkAhead(std::unique_ptr<IslandWalk> walk, std::string engine)
      : walk_(std::move(walk)), thread_([this, engine = std::move(engine)] {
          try {
            result_ = walk_->run(engine, &stop_);
          } catch (...) {
            error_ = std::current_exception();
          }
        }) {}
  WalkAhead(const WalkAhead&) = delete;
  WalkAhead& operator=(const WalkAhead&) = delete;
  ~WalkAhead() {
    stop_.store(true, std::memory_order_relaxed);
    if (thread_.joinable()) thread_.join();
  }
  // The walk's answer, once it has ended (its error rethrown).
  SimResult take() {
    thread_.join();
    if (error_) std::rethrow_exception(error_);
    return std::move(result_);
  }

 private:
  std::unique_ptr<IslandWalk> walk_;
  std::atomic<bool> stop_{false};
  SimResult result_;
  std::exception_ptr error_;
  std::thread thread_;  // last: it starts once the rest is built
};

// The rotation of the file's header: sigma^k moves a rank k places along its node's ring order;
// pi_inv[k][c] is pi^-k(c).
struct Rotation {
  int G = 0;                           // ranks per node
  std::vector<int> node, pos;          // per rank: its node, its place in the node's ring order
  std::vector<std::vector<int>> ring;  // per node: its ranks in ring order
  std::vector<std::vector<int>> pi_inv;
  int sigma(int r, int k) const {  // sigma^k(r), any k
    const auto n = static_cast<std::size_t>(node[static_cast<std::size_t>(r)]);
    return ring[n][static_cast<std::size_t>(((pos[static_cast<std::size_t>(r)] + k) % G + G) % G)];
  }
  // Whether shifting by d commutes with sigma: d whole nodes, and node n + d / G's ring order is
  // node n's shifted by d.
  bool commutes_with_shift(int d) const {
    if (d % G != 0) return false;
    const std::size_t nodes = ring.size(), dn = static_cast<std::size_t>(d / G);
    for (std::size_t n = 0; n < nodes; ++n)
      for (std::size_t i = 0; i < static_cast<std::size_t>(G); ++i)
        if (ring[(n + dn) % nodes][i] != (ring[n][i] + d) % static_cast<int>(node.size())) return false;
    return true;
  }
};

// What a run prepares from the schedule and the topology alone: each rank's program compacted
// into steps, the flows and their routes, and which flows use each link direction. Runs of one
// schedule under several calibrations (the protocols of a point) share it; a schedule with switch
// groups also holds its switch plan, which depends on the calibration (it is prepared per run).
struct Prepared {
  int p = 0, K = 0;
  std::unique_ptr<Router> router;
  std::optional<SwitchPlan> plan;
  Steps steps;
  std::vector<algo::Connections::Key> flow_keys;
  std::uint32_t sw_base = 0;             // flows from sw_base on are the switch plan's
  std::vector<const Route*> routes;      // per flow
  std::vector<double> switch_latency_s;  // per switch flow: its path's latency
  std::vector<Route> switch_routes;      // per plan path
  using LinkDir = std::pair<topo::Edge, bool>;
  std::map<LinkDir, std::vector<std::uint32_t>> users;  // flows per link direction
  // Reduction ports of the NVSwitch: a resource like a link direction, for the up flows of reducing groups.
  std::vector<std::vector<std::uint32_t>> port_users;
  // Symmetry (the file's header): the smallest shift d that maps the programs onto themselves
  // (p: none), each flow's id by (src, dst, channel), and the quotient programs per shift used.
  int step_period = 0;
  std::optional<Rotation> rotation;  // the programs' rotation (the file's header), when they have one
  // Declared (the schedule's algo::ProgramSymmetry, the file's header): only the representatives'
  // programs are generated (rep_steps, per representative index; a transfer step's `flow` is the
  // index of its connection in rep_conns[index][channel]); `steps` stays empty, and a run that
  // needs every rank's programs asks for them (NeedEveryRank).
  const algo::ProgramSymmetry* declared = nullptr;
  Steps rep_steps;  // lists equal to an earlier one are left empty: rep_list names the one kept
  std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> rep_list;  // [index][channel]
  struct Conn {
    bool send;
    int peer;
  };
  std::vector<std::vector<std::vector<Conn>>> rep_conns;
  std::vector<int> rep_index;  // per rank: its representative's index in rep_steps
  std::unordered_map<std::uint64_t, std::uint32_t> flow_of_key;
  // The quotients' slots per (shift, rotated): the representatives' steps over representative
  // flows (copied, or shared with rep_steps when declared: SlotView).
  struct QuotientSlots {
    Steps steps;
    std::vector<std::vector<std::uint32_t>> flow_of, to;
    SlotViews views;
  };
  std::map<std::pair<int, bool>, QuotientSlots> quotient_slots;
  SlotViews full_views;  // every rank's slots over `steps` (empty when declared: a run there has a quotient)
  std::uint64_t key_of(int src, int dst, int ch) const {
    return (static_cast<std::uint64_t>(src) * static_cast<std::uint64_t>(p) + static_cast<std::uint64_t>(dst)) *
               static_cast<std::uint64_t>(K) +
           static_cast<std::uint64_t>(ch);
  }
};

// A run on a declared symmetry that needs every rank's programs (no quotient of its flows, or
// rates that differ within an orbit): the caller prepares them all and runs again.
struct NeedEveryRank {};

// Flow ids in (source, destination, channel) order, the same however the programs were
// generated (every rank's, or the representatives' moved): keys sorted, and the steps' flows
// renumbered.
void number_flows_in_key_order(std::vector<algo::Connections::Key>& keys, Steps& steps) {
  auto less = [](const algo::Connections::Key& a, const algo::Connections::Key& b) {
    return std::tie(a.src, a.dst, a.channel) < std::tie(b.src, b.dst, b.channel);
  };
  std::vector<std::uint32_t> order(keys.size());
  for (std::uint32_t f = 0; f < order.size(); ++f) order[f] = f;
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return less(keys[a], keys[b]); });
  std::vector<std::uint32_t> renumber(keys.size());
  std::vector<algo::Connections::Key> sorted(keys.size());
  for (std::uint32_t i = 0; i < order.size(); ++i) {
    renumber[order[i]] = i;
    sorted[i] = keys[order[i]];
  }
  keys = std::move(sorted);
  for (auto& chans : steps)
    for (auto& list : chans)
      for (Step& st : list)
        if (algo::is_transfer(static_cast<OpKind>(st.kind))) st.flow = renumber[st.flow];
}

// Whether shifting every rank by d maps each program onto the shifted rank's: equal steps, sizes
// and kinds, transfer peers shifted by d (the flows then map too: a flow is its two ranks and
// channel). Stops at the first difference.
bool programs_shift_by(const Steps& steps, int p, int d) {
  for (int r = 0; r < p; ++r) {
    const auto& a = steps[static_cast<std::size_t>(r)];
    const auto& b = steps[static_cast<std::size_t>((r + d) % p)];
    for (std::size_t ch = 0; ch < a.size(); ++ch) {
      const std::vector<Step>& x = a[ch];
      const std::vector<Step>& y = b[ch];
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (x[i].bytes != y[i].bytes || x[i].kind != y[i].kind) return false;
        const bool transfer = algo::is_transfer(static_cast<OpKind>(x[i].kind));
        if (transfer ? (x[i].peer + d) % p != y[i].peer : x[i].peer != y[i].peer) return false;
      }
    }
  }
  return true;
}

// The smallest divisor d < p of p by which the programs shift onto themselves; p when none.
int smallest_step_period(const Steps& steps, int p) {
  for (int d = 1; d < p; ++d)
    if (p % d == 0 && programs_shift_by(steps, p, d)) return d;
  return p;
}

// Whether every rank r's program on channel a, its transfer peers moved by sigma, is rank
// sigma(r)'s on channel b. Stops at the first difference.
bool programs_rotate(const Steps& steps, const Rotation& rot, int a, int b) {
  const int p = static_cast<int>(steps.size());
  for (int r = 0; r < p; ++r) {
    const std::vector<Step>& x = steps[static_cast<std::size_t>(r)][static_cast<std::size_t>(a)];
    const std::vector<Step>& y = steps[static_cast<std::size_t>(rot.sigma(r, 1))][static_cast<std::size_t>(b)];
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (x[i].bytes != y[i].bytes || x[i].kind != y[i].kind) return false;
      const bool transfer = algo::is_transfer(static_cast<OpKind>(x[i].kind));
      if (transfer ? rot.sigma(x[i].peer, 1) != y[i].peer : x[i].peer != y[i].peer) return false;
    }
  }
  return true;
}

// The programs' rotation (the file's header) on a topology of equal nodes of 2+ ranks numbered
// node by node: per channel c the first channel pi(c) not yet taken onto which sigma maps it
// (c + 1 tried first), with pi^G the identity; none when a channel has no image.
std::optional<Rotation> find_rotation(const topo::Topology& t, const Steps& steps, int K) {
  const algo::Layout layout = algo::layout_of(t);
  const int p = static_cast<int>(steps.size());
  if (!layout.uniform() || layout.nodes < 1 || layout.ranks_per_node() < 2 || K < 1) return std::nullopt;
  Rotation rot;
  rot.G = layout.ranks_per_node();
  rot.ring = layout.node_ranks;
  rot.node.assign(static_cast<std::size_t>(p), -1);
  rot.pos.assign(static_cast<std::size_t>(p), -1);
  for (std::size_t n = 0; n < rot.ring.size(); ++n)
    for (std::size_t i = 0; i < rot.ring[n].size(); ++i) {
      const int r = rot.ring[n][i];
      if (r < 0 || r >= p || r / rot.G != static_cast<int>(n)) return std::nullopt;  // not node by node
      rot.node[static_cast<std::size_t>(r)] = static_cast<int>(n);
      rot.pos[static_cast<std::size_t>(r)] = static_cast<int>(i);
    }
  // pi in cycles whose lengths divide G (so that pi^G is the identity): from the first channel
  // not in one, each next the first untaken channel its last maps onto, closing as soon as the
  // last maps back onto the first at a length dividing G.
  std::vector<int> pi(static_cast<std::size_t>(K), -1);
  std::vector<char> taken(static_cast<std::size_t>(K), 0);
  for (int first = 0; first < K; ++first) {
    if (taken[static_cast<std::size_t>(first)]) continue;
    taken[static_cast<std::size_t>(first)] = 1;
    int last = first;
    for (int length = 1;; ++length) {
      if (rot.G % length == 0 && programs_rotate(steps, rot, last, first)) {
        pi[static_cast<std::size_t>(last)] = first;
        break;
      }
      if (length >= rot.G) return std::nullopt;
      int next = -1;
      for (int j = 1; j < K && next < 0; ++j) {
        const int b = (last + j) % K;
        if (!taken[static_cast<std::size_t>(b)] && programs_rotate(steps, rot, last, b)) next = b;
      }
      if (next < 0) return std::nullopt;
      pi[static_cast<std::size_t>(last)] = next;
      taken[static_cast<std::size_t>(next)] = 1;
      last = next;
    }
  }
  // pi_inv[k] = pi^-k (pi^G is the identity: else tau^G would fix the ranks and move channels).
  std::vector<int> inv(static_cast<std::size_t>(K));
  for (int c = 0; c < K; ++c) inv[static_cast<std::size_t>(pi[static_cast<std::size_t>(c)])] = c;
  rot.pi_inv.assign(static_cast<std::size_t>(rot.G) + 1, {});
  rot.pi_inv[0].resize(static_cast<std::size_t>(K));
  for (int c = 0; c < K; ++c) rot.pi_inv[0][static_cast<std::size_t>(c)] = c;
  for (std::size_t k = 1; k <= static_cast<std::size_t>(rot.G); ++k) {
    rot.pi_inv[k].resize(static_cast<std::size_t>(K));
    for (int c = 0; c < K; ++c)
      rot.pi_inv[k][static_cast<std::size_t>(c)] =
          inv[static_cast<std::size_t>(rot.pi_inv[k - 1][static_cast<std::size_t>(c)])];
  }
  rot.pi_inv.pop_back();
  return rot;
}

// The representatives (rank mod d) of the ranks a trace covers, as ranges.
std::vector<std::pair<int, int>> representatives_of(const SimOptions& o, int p, int d) {
  std::vector<char> wanted(static_cast<std::size_t>(d), 0);
  for (int r = 0; r < p; ++r)
    if (o.traces(r)) wanted[static_cast<std::size_t>(r % d)] = 1;
  std::vector<std::pair<int, int>> ranges;
  for (int r = 0; r < d; ++r) {
    if (!wanted[static_cast<std::size_t>(r)]) continue;
    if (!ranges.empty() && ranges.back().second == r - 1)
      ranges.back().second = r;
    else
      ranges.emplace_back(r, r);
  }
  if (ranges.empty()) ranges.emplace_back(0, -1);  // nothing (an empty list would mean every rank)
  return ranges;
}

// The traced ranks' events from their representatives' on the quotient by d: rank r's are
// rank (r mod d)'s with the rank and the transfer peers shifted by r - r mod d.
std::vector<TraceEvent> expand_trace(const std::vector<TraceEvent>& events, const SimOptions& o, int p, int d) {
  std::vector<std::vector<std::size_t>> of_rep(static_cast<std::size_t>(d));
  for (std::size_t i = 0; i < events.size(); ++i) of_rep[static_cast<std::size_t>(events[i].rank)].push_back(i);
  std::vector<TraceEvent> out;
  for (int r = 0; r < p; ++r) {
    if (!o.traces(r)) continue;
    const int shift = r - r % d;
    for (std::size_t i : of_rep[static_cast<std::size_t>(r % d)]) {
      TraceEvent e = events[i];
      e.rank = r;
      if (algo::is_transfer(e.kind)) e.peer = (e.peer + shift) % p;
      out.push_back(e);
    }
  }
  return out;
}

// The quotient of a run by the shift d: per flow its orbit's representative (the member whose
// source is below d), and the programs of ranks 0..d-1 over representatives.
struct Quotient {
  int d = 0;                         // 0: no quotient, every rank runs
  const Rotation* rot = nullptr;     // with the rotation: the ranks run are the first of nodes 0..d/G-1
  std::vector<std::uint32_t> rep;    // per flow
  const SlotViews* views = nullptr;  // per rank run (its index) and channel
  int ranks() const { return rot ? d / rot->G : d; }
  // The index of rank r's representative among the ranks run, and of channel ch's at r.
  int rank_of(int r) const { return rot ? rot->node[static_cast<std::size_t>(r)] % (d / rot->G) : r % d; }
  int channel_of(int r, int ch) const {
    return rot ? rot->pi_inv[static_cast<std::size_t>(rot->pos[static_cast<std::size_t>(r)])]
                            [static_cast<std::size_t>(ch)]
               : ch;
  }
  // The rank run as index i.
  int rank_run(int i) const { return rot ? rot->ring[static_cast<std::size_t>(i)][0] : i; }
  bool runs(int r) const {
    return rot ? rot->pos[static_cast<std::size_t>(r)] == 0 && rank_of(r) == rot->node[static_cast<std::size_t>(r)]
               : r < d;
  }
};

// One run's answer. With `walk` set, `result` is pass 1 (an upper bound of the time), `lower` a
// lower bound, and walk() computes the exact result (the dynamic-sharing walk, left for the
// caller to run only when it can change the answer: AnalyticEngine::run_fastest).
struct Outcome {
  SimResult result;
  double lower = 0.0;
  std::function<SimResult()> walk;
};

// solve() of an engine made with islands_only, on a schedule with a flow on no island (or
// switch groups): run_on_islands answers nullopt.
struct NotOnIslands {};

// Pass 1's max-min rates and the island map are functions of three things only: which link
// directions each flow crosses (the links' flow lists, in the Router's link order), each link's
// calibrated rate, and each flow's channel cap (find_islands numbers its islands by their first
// connection for that reason, and a general island's links as its groups' routes meet them, an
// order a route's set of directed links fixes). A sweep solves the same connections at many
// sizes, and for the protocols whose calibrations give the same rates, so each engine keeps the
// last few answers, keyed by that input compared in full (no hash): a hit is the same
// computation on the same input, bit for bit. Inputs above kMaxMembers flow-link incidences (a 100,000-GPU ring, solved
// once) are not kept.
class SharingMemo {
 public:
  static constexpr std::size_t kEntries = 8;
  static constexpr std::size_t kMaxMembers = std::size_t{1} << 22;  // 16 MiB of flow ids
  struct Input {
    std::vector<double> capacity;      // per constraint (link direction)
    std::vector<std::uint32_t> first;  // constraint j's flows: members[first[j] .. first[j + 1])
    std::vector<std::uint32_t> members;
    std::vector<double> caps;  // per flow: its channel cap (0: none)
    bool operator==(const Input&) const = default;
  };
  struct Answer {
    std::vector<double> rates;  // per flow
    IslandMap islands;
  };
  // The answer for `in`, or null; a hit becomes the most recent entry.
  const Answer* find(const Input& in) {
    for (std::size_t k = 0; k < entries_.size(); ++k)
      if (entries_[k].first == in) {
        std::rotate(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(k),
                    entries_.begin() + static_cast<std::ptrdiff_t>(k) + 1);
        return &entries_.front().second;
      }
    return nullptr;
  }
  void store(Input in, Answer a) {
    if (entries_.size() == kEntries) entries_.pop_back();
    entries_.emplace(entries_.begin(), std::move(in), std::move(a));
  }

 private:
  std::vector<std::pair<Input, Answer>> entries_;  // most recent first
};

class AnalyticEngine final : public Engine {
 public:
  // islands_only: solve() stops (NotOnIslands) unless every flow is on an island (run_on_islands).
  explicit AnalyticEngine(bool islands_only = false) : islands_only_(islands_only) {}
  std::string name() const override { return "analytic"; }

  SimResult run(const topo::Topology& t, const algo::Schedule& s, const Calibration& calibration,
                const SimOptions& o) override {
    try {
      Prepared pr = prepare(t, s, calibration.for_schedule(s),
                            !o.symmetry || o.trace ? Programs::Every : Programs::Declared, o.threads);
      return solve(t, s, pr, calibration, o, /*defer_walk=*/false).result;
    } catch (const NeedEveryRank&) {
      Prepared pr = prepare(t, s, calibration.for_schedule(s), Programs::Every);
      return solve(t, s, pr, calibration, o, /*defer_walk=*/false).result;
    }
  }

  // The schedule prepared once for every calibration; each run's passes as run() does them,
  // and a run that needs the dynamic-sharing walk (IslandWalk) walks only when its lower bound
  // does not exceed the best exact time found: such a run cannot be the fastest (its exact time
  // lies at or above that bound). Same answer as run() per calibration.
  SimResult run_fastest(const topo::Topology& t, const algo::Schedule& s, const std::vector<const Calibration*>& cs,
                        const SimOptions& o, std::size_t& won) override {
    if (s.uses_switch() || o.trace || (cs.size() < 2 && !std::isfinite(o.faster_than_s)))
      return Engine::run_fastest(t, s, cs, o, won);
    if (std::isfinite(o.faster_than_s) && o.symmetry && s.symmetry() != nullptr && !s.symmetry()->sizes_equal() &&
        latency_bounds_above(t, s, cs, o))
      return none_faster(cs.size());
    auto pr = std::make_unique<Prepared>(
        prepare(t, s, cs.front()->for_schedule(s), o.symmetry ? Programs::Declared : Programs::Every, o.threads));
    std::vector<Outcome> outs;
    outs.reserve(cs.size());
    try {
      for (const Calibration* c : cs) outs.push_back(solve(t, s, *pr, *c, o, /*defer_walk=*/true));
    } catch (const NeedEveryRank&) {
      outs.clear();
      pr = std::make_unique<Prepared>(prepare(t, s, cs.front()->for_schedule(s), Programs::Every));
      for (const Calibration* c : cs) outs.push_back(solve(t, s, *pr, *c, o, /*defer_walk=*/true));
    }
    double best = o.faster_than_s;  // another run's exact time, else infinity
    for (const Outcome& x : outs)
      if (!x.walk) best = std::min(best, x.result.time_s);
    // Walks in increasing lower bound (the likeliest winner first), each skipped when its
    // lower bound lies above the best exact time (by more than a rounding: 1e-9 relative).
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < outs.size(); ++i)
      if (outs[i].walk) order.push_back(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return outs[a].lower < outs[b].lower; });
    std::vector<char> exact(outs.size(), 1);
    for (std::size_t i : order) {
      if (outs[i].lower > best * (1 + 1e-9)) {
        exact[i] = 0;
        continue;
      }
      const std::uint32_t threads = outs[i].result.threads_used;
      outs[i].result = outs[i].walk();
      outs[i].result.threads_used = threads;
      outs[i].walk = nullptr;
      best = std::min(best, outs[i].result.time_s);
    }
    bool any = false;
    for (std::size_t i = 0; i < outs.size(); ++i)
      if (exact[i] && (!any || outs[i].result.time_s < outs[won].result.time_s)) {
        won = i;
        any = true;
      }
    if (!any) {  // every run lies above faster_than_s
      won = 0;
      return none_faster(outs.size());
    }
    SimResult r = std::move(outs[won].result);
    r.runs_skipped = static_cast<std::uint32_t>(std::count(exact.begin(), exact.end(), 0));
    return r;
  }

 private:
  // No run of `runs` is faster than SimOptions::faster_than_s.
  SimResult none_faster(std::size_t runs) const {
    SimResult none;
    none.engine = name();
    none.time_s = std::numeric_limits<double>::infinity();
    none.runs_skipped = static_cast<std::uint32_t>(runs);
    return none;
  }

  // The latency bound: the schedule run with every operation's size zero, so that each
  // operation ends at the latest of its channel's previous one and its data's arrival over the
  // route's latency (launch, hops, per-step overhead), with no time on the wire or in a
  // reduction. Every time of the real run is at least that (the passes and the walk are max and +
  // of non-negative durations on the same events), so a calibration whose bound lies above
  // faster_than_s (by more than 1e-9 relative) cannot give the fastest run. With sizes zero a
  // shape-only declaration (algo::ProgramSymmetry) is exact: the bound runs on the quotient from
  // the representatives' programs alone, so a run that cannot win costs a few ranks' programs,
  // not every rank's. True when every calibration's bound lies above; false when one does not,
  // or no quotient holds.
  bool latency_bounds_above(const topo::Topology& t, const algo::Schedule& s, const std::vector<const Calibration*>& cs,
                            const SimOptions& o) {
    try {
      Prepared shapes = prepare(t, s, cs.front()->for_schedule(s), Programs::Shapes);
      for (const Calibration* c : cs) {
        if (solve(t, s, shapes, *c, o, /*defer_walk=*/true, /*pass_one=*/true).result.time_s <=
            o.faster_than_s * (1 + 1e-9))
          return false;
      }
      return true;
    } catch (const NeedEveryRank&) {
      return false;
    }
  }

  // Which programs prepare() generates: every rank's; the representatives' where the schedule
  // declares its symmetry exactly (Prepared::declared); the representatives' with every size
  // zero where it declares it, exactly or shape only (the latency bound).
  enum class Programs { Every, Declared, Shapes };
  // threads: SimOptions::threads.
  static Prepared prepare(const topo::Topology& t, const algo::Schedule& s, const Calibration& c, Programs programs,
                          int threads = 1) {
    if (s.num_ranks() != t.num_ranks())
      throw InputError(
          fmt::format("the schedule has {} ranks but the topology has {} GPUs", s.num_ranks(), t.num_ranks()));
    Prepared pr;
    const int p = pr.p = s.num_ranks(), K = pr.K = s.num_channels();
    const std::size_t elem = algo::size_of(s.args().dtype);
    pr.router = std::make_unique<Router>(t);
    Router& router = *pr.router;
    // Switch groups (switch_plan.hpp): their flows follow the point-to-point ones; a switch op's
    // step holds its plan flow.
    std::optional<SwitchPlan>& plan = pr.plan;
    if (s.uses_switch()) plan.emplace(t, s, c, router);

    if (programs != Programs::Every && !plan && s.symmetry() != nullptr &&
        (programs == Programs::Shapes || s.symmetry()->sizes_equal())) {
      prepare_declared(s, pr, /*zero_sizes=*/programs == Programs::Shapes, threads);
    } else {
      // Each rank's program, checked (algo::ProgramIndex) and compacted per channel into 16-byte
      // steps that index their flow (a 48-byte Op otherwise; programs are generated one rank at a
      // time and dropped). A flow is a connection (source, destination, channel).
      algo::Connections connections(p, K);
      Steps& steps = pr.steps;
      steps.resize(static_cast<std::size_t>(p));
      algo::Program buffer;  // one rank's program at a time, in storage kept from rank to rank
      for (int r = 0; r < p; ++r) {
        s.program_into(r, buffer);
        algo::ProgramIndex index(s, r, std::move(buffer),
                                 /*by_channel=*/false);  // checked; the steps split it per channel
        auto& chans = steps[static_cast<std::size_t>(r)];
        chans.resize(static_cast<std::size_t>(K));
        for (int ch = 0; ch < K; ++ch) chans[static_cast<std::size_t>(ch)].reserve(index.channel_size(ch));
        for (const Op& op : index.program()) {
          std::uint32_t f = algo::is_transfer(op.kind) ? connections.id_of(r, op) : 0;
          if (op.is_switch()) {
            if (!plan || op.peer < 0 || op.peer >= static_cast<int>(s.switch_groups().size()))
              throw ScheduleError(fmt::format("rank {}: {} names no switch group of the schedule's {}", r,
                                              algo::describe(op), s.switch_groups().size()),
                                  r, op.channel);
            const std::uint32_t rv = plan->use(op.peer, op.channel);
            f = op.kind == OpKind::SwitchSend ? plan->up_flow(rv, r) : plan->down_flow(rv, r);
          }
          chans[op.channel].push_back(Step{op.count() * elem, static_cast<std::uint64_t>(op.kind), f, op.peer});
        }
        buffer = index.release_program();
      }
      connections.forget_lookup();
      pr.flow_keys = connections.keys();
      number_flows_in_key_order(pr.flow_keys, steps);
    }
    const std::vector<algo::Connections::Key>& flow_keys = pr.flow_keys;
    const auto sw_base = pr.sw_base = static_cast<std::uint32_t>(flow_keys.size());
    const std::size_t flows = flow_keys.size() + (plan ? plan->flows().size() : 0);

    // Link sharing: max-min fair shares (progressive filling), as SimGrid's flow model shares
    // a link: every flow gets the same rate on a link unless it is held lower elsewhere (another
    // link, its channel cap), and what it leaves goes to the others. A constraint is a link
    // direction and the set of flows that use it at once; pass 1 takes every flow of the link as
    // active at once (one constraint per link direction).
    if (plan)
      for (const SwitchPath& path : plan->paths()) {
        Route r;
        r.links = path.links;
        r.forward = path.forward;
        pr.switch_routes.push_back(std::move(r));
      }
    pr.port_users.resize(plan ? plan->reduce_ports().size() : 0);
    pr.routes.resize(flows);
    for (std::size_t f = 0; f < flows; ++f) {
      if (f >= sw_base) {
        const SwitchPath& path = plan->paths()[plan->flows()[f - sw_base].path];
        pr.routes[f] = &pr.switch_routes[plan->flows()[f - sw_base].path];
        pr.switch_latency_s.push_back(path.latency_s);
        if (path.reduce_port >= 0)
          pr.port_users[static_cast<std::size_t>(path.reduce_port)].push_back(static_cast<std::uint32_t>(f));
      } else {
        pr.routes[f] = &router.route(flow_keys[f].src, flow_keys[f].dst, flow_keys[f].channel);
      }
      for (std::size_t k = 0; k < pr.routes[f]->links.size(); ++k)
        pr.users[{pr.routes[f]->links[k], pr.routes[f]->forward[k]}].push_back(static_cast<std::uint32_t>(f));
    }
    if (pr.declared) {
      pr.step_period = pr.declared->shift_ranks();
      if (pr.declared->rotates()) pr.rotation = rotation_of(*pr.declared, K);
    } else {
      pr.step_period = plan ? p : smallest_step_period(pr.steps, p);
      if (!plan) pr.rotation = find_rotation(t, pr.steps, K);
    }
    if (pr.declared || pr.step_period < p || pr.rotation)
      for (std::uint32_t f = 0; f < flow_keys.size(); ++f)
        pr.flow_of_key.emplace(pr.key_of(flow_keys[f].src, flow_keys[f].dst, flow_keys[f].channel), f);
    if (!pr.declared) pr.full_views = views_of(pr.steps, p, K);
    return pr;
  }

  // The representatives' programs (Prepared::declared), checked and compacted (with every size
  // zero for the latency bound), and the flows of every rank: each representative's connections
  // moved by every g_r, in key order.
  static void prepare_declared(const algo::Schedule& s, Prepared& pr, bool zero_sizes, int threads) {
    const algo::ProgramSymmetry& sym = *s.symmetry();
    const int p = pr.p, K = pr.K;
    // The declaration's check (spot_check: two whole programs) on a second thread beside the
    // representatives' programs, when the run may use one and has kThreadsFromFlows slots.
    std::future<void> checked;
    if (threads >= 2 && static_cast<std::size_t>(p) * static_cast<std::size_t>(K) >= kThreadsFromFlows)
      checked = std::async(std::launch::async, [&s, p] {
        algo::Program scratch;
        spot_check(s, p, scratch);
      });
    const std::size_t elem = algo::size_of(s.args().dtype);
    pr.declared = &sym;
    const std::vector<int> reps = sym.representatives();
    std::vector<int> index_of(static_cast<std::size_t>(p), -1);
    for (std::size_t i = 0; i < reps.size(); ++i) index_of[static_cast<std::size_t>(reps[i])] = static_cast<int>(i);
    pr.rep_index.resize(static_cast<std::size_t>(p));
    for (int r = 0; r < p; ++r)
      pr.rep_index[static_cast<std::size_t>(r)] = index_of[static_cast<std::size_t>(sym.representative(r))];
    pr.rep_steps.resize(reps.size());
    pr.rep_conns.resize(reps.size());
    // Equal lists kept once (a tree's ranks of one shape: leaves, chain members, ...; a ring's
    // representatives, all alike): each representative's lists are built in `scratch`, whose
    // storage passes to the list kept when none equal to it is, and otherwise serves the next
    // representative (a 131,072-GPU ring's 32 representatives would otherwise build, fault in and
    // drop 4 GB of steps).
    pr.rep_list.assign(reps.size(), std::vector<std::pair<std::uint32_t, std::uint32_t>>(static_cast<std::size_t>(K)));
    std::unordered_map<std::uint64_t, std::vector<std::pair<std::uint32_t, std::uint32_t>>> by_hash;
    std::vector<std::vector<Step>> scratch(static_cast<std::size_t>(K));
    algo::Program buffer;  // one representative's program at a time, in storage kept from one to the next
    for (std::size_t i = 0; i < reps.size(); ++i) {
      const int r = reps[i];
      s.program_into(r, buffer);
      algo::ProgramIndex index(s, r, std::move(buffer), /*by_channel=*/false);
      auto& chans = pr.rep_steps[i];
      auto& conns = pr.rep_conns[i];
      chans.resize(static_cast<std::size_t>(K));
      conns.resize(static_cast<std::size_t>(K));
      for (int ch = 0; ch < K; ++ch) {
        scratch[static_cast<std::size_t>(ch)].clear();
        scratch[static_cast<std::size_t>(ch)].reserve(index.channel_size(ch));
      }
      for (const Op& op : index.program()) {
        if (op.is_switch()) throw InternalError("a declared symmetry on a schedule with switch groups");
        std::uint32_t local = 0;
        if (algo::is_transfer(op.kind)) {
          auto& list = conns[op.channel];
          const bool send = op.kind == OpKind::Send;
          local = static_cast<std::uint32_t>(
              std::find_if(list.begin(), list.end(),
                           [&](const Prepared::Conn& k) { return k.send == send && k.peer == op.peer; }) -
              list.begin());
          if (local == list.size()) list.push_back({send, op.peer});
        }
        // (A transfer's peer stays in rep_conns: the lists of representatives of one shape are equal.)
        scratch[op.channel].push_back(Step{zero_sizes ? 0 : op.count() * elem, static_cast<std::uint64_t>(op.kind),
                                           local, algo::is_transfer(op.kind) ? -1 : op.peer});
      }
      buffer = index.release_program();
      for (std::uint32_t c = 0; c < static_cast<std::uint32_t>(K); ++c) {
        std::vector<Step>& list = scratch[c];
        std::uint64_t h = list.size();
        for (const Step& st : list)
          h = (h * 1099511628211ull) ^ (st.bytes * 8 + st.kind) ^ (std::uint64_t{st.flow} << 40) ^
              static_cast<std::uint32_t>(st.peer);
        auto& same = by_hash[h];
        auto equal = [&](const std::pair<std::uint32_t, std::uint32_t>& o) {
          const std::vector<Step>& other = pr.rep_steps[o.first][o.second];
          return std::equal(list.begin(), list.end(), other.begin(), other.end(), [](const Step& x, const Step& y) {
            return x.bytes == y.bytes && x.kind == y.kind && x.flow == y.flow && x.peer == y.peer;
          });
        };
        const auto at = static_cast<std::uint32_t>(i);
        if (const auto it = std::find_if(same.begin(), same.end(), equal); it != same.end()) {
          pr.rep_list[i][c] = *it;
        } else {
          pr.rep_list[i][c] = {at, c};
          same.push_back({at, c});
          chans[c].swap(list);
        }
      }
    }
    if (checked.valid())
      checked.get();
    else
      spot_check(s, p, buffer);
    std::vector<algo::Connections::Key> keys;
    for (int r = 0; r < p; ++r) {
      const auto& conns = pr.rep_conns[static_cast<std::size_t>(pr.rep_index[static_cast<std::size_t>(r)])];
      for (int c = 0; c < K; ++c) {
        const int mc = sym.move_channel(c, r);
        for (const Prepared::Conn& k : conns[static_cast<std::size_t>(c)]) {
          const int q = sym.move(k.peer, r);
          keys.push_back(k.send ? algo::Connections::Key{r, q, mc} : algo::Connections::Key{q, r, mc});
        }
      }
    }
    auto less = [](const algo::Connections::Key& a, const algo::Connections::Key& b) {
      return std::tie(a.src, a.dst, a.channel) < std::tie(b.src, b.dst, b.channel);
    };
    auto same = [](const algo::Connections::Key& a, const algo::Connections::Key& b) {
      return a.src == b.src && a.dst == b.dst && a.channel == b.channel;
    };
    std::sort(keys.begin(), keys.end(), less);
    keys.erase(std::unique(keys.begin(), keys.end(), same), keys.end());
    pr.flow_keys = std::move(keys);
  }

  // The declaration checked at the last rank, the farthest from the representatives (a
  // generator's bug would otherwise give a wrong time silently; algo's symmetry test checks every
  // rank over the registry). One rank: the check generates two whole programs (on a 131,072-GPU
  // ring, 4 million operations each), a cost the quotient is there to avoid.
  static void spot_check(const algo::Schedule& s, int p, algo::Program& scratch) {
    algo::Program other;
    if (const std::string why = algo::symmetry_mismatch(s, p - 1, scratch, other); !why.empty())
      throw InternalError(fmt::format("schedule {}: its declared symmetry does not hold: {}", s.name(), why));
  }

  static Rotation rotation_of(const algo::ProgramSymmetry& sym, int K) {
    Rotation rot;
    rot.G = sym.ranks_per_node();
    rot.ring = sym.node_ring();
    rot.node.assign(static_cast<std::size_t>(sym.ranks()), -1);
    rot.pos.assign(static_cast<std::size_t>(sym.ranks()), -1);
    for (std::size_t n = 0; n < rot.ring.size(); ++n)
      for (std::size_t i = 0; i < rot.ring[n].size(); ++i) {
        rot.node[static_cast<std::size_t>(rot.ring[n][i])] = static_cast<int>(n);
        rot.pos[static_cast<std::size_t>(rot.ring[n][i])] = static_cast<int>(i);
      }
    std::vector<int> inv(static_cast<std::size_t>(K));
    for (int c = 0; c < K; ++c) inv[static_cast<std::size_t>(sym.pi()[static_cast<std::size_t>(c)])] = c;
    rot.pi_inv.assign(static_cast<std::size_t>(rot.G), std::vector<int>(static_cast<std::size_t>(K)));
    for (int c = 0; c < K; ++c) rot.pi_inv[0][static_cast<std::size_t>(c)] = c;
    for (std::size_t k = 1; k < static_cast<std::size_t>(rot.G); ++k)
      for (int c = 0; c < K; ++c)
        rot.pi_inv[k][static_cast<std::size_t>(c)] =
            inv[static_cast<std::size_t>(rot.pi_inv[k - 1][static_cast<std::size_t>(c)])];
    return rot;
  }

  // The quotient by the shift d (the file's header, "Symmetry") when every flow's latency, rate,
  // rate alone and island shape equal its representative's; else d = 0. The quotient programs
  // are made once per d and kept in pr. `on_islands`: the islands, when the run shares links on
  // them (every flow on one); null when it does not (pass 2 does not look at islands).
  static Quotient quotient_by(Prepared& pr, int d, const Rotation* rot, const std::vector<Flow>& flows,
                              const std::vector<double>& alone, const IslandMap* on_islands) {
    static const IslandMap kNone;
    const IslandMap& islands = on_islands ? *on_islands : kNone;
    const int p = pr.p;
    Quotient q;
    q.d = d;
    q.rot = rot;
    q.rep.resize(flows.size());
    std::vector<std::uint32_t> island_image(islands.islands.size(), kNoIsland);
    std::vector<std::vector<std::uint32_t>> group_image(islands.islands.size());
    // General islands': link -> link, and the image's links mapped onto (sized only when there are
    // general islands: a large ring has a hub island per GPU pair's path, and none general).
    const bool any_general =
        std::any_of(islands.islands.begin(), islands.islands.end(), [](const Island& is) { return is.general(); });
    std::vector<std::vector<std::uint32_t>> link_image(any_general ? islands.islands.size() : 0);
    std::vector<std::vector<char>> link_taken(any_general ? islands.islands.size() : 0);
    for (std::uint32_t f = 0; f < pr.flow_keys.size(); ++f) {
      const algo::Connections::Key& k = pr.flow_keys[f];
      // The group element that takes the source to a rank run: tau^-pos, then the shift.
      int src = k.src, dst = k.dst, ch = k.channel;
      if (rot) {
        const int back = rot->pos[static_cast<std::size_t>(src)];
        ch = q.channel_of(src, ch);
        src = rot->sigma(src, -back);
        dst = rot->sigma(dst, -back);
      }
      const int shift = src / d * d;
      const auto it = pr.flow_of_key.find(pr.key_of(src - shift, ((dst - shift) % p + p) % p, ch));
      if (it == pr.flow_of_key.end()) return {};
      const std::uint32_t r = q.rep[f] = it->second;
      if (flows[f].latency_s != flows[r].latency_s || flows[f].bw_bytes_per_s != flows[r].bw_bytes_per_s ||
          alone[f] != alone[r])
        return {};
      // Islands: f's island must be the image of one island holding representatives only, with
      // the same links' rates, and its groups map onto that island's one to one (their order
      // may differ).
      if (!on_islands) continue;
      const std::uint32_t i = islands.island[f], j = islands.island[r];
      if ((i == kNoIsland) != (j == kNoIsland)) return {};
      if (i == kNoIsland) continue;
      const Island& a = islands.islands[i];
      const Island& b = islands.islands[j];
      if (island_image[i] == kNoIsland) {
        if (a.hub != b.hub || a.groups.size() != b.groups.size() || a.links.size() != b.links.size()) return {};
        island_image[i] = j;
        group_image[i].assign(a.groups.size(), kNoIsland);
        if (a.general()) {
          link_image[i].assign(a.links.size(), kNoIsland);
          link_taken[i].assign(b.links.size(), 0);
        }
      }
      std::uint32_t& gi = group_image[i][islands.group[f]];
      if (gi == kNoIsland) gi = islands.group[r];
      if (island_image[i] != j || gi != islands.group[r]) return {};
      const Island::Group &ga = a.groups[islands.group[f]], &gb = b.groups[gi];
      if (ga.own != gb.own || ga.cap != gb.cap || ga.crosses.size() != gb.crosses.size()) return {};
      // A general island's groups must meet their images' links through one map of links onto
      // links of equal rates (hop k onto hop k): the two max-min systems are then the same.
      for (std::size_t k = 0; k < ga.crosses.size(); ++k) {
        const std::uint32_t la = ga.crosses[k], lb = gb.crosses[k];
        if (a.links[la] != b.links[lb]) return {};
        std::uint32_t& li = link_image[i][la];
        if (li == kNoIsland) {
          if (link_taken[i][lb]) return {};
          li = lb;
          link_taken[i][lb] = 1;
        }
        if (li != lb) return {};
      }
    }
    // A representative's island holds representatives only: an island that is its own image
    // holds no other flow (the quotient would drop its transfers from the sharing).
    for (std::uint32_t f = 0; on_islands && f < pr.flow_keys.size(); ++f)
      if (const std::uint32_t i = islands.island[f];
          i != kNoIsland && island_image[i] == i && !q.runs(pr.flow_keys[f].src))
        return {};
    auto [it, made] = pr.quotient_slots.try_emplace(std::pair(d, rot != nullptr));
    if (made) {
      Prepared::QuotientSlots& qs = it->second;
      const int K = pr.K;
      if (!pr.declared) {
        for (int i = 0; i < q.ranks(); ++i) qs.steps.push_back(pr.steps[static_cast<std::size_t>(q.rank_run(i))]);
        for (auto& chans : qs.steps)
          for (auto& list : chans)
            for (Step& st : list)
              if (algo::is_transfer(static_cast<OpKind>(st.kind))) st.flow = q.rep[st.flow];
        qs.views = views_of(qs.steps, q.ranks(), K);
      } else {
        // Rank run i's channel g(c) is its representative's channel c moved by g = g_r: the
        // same steps, each connection's flow and receiver looked up once.
        const algo::ProgramSymmetry& sym = *pr.declared;
        const std::size_t n = static_cast<std::size_t>(q.ranks()) * static_cast<std::size_t>(K);
        qs.views.resize(n);
        qs.flow_of.resize(n);
        qs.to.resize(n);
        for (int i = 0; i < q.ranks(); ++i) {
          const int r = q.rank_run(i);
          const auto idx = static_cast<std::size_t>(pr.rep_index[static_cast<std::size_t>(r)]);
          for (int c = 0; c < K; ++c) {
            const int mc = sym.move_channel(c, r);
            const std::size_t sl =
                static_cast<std::size_t>(i) * static_cast<std::size_t>(K) + static_cast<std::size_t>(mc);
            for (const Prepared::Conn& k : pr.rep_conns[idx][static_cast<std::size_t>(c)]) {
              const int peer = sym.move(k.peer, r);
              const std::uint32_t f = pr.flow_of_key.at(k.send ? pr.key_of(r, peer, mc) : pr.key_of(peer, r, mc));
              qs.flow_of[sl].push_back(q.rep[f]);
              qs.to[sl].push_back(k.send ? static_cast<std::uint32_t>(q.rank_of(peer) * K + q.channel_of(peer, mc))
                                         : 0);
            }
            const auto [ki, kc] = pr.rep_list[idx][static_cast<std::size_t>(c)];
            const std::vector<Step>& list = pr.rep_steps[ki][kc];
            qs.views[sl] = {list.data(), list.size(), qs.flow_of[sl].data(), qs.to[sl].data()};
          }
        }
      }
    }
    q.views = &it->second.views;
    return q;
  }

  // The passes of one run under `calibration` on the prepared schedule (the file's header).
  // defer_walk: when the walk is needed, return the bounds and the walk instead of walking.
  // pass_one: pass 1 alone (the latency bound's, where every size is zero and rates do not
  // matter: its spans are instants, which pass 2's sweep is not for).
  // The result says how many threads the run used (SimResult::threads_used).
  Outcome solve(const topo::Topology& t, const algo::Schedule& s, Prepared& pr, const Calibration& calibration,
                const SimOptions& o, bool defer_walk, bool pass_one = false) {
    threads_used_ = 1;
    Outcome out = solve_passes(t, s, pr, calibration, o, defer_walk, pass_one);
    out.result.threads_used = threads_used_;
    return out;
  }
  Outcome solve_passes(const topo::Topology& t, const algo::Schedule& s, Prepared& pr, const Calibration& calibration,
                       const SimOptions& o, bool defer_walk, bool pass_one) {
    const Calibration c = calibration.for_schedule(s);  // the schedule's block cap (calibration.hpp)
    const int p = pr.p, K = pr.K;
    const std::vector<algo::Connections::Key>& flow_keys = pr.flow_keys;
    const std::optional<SwitchPlan>& plan = pr.plan;
    const auto sw_base = pr.sw_base;
    const auto& users = pr.users;
    const auto& port_users = pr.port_users;
    Router& router = *pr.router;
    const auto& g = t.graph();
    std::vector<Flow> flows(pr.routes.size());
    for (std::size_t f = 0; f < flows.size(); ++f) {
      flows[f].route = pr.routes[f];
      flows[f].latency_s =
          f >= sw_base ? pr.switch_latency_s[f - sw_base] : c.route_latency_s(g, flows[f].route->links);
    }
    // Every flow on an island (islands.hpp: the channels of one GPU pair on a path of their own,
    // a PXN route beside NVLink routes, ...)? Then the dynamic sharing has a closed form and
    // the engine can run it exactly (IslandWalk) where the static shares are not exact (below).
    struct Constraint {
      double capacity;                            // bytes/s
      const std::vector<std::uint32_t>* members;  // its flows
    };
    // Each flow's channel cap (0: none), and pass 1's constraints: every link direction.
    std::vector<double> caps(flows.size());
    for (std::size_t f = 0; f < flows.size(); ++f) caps[f] = c.channel_cap_bytes_per_s(g, flows[f].route->links);
    std::vector<Constraint> link_cons;
    link_cons.reserve(users.size());
    for (const auto& [l, us] : users) link_cons.push_back({c.rate_bytes_per_s(g, l.first), &us});
    for (std::size_t k = 0; k < port_users.size(); ++k)
      if (!port_users[k].empty()) link_cons.push_back({plan->reduce_ports()[k].rate, &port_users[k]});
    // Pass 1's rates and the islands, from the memo when these constraints were solved before
    // (SharingMemo; not with a switch plan, whose flows find_islands does not see).
    std::optional<SharingMemo::Input> key;
    const SharingMemo::Answer* known = nullptr;
    if (!plan) {
      std::size_t incidences = 0;
      for (const Constraint& con : link_cons) incidences += con.members->size();
      if (incidences <= SharingMemo::kMaxMembers) {
        key.emplace();
        key->capacity.reserve(link_cons.size());
        key->first.reserve(link_cons.size() + 1);
        key->members.reserve(incidences);
        key->first.push_back(0);
        for (const Constraint& con : link_cons) {
          key->capacity.push_back(con.capacity);
          key->members.insert(key->members.end(), con.members->begin(), con.members->end());
          key->first.push_back(static_cast<std::uint32_t>(key->members.size()));
        }
        key->caps = caps;
        known = memo_.find(*key);
      }
    }
    // The islands; on a large run with a thread to spare (the file's header, "Threads"), found on
    // it while max-min solves the rates below (the two share nothing: find_islands reads the
    // topology and the Router, max-min the constraints and writes the flows' rates).
    IslandMap islands;
    std::vector<IslandEnd> ends;
    std::future<IslandMap> islands_beside;
    const bool beside = !known && !islands_only_ && o.threads >= 2 && flows.size() >= kThreadsFromFlows;
    if (known) {
      islands = known->islands;
    } else {
      ends.reserve(flows.size());
      for (const auto& k : flow_keys) ends.push_back({k.src, k.dst, k.channel});
      if (beside) {
        threads_used_ = 2;
        islands_beside = std::async(std::launch::async, [&] { return find_islands(t, router, c, ends); });
      } else {
        islands = find_islands(t, router, c, ends);
      }
    }
    // (Switch flows are on no island: the engine then shares every link max-min below.)
    auto on_islands = [&] {
      return !plan &&
             std::none_of(islands.island.begin(), islands.island.end(), [](std::uint32_t i) { return i == kNoIsland; });
    };
    if (islands_only_ && !on_islands()) throw NotOnIslands{};
    // Max-min rates of the flows under these constraints and each flow's channel cap.
    auto max_min = [&](const std::vector<Constraint>& cons) {
      // Each flow's constraints, in increasing order (compressed rows: one allocation, not one per flow).
      std::vector<std::uint32_t> first(flows.size() + 1, 0), of_flow;
      for (const Constraint& con : cons)
        for (std::uint32_t f : *con.members) ++first[f + 1];
      for (std::size_t f = 0; f < flows.size(); ++f) first[f + 1] += first[f];
      of_flow.resize(first.back());
      {
        std::vector<std::uint32_t> at(first.begin(), first.end() - 1);
        for (std::uint32_t j = 0; j < cons.size(); ++j)
          for (std::uint32_t f : *cons[j].members) of_flow[at[f]++] = j;
      }
      std::vector<double> frozen_sum(cons.size(), 0.0);
      std::vector<std::uint32_t> open(cons.size());
      std::vector<char> done(flows.size(), 0);
      // (level, id): id < cons.size() a constraint saturating at that level, else flow id - size
      // reaching its cap. Stale entries (a constraint's level changed) are skipped.
      using Entry = std::pair<double, std::uint64_t>;
      std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
      std::vector<double> level_of(cons.size());
      for (std::uint32_t j = 0; j < cons.size(); ++j) {
        open[j] = static_cast<std::uint32_t>(cons[j].members->size());
        level_of[j] = cons[j].capacity / open[j];
        heap.push({level_of[j], j});
      }
      for (std::size_t f = 0; f < flows.size(); ++f)
        if (caps[f] > 0) heap.push({caps[f], cons.size() + f});
      auto freeze = [&](std::uint32_t f, double rate) {
        done[f] = 1;
        flows[f].bw_bytes_per_s = rate;
        for (std::uint32_t k = first[f]; k < first[f + 1]; ++k) {
          const std::uint32_t j = of_flow[k];
          frozen_sum[j] += rate;
          if (--open[j] == 0) continue;
          level_of[j] = std::max(rate, (cons[j].capacity - frozen_sum[j]) / open[j]);
          heap.push({level_of[j], j});
        }
      };
      while (!heap.empty()) {
        const auto [level, id] = heap.top();
        heap.pop();
        if (id >= cons.size()) {
          const auto f = static_cast<std::uint32_t>(id - cons.size());
          if (!done[f]) freeze(f, level);
          continue;
        }
        const auto j = static_cast<std::uint32_t>(id);
        if (open[j] == 0 || level != level_of[j]) continue;  // stale
        for (std::uint32_t f : *cons[j].members)
          if (!done[f]) freeze(f, level);
      }
    };
    if (known) {
      for (std::size_t f = 0; f < flows.size(); ++f) flows[f].bw_bytes_per_s = known->rates[f];
    } else {
      max_min(link_cons);
      if (beside) islands = islands_beside.get();
      if (key) {
        SharingMemo::Answer a{std::vector<double>(flows.size()), islands};
        for (std::size_t f = 0; f < flows.size(); ++f) a.rates[f] = flows[f].bw_bytes_per_s;
        memo_.store(std::move(*key), std::move(a));
      }
    }
    const bool all_on_islands = on_islands();
    // Each flow's rate alone (its narrowest link, its channel cap): the upper bound's pass below.
    std::vector<double> alone_bw(flows.size());
    for (std::size_t f = 0; f < flows.size(); ++f) {
      double bw = std::numeric_limits<double>::infinity();
      for (topo::Edge e : flows[f].route->links) bw = std::min(bw, c.rate_bytes_per_s(g, e));
      if (caps[f] > 0) bw = std::min(bw, caps[f]);
      alone_bw[f] = bw;
    }
    // Symmetry (the file's header): the smallest shift of the programs under which the flows'
    // parameters are equal too; the passes then run its quotient.
    // With the rotation first (the file's header: G times fewer ranks), on shifts of whole nodes
    // (p: none); a trace takes the shift alone (expand_trace).
    Quotient q;
    if (o.symmetry && !plan && pr.rotation && !o.trace)
      for (int d = pr.step_period; d <= p && q.d == 0; d += pr.step_period)
        if (p % d == 0 && pr.rotation->commutes_with_shift(d))
          q = quotient_by(pr, d, &*pr.rotation, flows, alone_bw, all_on_islands ? &islands : nullptr);
    if (o.symmetry && !plan && pr.step_period < p)
      for (int d = pr.step_period; d < p && q.d == 0; d += pr.step_period)
        if (p % d == 0) q = quotient_by(pr, d, nullptr, flows, alone_bw, all_on_islands ? &islands : nullptr);
    if (pr.declared && q.d == 0) throw NeedEveryRank{};
    const int run_p = q.d ? q.ranks() : p;
    TC_LOG_DEBUG("analytic", "{} ranks, {} channels: {} of them run (shift {}{}; programs shift by {}, {})", p, K,
                 run_p, q.d ? q.d : p, q.rot ? ", rotated" : "", pr.step_period,
                 pr.rotation ? "rotate" : "do not rotate");
    const SlotViews& full_views = pr.full_views;
    const SlotViews& run_views = q.d ? *q.views : full_views;
    const std::uint64_t orbit = static_cast<std::uint64_t>(p / run_p);
    // After a quotient pass: every flow takes its representative's pass figures.
    auto expand = [&] {
      if (!q.d) return;
      for (std::size_t f = 0; f < flows.size(); ++f)
        if (const std::uint32_t r = q.rep[f]; r != f) {
          flows[f].first_send = flows[r].first_send;
          flows[f].last_send = flows[r].last_send;
          flows[f].rhythm = flows[r].rhythm;
        }
    };
    // A trace on the quotient records the traced ranks' representatives; their events, shifted,
    // are the traced ranks' (expand_trace).
    SimOptions rep_trace = o;
    if (q.d && o.trace) rep_trace.trace_ranks = representatives_of(o, p, q.d);
    if (all_on_islands && o.trace) {  // a trace shows every operation's times: the exact ones
      if (!q.d) return {IslandWalk(full_views, p, K, flow_keys, flows, std::move(islands), c, &o).run(name())};
      SimResult r = IslandWalk(run_views, run_p, K, flow_keys, flows, std::move(islands), c, &rep_trace).run(name());
      r.transfers *= orbit;
      r.trace = expand_trace(r.trace, o, p, q.d);
      return {std::move(r)};
    }
    // With a thread to spare on a large run (the file's header, "Threads"), the walk starts now
    // on it, on the input the walk below would get (the islands as found and the flows'
    // latencies, which the passes do not change), while the passes decide whether it is needed.
    std::optional<WalkAhead> ahead;
    if (all_on_islands && !pass_one && !defer_walk && o.threads >= 2) {
      std::size_t steps = 0;
      for (const SlotView& v : run_views) steps += v.size;
      if (steps >= kThreadsFromSteps) {
        threads_used_ = 2;
        ahead.emplace(std::make_unique<IslandWalk>(run_views, run_p, K, flow_keys, flows, islands, c, nullptr), name());
      }
    }
    auto rates_symmetric = [&] {
      for (std::size_t f = 0; f < flows.size(); ++f)
        if (flows[f].bw_bytes_per_s != flows[q.rep[f]].bw_bytes_per_s) return false;
      return true;
    };
    const double launch_s = c.launch_overhead_us * 1e-6;
    auto slot = [K](int r, int ch) {
      return static_cast<std::size_t>(r) * static_cast<std::size_t>(K) + static_cast<std::size_t>(ch);
    };
    auto local_time = [&](std::uint64_t bytes) {
      return c.reduce_gbps > 0 ? static_cast<double>(bytes) / (c.reduce_gbps * 1e9) : 0.0;
    };

    // One pass of the event loop: advance every (rank, channel) while it can, as the verifier does.
    auto run_pass = [&](bool trace, bool quotient) {
      const int np = quotient ? run_p : p;
      const SlotViews& views = quotient ? run_views : full_views;
      SimResult result;
      result.engine = name();
      for (Flow& f : flows) {
        f.arrivals.clear();
        f.free_at = 0.0;
        f.first_send = std::numeric_limits<double>::infinity();
        f.last_send = 0.0;
        f.rhythm = 0;
      }
      // Per (rank, channel): its steps, the next one, its clock, whether it is in `work`
      // (together: one cache line when the loop comes to a slot).
      struct SlotState {
        const Step* steps;
        std::size_t size;
        const std::uint32_t* flow_of;  // SlotView
        const std::uint32_t* to;
        std::size_t next;
        double clock;
        bool queued;
      };
      std::vector<SlotState> slot_state(views.size());
      for (std::size_t k = 0; k < views.size(); ++k)
        slot_state[k] = {views[k].steps, views[k].size, views[k].flow_of, views[k].to, 0, launch_s, true};
      // The slots to advance, in FIFO order; a slot is in it at most once (`queued`), so a ring
      // of one place per slot holds it (a std::deque allocated and freed blocks as it went).
      SlotQueue work(views.size());
      std::optional<SwitchInstances> instances;
      if (plan) instances.emplace(*plan);
      // A message of `bytes` on flow f ready to leave at `ready`: when it lands.
      auto push_message = [&](std::uint32_t f, double ready, std::uint64_t bytes) {
        Flow& fl = flows[f];
        const double start = std::max(ready, fl.free_at);
        fl.free_at = start + static_cast<double>(bytes) / fl.bw_bytes_per_s;
        flows[f].first_send = std::min(flows[f].first_send, start);
        flows[f].last_send = std::max(flows[f].last_send, fl.free_at);
        result.time_s = std::max(result.time_s, fl.free_at);
        ++result.transfers;
        return fl.free_at + fl.latency_s;
      };
      // An instance's result leaves the root `latency` after `ready`: one copy down to each receiver.
      auto deliver = [&](std::uint32_t rv, double ready, std::uint64_t bytes) {
        const SwitchPlan::Rendezvous& rz = plan->rendezvous()[static_cast<std::size_t>(rv)];
        const SwitchPlan::GroupInfo& info = plan->group(rz.group);
        const algo::SwitchGroup& sg = s.switch_groups()[static_cast<std::size_t>(rz.group)];
        const std::uint32_t down0 = sw_base + plan->down_base(rv);
        auto down = [&](std::size_t k, double at) {
          const auto f = down0 + static_cast<std::uint32_t>(k);
          flows[f].arrivals.push_back(push_message(f, at, bytes));
          result.time_s = std::max(result.time_s, flows[f].arrivals.back());
          const std::size_t peer = slot(sg.receivers[k], rz.channel);
          if (!slot_state[peer].queued) {
            slot_state[peer].queued = true;
            work.push_back({sg.receivers[k], rz.channel});
          }
        };
        const double leaves_at = ready + info.latency_s;
        if (info.bcast_path.empty()) {
          for (std::size_t k = 0; k < sg.receivers.size(); ++k) down(k, leaves_at);
          return;
        }
        for (std::size_t b = 0; b < info.bcast_path.size(); ++b) {  // root -> leaf, then leaf -> receivers
          const double at_leaf =
              push_message(sw_base + plan->bcast_base(rv) + static_cast<std::uint32_t>(b), leaves_at, bytes);
          for (std::uint32_t k : info.receivers_of_bcast[b]) down(k, at_leaf);
        }
      };
      // Contributor `member`'s part landed at its aggregator at `time`.
      auto part_landed = [&](std::uint32_t rv, std::uint32_t member, double time, std::uint64_t bytes) {
        double ready = 0.0;
        std::uint64_t instance = 0;
        if (!instances->part_landed(rv, member, time, ready, instance)) return;
        const SwitchPlan::Rendezvous& rz = plan->rendezvous()[static_cast<std::size_t>(rv)];
        if (!plan->aggregates(rz.group)) return deliver(rv, ready, bytes);
        const std::uint32_t a = plan->group(rz.group).aggregator_of[member];
        const double landed = push_message(sw_base + plan->agg_flow(rv, a), ready, bytes);
        double root_ready = 0.0;
        if (instances->stream_landed(rv, a, landed, root_ready)) deliver(rv, root_ready, bytes);
      };
      for (int r = 0; r < np; ++r)
        for (int ch = 0; ch < K; ++ch) work.push_back({r, ch});
      while (!work.empty()) {
        auto [r, ch] = work.front();
        work.pop_front();
        const std::size_t me = slot(r, ch);
        SlotState& sl = slot_state[me];
        sl.queued = false;
        const Step* const list = sl.steps;
        std::size_t& i = sl.next;
        double& now = sl.clock;
        while (i < sl.size) {
          const Step& st = list[i];
          const OpKind kind = static_cast<OpKind>(st.kind);
          double start = now, end = now;
          if (kind == OpKind::Send) {
            Flow& f = flows[sl.flow_of ? sl.flow_of[st.flow] : st.flow];
            start = std::max(now, f.free_at);
            f.free_at = start + static_cast<double>(st.bytes) / f.bw_bytes_per_s;
            end = f.free_at;
            f.arrivals.push_back(f.free_at + f.latency_s);
            f.first_send = std::min(f.first_send, start);
            f.last_send = std::max(f.last_send, end);
            f.rhythm = (f.rhythm * 1099511628211ull) ^ std::bit_cast<std::uint64_t>(start) ^
                       (std::bit_cast<std::uint64_t>(end) * 0x9e3779b97f4a7c15ull);
            ++result.transfers;
            // The receiver (its representative's slot).
            int to = st.peer, to_ch = ch;
            if (sl.to) {
              const std::uint32_t k = sl.to[st.flow];
              to = static_cast<int>(k / static_cast<std::uint32_t>(K));
              to_ch = static_cast<int>(k % static_cast<std::uint32_t>(K));
            } else if (quotient) {
              to = q.rank_of(st.peer);
              to_ch = q.channel_of(st.peer, ch);
            }
            const std::size_t peer = slot(to, to_ch);
            if (!slot_state[peer].queued) {
              slot_state[peer].queued = true;
              work.push_back({to, to_ch});
            }
          } else if (algo::is_receive(kind)) {
            Flow& f = flows[sl.flow_of ? sl.flow_of[st.flow] : st.flow];
            if (f.arrivals.empty()) break;  // wait for the sender
            now = std::max(now, f.arrivals.front());
            f.arrivals.pop_front();
            end = now;
          } else if (kind == OpKind::SwitchSend) {
            const std::uint32_t f = sw_base + st.flow;
            start = std::max(now, flows[f].free_at);
            const double landed = push_message(f, now, st.bytes);
            end = flows[f].free_at;
            const SwitchFlow& sf = plan->flows()[st.flow];
            part_landed(sf.rendezvous, sf.member, landed, st.bytes);
          } else if (kind == OpKind::SwitchRecv) {
            Flow& f = flows[sw_base + st.flow];
            if (f.arrivals.empty()) break;  // wait for the switch's result
            now = std::max(now, f.arrivals.front());
            f.arrivals.pop_front();
            end = now;
          } else {
            now = start + local_time(st.bytes);
            end = now;
          }
          if (trace && (quotient ? rep_trace : o).traces(r))
            result.trace.push_back({r, ch, kind, st.peer, st.bytes, start, end});
          result.time_s = std::max(result.time_s, end);
          ++i;
        }
      }
      for (int r = 0; r < np; ++r)
        for (int ch = 0; ch < K; ++ch)
          if (slot_state[slot(r, ch)].next < slot_state[slot(r, ch)].size)
            throw ScheduleError(
                fmt::format("the schedule does not complete: rank {} channel {} waits forever (run `topocoll verify`)",
                            r, ch),
                r, ch);
      if (quotient) {
        result.transfers *= orbit;
        expand();
        if (trace) result.trace = expand_trace(result.trace, o, p, run_p);
      }
      result.ranks_simulated = static_cast<std::uint32_t>(np);
      return result;
    };

    SimResult result = run_pass(false, q.d != 0);
    if (pass_one) return {std::move(result)};
    if (all_on_islands) {
      // Pass 1 is exact when on every island all flows transfer at the same moments (their
      // shares are then the dynamic ones at every instant: hierarchical's stages, a ring whose
      // channels keep step). Otherwise the dynamic result lies between pass 1 (every transfer
      // at its all-active share, the least it can get: water-filling on an island only gives
      // more to fewer flows) and a pass with every transfer at its rate alone (the most); when
      // the two meet, pass 1 is exact too. Else the time-ordered walk with dynamic shares.
      bool lockstep = true;
      std::vector<std::uint64_t> island_rhythm(islands.islands.size());
      std::vector<char> seen(islands.islands.size(), 0);
      for (std::size_t f = 0; f < flows.size() && lockstep; ++f) {
        const std::uint32_t i = islands.island[f];
        if (!seen[i]) seen[i] = 1, island_rhythm[i] = flows[f].rhythm;
        lockstep = island_rhythm[i] == flows[f].rhythm;
      }
      if (lockstep) {
        if (ahead) TC_LOG_DEBUG("analytic", "the walk run ahead is not needed: pass 1 is exact (lockstep)");
        return {std::move(result)};
      }
      std::vector<Flow> shared;
      if (!ahead) shared = flows;
      for (std::size_t f = 0; f < flows.size(); ++f) flows[f].bw_bytes_per_s = alone_bw[f];
      const double alone = run_pass(false, q.d != 0).time_s;
      if (alone >= result.time_s) {  // the bounds meet (alone <= pass 1 always)
        if (ahead) TC_LOG_DEBUG("analytic", "the walk run ahead is not needed: pass 1 is exact (the bounds meet)");
        return {std::move(result)};
      }
      if (ahead) {
        TC_LOG_DEBUG("analytic", "the walk run ahead gives the answer");
        SimResult r = ahead->take();
        r.transfers *= orbit;
        return {std::move(r)};
      }
      // The walk on the quotient: ranks 0..run_p-1 over representative flows, whose islands hold
      // only representatives (quotient_by checked it).
      auto walk = [this, &run_views, run_p, orbit, K, &flow_keys, shared = std::move(shared),
                   islands = std::move(islands), c]() mutable {
        SimResult r = IslandWalk(run_views, run_p, K, flow_keys, shared, std::move(islands), c, nullptr).run(name());
        r.transfers *= orbit;
        return r;
      };
      if (!defer_walk) return {walk()};
      return {std::move(result), alone, std::move(walk)};
    }
    // Pass 2: a link constrains together only the flows whose active spans (first to last byte
    // sent, in pass 1) overlap: one constraint per maximal set of spans that overlap at one
    // moment (the maximal cliques of the link's interval graph, found by a sweep). Phases that
    // do not overlap (a tree's reduce-up and broadcast-down) then stop slowing each other down;
    // flows that run together (a ring) keep their pass-1 rates.
    {
      std::vector<Constraint> cons;
      std::deque<std::vector<std::uint32_t>> cliques;       // the constraints' flows (stable addresses)
      std::vector<std::pair<double, std::int64_t>> events;  // (time, +1 + f: start, -(1 + f): end)
      std::vector<std::uint32_t> active;
      for (const Constraint& link : link_cons) {
        const double capacity = link.capacity;
        const std::vector<std::uint32_t>& us = *link.members;
        events.clear();
        for (std::uint32_t f : us) {
          if (flows[f].first_send > flows[f].last_send) continue;  // sends nothing (not in the schedule's pass)
          events.push_back({flows[f].first_send, 1 + static_cast<std::int64_t>(f)});
          events.push_back({flows[f].last_send, -(1 + static_cast<std::int64_t>(f))});
        }
        std::sort(events.begin(), events.end());  // at equal times ends first: touching spans do not overlap
        active.clear();
        bool grown = false;  // a start since the last clique was emitted
        for (const auto& [time, e] : events) {
          if (e > 0) {
            active.push_back(static_cast<std::uint32_t>(e - 1));
            grown = true;
            continue;
          }
          if (grown) {
            cliques.push_back(active);
            cons.push_back({capacity, &cliques.back()});
          }
          grown = false;
          active.erase(std::find(active.begin(), active.end(), static_cast<std::uint32_t>(-e - 1)));
        }
      }
      max_min(cons);
    }
    const bool quotient = q.d != 0 && rates_symmetric();
    if (pr.declared && !quotient) throw NeedEveryRank{};
    return {run_pass(o.trace, quotient)};
  }

  bool islands_only_ = false;
  SharingMemo memo_;
  std::uint32_t threads_used_ = 1;  // by the run solve() is in
};

}  // namespace

std::unique_ptr<Engine> make_analytic_engine() {
  return std::make_unique<AnalyticEngine>();
}

std::optional<SimResult> run_on_islands(const topo::Topology& t, const algo::Schedule& s, const Calibration& c,
                                        const SimOptions& o) {
  try {
    return AnalyticEngine(/*islands_only=*/true).run(t, s, c, o);
  } catch (const NotOnIslands&) {
    return std::nullopt;
  }
}

}  // namespace topocoll::sim
