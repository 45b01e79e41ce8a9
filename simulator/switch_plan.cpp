#include "simulator/switch_plan.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/errors.hpp"

namespace topocoll::sim {

namespace {

using topo::DeviceKind;
using topo::Edge;
using topo::Vertex;

std::string group_name(const algo::Schedule& s, int g) {
  const algo::SwitchGroup& sg = s.switch_groups()[static_cast<std::size_t>(g)];
  return fmt::format("switch group {} ({}, {} contributors, {} receivers)", g, algo::to_string(sg.kind),
                     sg.contributors.size(), sg.receivers.size());
}

// The walk of a route's links from `from`, cut after the first vertex of kind `stop`.
struct Walk {
  std::vector<Edge> links;
  std::vector<Vertex> vertices;  // from, then the end of each link
};
Walk walk_until(const topo::Graph& g, Vertex from, const std::vector<Edge>& links, DeviceKind stop) {
  Walk w;
  w.vertices.push_back(from);
  Vertex at = from;
  for (Edge e : links) {
    const Vertex a = boost::source(e, g), b = boost::target(e, g);
    at = a == at ? b : a;
    w.links.push_back(e);
    w.vertices.push_back(at);
    if (g[at].kind == stop) return w;
  }
  w.links.clear();
  w.vertices.resize(1);
  return w;
}

}  // namespace

SwitchPlan::SwitchPlan(const topo::Topology& t, const algo::Schedule& s, const Calibration& c, Router& router)
    : t_(t), s_(s) {
  const topo::Graph& g = t.graph();
  const auto& groups = s.switch_groups();
  groups_.resize(groups.size());
  std::unordered_map<Vertex, std::uint32_t> port_of_gpu;
  auto add_path = [&](Vertex from, std::vector<Edge> links, int port) {
    SwitchPath p;
    p.from = from;
    Vertex at = from;
    for (Edge e : links) {
      const Vertex a = boost::source(e, g), b = boost::target(e, g), next = a == at ? b : a;
      p.forward.push_back(at < next);
      at = next;
    }
    p.latency_s = c.route_latency_s(g, links);
    p.cap = c.channel_cap_bytes_per_s(g, links);
    p.links = std::move(links);
    p.reduce_port = port;
    paths_.push_back(std::move(p));
    return static_cast<std::uint32_t>(paths_.size() - 1);
  };
  auto reversed = [&](const Walk& w) { return std::vector<Edge>(w.links.rbegin(), w.links.rend()); };

  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    const algo::SwitchGroup& sg = groups[gi];
    GroupInfo& info = groups_[gi];
    info.kind = sg.kind;
    info.latency_s = c.switch_latency_us[static_cast<std::size_t>(sg.kind)] * 1e-6;
    const std::string name = group_name(s, static_cast<int>(gi));
    std::vector<int> members = sg.contributors;
    members.insert(members.end(), sg.receivers.begin(), sg.receivers.end());
    for (int r : members)
      if (r < 0 || r >= t.num_ranks())
        throw InputError(fmt::format("{}: rank {} is not a rank of the topology's {}", name, r, t.num_ranks()));

    if (sg.kind == algo::SwitchKind::Nvls) {
      // One NVSwitch fabric: every member's GPU one NVLink bundle from the same NVSwitch.
      const bool reducing = sg.contributors.size() > 1;
      Vertex nvs = 0;
      bool have = false;
      auto link_to_nvswitch = [&](int r) {
        const Vertex gpu = t.rank(r).gpu;
        if (g[gpu].sm > 0 && g[gpu].sm < 90)
          throw InputError(fmt::format("{}: rank {} is on an sm {} GPU; NVLS needs sm 90 or later (NVSwitch multicast)",
                                       name, r, g[gpu].sm));
        if (g[gpu].sm == 0)
          throw InputError(
              fmt::format("{}: rank {}'s GPU has no known compute capability; NVLS needs sm 90 or later", name, r));
        std::optional<Edge> found;
        for (auto e : boost::make_iterator_range(boost::out_edges(gpu, g))) {
          const Vertex other = boost::target(e, g);
          if (g[other].kind != DeviceKind::NvSwitch) continue;
          if (found)
            throw InputError(
                fmt::format("{}: rank {}'s GPU links to several NVSwitches: expected the merged "
                            "NVSwitch planes (topo::merge_nvswitch_planes)",
                            name, r));
          found = e;
          if (!have) nvs = other, have = true;
          if (other != nvs)
            throw InputError(fmt::format("{}: rank {} is on another NVSwitch fabric than rank {} (node {} vs {})", name,
                                         r, members.front(), t.rank(r).node, t.rank(members.front()).node));
        }
        if (!found)
          throw InputError(
              fmt::format("{}: rank {} (node {}) has no NVSwitch; NVLS needs the GPUs of one NVSwitch "
                          "fabric",
                          name, r, t.rank(r).node));
        return *found;
      };
      for (int r : sg.contributors) {
        const Edge e = link_to_nvswitch(r);
        int port = -1;
        const double fraction = c.nvls_reduce_fraction(g[t.rank(r).gpu].sm);
        if (reducing && fraction > 0) {
          const Vertex gpu = t.rank(r).gpu;
          auto [it, fresh] = port_of_gpu.try_emplace(gpu, static_cast<std::uint32_t>(ports_.size()));
          if (fresh)
            ports_.push_back(
                {fraction * g[e].bw_gbps * 1e9, fmt::format("{}:reduce@{}", t.device_name(nvs), t.device_name(gpu))});
          port = static_cast<int>(it->second);
        }
        info.up_path.push_back(add_path(t.rank(r).gpu, {e}, port));
        info.aggregator_of.push_back(0);
      }
      for (int r : sg.receivers) info.down_path.push_back(add_path(nvs, {link_to_nvswitch(r)}, -1));
      info.contributors_of_agg = {static_cast<std::uint32_t>(sg.contributors.size())};
      continue;
    }

    // SHARP: GPU -> NIC -> leaf; leaves aggregate to one spine when the group spans several.
    if (!t.fabric() || !t.fabric()->sharp)
      throw InputError(fmt::format("{}: the fabric has no SHARP (set the fabric key 'sharp: true' or --sharp)", name));
    // A rank on another node with r's local index (so on r's rail: the route leaves through r's
    // own NIC, as CollNet Direct gives every GPU its NIC), else any on another node.
    auto other_node_rank = [&](int r) {
      for (int m = 0; m < t.num_ranks(); ++m)
        if (t.rank(m).node != t.rank(r).node && t.rank(m).local == t.rank(r).local) return m;
      for (int m = 0; m < t.num_ranks(); ++m)
        if (t.rank(m).node != t.rank(r).node) return m;
      throw InputError(
          fmt::format("{}: every rank is on node {}; SHARP needs the network's switches", name, t.rank(r).node));
    };
    auto to_leaf = [&](int r) {
      const Route& route = router.route(r, other_node_rank(r), 0);
      Walk w = walk_until(g, t.rank(r).gpu, route.links, DeviceKind::LeafSwitch);
      if (w.links.empty())
        throw InputError(fmt::format("{}: rank {}'s route to the network reaches no leaf switch", name, r));
      return w;
    };
    std::vector<Vertex> leaves;  // aggregators, in order of first contributor
    std::vector<Walk> up_walks;
    for (int r : sg.contributors) {
      Walk w = to_leaf(r);
      const Vertex leaf = w.vertices.back();
      auto it = std::find(leaves.begin(), leaves.end(), leaf);
      if (it == leaves.end()) {
        leaves.push_back(leaf);
        info.contributors_of_agg.push_back(0);
        it = leaves.end() - 1;
      }
      const auto a = static_cast<std::uint32_t>(it - leaves.begin());
      info.aggregator_of.push_back(a);
      ++info.contributors_of_agg[a];
      info.up_path.push_back(add_path(t.rank(r).gpu, w.links, -1));
      up_walks.push_back(std::move(w));
    }
    Vertex root = leaves.front();
    if (leaves.size() > 1) {
      // The root: the spine the first two leaves' contributors route through; every leaf one link from it.
      std::size_t k = 1;
      while (info.aggregator_of[k] == 0) ++k;
      const Route& between = router.route(sg.contributors[0], sg.contributors[k], 0);
      const Walk w = walk_until(g, t.rank(sg.contributors[0]).gpu, between.links, DeviceKind::SpineSwitch);
      if (w.links.empty())
        throw InputError(
            fmt::format("{}: its leaves meet at no spine switch; SHARP's aggregation tree here is "
                        "leaves under one spine",
                        name));
      root = w.vertices.back();
      for (Vertex leaf : leaves) {
        const auto [e, ok] = boost::edge(leaf, root, g);
        if (!ok)
          throw InputError(
              fmt::format("{}: leaf {} has no link to spine {}; SHARP's aggregation tree here is leaves "
                          "under one spine",
                          name, t.device_name(leaf), t.device_name(root)));
        info.agg_path.push_back(add_path(leaf, {e}, -1));
      }
    }
    // Down: across leaves the root sends one copy to each leaf with receivers (bcast), which
    // sends one to each of its receivers; under one leaf, the leaf sends to each.
    std::vector<Vertex> down_leaves;
    for (std::size_t k = 0; k < sg.receivers.size(); ++k) {
      const int r = sg.receivers[k];
      const Walk w = to_leaf(r);
      const Vertex leaf = w.vertices.back();
      if (leaves.size() > 1) {
        auto it = std::find(down_leaves.begin(), down_leaves.end(), leaf);
        if (it == down_leaves.end()) {
          const auto [e, ok] = boost::edge(root, leaf, g);
          if (!ok)
            throw InputError(fmt::format("{}: receiver rank {}'s leaf {} has no link to the root {}", name, r,
                                         t.device_name(leaf), t.device_name(root)));
          down_leaves.push_back(leaf);
          info.bcast_path.push_back(add_path(root, {e}, -1));
          info.receivers_of_bcast.emplace_back();
          it = down_leaves.end() - 1;
        }
        info.receivers_of_bcast[static_cast<std::size_t>(it - down_leaves.begin())].push_back(
            static_cast<std::uint32_t>(k));
      } else if (leaf != root) {
        throw InputError(fmt::format("{}: receiver rank {} is under leaf {}, its contributors under {}", name, r,
                                     t.device_name(leaf), t.device_name(root)));
      }
      info.down_path.push_back(add_path(leaf, reversed(w), -1));
    }
  }
}

