// Islands: sets of connections whose link sharing under max-min fairness is a closed form, so
// an engine can compute it instead of solving a flow model. Shared by both engines: the SimGrid
// engine runs an island's transfers without SimGrid comms (its fast path), and the analytic
// engine runs a schedule whose connections are all on islands with this dynamic sharing
// instead of its static shares (analytic.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <queue>
#include <utility>
#include <vector>

#include "simulator/calibration.hpp"
#include "simulator/routes.hpp"

namespace topocoll::sim {

inline constexpr std::uint32_t kNoIsland = std::numeric_limits<std::uint32_t>::max();
inline constexpr std::uint32_t kNoLane = std::numeric_limits<std::uint32_t>::max();

// Engine-side events on the simulated clock.
enum class EventKind : std::uint8_t {
  Resume,    // channel `id` goes on
  Computed,  // channel `id`'s copy or reduce ends (the analytic engine's; SimGrid runs them)
  Land,      // connection `id` gets its next message
  Route,     // island `id`'s next transfer pushes its last byte (if `version` is current)
  Deliver,   // switch rendezvous `id`'s next result leaves the switch (switch_plan.hpp)
};
struct Event {
  double time;
  std::uint64_t seq;  // FIFO among equal times: keeps messages of a connection in order
  std::uint32_t id;
  std::uint32_t version = 0;
  EventKind kind;
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

// The engine's pending events, taken in (time, seq) order. A landing comes `latency` after a
// departure, and departures come in time order, so the landings of all connections with the
// same latency arrive sorted: each such lane is a FIFO; everything else (and landings beyond
// kMaxLanes distinct latencies) goes to a heap. Taking an event compares the heap's top with the
// lanes' heads. (Landings are half the events of a large run; a heap for all of them showed in
// profiles.)
class EventQueue {
 public:
  static constexpr std::uint32_t kMaxLanes = 16;

  // The lane for landings `latency` after a departure, or kNoLane: use push().
  std::uint32_t lane_for(double latency) {
    for (std::uint32_t i = 0; i < lanes_.size(); ++i)
      if (lanes_[i].latency == latency) return i;
    if (lanes_.size() == kMaxLanes) return kNoLane;
    lanes_.push_back({latency, {}});
    return static_cast<std::uint32_t>(lanes_.size() - 1);
  }
  void push(Event e) {
    e.seq = seq_++;
    heap_.push(e);
  }
  // A landing on `lane` (kNoLane: none). One earlier than the lane's last (the clocks of SimGrid's
  // completions and of the engine's events can differ by a rounding) goes to the heap, so lanes
  // stay sorted.
  void push_landing(std::uint32_t lane, Event e) {
    if (lane == kNoLane || (!lanes_[lane].events.empty() && e.time < lanes_[lane].events.back().time)) {
      push(e);
      return;
    }
    e.seq = seq_++;
    lanes_[lane].events.push_back(e);
  }
  double next_time() const {
    double t = heap_.empty() ? std::numeric_limits<double>::infinity() : heap_.top().time;
    for (const Lane& l : lanes_)
      if (!l.events.empty()) t = std::min(t, l.events.front().time);
    return t;
  }
  // Moves the events due by `t` to `out`, in (time, seq) order: the heap's and each lane's (each
  // already in that order) taken whole, then merged by a sort when more than one of them gave
  // any (choosing the least head of all at every event cost a scan of the lanes per event).
  void take_due(double t, std::vector<Event>& out) {
    const std::size_t first = out.size();
    int sources = 0;
    if (!heap_.empty() && heap_.top().time <= t) {
      ++sources;
      do {
        out.push_back(heap_.top());
        heap_.pop();
      } while (!heap_.empty() && heap_.top().time <= t);
    }
    for (Lane& l : lanes_) {
      if (l.events.empty() || l.events.front().time > t) continue;
      ++sources;
      do {
        out.push_back(l.events.front());
        l.events.pop_front();
      } while (!l.events.empty() && l.events.front().time <= t);
    }
    if (sources > 1)
      std::sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
                [](const Event& a, const Event& b) { return b > a; });
  }

