// SimGrid 3.32 behind one interface: the platform, the activities, the callbacks, and a child
// process per simulation. The layout of the platform and the choice of network settings are
// explained in simgrid_adapter.hpp.
#include "simulator/simgrid/simgrid_adapter.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <optional>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/kernel/resource/Action.hpp>
#include <simgrid/s4u.hpp>

// clang-format off
#include <simgrid/version.h>  // after s4u.hpp: it needs xbt/base.h (kept here against include sorting)
// clang-format on

#include <stdexcept>
#include <string_view>
#include <unordered_map>

// clang-format off
#include <simgrid/version.h>  // after s4u.hpp: it needs xbt/base.h (kept out of the sorted block)
// clang-format on

#include "common/errors.hpp"
#include "common/log.hpp"
#include "simulator/simgrid/platform_layout.hpp"

namespace topocoll::sim::sg {

namespace sg4 = ::simgrid::s4u;
namespace sgk = ::simgrid::kernel;

using topo::Edge;
using topo::Vertex;

namespace {

// Reads an action that SimGrid passes as NetworkAction&: 3.32 does not install that class's
// header, but NetworkAction derives from Action alone (single, non-virtual inheritance), so an
// Action is at its address.
const sgk::resource::Action& as_action(const sgk::resource::NetworkAction& a) {
  return reinterpret_cast<const sgk::resource::Action&>(a);
}

bool simulation_created = false;

}  // namespace

std::vector<std::string> link_names(const topo::Topology& t, int src, const Route& r) {
  const LinkCatalog catalog(t);
  std::vector<std::string> names;
  for (const Step& s : steps_of(t, catalog, src, r)) names.push_back(split_duplex_name(catalog.name(s.edge), s.up));
  return names;
}

// ---------------------------------------------------------------------------------------------
// Transfers in flight by SimGrid activity: an open-addressing table (linear probing, deletion by
// backward shift), as a transfer starts and ends millions of times in a large run and a node
// allocation per start showed in profiles.
template <typename Value>
class ActivityTable {
 public:
  ActivityTable() : slots_(1024) {}
  std::size_t size() const { return size_; }

  // Inserts `key` (absent); returns its value.
  Value& insert(const void* key, Value v) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    std::size_t i = home(key);
    while (slots_[i].key != nullptr) {
      TOPOCOLL_ASSERT(slots_[i].key != key, "SimGrid reused a live transfer");
      i = (i + 1) & mask();
    }
    slots_[i] = {key, std::move(v)};
    ++size_;
    return slots_[i].value;
  }

  // Removes `key` and returns its value; nullopt when absent.
  std::optional<Value> take(const void* key) {
    std::size_t i = home(key);
    while (slots_[i].key != key) {
      if (slots_[i].key == nullptr) return std::nullopt;
      i = (i + 1) & mask();
    }
    std::optional<Value> v(std::move(slots_[i].value));
    // Backward shift: move later entries of the probe run into the hole when that keeps them
    // reachable from their home slot.
    std::size_t hole = i;
    for (std::size_t j = (i + 1) & mask(); slots_[j].key != nullptr; j = (j + 1) & mask()) {
      const std::size_t h = home(slots_[j].key);
      if (((j - h) & mask()) >= ((j - hole) & mask())) {
        slots_[hole] = std::move(slots_[j]);
        hole = j;
      }
    }
    slots_[hole] = Slot{};
    --size_;
    return v;
  }

 private:
  struct Slot {
    const void* key = nullptr;
    Value value{};
  };
  std::vector<Slot> slots_;
  std::size_t size_ = 0;

  std::size_t mask() const { return slots_.size() - 1; }
  std::size_t home(const void* key) const {
    auto x = reinterpret_cast<std::uintptr_t>(key);
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 32;
    return static_cast<std::size_t>(x) & mask();
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    size_ = 0;
    for (Slot& s : old)
      if (s.key != nullptr) insert(s.key, std::move(s.value));
  }
};