std::uint32_t SwitchPlan::use(int group, int channel) {
  const std::uint64_t key = static_cast<std::uint64_t>(group) * static_cast<std::uint64_t>(s_.num_channels()) +
                            static_cast<std::uint64_t>(channel);
  auto [it, fresh] = by_key_.try_emplace(key, static_cast<std::uint32_t>(rendezvous_.size()));
  if (!fresh) return it->second;
  const GroupInfo& info = groups_.at(static_cast<std::size_t>(group));
  const auto rv = static_cast<std::uint32_t>(rendezvous_.size());
  rendezvous_.push_back({group, channel, static_cast<std::uint32_t>(flows_.size())});
  for (std::uint32_t k = 0; k < info.up_path.size(); ++k) flows_.push_back({SwitchRole::Up, rv, k, info.up_path[k]});
  for (std::uint32_t k = 0; k < info.agg_path.size(); ++k) flows_.push_back({SwitchRole::Agg, rv, k, info.agg_path[k]});
  for (std::uint32_t k = 0; k < info.bcast_path.size(); ++k)
    flows_.push_back({SwitchRole::Bcast, rv, k, info.bcast_path[k]});
  for (std::uint32_t k = 0; k < info.down_path.size(); ++k)
    flows_.push_back({SwitchRole::Down, rv, k, info.down_path[k]});
  return rv;
}

