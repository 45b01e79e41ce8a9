// All-to-all as a collective of its own: the pairwise exchange (NCCL's and Open MPI's pairwise
// all-to-all). Cost sheet in docs/algorithms.md: p ranks, K channels, B = bytes of one block
// (count elements, what a rank sends each peer).
//
//   step k = 1 .. p-1:  rank r sends its input block (r+k)%p to rank (r+k)%p
//                       and receives block r of rank (r-k+p)%p
//
// Received blocks land in scratch and are copied to the output once every send of the channel was
// issued: in place the output is the input (one buffer, as NCCL's in-place alltoall), and a block
// received at step k would otherwise overwrite the input block sent at step p-k. Each channel
// carries its part of every block (channel_range), in slices.
#include <algorithm>

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

}  // namespace

Algorithm alltoall_pairwise() {
  return {"alltoall-pairwise",
          "pairwise all-to-all: p-1 steps, at step k rank r sends block r+k to rank r+k and receives from r-k",
          Collective::AllToAll,
          always,
          cost_alltoall_pairwise,
          make_alltoall_pairwise};
}

}  // namespace topocoll::algo
