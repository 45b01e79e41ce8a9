// hierarchical-<inner>: reduce-scatter inside each node, allreduce across nodes among the GPUs
// that hold the same segment (same local position: one rail) with any group allreduce stage
// (group.hpp), allgather inside each node. `hierarchical` is the one over the ring stage.
// The stages are a HierarchicalStages (generators.hpp): inside the nodes rings or NVLS
// (nvls.cpp), across nodes a group stage or SHARP. hierarchical-nvls (NVLS inside, ring
// across), nvls-tree (NVLS inside, double binary tree across: NCCL's NVLSTree) and collnet
// (rings inside, SHARP across: NCCL's CollNet) are three of them.
//
//   node 0: [g0 g1 g2 g3] --RS--> g_i holds segment i --inner AR over nodes--> --AG--> all
//   node 1: [g0 g1 g2 g3]                 |  (g_i of every node, one rail)
//
// Cost sheets in docs/algorithms.md use the names below: p ranks, N nodes, g ranks per node,
// K channels, S bytes.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <set>

#include "algorithms/blocks.hpp"
#include "algorithms/generators/generators.hpp"
#include "algorithms/patterns/ring.hpp"

namespace topocoll::algo {

namespace {

struct HierPlan {
  // [channel][node]: intra-node ring; [channel][rank]: position in it.
  std::vector<std::vector<std::vector<int>>> intra;
  std::vector<std::vector<int>> pos;
  std::vector<int> node_of;  // per rank
  // Switch groups (filled once the schedule exists, before any program is generated): per node
  // its NVLS groups; per local GPU index the SHARP group of that index across nodes.
  std::vector<NvlsGroups> nvls;
  int sharp = -1;
};

// Batches of a channel's data the NVLS-inside stages overlap (emit_nvls_batches): with B batches
// the three stages take B + 2 steps of one batch each instead of 3B.
constexpr std::uint64_t kNvlsBatches = 4;

int stage_channels(const HierarchicalStages& st, const CollectiveArgs& a, const Tuning& t) {
  return st.inner ? st.inner->channels(a, t) : std::max(1, t.channels);
}

// SHARP across nodes: every member gives each piece of `data` to the group and receives the
// reduction over the group in place; parts run `window` pieces ahead of the receives.
void sharp_allreduce(ProgramBuilder& b, int group, const Chunk& data, int channel, std::uint64_t se, int window) {
  const std::uint64_t pieces = slice_count(data.count, se), w = static_cast<std::uint64_t>(std::max(window, 0));
  for (std::uint64_t k = 0; k < pieces + w; ++k) {
    if (k < pieces) b.switch_send(group, slice(data, pieces, k), channel);
    if (k >= w) b.switch_recv(group, slice(data, pieces, k - w), channel);
  }
}

// Stage 2: the position-i GPUs of every node (node n is position n of the group) allreduce
// `part` with the inner group stage, or in the network (SHARP).
void emit_across(ProgramBuilder& b, const HierPlan& plan, const HierarchicalStages& st, int n, int i,
                 const std::vector<int>& local_of, const std::vector<std::vector<int>>& intra, const Chunk& part, int c,
                 const CollectiveArgs& a, const Tuning& t, std::uint64_t se, int depth, int N) {
  if (st.inner) {
    std::vector<int> group;
    for (int m = 0; m < N; ++m) group.push_back(intra[static_cast<std::size_t>(m)][static_cast<std::size_t>(i)]);
    st.inner->emit(b, group, n, part, c, a, t);
  } else {
    sharp_allreduce(b, plan.sharp + local_of[static_cast<std::size_t>(i)], part, c, se, depth);
  }
}

// The NVLS-inside stages, in batches so that the NVSwitch and the network work at once: the
// channel's data is cut into `batches` consecutive ranges, and while batch b's segment crosses
// the nodes (the inner stage, which blocks the channel), the switch already holds batch b + 1's
// parts (switch_send does not block) and multicasts batch b - 1's result:
//
//   step t:  RS parts of batch t  |  RS result, inner allreduce, AG multicast of batch t-1  |
//            AG receives of batch t-2
//
// NCCL's NVLSTree runs these as concurrent warp groups of one kernel (src/device/all_reduce.h,
// runTreeSplit for NVLS_TREE); a channel's program order needs the lag instead.
void emit_nvls_batches(ProgramBuilder& b, const HierPlan& plan, const HierarchicalStages& st, int n, int i,
                       const std::vector<int>& local_of, const std::vector<std::vector<int>>& intra, Range mine, int c,
                       const CollectiveArgs& a, const Tuning& t, std::uint64_t se, int depth, int N) {
  const int g = static_cast<int>(local_of.size());
  const NvlsGroups& ng = plan.nvls[static_cast<std::size_t>(n)];
  const std::uint64_t batches = std::clamp<std::uint64_t>(slice_count(mine.count, se), 1, kNvlsBatches);
  auto batch = [&](std::uint64_t k) {
    const Range r = split(Range{0, mine.count}, batches, k);
    return Range{mine.offset + r.offset, r.count};
  };
  for (std::uint64_t step = 0; step < batches + 2; ++step) {
    if (step < batches) {  // RS parts of batch `step`
      const Range r = batch(step);
      const std::vector<Chunk> in = segments(BufferId::Input, r, g);
      const std::uint64_t pieces = slice_count(r.count, se);
      for (std::uint64_t k = 0; k < pieces; ++k) nvls_reduce_scatter_send(b, ng, local_of, in, pieces, k, c);
    }
    if (step >= 1 && step <= batches) {  // batch step - 1: its reduction, across nodes, multicast
      const Range r = batch(step - 1);
      const std::vector<Chunk> seg = segments(BufferId::Output, r, g);
      const std::uint64_t pieces = slice_count(r.count, se);
      for (std::uint64_t k = 0; k < pieces; ++k) nvls_reduce_scatter_recv(b, ng, local_of, i, seg, pieces, k, c);
      emit_across(b, plan, st, n, i, local_of, intra, seg[static_cast<std::size_t>(i)], c, a, t, se, depth, N);
      for (std::uint64_t k = 0; k < pieces; ++k) nvls_allgather_send(b, ng, local_of, i, seg, pieces, k, c);
    }
    if (step >= 2) {  // batch step - 2: every segment's multicast received
      const Range r = batch(step - 2);
      const std::vector<Chunk> seg = segments(BufferId::Output, r, g);
      const std::uint64_t pieces = slice_count(r.count, se);
      for (std::uint64_t k = 0; k < pieces; ++k) nvls_allgather_recv(b, ng, local_of, seg, pieces, k, c);
    }
  }
}

// `hierarchical` (rings inside and across, no switch groups) declares its symmetry
// (ProgramSymmetry) where it holds exactly, on nodes alike (patterns/ring.hpp):
//   the rotation, with equal channels and K a multiple of g: channel c's rings rotate each node
//     by c, so one GPU on along every node maps channel c's node rings, and with them the rails'
//     groups across (same positions), onto channel c + 1's;
//   the shift by one node, when every segment of every channel splits evenly over the N nodes:
//     each node is then position n of rings across whose steps all carry one size.
// Else, shape only (ProgramSymmetry::shape_only), where no segment inside or part across is
// empty and each kind is cut into one number of slices on every channel: the rotation with the
// shift when K is a multiple of g, the shift alone otherwise.
std::optional<ProgramSymmetry> hierarchical_symmetry(const Layout& l, const CollectiveArgs& a, const Tuning& t, int K,
                                                     const HierarchicalStages& st) {
  if (st.inner != &ring_group() || st.nvls_intra || l.ranks < 2 || !nodes_alike(l)) return std::nullopt;
  const int p = l.ranks, g = l.ranks_per_node(), N = l.nodes;
  const auto G = static_cast<std::uint64_t>(g), Nn = static_cast<std::uint64_t>(N);
  const std::uint64_t se = slice_elems(a, t);
  bool shift = true, nonempty = true;
  std::set<std::uint64_t> inside_slices, across_slices;
  for (int c = 0; c < K; ++c) {
    const Range mine = channel_range(a.count, K, c);
    for (std::uint64_t i = 0; i < G; ++i) {
      const Range seg = split(mine, G, i);
      shift = shift && seg.count % Nn == 0;
      nonempty = nonempty && seg.count > 0;
      inside_slices.insert(slice_count(seg.count, se));
      for (std::uint64_t n = 0; n < Nn; ++n) {
        const std::uint64_t part = split(seg, Nn, n).count;
        nonempty = nonempty && part > 0;
        across_slices.insert(slice_count(part, se));
      }
    }
  }
  const bool rotates = g >= 2 && K % g == 0;
  if (rotates && a.count % static_cast<std::uint64_t>(K) == 0)
    return ProgramSymmetry::rotation(p, shift ? g : p, l.node_ranks, rotation_channels(K, g));
  if (shift && N > 1) return ProgramSymmetry::shift(p, g);
  if (!nonempty || N < 2 || across_slices.size() != 1) return std::nullopt;
  if (rotates && inside_slices.size() == 1)
    return ProgramSymmetry::rotation(p, g, l.node_ranks, rotation_channels(K, g)).shape_only();
  return ProgramSymmetry::shift(p, g).shape_only();
}

Schedule make_hierarchical(const Layout& l, const CollectiveArgs& a, const Tuning& t, const HierarchicalStages& st) {
  const int K = stage_channels(st, a, t);
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
  plan->node_of = l.node_of;
  const std::uint64_t se = slice_elems(a, t);
  const int depth = std::max(1, t.pipeline_depth);
  Schedule s(st.name, a, K, 0, [plan, a, K, g, N, se, depth, st, t](int rank, Program& out) {
    ProgramBuilder b(out);
    const int n = plan->node_of[static_cast<std::size_t>(rank)];
    for (int c = 0; c < K; ++c) {
      const Range mine = channel_range(a.count, K, c);
      const auto& intra = plan->intra[static_cast<std::size_t>(c)];
      const auto& ring = intra[static_cast<std::size_t>(n)];
      const int i = plan->pos[static_cast<std::size_t>(c)][static_cast<std::size_t>(rank)];
      const std::vector<Chunk> seg = segments(BufferId::Output, mine, g);
      // Ring position j on channel c is the node's GPU of local index (j + c) mod g (rotate).
      std::vector<int> local_of;
      for (int j = 0; j < g; ++j) local_of.push_back((j + c % g) % g);
      if (st.nvls_intra) {
        emit_nvls_batches(b, *plan, st, n, i, local_of, intra, mine, c, a, t, se, depth, N);
        continue;
      }
      // 1. Inside the node: position i ends with segment i reduced over the node, reduced from
      //    the input where it is (recv_reduce_copy; a node of one GPU copies it).
      const std::vector<Chunk> own = segments(BufferId::Input, mine, g);
      ring_reduce_scatter(b, ring, i, seg, c, se, depth, &own);
      // 2. Across nodes: the position-i GPUs of every node allreduce segment i (node n is
      //    position n of the group).
      emit_across(b, *plan, st, n, i, local_of, intra, seg[static_cast<std::size_t>(i)], c, a, t, se, depth, N);
      // 3. Inside the node: everyone gets every segment.
      ring_allgather(b, ring, i, seg, c, se, depth);
    }
  });
  if (st.nvls_intra)
    for (const auto& node : l.node_ranks) plan->nvls.push_back(add_nvls_groups(s, node));
  if (!st.inner) {
    plan->sharp = static_cast<int>(s.switch_groups().size());
    for (int local = 0; local < g; ++local) {
      std::vector<int> across;
      for (const auto& node : l.node_ranks) across.push_back(node[static_cast<std::size_t>(local)]);
      s.add_switch_group(SwitchGroup{SwitchKind::Sharp, across, across});
    }
  }
  if (st.pattern != ChannelPattern::Pipeline)
    for (int c = 0; c < K; ++c) s.set_pattern(c, st.pattern);
  if (std::optional<ProgramSymmetry> sym = hierarchical_symmetry(l, a, t, K, st)) s.set_symmetry(std::move(*sym));
  return s;
}

Support supports_hierarchical(const Layout& l, const HierarchicalStages& st) {
  if (!l.uniform()) return Support::no("needs the same number of GPUs on every node");
  if (st.nvls_intra && !l.nvls_everywhere())
    return Support::no(
        fmt::format("needs NVLS (NVSwitch multicast on GPUs of sm 90 or later, NCCL's nvlsSupport) "
                    "in every node; node {} has none",
                    l.first_node_without_nvls()));
  if (!st.inner || st.pattern == ChannelPattern::Tree) {
    if (l.nodes < 2)
      return Support::no(fmt::format("needs at least 2 nodes (it reduces across nodes); on one node use {}",
                                     st.nvls_intra ? "nvls" : "ring"));
  }
  if (!st.inner && !l.sharp)
    return Support::no("needs a fabric whose switches reduce (SHARP, NCCL's CollNet): the fabric's 'sharp' is off");
  return Support::yes();
}

// The two stages inside the nodes, plus the stage across nodes over N members of S/g bytes
// each; every byte across goes to another node. Rings inside: 2(g-1) steps and 2(g-1)/g S
// bytes; NVLS inside: 2 steps and S + S/g bytes given to the switch. SHARP across: 1 step and
// S/g bytes.
CostSheet cost_hierarchical(const Layout& l, const CollectiveArgs& a, const Tuning& t, const HierarchicalStages& st) {
  CostSheet cs;
  cs.busbw_factor = busbw_factor(a.collective, l.ranks);
  if (a.count == 0 || (l.ranks == 1 && !st.nvls_intra)) return cs;
  const double g = l.ranks_per_node(), S = static_cast<double>(a.count * size_of(a.dtype));
  const double intra = st.nvls_intra ? S + S / g : 2 * (g - 1) / g * S;
  const std::uint64_t intra_steps = st.nvls_intra ? 2 : static_cast<std::uint64_t>(2 * (l.ranks_per_node() - 1));
  GroupCost across;
  if (!st.inner)
    across = {1, S / g};
  else if (l.nodes > 1)
    across = st.inner->cost(l.nodes, S / g, t);
  cs.steps = intra_steps + across.steps;
  cs.bytes_sent = static_cast<std::uint64_t>(std::llround(intra + across.bytes));
  cs.inter_bytes_sent = static_cast<std::uint64_t>(std::llround(across.bytes));
  return cs;
}

}  // namespace

Algorithm hierarchical(const GroupAllreduce& inner, std::string name) {
  if (name.empty()) name = "hierarchical-" + inner.name;
  return hierarchical(HierarchicalStages{
      name, "reduce-scatter in each node, " + inner.phrase + " allreduce across nodes per rail, allgather in each node",
      false, &inner, ChannelPattern::Pipeline});
}

Algorithm hierarchical(HierarchicalStages st) {
  return {st.name,
          st.description,
          Collective::AllReduce,
          [st](const Layout& l, const CollectiveArgs&, const Tuning&) { return supports_hierarchical(l, st); },
          [st](const Layout& l, const CollectiveArgs& a, const Tuning& t) { return cost_hierarchical(l, a, t, st); },
          [st](const Layout& l, const CollectiveArgs& a, const Tuning& t) { return make_hierarchical(l, a, t, st); }};
}

}  // namespace topocoll::algo