std::uint32_t SwitchPlan::up_flow(std::uint32_t rv, int rank) const {
  const Rendezvous& r = rendezvous_[rv];
  const int index = s_.contributor_index(r.group, rank);  // the schedule's member index
  if (index < 0)
    throw ScheduleError(fmt::format("rank {}: switch_send on {} but rank {} is not one of its contributors", rank,
                                    group_name(s_, r.group), rank),
                        rank, r.channel);
  return r.first_flow + static_cast<std::uint32_t>(index);
}

std::uint32_t SwitchPlan::agg_flow(std::uint32_t rv, std::uint32_t aggregator) const {
  const Rendezvous& r = rendezvous_[rv];
  return r.first_flow + static_cast<std::uint32_t>(groups_[static_cast<std::size_t>(r.group)].up_path.size()) +
         aggregator;
}

std::uint32_t SwitchPlan::down_flow(std::uint32_t rv, int rank) const {
  const Rendezvous& r = rendezvous_[rv];
  const int index = s_.receiver_index(r.group, rank);  // the schedule's member index
  if (index < 0)
    throw ScheduleError(fmt::format("rank {}: switch_recv on {} but rank {} is not one of its receivers", rank,
                                    group_name(s_, r.group), rank),
                        rank, r.channel);
  return down_base(rv) + static_cast<std::uint32_t>(index);
}