// ---------------------------------------------------------------------------------------------
// The transfers' main path is SimGrid's public S4U API: Comm::sendto_init(...)->detach(), and
// the finished transfer seen through Link::on_communication_state_change. SimGrid 3.32 (not
// 4.1) pays O(transfers in flight) per finished transfer on that path (maestro's list of
// detached activities, simgrid_adapter.hpp, "Activities"), and its S4U API offers no way
// around it: every host-to-host comm is detached in Comm::sendto_init() itself. MaestroList is
// the fallback for that version alone, compiled only against 3.32's headers
// (SIMGRID_VERSION_MAJOR/MINOR), used only when the library loaded says 3.32 too
// (sg_version_get), only once the first transfer confirmed the list's place and layout, and
// not when TOPOCOLL_SIMGRID_LIST_WORKAROUND=0 (or PlatformSpec::list_workaround = false). Same
// results with it or without (simgrid_engine_test.cpp); the run logs which path ran
// (TOPOCOLL_LOG=info).
bool list_workaround_allowed() {
  const char* env = std::getenv("TOPOCOLL_SIMGRID_LIST_WORKAROUND");
  return env == nullptr || std::string_view(env) != "0";
}

#if SIMGRID_VERSION_MAJOR == 3 && SIMGRID_VERSION_MINOR == 32
// SimGrid 3.32's list of detached activities. Every transfer is detached, so maestro's
// activity list (a std::list of ActivityImplPtr) holds all transfers in flight and
// CommImpl::finish() walks it end to end to take one off (std::list::remove). take() moves the
// reference the list just received (at its back) to the caller, keeping the list empty, so that
// walk is over at once. The list is found at its place in 3.32's ActorImpl (3.32's
// src/kernel/actor/ActorImpl.hpp: activities_; read from the disassembly of Debian's
// libsimgrid.so.3.32: CommImpl::finish removes from maestro + 0xc0) and its layout confirmed on
// the first transfer (an empty std::list whose first push is that transfer), else the
// workaround stays off.
class MaestroList {
 public:
  explicit MaestroList(bool wanted)
      : state_(wanted && list_workaround_allowed() && library_is_3_32() ? State::Unknown : State::Off) {}

  // Called right after `impl` was detached (pushed at the back of maestro's list): the list's
  // reference to it, or null when the workaround is off (the list keeps it).
  sgk::activity::ActivityImplPtr take(const sgk::activity::ActivityImpl* impl) {
    if (state_ == State::Unknown) state_ = probe(impl) ? State::On : State::Off;
    if (state_ == State::Off) return nullptr;
    TOPOCOLL_ASSERT(list_->size() == 1 && list_->back().get() == impl,
                    "SimGrid's maestro activity list does not end with the transfer just started");
    sgk::activity::ActivityImplPtr held = std::move(list_->back());
    list_->pop_back();
    return held;
  }
  bool on() const { return state_ == State::On; }

 private:
  using List = std::list<sgk::activity::ActivityImplPtr>;
  enum class State { Unknown, On, Off };
  State state_;
  List* list_ = nullptr;

  // The library loaded, not only the headers compiled against.
  static bool library_is_3_32() {
    int major = 0, minor = 0, patch = 0;
    sg_version_get(&major, &minor, &patch);
    return major == 3 && minor == 32;
  }

  bool probe(const sgk::activity::ActivityImpl* impl) {
    // ActorImpl::self() is exported but its class is not installed: look it up by name. Called
    // from maestro (every transfer starts there), it returns maestro.
    using SelfFn = void* (*)();
    auto self = reinterpret_cast<SelfFn>(::dlsym(RTLD_DEFAULT, "_ZN7simgrid6kernel5actor9ActorImpl4selfEv"));
    if (self == nullptr || self() == nullptr) return false;
    auto* list = reinterpret_cast<List*>(static_cast<char*>(self()) + kActivitiesOffset);
    // The first transfer of the simulation: the list must hold it and nothing else, its nodes
    // linked both ways.
    auto* head = reinterpret_cast<std::__detail::_List_node_base*>(list);
    if (head->_M_next == nullptr || head->_M_prev == nullptr || head->_M_next != head->_M_prev ||
        head->_M_next->_M_next != head || list->size() != 1 || list->back().get() != impl) {
      TC_LOG_WARN("sim",
                  "simgrid: SimGrid's maestro activity list is not where 3.32 keeps it; running without "
                  "the list workaround (slower at thousands of transfers in flight)");
      return false;
    }
    list_ = list;
    return true;
  }

