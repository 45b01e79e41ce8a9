#include "algorithms/patterns/ring.hpp"

namespace topocoll::algo {

Range channel_range(std::uint64_t count, int channels, int c) {
  return split(Range{0, count}, static_cast<std::uint64_t>(channels), static_cast<std::uint64_t>(c));
}

bool nodes_alike(const Layout& l) {
  if (!l.uniform() || l.nodes < 1 || static_cast<int>(l.node_ranks.size()) != l.nodes) return false;
  const int G = l.ranks_per_node();
  for (int n = 0; n < l.nodes; ++n)
    for (int i = 0; i < G; ++i) {
      const int r = l.node_ranks[static_cast<std::size_t>(n)][static_cast<std::size_t>(i)];
      if (r / G != n || r != l.node_ranks[0][static_cast<std::size_t>(i)] + n * G) return false;
    }
  return true;
}

std::vector<int> rotation_channels(int K, int G) {
  std::vector<int> pi(static_cast<std::size_t>(K));
  for (int c = 0; c < K; ++c) pi[static_cast<std::size_t>(c)] = c % G == G - 1 ? c - (G - 1) : c + 1;
  return pi;
}

std::vector<int> rotate(std::span<const int> v, int by) {
  std::vector<int> out(v.size());
  const int n = static_cast<int>(v.size());
  for (int i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = v[static_cast<std::size_t>((i + by) % n)];
  return out;
}

std::vector<int> flat_ring(const Layout& l, int c) {
  std::vector<int> ring;
  ring.reserve(static_cast<std::size_t>(l.ranks));
  for (const auto& node : l.node_ranks) {
    const std::vector<int> r = rotate(node, c % static_cast<int>(node.size()));
    ring.insert(ring.end(), r.begin(), r.end());
  }
  return ring;
}

std::vector<int> positions(std::span<const int> ring, int ranks) {
  std::vector<int> pos(static_cast<std::size_t>(ranks), -1);
  for (std::size_t i = 0; i < ring.size(); ++i) pos[static_cast<std::size_t>(ring[i])] = static_cast<int>(i);
  return pos;
}

std::vector<Chunk> segments(BufferId b, Range whole, int parts) {
  std::vector<Chunk> out;
  for (int i = 0; i < parts; ++i) {
    const Range r = split(whole, static_cast<std::uint64_t>(parts), static_cast<std::uint64_t>(i));
    out.push_back(Chunk{b, r.offset, r.count});
  }
  return out;
}

RingPlan RingPlan::flat(const Layout& l, int channels) {
  RingPlan plan;
  for (int c = 0; c < channels; ++c) {
    plan.ring.push_back(flat_ring(l, c));
    plan.pos.push_back(positions(plan.ring.back(), l.ranks));
  }
  return plan;
}

}  // namespace topocoll::algo
