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
#include <fmt/format.h>

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

// alltoallv-pairwise: alltoall-pairwise with the blocks of a size matrix (AllToAllVSizes): at step
// k rank r sends its block for (r+k)%p, count(r, r+k) elements at send_displ(r, r+k), and receives
// count(r-k, r) elements into scratch at recv_displ(r, r-k); then every received block is copied to
// the output (in place, with a symmetric matrix, the output is the input). Each channel carries
// its part of every block, in slices; empty blocks send nothing (zero-element ops are dropped on
// both sides alike).
Schedule make_alltoallv_pairwise(const Layout&, const CollectiveArgs& a, const Tuning& t) {
  const int K = std::max(1, t.channels);
  const std::uint64_t se = slice_elems(a, t);
  const std::shared_ptr<const AllToAllVSizes> m = a.sizes;
  return Schedule("alltoallv-pairwise", a, K, a.output_count(), [m, K, se](int r, Program& out) {
    ProgramBuilder b(out);
    const int p = m->ranks();
    for (int c = 0; c < K; ++c) {
      for (int k = 1; k < p; ++k) {
        const int to = (r + k) % p, from = (r - k + p) % p;
        const Range send_part = channel_range(m->count(r, to), K, c);
        const Range recv_part = channel_range(m->count(from, r), K, c);
        const Chunk src{BufferId::Input, m->send_displ(r, to) + send_part.offset, send_part.count};
        const Chunk dst{BufferId::Scratch, m->recv_displ(r, from) + recv_part.offset, recv_part.count};
        const std::uint64_t ns = slice_count(src.count, se), nr = slice_count(dst.count, se);
        for (std::uint64_t s = 0; s < ns; ++s) b.send(to, slice(src, ns, s), c);
        for (std::uint64_t s = 0; s < nr; ++s) b.recv(from, slice(dst, nr, s), c);
      }
      const Range own = channel_range(m->count(r, r), K, c);
      b.copy(Chunk{BufferId::Input, m->send_displ(r, r) + own.offset, own.count},
             Chunk{BufferId::Output, m->recv_displ(r, r) + own.offset, own.count}, c);
      for (int j = 0; j < p; ++j)
        if (j != r) {
          const Range part = channel_range(m->count(j, r), K, c);
          const std::uint64_t at = m->recv_displ(r, j) + part.offset;
          b.copy(Chunk{BufferId::Scratch, at, part.count}, Chunk{BufferId::Output, at, part.count}, c);
        }
    }
  });
}

Support supports_alltoallv(const Layout&, const CollectiveArgs& a, const Tuning&) {
  if (!a.sizes) return Support::no("an alltoallv needs a size matrix (--sizes FILE)");
  if (a.sizes->ranks() != a.ranks)
    return Support::no(fmt::format("the size matrix is for {} ranks, the job has {}", a.sizes->ranks(), a.ranks));
  return Support::yes();
}

// Steps: the longest chain of dependent transfers, which empty blocks shorten (a rank's clock
// after step k is max(its own, the sender's + 1) when the block of step k is not empty): computed
// per channel (a channel's part of a block can be empty where the block is smaller than the
// channel count). Bytes: the most any rank sends, and the most any rank sends off its node.
std::uint64_t alltoallv_pairwise_steps(const AllToAllVSizes& m, int channels) {
  const int p = m.ranks();
  bool uniform_channels = true;  // every block empty or at least `channels` long: one pattern
  for (int i = 0; i < p && uniform_channels; ++i)
    for (int j = 0; j < p; ++j)
      if (m.count(i, j) > 0 && m.count(i, j) < static_cast<std::uint64_t>(channels)) uniform_channels = false;
  std::uint64_t steps = 0;
  std::vector<std::uint64_t> clock(static_cast<std::size_t>(p)), next(clock.size());
  for (int c = 0; c < (uniform_channels ? 1 : channels); ++c) {
    std::fill(clock.begin(), clock.end(), 0);
    for (int k = 1; k < p; ++k) {
      for (int r = 0; r < p; ++r) {
        const int from = (r - k + p) % p;
        const auto ru = static_cast<std::size_t>(r);
        next[ru] = channel_range(m.count(from, r), channels, c).count > 0
                       ? std::max(clock[ru], clock[static_cast<std::size_t>(from)] + 1)
                       : clock[ru];
      }
      clock.swap(next);
    }
    steps = std::max(steps, *std::max_element(clock.begin(), clock.end()));
  }
  return steps;
}

CostSheet cost_alltoallv_pairwise(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  CostSheet c;
  c.busbw_factor = busbw_factor(a.collective, l.ranks);
  if (l.ranks == 1 || !a.sizes || a.sizes->total() == 0) return c;
  const AllToAllVSizes& m = *a.sizes;
  const std::uint64_t elem = size_of(a.dtype);
  c.steps = alltoallv_pairwise_steps(m, std::max(1, t.channels));
  for (int r = 0; r < l.ranks; ++r) {
    std::uint64_t sent = 0, off = 0;
    for (int j = 0; j < l.ranks; ++j) {
      if (j == r) continue;
      sent += m.count(r, j);
      if (l.node_of[static_cast<std::size_t>(j)] != l.node_of[static_cast<std::size_t>(r)]) off += m.count(r, j);
    }
    c.bytes_sent = std::max(c.bytes_sent, sent * elem);
    c.inter_bytes_sent = std::max(c.inter_bytes_sent, off * elem);
  }
  return c;
}

}  // namespace

Algorithm alltoallv_pairwise() {
  return {"alltoallv-pairwise",
          "pairwise all-to-allv (Open MPI's pairwise alltoallv): p-1 steps, at step k rank r sends its block for "
          "r+k and receives the block of r-k, blocks sized by the size matrix",
          Collective::AllToAllV,
          supports_alltoallv,
          cost_alltoallv_pairwise,
          make_alltoallv_pairwise};
}

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