  static constexpr std::size_t kActivitiesOffset = 0xc0;  // ActorImpl::activities_ in 3.32
};
#else
// Any other SimGrid: the public path alone (4.1 keeps detached activities in a std::set).
class MaestroList {
 public:
  explicit MaestroList(bool) {}
  sgk::activity::ActivityImplPtr take(const sgk::activity::ActivityImpl*) { return nullptr; }
  bool on() const { return false; }
};
#endif

// ---------------------------------------------------------------------------------------------
// The simulation

struct Simulation::Impl {
  const topo::Topology& t;
  const topo::Graph& g;
  const Calibration& c;
  const int channels;
  Listener& listener;
  LinkCatalog catalog;
  std::unique_ptr<sg4::Engine> engine;

  sg4::NetZone* root = nullptr;
  std::vector<sg4::NetZone*> node_zones;  // per node (nullptr: no rank there)
  // Per endpoint, rank * channels + channel: its zone and its host.
  std::vector<sg4::NetZone*> zones;
  std::vector<sg4::Host*> hosts;
  // Per (endpoint, NIC its traffic crosses): the router standing for that NIC in the
  // endpoint's zone, and the routes host -> NIC (sending) and NIC -> host (receiving), once
  // known. With NCCL's PXN a GPU sends through the NIC on the receiver's rail, not always its
  // own, so an endpoint may have several.
  struct Port {
    sgk::routing::NetPoint* router = nullptr;
    std::vector<Step> out, in;
    bool has_out = false, has_in = false;
  };
  std::unordered_map<std::uint64_t, Port> ports;
  std::vector<Connection> connections;
  std::vector<std::pair<sg4::Host*, sg4::Host*>> path_hosts;  // per switch flow
  std::unordered_map<const topo::Link*, sg4::SplitDuplexLink*> links;

  // Completions, collected where SimGrid reports them and handed to the listener from a timer
  // at the same date: SimGrid reports a finished transfer while it updates its models, where
  // no new activity may be started.
  struct InFlight {
    std::uint32_t connection = 0;
    sgk::activity::ActivityImplPtr held;  // with the list workaround: the reference maestro's list held
  };
  ActivityTable<InFlight> transfers_in_flight;
  MaestroList maestro_list;
  // Finished transfers' references (list workaround): kept until the drain after the one that
  // handed them over, when SimGrid's CommImpl::finish() has run for them.
  std::vector<sgk::activity::ActivityImplPtr> held_done, held_release;
  std::unordered_map<std::uint32_t, sg4::ExecPtr> computes_in_flight;
  std::vector<std::uint32_t> transfers_done, computes_done;
  std::vector<std::uint32_t> drained_transfers, drained_computes;  // being handed over
  std::vector<sg4::ExecPtr> finished_execs;                        // released once SimGrid is done with them
  bool drain_armed = false;
  double live_sum = 0.0, live_count = 0.0;  // transfers in flight, summed at each start

  Impl(const PlatformSpec& spec, Listener& l)
      : t(*spec.topology),
        g(t.graph()),
        c(*spec.calibration),
        channels(std::max(1, spec.channels)),
        listener(l),
        catalog(t),
        maestro_list(spec.list_workaround) {
    start_engine();
    build_platform(spec);
    connect_callbacks();
  }

  void start_engine() {
    // SimGrid reads its settings from a command line; log only warnings and worse.
    static char arg0[] = "topocoll-sim", arg1[] = "--log=root.thres:warning", arg2[] = "--log=xbt_cfg.thres:warning";
    static char* argv[] = {arg0, arg1, arg2, nullptr};
    int argc = 3;
    engine = std::make_unique<sg4::Engine>(&argc, argv);
    sg4::Engine::set_config("network/model:CM02");
    sg4::Engine::set_config("network/TCP-gamma:0");
    sg4::Engine::set_config("network/crosstraffic:0");
    sg4::Engine::set_config("network/latency-factor:0");  // see simgrid_adapter.hpp
    sg4::Engine::set_config("network/bandwidth-factor:1");
    sg4::Engine::set_config("surf/precision:1e-13");  // see simgrid_adapter.hpp
  }

  // -------------------------------------------------------------------------------------------
  // Platform

