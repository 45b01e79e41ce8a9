// All-to-all as a collective of its own: the pairwise exchange (NCCL's and Open MPI's pairwise
// all-to-all) and a hierarchical one (NCCL's PXN: gather per rail inside the node, then one
// message per node pair along the rail). Cost sheets in docs/algorithms.md: p ranks, N nodes of g,
// K channels, B = bytes of one block (count elements, what a rank sends each peer).
//
// alltoall-pairwise:
//   step k = 1 .. p-1:  rank r sends its input block (r+k)%p to rank (r+k)%p
//                       and receives block r of rank (r-k+p)%p
//
// Received blocks land in scratch and are copied to the output once every send of the channel was
// issued: in place the output is the input (one buffer, as NCCL's in-place alltoall), and a block
// received at step k would otherwise overwrite the input block sent at step p-k. Each channel
// carries its part of every block (channel_range), in slices.
#include <algorithm>
#include <memory>
#include <vector>

#include "algorithms/blocks.hpp"
#include "algorithms/generators/generators.hpp"
#include "algorithms/patterns/ring.hpp"

namespace topocoll::algo {

namespace {

// `part` (a channel's range inside a block) of block j of a buffer of p blocks of `count`.
Chunk block_part(BufferId b, int j, std::uint64_t count, Range part) {
  return Chunk{b, static_cast<std::uint64_t>(j) * count + part.offset, part.count};
}

Schedule make_alltoall_pairwise(const Layout&, const CollectiveArgs& a, const Tuning& t) {
  const int K = std::max(1, t.channels);
  const std::uint64_t se = slice_elems(a, t);
  return Schedule("alltoall-pairwise", a, K, a.count_times_ranks(), [a, K, se](int r, Program& out) {
    ProgramBuilder b(out);
    const int p = a.ranks;
    for (int c = 0; c < K; ++c) {
      const Range part = channel_range(a.count, K, c);
      const std::uint64_t n = slice_count(part.count, se);
      for (int k = 1; k < p; ++k) {
        const int to = (r + k) % p, from = (r - k + p) % p;
        const Chunk src = block_part(BufferId::Input, to, a.count, part);
        const Chunk dst = block_part(BufferId::Scratch, from, a.count, part);
        for (std::uint64_t s = 0; s < n; ++s) b.send(to, slice(src, n, s), c);
        for (std::uint64_t s = 0; s < n; ++s) b.recv(from, slice(dst, n, s), c);
      }
      b.copy(block_part(BufferId::Input, r, a.count, part), block_part(BufferId::Output, r, a.count, part), c);
      for (int j = 0; j < p; ++j)
        if (j != r)
          b.copy(block_part(BufferId::Scratch, j, a.count, part), block_part(BufferId::Output, j, a.count, part), c);
    }
  });
}

// p-1 steps; every rank sends p-1 blocks, those to ranks of other nodes off-node.
CostSheet cost_alltoall_pairwise(const Layout& l, const CollectiveArgs& a, const Tuning&) {
  CostSheet c;
  c.busbw_factor = busbw_factor(a.collective, l.ranks);
  if (l.ranks == 1 || a.count == 0) return c;
  const std::uint64_t block = a.count * size_of(a.dtype);
  c.steps = static_cast<std::uint64_t>(l.ranks - 1);
  c.bytes_sent = static_cast<std::uint64_t>(l.ranks - 1) * block;
  std::uint64_t most_off_node = 0;
  for (int r = 0; r < l.ranks; ++r) {
    const auto node = l.node_of[static_cast<std::size_t>(r)];
    const auto same = std::count(l.node_of.begin(), l.node_of.end(), node);
    most_off_node = std::max(most_off_node, static_cast<std::uint64_t>(l.ranks - same));
  }
  c.inter_bytes_sent = most_off_node * block;
  return c;
}

// alltoall-hierarchical. Rank (n, i) is local index i of node n (its place in node_ranks, the
// rail hierarchical.cpp uses too). A block from (n, i) to (m, j) goes first inside node n to
// (n, j), the rank on the destination's rail, then from (n, j) to (m, j) along rail j, aggregated
// with the blocks of node n's other ranks for (m, j):
//
//   pack     A[j][m]  = input block of (m, j)                   for every local j != i, node m
//   stage 1  pairwise in the node (g-1 steps): A[j] (N blocks) to (n, j), R[i'] from (n, i')
//   gather   C[m][i'] = R[i'][m], C[m][i] = input block of (m, i)   for every node m != n
//   stage 2  pairwise across nodes on the rail (N-1 steps): C[m] (g blocks) to (m, i), D[m'] from (m', i)
//   unpack   output block of (n, i') = R[i'][n], of (m', i') = D[m'][i'], own block from the input
//
// Scratch holds, per channel, the four regions A, R, C, D of p parts of the channel's size each,
// so a message of several blocks is one contiguous chunk; the output is written only after the
// last read of the input (in place they are one buffer).
struct NodeGrid {
  std::vector<int> node, local;         // per rank
  std::vector<std::vector<int>> ranks;  // [node][local]
  int nodes = 0, per_node = 0;
  explicit NodeGrid(const Layout& l)
      : node(static_cast<std::size_t>(l.ranks)),
        local(static_cast<std::size_t>(l.ranks)),
        ranks(l.node_ranks),
        nodes(l.nodes),
        per_node(l.ranks_per_node()) {
    for (int n = 0; n < nodes; ++n)
      for (int i = 0; i < per_node; ++i) {
        const int r = ranks[static_cast<std::size_t>(n)][static_cast<std::size_t>(i)];
        node[static_cast<std::size_t>(r)] = n;
        local[static_cast<std::size_t>(r)] = i;
      }
  }
  int at(int n, int i) const { return ranks[static_cast<std::size_t>(n)][static_cast<std::size_t>(i)]; }
};

Schedule make_alltoall_hierarchical(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  const int K = std::max(1, t.channels);
  const std::uint64_t se = slice_elems(a, t);
  auto grid = std::make_shared<const NodeGrid>(l);
  const std::uint64_t p = static_cast<std::uint64_t>(a.ranks);
  return Schedule("alltoall-hierarchical", a, K, 4 * a.count_times_ranks(), [a, K, se, grid, p](int r, Program& out) {
    ProgramBuilder b(out);
    const int N = grid->nodes, g = grid->per_node;
    const int n = grid->node[static_cast<std::size_t>(r)], i = grid->local[static_cast<std::size_t>(r)];
    const auto G = static_cast<std::uint64_t>(g), Nu = static_cast<std::uint64_t>(N);
    for (int c = 0; c < K; ++c) {
      const Range part = channel_range(a.count, K, c);
      const std::uint64_t w = part.count;
      // Region `reg` (A 0, R 1, C 2, D 3) of this channel, `blocks` parts from index `idx`.
      auto region = [&](int reg, std::uint64_t idx, std::uint64_t blocks) {
        return Chunk{BufferId::Scratch, 4 * p * part.offset + (static_cast<std::uint64_t>(reg) * p + idx) * w,
                     blocks * w};
      };
      auto block = [&](BufferId buf, int rank) { return block_part(buf, rank, a.count, part); };
      auto transfer = [&](int to, const Chunk& src, int from, const Chunk& dst) {
        const std::uint64_t so = slice_count(src.count, se), si = slice_count(dst.count, se);
        for (std::uint64_t s = 0; s < so; ++s) b.send(to, slice(src, so, s), c);
        for (std::uint64_t s = 0; s < si; ++s) b.recv(from, slice(dst, si, s), c);
      };
      for (int j = 0; j < g; ++j)  // pack
        if (j != i)
          for (int m = 0; m < N; ++m)
            b.copy(block(BufferId::Input, grid->at(m, j)),
                   region(0, static_cast<std::uint64_t>(j) * Nu + static_cast<std::uint64_t>(m), 1), c);
      for (int m = 0; m < N; ++m)  // own blocks for the rail
        if (m != n)
          b.copy(block(BufferId::Input, grid->at(m, i)),
                 region(2, static_cast<std::uint64_t>(m) * G + static_cast<std::uint64_t>(i), 1), c);
      for (int k = 1; k < g; ++k) {  // stage 1
        const int to = (i + k) % g, from = (i - k + g) % g;
        transfer(grid->at(n, to), region(0, static_cast<std::uint64_t>(to) * Nu, Nu), grid->at(n, from),
                 region(1, static_cast<std::uint64_t>(from) * Nu, Nu));
      }
      for (int m = 0; m < N; ++m)  // gather per destination node
        if (m != n)
          for (int j = 0; j < g; ++j)
            if (j != i)
              b.copy(region(1, static_cast<std::uint64_t>(j) * Nu + static_cast<std::uint64_t>(m), 1),
                     region(2, static_cast<std::uint64_t>(m) * G + static_cast<std::uint64_t>(j), 1), c);
      for (int k = 1; k < N; ++k) {  // stage 2
        const int to = (n + k) % N, from = (n - k + N) % N;
        transfer(grid->at(to, i), region(2, static_cast<std::uint64_t>(to) * G, G), grid->at(from, i),
                 region(3, static_cast<std::uint64_t>(from) * G, G));
      }
      b.copy(block(BufferId::Input, r), block(BufferId::Output, r), c);  // unpack
      for (int j = 0; j < g; ++j)
        if (j != i)
          b.copy(region(1, static_cast<std::uint64_t>(j) * Nu + static_cast<std::uint64_t>(n), 1),
                 block(BufferId::Output, grid->at(n, j)), c);
      for (int m = 0; m < N; ++m)
        if (m != n)
          for (int j = 0; j < g; ++j)
            b.copy(region(3, static_cast<std::uint64_t>(m) * G + static_cast<std::uint64_t>(j), 1),
                   block(BufferId::Output, grid->at(m, j)), c);
    }
  });
}

Support supports_alltoall_hierarchical(const Layout& l, const CollectiveArgs&, const Tuning&) {
  if (!l.uniform()) return Support::no("needs the same number of GPUs on every node");
  return Support::yes();
}

// (g-1) + (N-1) steps; (g-1) N blocks inside the node, (N-1) g blocks across nodes.
CostSheet cost_alltoall_hierarchical(const Layout& l, const CollectiveArgs& a, const Tuning&) {
  CostSheet c;
  c.busbw_factor = busbw_factor(a.collective, l.ranks);
  if (l.ranks == 1 || a.count == 0) return c;
  const std::uint64_t block = a.count * size_of(a.dtype);
  const auto g = static_cast<std::uint64_t>(l.ranks_per_node()), N = static_cast<std::uint64_t>(l.nodes);
  c.steps = (g - 1) + (N - 1);
  c.inter_bytes_sent = (N - 1) * g * block;
  c.bytes_sent = (g - 1) * N * block + c.inter_bytes_sent;
  return c;
}

}  // namespace

Algorithm alltoall_hierarchical() {
  return {"alltoall-hierarchical",
          "NCCL's PXN all-to-all: blocks gathered inside each node on the rank of the destination's rail, then one "
          "message per node pair along each rail",
          Collective::AllToAll,
          supports_alltoall_hierarchical,
          cost_alltoall_hierarchical,
          make_alltoall_hierarchical};
}

Algorithm alltoall_pairwise() {
  return {"alltoall-pairwise",
          "pairwise all-to-all: p-1 steps, at step k rank r sends block r+k to rank r+k and receives from r-k",
          Collective::AllToAll,
          always,
          cost_alltoall_pairwise,
          make_alltoall_pairwise};
}

}  // namespace topocoll::algo
