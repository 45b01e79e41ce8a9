#include "simulator/islands.hpp"

#include <iterator>
#include <map>

namespace topocoll::sim {

// Finds the islands (above) among the connections: groups of identical routes (each direction
// of a link apart), connected through the links they share; a connected set is an island when
// every group crosses each link two groups cross.
IslandMap find_islands(const topo::Topology& t, Router& router, const Calibration& c,
                       const std::vector<IslandEnd>& connections) {
  const auto& g = t.graph();
  IslandMap out;
  using LinkKey = std::pair<const topo::Link*, bool>;  // the edge's properties are unique per edge
  const auto n = static_cast<std::uint32_t>(connections.size());
  std::vector<std::vector<LinkKey>> links(n);
  std::vector<std::uint32_t> group(n);  // the first connection with the same links
  std::map<std::vector<LinkKey>, std::uint32_t> group_of_links;
  std::vector<std::uint32_t> parent(n);  // union-find over groups, through shared links
  for (std::uint32_t i = 0; i < n; ++i) parent[i] = i;
  auto find = [&](std::uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  struct LinkUse {
    std::uint32_t group = kNoIsland;
    bool groups = false;  // crossed by two groups or more
  };
  std::map<LinkKey, LinkUse> use;
  for (std::uint32_t i = 0; i < n; ++i) {
    const Route& route = router.route(connections[i].src, connections[i].dst, connections[i].channel);
    for (std::size_t k = 0; k < route.links.size(); ++k)
      links[i].emplace_back(&g[route.links[k]], static_cast<bool>(route.forward[k]));
    std::sort(links[i].begin(), links[i].end());
    group[i] = group_of_links.try_emplace(links[i], i).first->second;
    for (const LinkKey& key : links[i]) {
      LinkUse& u = use[key];
      if (u.group == kNoIsland) {
        u.group = group[i];
      } else if (u.group != group[i]) {
        u.groups = true;
        parent[find(group[i])] = find(u.group);
      }
    }
  }
  // Per connected set: the links every group crosses (the hub), and whether each group's other
  // links are its own. Sets (so islands) are numbered by their first connection, groups by
  // theirs: the map is a function of which links each connection crosses, their rates and caps,
  // not of the order of the links' addresses (the analytic engine reuses it on that promise).
  std::vector<std::vector<std::uint32_t>> groups_of_set;  // set -> its groups
  {
    std::vector<std::uint32_t> set_of_root(n, kNoIsland);
    for (std::uint32_t i = 0; i < n; ++i) {
      if (group[i] != i) continue;
      std::uint32_t& s = set_of_root[find(i)];
      if (s == kNoIsland) {
        s = static_cast<std::uint32_t>(groups_of_set.size());
        groups_of_set.emplace_back();
      }
      groups_of_set[s].push_back(i);
    }
  }
  std::vector<std::uint32_t> island_of_group(n, kNoIsland), index_in_island(n, 0);
  for (const auto& members : groups_of_set) {
    std::vector<LinkKey> hub = links[members.front()];
    for (std::uint32_t m : members) {
      std::vector<LinkKey> both;
      std::set_intersection(hub.begin(), hub.end(), links[m].begin(), links[m].end(), std::back_inserter(both));
      hub.swap(both);
    }
    bool island = !hub.empty();
    for (std::uint32_t m : members)
      for (const LinkKey& key : links[m])
        if (use[key].groups && !std::binary_search(hub.begin(), hub.end(), key)) island = false;
    const bool general = !island;
    if (general && (members.size() > Island::kMaxGeneralGroups || links[members.front()].empty())) continue;
    // A hub island: the hub's narrowest link and each group's own. A general island (islands.hpp):
    // every link's rate, numbered as the groups' routes meet them, and each group's links.
    Island is;
    std::map<LinkKey, std::uint32_t> local;
    for (std::uint32_t m : members) {
      const Route& route = router.route(connections[m].src, connections[m].dst, connections[m].channel);
      Island::Group gr;
      gr.cap = c.channel_cap_bytes_per_s(g, route.links);
      for (std::size_t k = 0; k < route.links.size(); ++k) {
        const LinkKey key(&g[route.links[k]], static_cast<bool>(route.forward[k]));
        const double rate = c.rate_bytes_per_s(g, route.links[k]);
        if (general) {
          const auto [it, made] = local.try_emplace(key, static_cast<std::uint32_t>(is.links.size()));
          if (made) is.links.push_back(rate);
          gr.crosses.push_back(it->second);
        } else if (std::binary_search(hub.begin(), hub.end(), key)) {
          is.hub = std::min(is.hub, rate);
        } else {
          gr.own = std::min(gr.own, rate);
        }
      }
      index_in_island[m] = static_cast<std::uint32_t>(is.groups.size());
      island_of_group[m] = static_cast<std::uint32_t>(out.islands.size());
      is.groups.push_back(std::move(gr));
    }
    out.islands.push_back(std::move(is));
  }
  out.island.resize(n);
  out.group.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    out.island[i] = island_of_group[group[i]];
    out.group[i] = index_in_island[group[i]];
  }
  return out;
}

}  // namespace topocoll::sim