  std::size_t endpoint(int rank, int channel) const {
    return static_cast<std::size_t>(rank) * static_cast<std::size_t>(channels) + static_cast<std::size_t>(channel);
  }

  sg4::SplitDuplexLink* link_of(Edge e) {
    auto [it, inserted] = links.try_emplace(&g[e], nullptr);
    if (inserted) {
      it->second = root->create_split_duplex_link(catalog.name(e),
                                                  c.rate_bytes_per_s(g, e));  // efficiency by kind (and GPU generation)
      it->second->set_latency(c.latency_s(g, e));
    }
    return it->second;
  }

  std::vector<sg4::LinkInRoute> in_route(const std::vector<Step>& steps, sg4::Link* first = nullptr) {
    std::vector<sg4::LinkInRoute> out;
    out.reserve(steps.size() + 1);
    if (first != nullptr) out.emplace_back(first);
    for (const Step& s : steps)
      out.emplace_back(link_of(s.edge), s.up ? sg4::LinkInRoute::Direction::UP : sg4::LinkInRoute::Direction::DOWN);
    return out;
  }

  Port& port_of(int rank, int channel, Vertex nic) {
    const std::uint64_t key = endpoint(rank, channel) * boost::num_vertices(g) + nic;
    Port& port = ports[key];
    if (port.router == nullptr)
      port.router = zones[endpoint(rank, channel)]->create_router(
          fmt::format("{}@{}", hosts[endpoint(rank, channel)]->get_name(), t.device_name(nic)));
    return port;
  }

