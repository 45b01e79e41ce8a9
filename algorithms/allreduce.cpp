// Allreduce algorithms: ring, double binary tree, hierarchical (inner ring or dbt), recursive
// doubling.
// Cost sheets in docs/algorithms.md use the names below: p ranks, N nodes, g ranks per node,
// K channels, S bytes.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "algorithms/blocks.hpp"
#include "algorithms/registry_internal.hpp"
#include "common/errors.hpp"

namespace topocoll::algo {

// ---------------------------------------------------------------------------------------------
// Shared geometry.

std::uint64_t slice_elems(const CollectiveArgs& a, const Tuning& t) {
  return std::max<std::uint64_t>(1, t.slice_bytes / size_of(a.dtype));
}

std::uint64_t tree_slice_elems(const CollectiveArgs& a, const Tuning& t, std::uint64_t count) {
  const std::uint64_t elem = size_of(a.dtype);
  const std::uint64_t floor = std::max<std::uint64_t>(1, kTreeMinSliceBytes / elem);
  return std::min(slice_elems(a, t), std::max(floor, count / kTreeMinSlices));
}

Range channel_range(std::uint64_t count, int channels, int c) {
  return split(Range{0, count}, static_cast<std::uint64_t>(channels), static_cast<std::uint64_t>(c));
}

std::vector<int> rotate(const std::vector<int>& v, int by) {
  std::vector<int> out(v.size());
  const int n = static_cast<int>(v.size());
  for (int i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = v[static_cast<std::size_t>((i + by) % n)];
  return out;
}

// The flat ring of channel c: node 0's GPUs, then node 1's, ...; inside a node in its ring
// order rotated by c, so each channel enters and leaves a node through different GPUs and
// therefore different NICs (rails).
std::vector<int> flat_ring(const Layout& l, int c) {
  std::vector<int> ring;
  ring.reserve(static_cast<std::size_t>(l.ranks));
  for (const auto& node : l.node_ranks) {
    const std::vector<int> r = rotate(node, c % static_cast<int>(node.size()));
    ring.insert(ring.end(), r.begin(), r.end());
  }
  return ring;
}

std::vector<int> positions(const std::vector<int>& ring, int ranks) {
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

namespace {

Chunk as_chunk(BufferId b, Range r) {
  return Chunk{b, r.offset, r.count};
}

// ---------------------------------------------------------------------------------------------
// ring: NCCL's flat ring. Per channel: reduce-scatter then allgather, 2(p-1) steps.

struct RingPlan {
  std::vector<std::vector<int>> ring, pos;  // per channel
};

Schedule make_ring(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  const int K = std::max(1, t.channels);
  auto plan = std::make_shared<RingPlan>();
  for (int c = 0; c < K; ++c) {
    plan->ring.push_back(flat_ring(l, c));
    plan->pos.push_back(positions(plan->ring.back(), l.ranks));
  }
  const std::uint64_t se = slice_elems(a, t);
  const int depth = std::max(1, t.pipeline_depth);
  return Schedule("ring", a, K, 0, [plan, a, K, se, depth](int rank, Program& out) {
    ProgramBuilder b(out);
    for (int c = 0; c < K; ++c) {
      const Range mine = channel_range(a.count, K, c);
      const auto& ring = plan->ring[static_cast<std::size_t>(c)];
      const int pos = plan->pos[static_cast<std::size_t>(c)][static_cast<std::size_t>(rank)];
      const std::vector<Chunk> seg = segments(BufferId::Output, mine, static_cast<int>(ring.size()));
      b.copy(as_chunk(BufferId::Input, mine), as_chunk(BufferId::Output, mine), c);
      ring_reduce_scatter(b, ring, pos, seg, c, se, depth);
      ring_allgather(b, ring, pos, seg, c, se, depth);
    }
  });
}

CostSheet cost_ring(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  const int K = std::max(1, t.channels);
  const double p = l.ranks, S = static_cast<double>(a.count * size_of(a.dtype));
  CostSheet c;
  c.busbw_factor = busbw_factor(a.collective, l.ranks);
  if (l.ranks == 1 || a.count == 0) return c;
  c.steps = static_cast<std::uint64_t>(2 * (l.ranks - 1));
  c.bytes_sent = static_cast<std::uint64_t>(std::llround(2 * (p - 1) / p * S));
  if (l.nodes > 1) {
    // The GPU that closes a node's ring in channel c sends that channel's traffic off-node;
    // rotation by c makes each GPU do so for ceil(K / g) channels at most.
    const int g = l.ranks_per_node();
    const int boundary_channels = (K + g - 1) / g;
    c.inter_bytes_sent = static_cast<std::uint64_t>(std::llround(2 * (p - 1) / p * S / K * boundary_channels));
  }
  return c;
}

// ---------------------------------------------------------------------------------------------
// dbt: NCCL's double binary tree. Between nodes, tree 0 (btree) on even channels and tree 1
// (mirror / shift) on odd channels; inside a node a chain whose head talks to the network.
//
//   channel c, node n:  head(n) = node n's ring order rotated by c/2, element 0
//   head(n).parent = head(tree parent of n); head(n).children = chain[1] + heads of child nodes
//   chain[k].parent = chain[k-1]; chain[k].children = chain[k+1]

int dbt_channels(const Tuning& t) {
  return std::max(2, t.channels + t.channels % 2);
}

TreeLinks node_tree(int nodes, int node, int tree) {
  return tree == 0 ? btree(nodes, node) : btree_mirror(nodes, node);
}

}  // namespace

TreeLinks dbt_links(const Layout& l, int c, int rank) {
  const int n = l.node_of[static_cast<std::size_t>(rank)];
  const auto& node = l.node_ranks[static_cast<std::size_t>(n)];
  const int g = static_cast<int>(node.size());
  const std::vector<int> chain = rotate(node, (c / 2) % g);
  const int k = static_cast<int>(std::find(chain.begin(), chain.end(), rank) - chain.begin());
  auto head = [&](int m) {
    const auto& other = l.node_ranks[static_cast<std::size_t>(m)];
    return other[static_cast<std::size_t>((c / 2) % static_cast<int>(other.size()))];
  };
  TreeLinks links;
  if (k + 1 < g) links.children.push_back(chain[static_cast<std::size_t>(k + 1)]);
  if (k > 0) {
    links.parent = chain[static_cast<std::size_t>(k - 1)];
    return links;
  }
  const TreeLinks between = node_tree(l.nodes, n, c % 2);
  if (between.parent >= 0) links.parent = head(between.parent);
  for (int child : between.children) links.children.push_back(head(child));
  return links;
}

namespace {

// Rank-level depth of the tree of channel c (edges from the root to the deepest rank).
int dbt_depth(const Layout& l, int c) {
  int depth = 0;
  for (int r = 0; r < l.ranks; ++r) {
    int d = 0;
    for (int x = r; dbt_links(l, c, x).parent >= 0; x = dbt_links(l, c, x).parent) ++d;
    depth = std::max(depth, d);
  }
  return depth;
}

Schedule make_dbt(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  const int K = dbt_channels(t);
  auto links = std::make_shared<std::vector<std::vector<TreeLinks>>>();  // [channel][rank]
  for (int c = 0; c < K; ++c) {
    std::vector<TreeLinks> per_rank;
    for (int r = 0; r < l.ranks; ++r) per_rank.push_back(dbt_links(l, c, r));
    links->push_back(std::move(per_rank));
  }
  return Schedule("dbt", a, K, 0, [links, a, K, t](int rank, Program& out) {
    ProgramBuilder b(out);
    for (int c = 0; c < K; ++c) {
      const Range mine = channel_range(a.count, K, c);
      b.copy(as_chunk(BufferId::Input, mine), as_chunk(BufferId::Output, mine), c);
      tree_allreduce(b, (*links)[static_cast<std::size_t>(c)][static_cast<std::size_t>(rank)],
                     as_chunk(BufferId::Output, mine), c, tree_slice_elems(a, t, mine.count));
    }
  });
}

CostSheet cost_dbt(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  const int K = dbt_channels(t);
  CostSheet cs;
  cs.busbw_factor = busbw_factor(a.collective, l.ranks);
  if (l.ranks == 1 || a.count == 0) return cs;
  const double per_channel = static_cast<double>(a.count * size_of(a.dtype)) / K;
  std::vector<double> sent(static_cast<std::size_t>(l.ranks), 0.0), inter(static_cast<std::size_t>(l.ranks), 0.0);
  int depth = 0;
  for (int c = 0; c < K; ++c) {
    depth = std::max(depth, dbt_depth(l, c));
    // Each rank sends its partial sum up once and the result down to each child.
    for (int r = 0; r < l.ranks; ++r) {
      const TreeLinks links = dbt_links(l, c, r);
      const int me = l.node_of[static_cast<std::size_t>(r)];
      auto add = [&](int peer) {
        sent[static_cast<std::size_t>(r)] += per_channel;
        if (l.node_of[static_cast<std::size_t>(peer)] != me) inter[static_cast<std::size_t>(r)] += per_channel;
      };
      if (links.parent >= 0) add(links.parent);
      for (int child : links.children) add(child);
    }
  }
  cs.steps = static_cast<std::uint64_t>(2 * depth);
  cs.bytes_sent = static_cast<std::uint64_t>(std::llround(*std::max_element(sent.begin(), sent.end())));
  cs.inter_bytes_sent = static_cast<std::uint64_t>(std::llround(*std::max_element(inter.begin(), inter.end())));
  return cs;
}

// ---------------------------------------------------------------------------------------------
// hierarchical: reduce-scatter inside each node, allreduce across nodes among the GPUs that
// hold the same segment (same local position: one rail), allgather inside each node.
//
//   node 0: [g0 g1 g2 g3] --RS--> g_i holds segment i --inner AR over nodes--> --AG--> all
//   node 1: [g0 g1 g2 g3]                 |  (g_i of every node, one rail)
enum class Inner { Ring, Dbt };

struct HierPlan {
  // [channel][node]: intra-node ring; [channel][rank]: position in it.
  std::vector<std::vector<std::vector<int>>> intra;
  std::vector<std::vector<int>> pos;
};

Schedule make_hierarchical(const Layout& l, const CollectiveArgs& a, const Tuning& t, Inner inner) {
  const int K = inner == Inner::Dbt ? dbt_channels(t) : std::max(1, t.channels);
  const int g = l.ranks_per_node(), N = l.nodes;
  auto plan = std::make_shared<HierPlan>();
  for (int c = 0; c < K; ++c) {
    std::vector<std::vector<int>> rings;
    std::vector<int> pos(static_cast<std::size_t>(l.ranks), -1);
    for (const auto& node : l.node_ranks) {
      rings.push_back(rotate(node, c % g));
      for (int i = 0; i < g; ++i) pos[static_cast<std::size_t>(rings.back()[static_cast<std::size_t>(i)])] = i;
    }
    plan->intra.push_back(std::move(rings));
    plan->pos.push_back(std::move(pos));
  }
  const std::uint64_t se = slice_elems(a, t);
  const int depth = std::max(1, t.pipeline_depth);
  const Layout* unused = nullptr;
  (void)unused;
  std::vector<int> node_of = l.node_of;
  auto node_of_ptr = std::make_shared<std::vector<int>>(std::move(node_of));
  return Schedule(
      inner == Inner::Ring ? "hierarchical" : "hierarchical-dbt", a, K, 0,
      [plan, node_of_ptr, a, K, g, N, se, depth, inner, tuning = t](int rank, Program& out) {
        ProgramBuilder b(out);
        const int n = (*node_of_ptr)[static_cast<std::size_t>(rank)];
        for (int c = 0; c < K; ++c) {
          const Range mine = channel_range(a.count, K, c);
          const auto& intra = plan->intra[static_cast<std::size_t>(c)];
          const auto& ring = intra[static_cast<std::size_t>(n)];
          const int i = plan->pos[static_cast<std::size_t>(c)][static_cast<std::size_t>(rank)];
          const std::vector<Chunk> seg = segments(BufferId::Output, mine, g);
          b.copy(as_chunk(BufferId::Input, mine), as_chunk(BufferId::Output, mine), c);
          // 1. Inside the node: position i ends with segment i reduced over the node.
          ring_reduce_scatter(b, ring, i, seg, c, se, depth);
          // 2. Across nodes: the position-i GPUs of every node allreduce segment i.
          std::vector<int> group;
          for (int m = 0; m < N; ++m) group.push_back(intra[static_cast<std::size_t>(m)][static_cast<std::size_t>(i)]);
          const Chunk mine_seg = seg[static_cast<std::size_t>(i)];
          if (inner == Inner::Ring) {
            const std::vector<Chunk> sub = segments(BufferId::Output, Range{mine_seg.offset, mine_seg.count}, N);
            ring_reduce_scatter(b, group, n, sub, c, se, depth);
            ring_allgather(b, group, n, sub, c, se, depth);
          } else {
            const TreeLinks nt = node_tree(N, n, c % 2);
            TreeLinks links;
            links.parent = nt.parent < 0 ? -1 : group[static_cast<std::size_t>(nt.parent)];
            for (int child : nt.children) links.children.push_back(group[static_cast<std::size_t>(child)]);
            tree_allreduce(b, links, mine_seg, c, tree_slice_elems(a, tuning, mine_seg.count));
          }
          // 3. Inside the node: everyone gets every segment.
          ring_allgather(b, ring, i, seg, c, se, depth);
        }
      });
}

Support supports_hierarchical(const Layout& l, const CollectiveArgs&, const Tuning&) {
  if (!l.uniform()) return Support::no("needs the same number of GPUs on every node");
  return Support::yes();
}

CostSheet cost_hierarchical(const Layout& l, const CollectiveArgs& a, const Tuning& t, Inner inner) {
  CostSheet cs;
  cs.busbw_factor = busbw_factor(a.collective, l.ranks);
  if (l.ranks == 1 || a.count == 0) return cs;
  const double g = l.ranks_per_node(), N = l.nodes, S = static_cast<double>(a.count * size_of(a.dtype));
  const double intra = 2 * (g - 1) / g * S;
  double inner_bytes = 0.0;
  std::uint64_t inner_steps = 0;
  if (l.nodes > 1) {
    if (inner == Inner::Ring) {
      inner_bytes = 2 * (N - 1) / N * S / g;
      inner_steps = static_cast<std::uint64_t>(2 * (l.nodes - 1));
    } else {
      // Each node-tree member sends its segment up once and down to each child (<= 2 children
      // in a binary tree; the cost is the busiest member over both trees).
      const int K = dbt_channels(t);
      std::vector<double> sent(static_cast<std::size_t>(l.nodes), 0.0);
      int depth = 0;
      for (int c = 0; c < K; ++c)
        for (int m = 0; m < l.nodes; ++m) {
          const TreeLinks nt = node_tree(l.nodes, m, c % 2);
          sent[static_cast<std::size_t>(m)] +=
              (S / g / K) * ((nt.parent >= 0 ? 1 : 0) + static_cast<double>(nt.children.size()));
          int d = 0;
          for (int x = m; node_tree(l.nodes, x, c % 2).parent >= 0; x = node_tree(l.nodes, x, c % 2).parent) ++d;
          depth = std::max(depth, d);
        }
      inner_bytes = *std::max_element(sent.begin(), sent.end());
      inner_steps = static_cast<std::uint64_t>(2 * depth);
    }
  }
  cs.steps = static_cast<std::uint64_t>(2 * (l.ranks_per_node() - 1)) + inner_steps;
  cs.bytes_sent = static_cast<std::uint64_t>(std::llround(intra + inner_bytes));
  cs.inter_bytes_sent = static_cast<std::uint64_t>(std::llround(inner_bytes));
  return cs;
}

// ---------------------------------------------------------------------------------------------
// recursive-doubling: the latency algorithm (MPICH's, Open MPI's for small messages). Over the
// flat order of channel c: with m the largest power of two <= p and r = p - m, the first 2r
// positions pair up and the even one folds its data into the odd one; the m remaining
// positions exchange the whole buffer with the partner at distance 1, 2, 4, ... (log2 m steps),
// reducing what they receive; then each odd one of the first 2r hands the result back.
//
//   p = 6, m = 4, r = 2:  fold 0->1, 2->3 | exchange 3<->1... over {1, 3, 4, 5} | unfold 1->0, 3->2
//
// Each step moves the whole buffer, so channels only split the data: a channel carries at least
// kRdMinChannelBytes (fewer channels for small messages, where each one would add a message).
inline constexpr std::uint64_t kRdMinChannelBytes = 4096;

int rd_channels(const CollectiveArgs& a, const Tuning& t) {
  const std::uint64_t bytes = a.count * size_of(a.dtype);
  const std::uint64_t fit = std::max<std::uint64_t>(1, bytes / kRdMinChannelBytes);
  return static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(std::max(1, t.channels)), fit));
}

// One position's part of recursive doubling, as group positions (-1: none).
struct RdRole {
  int fold_to = -1;           // even position of the first 2r: sends its data here, then waits
  int fold_from = -1;         // odd position of the first 2r: reduces this one's data first
  std::vector<int> partners;  // exchange partners, in step order
};

RdRole rd_role(int p, int pos) {
  int m = 1;
  while (m * 2 <= p) m *= 2;
  const int r = p - m;
  RdRole role;
  if (pos < 2 * r && pos % 2 == 0) {
    role.fold_to = pos + 1;
    return role;
  }
  if (pos < 2 * r) role.fold_from = pos - 1;
  // Virtual index among the m that exchange, and back.
  const int v = pos < 2 * r ? pos / 2 : pos - r;
  auto position = [r](int u) { return u < r ? 2 * u + 1 : u + r; };
  for (int mask = 1; mask < m; mask <<= 1) role.partners.push_back(position(v ^ mask));
  return role;
}

// Longest chain of dependent transfers (the verifier's logical clock): a step's send leaves at
// the sender's clock, a receive moves the receiver's clock past it. The fold overlaps the first
// exchange of the positions that do not fold, so a non-power of two costs log2 m + 1 or + 2.
std::uint64_t rd_steps(int p) {
  std::vector<std::uint64_t> clock(static_cast<std::size_t>(p), 0);
  std::vector<RdRole> roles;
  for (int pos = 0; pos < p; ++pos) roles.push_back(rd_role(p, pos));
  auto at = [&clock](int q) -> std::uint64_t& { return clock[static_cast<std::size_t>(q)]; };
  for (int pos = 0; pos < p; ++pos)
    if (roles[static_cast<std::size_t>(pos)].fold_from >= 0) at(pos) = 1;
  const std::size_t log_m = roles.back().partners.size();
  for (std::size_t step = 0; step < log_m; ++step) {
    const std::vector<std::uint64_t> sent = clock;
    for (int pos = 0; pos < p; ++pos) {
      const RdRole& role = roles[static_cast<std::size_t>(pos)];
      if (role.fold_to < 0) at(pos) = std::max(at(pos), sent[static_cast<std::size_t>(role.partners[step])] + 1);
    }
  }
  for (int pos = 0; pos < p; ++pos)
    if (roles[static_cast<std::size_t>(pos)].fold_to >= 0)
      at(pos) = at(roles[static_cast<std::size_t>(pos)].fold_to) + 1;
  return *std::max_element(clock.begin(), clock.end());
}

Schedule make_recursive_doubling(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  const int K = rd_channels(a, t);
  auto order = std::make_shared<std::vector<std::vector<int>>>();  // [channel]: the flat order
  for (int c = 0; c < K; ++c) order->push_back(flat_ring(l, c));
  const std::uint64_t se = slice_elems(a, t);
  const int depth = std::max(1, t.pipeline_depth);
  return Schedule("recursive-doubling", a, K, 0, [order, a, K, se, depth](int rank, Program& out) {
    ProgramBuilder b(out);
    for (int c = 0; c < K; ++c) {
      const std::vector<int>& group = (*order)[static_cast<std::size_t>(c)];
      const int p = static_cast<int>(group.size());
      const int pos = static_cast<int>(std::find(group.begin(), group.end(), rank) - group.begin());
      const Chunk data = as_chunk(BufferId::Output, channel_range(a.count, K, c));
      const std::uint64_t n = slice_count(data.count, se);
      b.copy(as_chunk(BufferId::Input, channel_range(a.count, K, c)), data, c);
      const RdRole role = rd_role(p, pos);
      auto peer = [&group](int q) { return group[static_cast<std::size_t>(q)]; };
      if (role.fold_to >= 0) {
        for (std::uint64_t k = 0; k < n; ++k) b.send(peer(role.fold_to), slice(data, n, k), c);
        for (std::uint64_t k = 0; k < n; ++k) b.recv(peer(role.fold_to), slice(data, n, k), c);
        continue;
      }
      if (role.fold_from >= 0)
        for (std::uint64_t k = 0; k < n; ++k) b.recv_reduce(peer(role.fold_from), slice(data, n, k), c);
      for (int q : role.partners) pairwise_exchange(b, peer(q), data, true, c, se, depth);
      if (role.fold_from >= 0)
        for (std::uint64_t k = 0; k < n; ++k) b.send(peer(role.fold_from), slice(data, n, k), c);
    }
  });
}

CostSheet cost_recursive_doubling(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  CostSheet cs;
  cs.busbw_factor = busbw_factor(a.collective, l.ranks);
  if (l.ranks == 1 || a.count == 0) return cs;
  const int K = rd_channels(a, t);
  std::vector<double> sent(static_cast<std::size_t>(l.ranks), 0.0), inter(static_cast<std::size_t>(l.ranks), 0.0);
  for (int c = 0; c < K; ++c) {
    const std::vector<int> group = flat_ring(l, c);
    const double bytes = static_cast<double>(channel_range(a.count, K, c).count * size_of(a.dtype));
    for (int pos = 0; pos < l.ranks; ++pos) {
      const RdRole role = rd_role(l.ranks, pos);
      const int me = group[static_cast<std::size_t>(pos)];
      auto add = [&](int q) {
        const int other = group[static_cast<std::size_t>(q)];
        sent[static_cast<std::size_t>(me)] += bytes;
        if (l.node_of[static_cast<std::size_t>(other)] != l.node_of[static_cast<std::size_t>(me)])
          inter[static_cast<std::size_t>(me)] += bytes;
      };
      if (role.fold_to >= 0) add(role.fold_to);
      for (int q : role.partners) add(q);
      if (role.fold_from >= 0) add(role.fold_from);
    }
  }
  cs.steps = rd_steps(l.ranks);
  cs.bytes_sent = static_cast<std::uint64_t>(std::llround(*std::max_element(sent.begin(), sent.end())));
  cs.inter_bytes_sent = static_cast<std::uint64_t>(std::llround(*std::max_element(inter.begin(), inter.end())));
  return cs;
}

Support always(const Layout&, const CollectiveArgs&, const Tuning&) {
  return Support::yes();
}

}  // namespace

void register_allreduce(std::vector<Algorithm>& out) {
  out.push_back(
      {"ring",
       "NCCL's flat ring: reduce-scatter then allgather, 2(p-1) steps, each channel leaving nodes on its own rail",
       Collective::AllReduce, always, cost_ring, make_ring});
  out.push_back(
      {"dbt", "NCCL's double binary tree between nodes, chains inside nodes; reduce up and broadcast down, pipelined",
       Collective::AllReduce, always, cost_dbt, make_dbt});
  out.push_back({"hierarchical",
                 "reduce-scatter in each node, ring allreduce across nodes per rail, allgather in each node",
                 Collective::AllReduce, supports_hierarchical,
                 [](const Layout& l, const CollectiveArgs& a, const Tuning& t) {
                   return cost_hierarchical(l, a, t, Inner::Ring);
                 },
                 [](const Layout& l, const CollectiveArgs& a, const Tuning& t) {
                   return make_hierarchical(l, a, t, Inner::Ring);
                 }});
  out.push_back(
      {"hierarchical-dbt",
       "reduce-scatter in each node, double-binary-tree allreduce across nodes per rail, allgather in each node",
       Collective::AllReduce, supports_hierarchical,
       [](const Layout& l, const CollectiveArgs& a, const Tuning& t) { return cost_hierarchical(l, a, t, Inner::Dbt); },
       [](const Layout& l, const CollectiveArgs& a, const Tuning& t) {
         return make_hierarchical(l, a, t, Inner::Dbt);
       }});
  out.push_back({"recursive-doubling",
                 "the latency algorithm: whole-buffer exchanges at distance 1, 2, 4, ... (log2 p steps; non-powers of "
                 "two fold in "
                 "and out)",
                 Collective::AllReduce, always, cost_recursive_doubling, make_recursive_doubling});
}

}  // namespace topocoll::algo