 private:
  struct Lane {
    double latency;
    std::deque<Event> events;
  };
  std::priority_queue<Event, std::vector<Event>, std::greater<>> heap_;
  std::vector<Lane> lanes_;
  std::uint64_t seq_ = 0;
};

// An island: connections whose links no connection outside it crosses, all of them crossing
// one common set of links (the hub), grouped by identical routes, and each group's links beyond
// the hub crossed by that group alone. The channels of one GPU pair on a path of their own make
// an island of one group (no links beyond the hub); a PXN route and an NVLink route that share
// their NVLink hops make an island of two. SimGrid's max-min sharing (unit weights) of an
// island's links involves its transfers alone and has a closed form, water-filling: each of the
// n_g transfers in flight of group g is bounded by b_g = min(channel cap, narrowest link of g's
// own / n_g), and all share the hub's narrowest link: groups in increasing b_g take b_g while
// it is below an equal share of what is left, the rest take that equal share. The engine
// computes this instead of making SimGrid comms. Per group, `work` counts the bytes each of its
// transfers in flight has pushed (they all run at the group's rate), so a transfer ends when its
// group's work reaches the target it got when it started.
//
// A small connected set without that shape (a chain inside a node: each GPU's NVLink port carries
// its sends to both neighbours, and each neighbour's port carries others) is a general island:
// its links' rates and, per group, the links it crosses; share() then runs SimGrid's max-min
// (progressive filling) over them: the lowest of every link's equal share of what is left and
// every group's cap is the next level, and the groups on a link that level saturates (or whose
// cap it is) take it. find_islands makes one of a set of at most kMaxGeneralGroups groups.
struct Island {
  static constexpr double kInf = std::numeric_limits<double>::infinity();
  static constexpr std::size_t kMaxGeneralGroups = 64;
  struct Group {
    double own = kInf;                   // bytes/s of the narrowest link this group alone crosses; kInf: none
    std::vector<std::uint32_t> crosses;  // a general island's: its links (indices into `links`), in route order
    double cap = 0.0;                    // per-channel cap, bytes/s; 0 when none
    double work = 0.0;                   // at the island's time `at`
    double rate = 0.0;                   // bytes/s of each transfer in flight
    double due = kInf;                   // when its earliest transfer ends
    std::vector<std::pair<double, std::uint32_t>> flying;  // (work target, connection)

    double bound() const {
      const double b = own / static_cast<double>(flying.size());
      return cap > 0 ? std::min(cap, b) : b;
    }
    double next_target() const {
      double t = flying.front().first;
      for (const auto& f : flying) t = std::min(t, f.first);
      return t;
    }
  };
  double hub = kInf;  // bytes/s of the narrowest link every group crosses
  double at = 0.0;
  std::vector<Group> groups;
  std::vector<double> links;  // a general island's links, bytes/s; empty for a hub island
  bool general() const { return !links.empty(); }
  // The next end of a transfer, and the live Route event (the latest pushed; older ones are
  // stale). A change that makes `due` later keeps the live event, which then pushes a new one
  // when it fires early; one that makes it earlier pushes a new live event. So a start on a busy
  // island does not add an event to the queue.
  double due = kInf;
  double pending = kInf;      // the live event's time
  std::uint32_t version = 0;  // the live event's