  void build_platform(const PlatformSpec& spec) {
    const int p = t.num_ranks();
    const std::size_t endpoints = static_cast<std::size_t>(p) * static_cast<std::size_t>(channels);
    TOPOCOLL_ASSERT(
        spec.computes.empty() || spec.computes.size() == endpoints,
        fmt::format("PlatformSpec::computes has {} entries for {} endpoints", spec.computes.size(), endpoints));
    // The endpoints that get a host: those that compute and the ends of routed connections.
    std::vector<std::uint8_t> needed = spec.computes.empty() ? std::vector<std::uint8_t>(endpoints, 1) : spec.computes;
    for (const Connection& conn : spec.connections) {
      TOPOCOLL_ASSERT(conn.src != conn.dst && conn.src >= 0 && conn.dst >= 0 && conn.src < p && conn.dst < p &&
                          conn.channel >= 0 && conn.channel < channels,
                      fmt::format("bad connection {} -> {} channel {}", conn.src, conn.dst, conn.channel));
      if (!conn.routed) continue;
      needed[endpoint(conn.src, conn.channel)] = 1;
      needed[endpoint(conn.dst, conn.channel)] = 1;
    }
    root = sg4::create_empty_zone("cluster");
    node_zones.assign(static_cast<std::size_t>(t.nodes()), nullptr);
    zones.assign(endpoints, nullptr);
    hosts.assign(endpoints, nullptr);
    // Zones and hosts: a zone per node, a zone per endpoint (GPU, channel) inside it.
    for (int r = 0; r < p; ++r) {
      const topo::RankInfo& info = t.rank(r);
      for (int ch = 0; ch < channels; ++ch) {
        if (!needed[endpoint(r, ch)]) continue;
        auto& node = node_zones[static_cast<std::size_t>(info.node)];
        if (node == nullptr) {
          node = sg4::create_full_zone(fmt::format("n{}", info.node));
          node->set_parent(root);
        }
        const std::string name = fmt::format("{}/ch{}", t.device_name(info.gpu), ch);
        sg4::NetZone* zone = sg4::create_full_zone(name + ":zone");
        zone->set_parent(node);
        zones[endpoint(r, ch)] = zone;
        hosts[endpoint(r, ch)] = zone->create_host(name, spec.compute_speed);
      }
    }
    // Routes for the connections, straight from the Router.
    Router router(t);
    connections = spec.connections;
    for (const Connection& conn : connections) {
      if (!conn.routed) continue;
      const int a = conn.src, b = conn.dst, ch = conn.channel;
      const Route& route = router.route(a, b, ch);
      const std::vector<Step> steps = steps_of(t, catalog, a, route);
      // A private link caps this connection's transfers (one at a time) at the channel rate.
      sg4::Link* cap = nullptr;
      if (const double rate = c.channel_cap_bytes_per_s(g, route.links); rate > 0)
        cap = root->create_link(
            fmt::format("{}->{}:cap", hosts[endpoint(a, ch)]->get_name(), hosts[endpoint(b, ch)]->get_name()), rate);
      const topo::RankInfo &ra = t.rank(a), &rb = t.rank(b);
      const std::size_t ea = endpoint(a, ch), eb = endpoint(b, ch);
      if (ra.node == rb.node) {
        node_zones[static_cast<std::size_t>(ra.node)]->add_route(zones[ea]->get_netpoint(), zones[eb]->get_netpoint(),
                                                                 hosts[ea]->get_netpoint(), hosts[eb]->get_netpoint(),
                                                                 in_route(steps, cap), false);
        continue;
      }
      const CrossNodeParts parts = split_cross_node(g, steps, ra.node, rb.node);
      TOPOCOLL_ASSERT(!parts.out.empty() && !parts.fabric.empty() && !parts.in.empty(),
                      fmt::format("route {} -> {} does not leave and enter nodes through links of their own", a, b));
      // The part inside each node depends on the GPU and the NIC it crosses: a zone route from
      // the endpoint's host to the router of that NIC, and from the peer's NIC to the peer.
      Port& pa = port_of(a, ch, parts.out.back().to);
      Port& pb = port_of(b, ch, parts.in.front().from);
      if (!pa.has_out) {
        zones[ea]->add_route(hosts[ea]->get_netpoint(), pa.router, nullptr, nullptr, in_route(parts.out), false);
        pa.out = parts.out;
        pa.has_out = true;
      }
      if (!pb.has_in) {
        zones[eb]->add_route(pb.router, hosts[eb]->get_netpoint(), nullptr, nullptr, in_route(parts.in), false);
        pb.in = parts.in;
        pb.has_in = true;
      }
      TOPOCOLL_ASSERT(same_links(pa.out, parts.out) && same_links(pb.in, parts.in),
                      fmt::format("route {} -> {}: the path between a GPU and a NIC depends on the peer", a, b));
      root->add_bypass_route(zones[ea]->get_netpoint(), zones[eb]->get_netpoint(), pa.router, pb.router,
                             in_route(parts.fabric, cap));
    }
    // Switch flows: a zone each, two hosts, the path between them.
    std::unordered_map<std::string, sg4::Link*> reduce_links;
    std::unordered_map<std::int64_t, std::size_t> shared;  // share -> the path whose zone it uses
    for (std::size_t k = 0; k < spec.paths.size(); ++k) {
      const PathConnection& pc = spec.paths[k];
      if (pc.share >= 0 && pc.cap <= 0) {
        const auto [it, fresh] = shared.try_emplace(pc.share, k);
        if (!fresh) {
          path_hosts.push_back(path_hosts[it->second]);
          continue;
        }
      }
      std::vector<Step> steps;
      Vertex at = pc.from;
      for (Edge e : pc.links) {
        const Vertex a = boost::source(e, g), b = boost::target(e, g), next = a == at ? b : a;
        steps.push_back({e, at, next, catalog.up(e, at)});
        at = next;
      }
      const std::string name = fmt::format("switch-flow{}", k);
      sg4::NetZone* zone = sg4::create_full_zone(name + ":zone");
      zone->set_parent(root);
      sg4::Host* a = zone->create_host(name + ":from", spec.compute_speed);
      sg4::Host* b = zone->create_host(name + ":to", spec.compute_speed);
      std::vector<sg4::LinkInRoute> links =
          in_route(steps, pc.cap > 0 ? root->create_link(name + ":cap", pc.cap) : nullptr);
      if (pc.reduce_rate > 0) {
        auto [it, fresh] = reduce_links.try_emplace(pc.reduce_name, nullptr);
        if (fresh) it->second = root->create_link(pc.reduce_name, pc.reduce_rate);
        links.emplace_back(it->second);
      }
      zone->add_route(a->get_netpoint(), b->get_netpoint(), nullptr, nullptr, links, false);
      zone->seal();
      path_hosts.push_back({a, b});
    }
    root->seal();
    engine->seal_platform();
  }

