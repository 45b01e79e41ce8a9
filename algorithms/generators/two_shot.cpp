// two-shot: the allreduce of one NVLink (or shared-memory) domain that TensorRT-LLM and vLLM run
// as their "two-shot" custom allreduce. Per channel the data is cut into p parts, part j owned by
// rank j:
//   shot 1  every rank sends part j of its input to rank j; rank r reduces part r from every
//           peer, in one pass per peer (recv_reduce_copy from its input, then recv_reduce)
//   shot 2  rank r sends its reduced part r to every peer; each receives p-1 parts
// Two steps whatever p (the ring takes 2(p-1)), p-1 messages per rank and step. Each reduced
// slice is sent to every peer right after the receive that completes it, so an executor that
// pushes (runtime/push_plan.hpp) writes it into all p-1 outputs from that pass: 4(p-1)/p S bytes
// of memory traffic per rank, the single-copy bound, where a pulled ring moves 5(p-1)/p S.
// Cost sheets in docs/algorithms.md use the names below: p ranks, N nodes, K channels, S bytes.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "algorithms/blocks.hpp"
#include "algorithms/generators/generators.hpp"
#include "algorithms/patterns/ring.hpp"

namespace topocoll::algo {

namespace {

// p-1 messages per rank and step: an algorithm of one domain, not of a cluster.
inline constexpr int kTwoShotMaxRanks = 64;

int two_shot_channels(const Tuning& t) {
  return std::max(1, t.channels);
}

Support supports_two_shot(const Layout& l, const CollectiveArgs&, const Tuning&) {
  if (l.ranks > kTwoShotMaxRanks)
    return Support::no(
        fmt::format("two-shot sends p-1 = {} messages per rank and step; it is built for one NVLink "
                    "domain, at most {} ranks",
                    l.ranks - 1, kTwoShotMaxRanks));
  return Support::yes();
}

Schedule make_two_shot(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  const int K = two_shot_channels(t);
  const int p = l.ranks;
  return Schedule("two-shot", a, K, 0, [a, t, K, p](int r, Program& out) {
    ProgramBuilder b(out);
    const std::uint64_t se = slice_elems(a, t);
    for (int c = 0; c < K; ++c) {
      const Range range = channel_range(a.count, K, c);
      const std::vector<Chunk> in = segments(BufferId::Input, range, p);
      const std::vector<Chunk> outp = segments(BufferId::Output, range, p);
      const auto part = [](const std::vector<Chunk>& v, int j) -> const Chunk& {
        return v[static_cast<std::size_t>(j)];
      };
      const std::uint64_t n = slice_count(part(outp, r).count, se);
      // Shot 1: part j of the input to its owner, peers in the order r+1, r+2, ...
      for (int d = 1; d < p; ++d) {
        const int j = (r + d) % p;
        const std::uint64_t nj = slice_count(part(in, j).count, se);
        for (std::uint64_t k = 0; k < nj; ++k) b.send(j, slice(part(in, j), nj, k), c);
      }
      // Per slice of the own part: reduce it from every peer (r-1, r-2, ...: the order their
      // sends reach r), then send the result to every peer.
      for (std::uint64_t k = 0; k < n; ++k) {
        const Chunk mine = slice(part(outp, r), n, k);
        if (p == 1) b.copy(slice(part(in, r), n, k), mine, c);
        for (int d = 1; d < p; ++d) {
          const int j = (r - d + p) % p;
          if (d == 1)
            b.recv_reduce_copy(j, slice(part(in, r), n, k), mine, c);
          else
            b.recv_reduce(j, mine, c);
        }
        for (int d = 1; d < p; ++d) b.send((r + d) % p, mine, c);
      }
      // Shot 2's receives: every other part, from its owner.
      for (int d = 1; d < p; ++d) {
        const int j = (r - d + p) % p;
        const std::uint64_t nj = slice_count(part(outp, j).count, se);
        for (std::uint64_t k = 0; k < nj; ++k) b.recv(j, slice(part(outp, j), nj, k), c);
      }
    }
  });
}

// Every rank sends (p-1)/p of each channel's data in each shot: 2(p-1)/p S in all, of which the
// parts for ranks on other nodes leave the node. Two dependent steps.
CostSheet cost_two_shot(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  CostSheet cs;
  cs.busbw_factor = busbw_factor(a.collective, l.ranks);
  if (l.ranks == 1 || a.count == 0) return cs;
  const int K = two_shot_channels(t);
  const int p = l.ranks;
  const std::size_t elem = size_of(a.dtype);
  std::vector<double> sent(static_cast<std::size_t>(p), 0.0), inter(static_cast<std::size_t>(p), 0.0);
  for (int c = 0; c < K; ++c) {
    const std::vector<Chunk> parts = segments(BufferId::Output, channel_range(a.count, K, c), p);
    for (int r = 0; r < p; ++r)
      for (int j = 0; j < p; ++j) {
        if (j == r) continue;
        // Shot 1: part j to j; shot 2: part r to j.
        const double bytes = static_cast<double>(
            (parts[static_cast<std::size_t>(j)].count + parts[static_cast<std::size_t>(r)].count) * elem);
        sent[static_cast<std::size_t>(r)] += bytes;
        if (l.node_of[static_cast<std::size_t>(j)] != l.node_of[static_cast<std::size_t>(r)])
          inter[static_cast<std::size_t>(r)] += bytes;
      }
  }
  cs.steps = 2;
  cs.bytes_sent = static_cast<std::uint64_t>(std::llround(*std::max_element(sent.begin(), sent.end())));
  cs.inter_bytes_sent = static_cast<std::uint64_t>(std::llround(*std::max_element(inter.begin(), inter.end())));
  return cs;
}

}  // namespace

Algorithm two_shot_allreduce() {
  return {"two-shot",
          "one domain's allreduce (TensorRT-LLM's two-shot): each rank reduces its part straight from every peer, "
          "then sends it to every peer; 2 steps, p-1 messages per rank and step, at most 64 ranks",
          Collective::AllReduce,
          supports_two_shot,
          cost_two_shot,
          make_two_shot};
}

}  // namespace topocoll::algo