  void advance_to(double t) {
    for (Group& g : groups)
      if (!g.flying.empty()) g.work += g.rate * (t - at);
    at = t;
  }
  // At `time` (the island's due event): advance, and move the transfers that reached their work
  // target into `done` (their connections), then re-share the rates.
  void finish_due(double time, std::vector<std::uint32_t>& done) {
    done.clear();
    advance_to(time);
    for (Group& gr : groups) {
      if (gr.flying.empty() || gr.due > time) continue;
      gr.work = gr.next_target();  // exactly: due was computed to reach it
      for (std::size_t k = 0; k < gr.flying.size();) {
        if (gr.flying[k].first <= gr.work) {
          done.push_back(gr.flying[k].second);
          gr.flying[k] = gr.flying.back();
          gr.flying.pop_back();
        } else {
          ++k;
        }
      }
    }
    share();
  }
  // Sets every group's and the island's next end of a transfer (rates as share() left them);
  // true when it comes before the live event (pending): the caller pushes a new one.
  bool reschedule() {
    due = kInf;
    for (Group& gr : groups) {
      gr.due = kInf;
      if (gr.flying.empty()) continue;
      gr.due = at + (gr.next_target() - gr.work) / gr.rate;
      due = std::min(due, gr.due);
    }
    return due < pending;
  }
  // Water-filling (above): every group's rate.
  void share() {
    if (general()) return share_general();
    busy.clear();
    double flows = 0.0;
    for (std::uint32_t k = 0; k < groups.size(); ++k)
      if (!groups[k].flying.empty()) {
        busy.push_back(k);
        flows += static_cast<double>(groups[k].flying.size());
      }
    std::sort(busy.begin(), busy.end(),
              [&](std::uint32_t a, std::uint32_t b) { return groups[a].bound() < groups[b].bound(); });
    double left = hub;
    for (std::size_t k = 0; k < busy.size(); ++k) {
      Group& g = groups[busy[k]];
      const double fair = left / flows, b = g.bound();
      if (b <= fair) {
        g.rate = b;
        left -= b * static_cast<double>(g.flying.size());
        flows -= static_cast<double>(g.flying.size());
      } else {
        for (std::size_t j = k; j < busy.size(); ++j) groups[busy[j]].rate = fair;
        break;
      }
    }
  }

  // Progressive filling over a general island's links (above).
  void share_general() {
    busy.clear();
    left.assign(links.begin(), links.end());
    count.assign(links.size(), 0.0);
    for (std::uint32_t k = 0; k < groups.size(); ++k) {
      if (groups[k].flying.empty()) continue;
      busy.push_back(k);
      for (std::uint32_t l : groups[k].crosses) count[l] += static_cast<double>(groups[k].flying.size());
    }
    while (!busy.empty()) {
      double level = kInf;
      for (std::size_t l = 0; l < links.size(); ++l)
        if (count[l] > 0) level = std::min(level, left[l] / count[l]);
      for (std::uint32_t k : busy)
        if (groups[k].cap > 0) level = std::min(level, groups[k].cap);
      std::size_t kept = 0;
      for (std::uint32_t k : busy) {
        Group& gr = groups[k];
        bool frozen = gr.cap > 0 && gr.cap <= level;
        for (std::uint32_t l : gr.crosses) frozen = frozen || left[l] / count[l] <= level;
        if (!frozen) {
          busy[kept++] = k;
          continue;
        }
        gr.rate = level;
        const double n = static_cast<double>(gr.flying.size());
        for (std::uint32_t l : gr.crosses) {
          left[l] = std::max(0.0, left[l] - n * level);
          count[l] -= n;
        }
      }
      // The level is one of the figures compared, so a group always freezes; should none, the
      // rest take the level rather than loop.
      if (kept == busy.size())
        for (std::uint32_t k : busy) groups[k].rate = level;
      busy.resize(kept == busy.size() ? 0 : kept);
    }
  }

 private:
  std::vector<std::uint32_t> busy;  // share()'s groups with transfers in flight
  std::vector<double> left, count;  // share_general()'s per link: rate not yet given, transfers not yet frozen
};

// One connection as the islands see it: its route is the Router's for (src, dst, channel).
struct IslandEnd {
  int src = 0, dst = 0, channel = 0;
};

// The islands among connections (source rank, destination rank, channel), and per connection its island
// (kNoIsland: none) and its group in it.
struct IslandMap {
  std::vector<Island> islands;
  std::vector<std::uint32_t> island, group;  // per connection
};
IslandMap find_islands(const topo::Topology& t, Router& router, const Calibration& c,
                       const std::vector<IslandEnd>& connections);

}  // namespace topocoll::sim