  // -------------------------------------------------------------------------------------------
  // Activities and their completions

  void connect_callbacks() {
    sg4::Link::on_communication_state_change_cb([this](sgk::resource::NetworkAction& na, sgk::resource::Action::State) {
      const sgk::resource::Action& action = as_action(na);
      const auto state = action.get_state();
      if (state == sgk::resource::Action::State::FAILED) throw std::runtime_error("SimGrid reports a failed transfer");
      if (state != sgk::resource::Action::State::FINISHED) return;
      std::optional<InFlight> done = transfers_in_flight.take(action.get_activity());
      TOPOCOLL_ASSERT(done.has_value(), "SimGrid finished a transfer the engine did not start");
      transfers_done.push_back(done->connection);
      if (done->held) held_done.push_back(std::move(done->held));
      arm_drain();
    });
    sg4::Activity::on_completion_cb([this](const sg4::Activity& a) {
      if (dynamic_cast<const sg4::Exec*>(&a) == nullptr) return;
      computes_done.push_back(static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(a.get_data<void>()) - 1));
      arm_drain();
    });
  }

  void arm_drain() {
    if (drain_armed) return;
    drain_armed = true;
    sgk::timer::Timer::set(sg4::Engine::get_clock(), [this] { drain(); });
  }

  void drain() {
    drain_armed = false;
    finished_execs.clear();  // completed in an earlier round: SimGrid no longer uses them
    held_release.clear();
    held_release.swap(held_done);
    // Swap out first: the listener starts new activities (which finish in later rounds).
    drained_transfers.clear();
    drained_transfers.swap(transfers_done);
    drained_computes.clear();
    drained_computes.swap(computes_done);
    if (!drained_transfers.empty()) listener.transfers_done(drained_transfers);
    for (std::uint32_t tag : drained_computes) {
      auto it = computes_in_flight.find(tag);
      TOPOCOLL_ASSERT(it != computes_in_flight.end(), fmt::format("unknown computation {}", tag));
      finished_execs.push_back(std::move(it->second));
      computes_in_flight.erase(it);
      listener.compute_done(tag);
    }
  }

  void transfer(std::uint32_t index, double bytes) {
    sg4::CommPtr comm;
    if (index >= connections.size()) {
      const auto& [from, to] = path_hosts.at(index - connections.size());
      comm = sg4::Comm::sendto_init(from, to);
    } else {
      const Connection& conn = connections[index];
      TOPOCOLL_ASSERT(conn.routed, fmt::format("transfer on connection {} ({} -> {} channel {}), which has no route",
                                               index, conn.src, conn.dst, conn.channel));
      comm = sg4::Comm::sendto_init(hosts[endpoint(conn.src, conn.channel)], hosts[endpoint(conn.dst, conn.channel)]);
    }
    comm->set_payload_size(static_cast<std::uint64_t>(bytes));
    comm->detach();
    transfers_in_flight.insert(comm->get_impl(), InFlight{index, maestro_list.take(comm->get_impl())});
    live_sum += static_cast<double>(transfers_in_flight.size());
    live_count += 1;
  }

  void compute(int rank, int channel, double bytes, std::uint32_t tag) {
    sg4::Host* host = hosts[endpoint(rank, channel)];
    TOPOCOLL_ASSERT(host != nullptr,
                    fmt::format("compute on rank {} channel {}, which PlatformSpec::computes left out", rank, channel));
    sg4::ExecPtr exec = sg4::Exec::init()->set_flops_amount(bytes)->set_host(host);
    exec->set_data(reinterpret_cast<void*>(static_cast<std::uintptr_t>(tag) + 1));
    exec->start();
    computes_in_flight.emplace(tag, std::move(exec));
  }
};

Simulation::Simulation(const PlatformSpec& spec, Listener& listener) {
  if (simulation_created)
    throw std::logic_error("SimGrid's engine can be created once per process: use run_isolated()");
  simulation_created = true;
  TOPOCOLL_ASSERT(spec.topology && spec.calibration, "PlatformSpec needs a topology and a calibration");
  impl_ = std::make_unique<Impl>(spec, listener);
}

// SimGrid's engine is not torn down: its process ends right after (run_isolated), and 3.32's
// teardown of a large platform takes longer than the simulation.
Simulation::~Simulation() {
  (void)impl_.release();
}

