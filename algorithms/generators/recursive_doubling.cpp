// recursive-doubling: the latency algorithm (MPICH's, Open MPI's for small messages) over the
// flat order of channel c; the roles (fold, exchange partners, unfold) are rd_role in
// patterns/recursive_doubling.hpp. The same roles over any group are the recursive-doubling
// stage hierarchical composes (recursive_doubling_group).
//
// Each step moves the whole buffer, so channels only split the data: a channel carries at least
// kRdMinChannelBytes (fewer channels for small messages, where each one would add a message).
// Cost sheets in docs/algorithms.md use the names below: p ranks, N nodes, g ranks per node,
// K channels, S bytes.
#include "algorithms/patterns/recursive_doubling.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "algorithms/blocks.hpp"
#include "algorithms/generators/generators.hpp"
#include "algorithms/patterns/ring.hpp"

namespace topocoll::algo {

namespace {

inline constexpr std::uint64_t kRdMinChannelBytes = 4096;

int rd_channels(const CollectiveArgs& a, const Tuning& t) {
  const std::uint64_t bytes = a.count * size_of(a.dtype);
  const std::uint64_t fit = std::max<std::uint64_t>(1, bytes / kRdMinChannelBytes);
  return static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(std::max(1, t.channels)), fit));
}

// One member's part, by its role over the group's positions:
//   fold_to     send the data to fold_to, then receive the result from it
//   fold_from   reduce fold_from's data in, exchange with each partner, send the result back
//   otherwise   exchange with each partner (send the data, reduce the partner's in)
// With `own` (out of place: the input), the member's contribution is read where it is: sent from
// there, and the first reduction is a recv_reduce_copy from it (a lone member copies it).
void rd_emit_from(ProgramBuilder& b, std::span<const int> group, int pos, const Chunk& data, int channel,
                  const CollectiveArgs& a, const Tuning& t, const Chunk* own) {
  const std::uint64_t se = slice_elems(a, t);
  const int depth = std::max(1, t.pipeline_depth);
  const std::uint64_t n = slice_count(data.count, se);
  const RdRole role = rd_role(static_cast<int>(group.size()), pos);
  auto peer = [&group](int q) { return group[static_cast<std::size_t>(q)]; };
  const Chunk& mine = own != nullptr ? *own : data;  // where the contribution is
  if (role.fold_to >= 0) {                           // hand the data over, get the result back
    for (std::uint64_t k = 0; k < n; ++k) b.send(peer(role.fold_to), slice(mine, n, k), channel);
    for (std::uint64_t k = 0; k < n; ++k) b.recv(peer(role.fold_to), slice(data, n, k), channel);
    return;
  }
  bool in_data = own == nullptr;  // whether data holds the contribution (reduced so far) yet
  if (role.fold_from >= 0) {
    for (std::uint64_t k = 0; k < n; ++k)
      b.recv_reduce_copy(peer(role.fold_from), slice(mine, n, k), slice(data, n, k), channel);
    in_data = true;
  }
  for (int q : role.partners) {
    pairwise_exchange(b, peer(q), data, true, channel, se, depth, in_data ? nullptr : &mine);
    in_data = true;
  }
  if (!in_data) b.copy(mine, data, channel);  // a group of one
  if (role.fold_from >= 0)
    for (std::uint64_t k = 0; k < n; ++k) b.send(peer(role.fold_from), slice(data, n, k), channel);
}

void rd_emit(ProgramBuilder& b, std::span<const int> group, int pos, const Chunk& data, int channel,
             const CollectiveArgs& a, const Tuning& t) {
  rd_emit_from(b, group, pos, data, channel, a, t, nullptr);
}

// Every member sends B once per exchange, plus once for a fold or an unfold: the busiest sends
// B · (log2 m + 1) (B · log2 m when n = m); the steps are rd_steps(n).
GroupCost rd_cost(int members, double bytes, const Tuning&) {
  std::size_t sends = 0;
  for (int pos = 0; pos < members; ++pos) {
    const RdRole role = rd_role(members, pos);
    sends = std::max(sends, role.partners.size() + (role.fold_to >= 0 ? 1 : 0) + (role.fold_from >= 0 ? 1 : 0));
  }
  return {rd_steps(members), bytes * static_cast<double>(sends)};
}

Schedule make_recursive_doubling(const Layout& l, const CollectiveArgs& a, const Tuning& t) {
  const int K = rd_channels(a, t);
  auto plan = std::make_shared<const RingPlan>(RingPlan::flat(l, K));  // the flat order of each channel
  return Schedule("recursive-doubling", a, K, 0, [plan, a, K, t](int rank, Program& out) {
    ProgramBuilder b(out);
    for (int c = 0; c < K; ++c) {
      const Range mine = channel_range(a.count, K, c);
      const Chunk input = as_chunk(BufferId::Input, mine);  // read where it is, not copied first
      rd_emit_from(b, plan->ring_of(c), plan->position(c, rank), as_chunk(BufferId::Output, mine), c, a, t, &input);
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

}  // namespace

const GroupAllreduce& recursive_doubling_group() {
  static const GroupAllreduce kRd{"recursive-doubling", "recursive-doubling", rd_channels, rd_emit, rd_cost};
  return kRd;
}

Algorithm recursive_doubling_allreduce() {
  return {"recursive-doubling",
          "the latency algorithm: whole-buffer exchanges at distance 1, 2, 4, ... (log2 p steps; non-powers of two "
          "fold in and out)",
          Collective::AllReduce,
          always,
          cost_recursive_doubling,
          make_recursive_doubling};
}

}  // namespace topocoll::algo