std::uint32_t SwitchPlan::bcast_base(std::uint32_t rv) const {
  const Rendezvous& r = rendezvous_[rv];
  const GroupInfo& info = groups_[static_cast<std::size_t>(r.group)];
  return r.first_flow + static_cast<std::uint32_t>(info.up_path.size() + info.agg_path.size());
}

std::uint32_t SwitchPlan::down_base(std::uint32_t rv) const {
  return bcast_base(rv) + static_cast<std::uint32_t>(group(rendezvous_[rv].group).bcast_path.size());
}

SwitchInstances::SwitchInstances(const SwitchPlan& plan) : plan_(plan), states_(plan.rendezvous().size()) {}

SwitchInstances::Instance& SwitchInstances::at(std::uint32_t rv, std::uint64_t k) {
  State& st = states_[rv];
  const auto& info = plan_.group(plan_.rendezvous()[rv].group);
  while (st.first + st.open.size() <= k) {
    Instance in;
    in.left = info.contributors_of_agg;
    in.ready.assign(in.left.size(), 0.0);
    in.streams_left = static_cast<std::uint32_t>(in.left.size());
    st.open.push_back(std::move(in));
  }
  return st.open[static_cast<std::size_t>(k - st.first)];
}

bool SwitchInstances::part_landed(std::uint32_t rv, std::uint32_t member, double time, double& ready,
                                  std::uint64_t& instance) {
  State& st = states_[rv];
  const auto& info = plan_.group(plan_.rendezvous()[rv].group);
  if (st.given.empty()) st.given.assign(info.aggregator_of.size(), 0);
  const std::uint64_t k = st.given[member]++;
  const std::uint32_t a = info.aggregator_of[member];
  Instance& in = at(rv, k);
  in.ready[a] = std::max(in.ready[a], time);
  instance = k;
  if (--in.left[a] != 0) return false;
  ready = in.ready[a];
  if (in.left.size() == 1) {  // no aggregation stage: the instance is complete; retire done fronts
    in.streams_left = 0;
    while (!st.open.empty() && st.open.front().streams_left == 0) st.open.pop_front(), ++st.first;
  }
  return true;
}

bool SwitchInstances::stream_landed(std::uint32_t rv, std::uint32_t agg, double time, double& ready) {
  State& st = states_[rv];
  if (st.streams.empty()) st.streams.assign(plan_.group(plan_.rendezvous()[rv].group).agg_path.size(), 0);
  Instance& in = at(rv, st.streams[agg]++);
  in.root_ready = std::max(in.root_ready, time);
  if (--in.streams_left != 0) return false;
  ready = in.root_ready;
  while (!st.open.empty() && st.open.front().streams_left == 0) st.open.pop_front(), ++st.first;
  return true;
}

}  // namespace topocoll::sim