void Simulation::transfer(std::uint32_t index, double bytes) {
  impl_->transfer(index, bytes);
}

void Simulation::compute(int rank, int channel, double bytes, std::uint32_t tag) {
  impl_->compute(rank, channel, bytes, tag);
}

void Simulation::wake_at(double t) {
  Listener* l = &impl_->listener;
  sgk::timer::Timer::set(t, [l] { l->wake(); });
}

double Simulation::now() const {
  return sg4::Engine::get_clock();
}

void Simulation::run() {
  impl_->engine->run();
  // SimGrid 3.32 keeps detached transfers in a list it searches end to end at each completion,
  // so the cost of a transfer grows with the transfers in flight: worth knowing when it is slow.
  TC_LOG_INFO(
      "sim", "simgrid: {:.0f} transfers in flight on average; {}", impl_->live_sum / std::max(1.0, impl_->live_count),
      impl_->maestro_list.on() ? "SimGrid 3.32's list workaround on" : "public S4U path only (list workaround off)");
}

Simulation::RouteView Simulation::route(std::uint32_t index) const {
  const Connection& conn = impl_->connections.at(index);
  TOPOCOLL_ASSERT(conn.routed, fmt::format("route of connection {}, which has none (routed = false)", index));
  RouteView view;
  std::vector<sg4::Link*> links;
  impl_->hosts[impl_->endpoint(conn.src, conn.channel)]->route_to(impl_->hosts[impl_->endpoint(conn.dst, conn.channel)],
                                                                  links, &view.latency_s);
  for (const sg4::Link* l : links) view.links.push_back(l->get_name());
  return view;
}

std::size_t Simulation::host_count() const {
  return impl_->engine->get_all_hosts().size();
}

// ---------------------------------------------------------------------------------------------
// A child process per simulation

namespace {

// The child's answer: a status byte, then the payload (the work's output or an error message).
enum class ChildStatus : char { Ok = 0, InputError = 1, OtherError = 2 };

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

std::string run_isolated(const std::function<void(std::string& out)>& work) {
  int fds[2];
  if (::pipe(fds) != 0)
    throw std::runtime_error(fmt::format("cannot create a pipe for the simulation: {}", std::strerror(errno)));
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(fmt::format("cannot start the simulation process: {}", std::strerror(errno)));
  }
  if (pid == 0) {
    // Child: run, answer, and leave without running destructors or atexit handlers. Crashes
    // are reported by the parent, not by handlers inherited from it (a test runner's).
    ::close(fds[0]);
    for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, SIG_DFL);
    std::string answer(1, static_cast<char>(ChildStatus::Ok));
    try {
      work(answer);
    } catch (const InputError& e) {
      answer.assign(1, static_cast<char>(ChildStatus::InputError));
      answer += e.what();
    } catch (const std::exception& e) {
      answer.assign(1, static_cast<char>(ChildStatus::OtherError));
      answer += e.what();
    }
    if (log::enabled(log::Level::Info, "sim")) {
      rusage usage{};
      ::getrusage(RUSAGE_SELF, &usage);
      log::write(log::Level::Info, "sim",
                 fmt::format("simgrid: simulation process peak RSS {} MiB", usage.ru_maxrss / 1024));
    }
    const bool ok = write_all(fds[1], answer.data(), answer.size());
    std::fflush(nullptr);
    ::_exit(ok ? 0 : 3);
  }
  ::close(fds[1]);
  std::string answer;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    answer.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    throw std::runtime_error(
        fmt::format("the SimGrid simulation process died of signal {} ({}); its messages are above", WTERMSIG(status),
                    strsignal(WTERMSIG(status))));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || answer.empty())
    throw std::runtime_error(fmt::format("the SimGrid simulation process failed (exit status {})",
                                         WIFEXITED(status) ? WEXITSTATUS(status) : -1));
  const auto kind = static_cast<ChildStatus>(answer[0]);
  answer.erase(0, 1);
  if (kind == ChildStatus::InputError) throw InputError(answer);
  if (kind == ChildStatus::OtherError) throw std::runtime_error(answer);
  return answer;
}

}  // namespace topocoll::sim::sg
