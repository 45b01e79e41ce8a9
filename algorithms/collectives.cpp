// The building blocks as collectives of their own: reduce-scatter and allgather (ring),
// broadcast and reduce (pipelined chain and binary tree). The allreduces above are composed from
// the same functions in blocks.hpp.
#include <algorithm>
#include <cmath>
#include <memory>

#include "algorithms/registry_internal.hpp"

namespace topocoll::algo {

namespace {

Chunk chunk(BufferId b, std::uint64_t offset, std::uint64_t count) {
  return Chunk{b, offset, count};
}

struct RingPlan {
  std::vector<std::vector<int>> ring, pos;
};

std::shared_ptr<RingPlan> ring_plan(const Layout& l, int K) {
  auto plan = std::make_shared<RingPlan>();
  for (int c = 0; c < K; ++c) {
    plan->ring.push_back(flat_ring(l, c));
    plan->pos.push_back(positions(plan->ring.back(), l.ranks));
  }
  return plan;
}

// reduce_scatter: input holds p blocks of `count`; rank r ends with block r reduced. The input
// is copied to scratch (recv_reduce needs the own contribution in place), ring reduce-scatter
// runs there with ring position i collecting the block of the rank at position i, and the own
// block is copied out.
Schedule make_reduce_scatter(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  const int K = std::max(1, t.channels);
  auto plan = ring_plan(l, K);
  const std::uint64_t se = slice_elems(a, t);
  const int depth = std::max(1, t.pipeline_depth);
  return Schedule(
      "reduce_scatter-ring", a, K, a.count * static_cast<std::uint64_t>(a.ranks),
      [plan, a, K, se, depth](int rank, Program& out) {
        ProgramBuilder b(out);
        for (int c = 0; c < K; ++c) {
          const Range part = channel_range(a.count, K, c);
          const auto& ring = plan->ring[static_cast<std::size_t>(c)];
          std::vector<Chunk> seg;
          for (int owner : ring)
            seg.push_back(
                chunk(BufferId::Scratch, static_cast<std::uint64_t>(owner) * a.count + part.offset, part.count));
          for (const Chunk& s : seg) b.copy(chunk(BufferId::Input, s.offset, s.count), s, c);
          ring_reduce_scatter(b, ring, plan->pos[static_cast<std::size_t>(c)][static_cast<std::size_t>(rank)], seg, c,
                              se, depth);
          b.copy(chunk(BufferId::Scratch, static_cast<std::uint64_t>(rank) * a.count + part.offset, part.count),
                 chunk(BufferId::Output, part.offset, part.count), c);
        }
      });
}

// allgather: rank r's input becomes block r of everyone's output.
Schedule make_allgather(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  const int K = std::max(1, t.channels);
  auto plan = ring_plan(l, K);
  const std::uint64_t se = slice_elems(a, t);
  const int depth = std::max(1, t.pipeline_depth);
  return Schedule("allgather-ring", a, K, 0, [plan, a, K, se, depth](int rank, Program& out) {
    ProgramBuilder b(out);
    for (int c = 0; c < K; ++c) {
      const Range part = channel_range(a.count, K, c);
      const auto& ring = plan->ring[static_cast<std::size_t>(c)];
      std::vector<Chunk> seg;
      for (int owner : ring)
        seg.push_back(chunk(BufferId::Output, static_cast<std::uint64_t>(owner) * a.count + part.offset, part.count));
      b.copy(chunk(BufferId::Input, part.offset, part.count),
             chunk(BufferId::Output, static_cast<std::uint64_t>(rank) * a.count + part.offset, part.count), c);
      ring_allgather(b, ring, plan->pos[static_cast<std::size_t>(c)][static_cast<std::size_t>(rank)], seg, c, se,
                     depth);
    }
  });
}

// Rooted trees over the flat ring order of channel c, re-indexed so the root is position 0:
// a chain (each position's parent is the one before) or NCCL's binary tree.
enum class Shape { Chain, Tree };

std::vector<std::vector<TreeLinks>> rooted_links(const Layout& l, int K, int root, Shape shape) {
  std::vector<std::vector<TreeLinks>> links(static_cast<std::size_t>(K));
  for (int c = 0; c < K; ++c) {
    std::vector<int> ring = flat_ring(l, c);
    const auto it = std::find(ring.begin(), ring.end(), root);
    std::rotate(ring.begin(), it, ring.end());  // ring[0] = root
    const int p = static_cast<int>(ring.size());
    auto& out = links[static_cast<std::size_t>(c)];
    out.resize(static_cast<std::size_t>(p));
    for (int i = 0; i < p; ++i) {
      TreeLinks pos_links;
      if (shape == Shape::Chain) {
        pos_links.parent = i == 0 ? -1 : i - 1;
        if (i + 1 < p) pos_links.children.push_back(i + 1);
      } else {
        pos_links = btree(p, i);
      }
      TreeLinks& r = out[static_cast<std::size_t>(ring[static_cast<std::size_t>(i)])];
      r.parent = pos_links.parent < 0 ? -1 : ring[static_cast<std::size_t>(pos_links.parent)];
      for (int ch : pos_links.children) r.children.push_back(ring[static_cast<std::size_t>(ch)]);
    }
  }
  return links;
}

// broadcast: the root copies its input out and the tree forwards it down.
// reduce: every rank copies its input to its output (non-roots use it as scratch) and the tree
// reduces towards the root, whose output is the result.
Schedule make_rooted(const Layout& l, const CollectiveArgs& a, const Tuning& t, Shape shape) {
  const int K = std::max(1, t.channels);
  const bool broadcast = a.collective == Collective::Broadcast;
  auto links = std::make_shared<std::vector<std::vector<TreeLinks>>>(rooted_links(l, K, a.root, shape));
  const std::string name =
      std::string(broadcast ? "broadcast" : "reduce") + (shape == Shape::Chain ? "-chain" : "-tree");
  return Schedule(name, a, K, 0, [links, a, K, t, broadcast](int rank, Program& out) {
    ProgramBuilder b(out);
    for (int c = 0; c < K; ++c) {
      const Range part = channel_range(a.count, K, c);
      const Chunk data = chunk(BufferId::Output, part.offset, part.count);
      const TreeLinks& me = (*links)[static_cast<std::size_t>(c)][static_cast<std::size_t>(rank)];
      if (!broadcast || rank == a.root) b.copy(chunk(BufferId::Input, part.offset, part.count), data, c);
      if (broadcast)
        tree_broadcast(b, me, data, c, tree_slice_elems(a, t, data.count));
      else
        tree_reduce(b, me, data, c, tree_slice_elems(a, t, data.count));
    }
  });
}

Support always(const Layout&, const CollectiveArgs&, const Tuning&) {
  return Support::yes();
}

Support root_in_range(const Layout& l, const CollectiveArgs& a, const Tuning&) {
  if (a.root < 0 || a.root >= l.ranks) return Support::no("the root must be a rank of the job");
  return Support::yes();
}

// Cost sheets of the blocks (p ranks, K channels, B = bytes of one rank's block / buffer).
CostSheet cost_ring_block(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  CostSheet c;
  c.busbw_factor = busbw_factor(a.collective, l.ranks);
  if (l.ranks == 1 || a.count == 0) return c;
  const int K = std::max(1, t.channels);
  c.steps = static_cast<std::uint64_t>(l.ranks - 1);
  c.bytes_sent = static_cast<std::uint64_t>(l.ranks - 1) * a.count * size_of(a.dtype);  // (p-1) blocks
  // Off-node bytes: in each channel a rank sends p-1 pieces of its channel part to its ring
  // successor; count them when the successor is on another node.
  std::vector<std::uint64_t> inter(static_cast<std::size_t>(l.ranks), 0);
  for (int ch = 0; ch < K; ++ch) {
    const std::vector<int> ring = flat_ring(l, ch);
    const std::uint64_t part = channel_range(a.count, K, ch).count * size_of(a.dtype);
    for (std::size_t i = 0; i < ring.size(); ++i) {
      const int me = ring[i], next = ring[(i + 1) % ring.size()];
      if (l.node_of[static_cast<std::size_t>(me)] != l.node_of[static_cast<std::size_t>(next)])
        inter[static_cast<std::size_t>(me)] += static_cast<std::uint64_t>(l.ranks - 1) * part;
    }
  }
  c.inter_bytes_sent = *std::max_element(inter.begin(), inter.end());
  return c;
}

CostSheet cost_rooted(const Layout& l, const CollectiveArgs& a, const Tuning& t, Shape shape) {
  CostSheet c;
  c.busbw_factor = busbw_factor(a.collective, l.ranks);
  if (l.ranks == 1 || a.count == 0) return c;
  const int K = std::max(1, t.channels);
  const auto links = rooted_links(l, K, a.root, shape);
  // Broadcast: a rank sends S to each child. Reduce: a non-root sends S to its parent.
  std::uint64_t worst = 0, worst_inter = 0;
  int depth = 0;
  for (int r = 0; r < l.ranks; ++r) {
    std::uint64_t sent = 0, inter = 0;
    auto on_other_node = [&](int peer) {
      return l.node_of[static_cast<std::size_t>(peer)] != l.node_of[static_cast<std::size_t>(r)];
    };
    for (int ch = 0; ch < K; ++ch) {
      const TreeLinks& x = links[static_cast<std::size_t>(ch)][static_cast<std::size_t>(r)];
      const std::uint64_t part = channel_range(a.count, K, ch).count * size_of(a.dtype);
      if (a.collective == Collective::Broadcast) {
        for (int child : x.children) {
          sent += part;
          if (on_other_node(child)) inter += part;
        }
      } else if (x.parent >= 0) {
        sent += part;
        if (on_other_node(x.parent)) inter += part;
      }
      int d = 0;
      for (int y = r; links[static_cast<std::size_t>(ch)][static_cast<std::size_t>(y)].parent >= 0;
           y = links[static_cast<std::size_t>(ch)][static_cast<std::size_t>(y)].parent)
        ++d;
      depth = std::max(depth, d);
    }
    worst = std::max(worst, sent);
    worst_inter = std::max(worst_inter, inter);
  }
  c.steps = static_cast<std::uint64_t>(depth);
  c.bytes_sent = worst;
  c.inter_bytes_sent = worst_inter;
  return c;
}

}  // namespace

void register_blocks(std::vector<Algorithm>& out) {
  out.push_back({"reduce_scatter-ring", "ring reduce-scatter: p-1 steps, (p-1)/p of the input sent per rank",
                 Collective::ReduceScatter, always, cost_ring_block, make_reduce_scatter});
  out.push_back({"allgather-ring", "ring allgather: p-1 steps, (p-1)/p of the output sent per rank",
                 Collective::AllGather, always, cost_ring_block, make_allgather});
  out.push_back(
      {"broadcast-chain", "pipelined chain from the root along the ring order", Collective::Broadcast, root_in_range,
       [](const Layout& l, const CollectiveArgs& a, const Tuning& t) { return cost_rooted(l, a, t, Shape::Chain); },
       [](const Layout& l, const CollectiveArgs& a, const Tuning& t) { return make_rooted(l, a, t, Shape::Chain); }});
  out.push_back(
      {"broadcast-tree", "pipelined binary tree (NCCL's btree) rooted at the root", Collective::Broadcast,
       root_in_range,
       [](const Layout& l, const CollectiveArgs& a, const Tuning& t) { return cost_rooted(l, a, t, Shape::Tree); },
       [](const Layout& l, const CollectiveArgs& a, const Tuning& t) { return make_rooted(l, a, t, Shape::Tree); }});
  out.push_back(
      {"reduce-chain", "pipelined chain towards the root along the ring order", Collective::Reduce, root_in_range,
       [](const Layout& l, const CollectiveArgs& a, const Tuning& t) { return cost_rooted(l, a, t, Shape::Chain); },
       [](const Layout& l, const CollectiveArgs& a, const Tuning& t) { return make_rooted(l, a, t, Shape::Chain); }});
  out.push_back(
      {"reduce-tree", "pipelined binary tree (NCCL's btree) towards the root", Collective::Reduce, root_in_range,
       [](const Layout& l, const CollectiveArgs& a, const Tuning& t) { return cost_rooted(l, a, t, Shape::Tree); },
       [](const Layout& l, const CollectiveArgs& a, const Tuning& t) { return make_rooted(l, a, t, Shape::Tree); }});
}

}  // namespace topocoll::algo
