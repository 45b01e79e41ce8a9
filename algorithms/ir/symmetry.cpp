#include "algorithms/ir/symmetry.hpp"

#include <fmt/format.h>

#include <utility>

#include "algorithms/ir/program_index.hpp"
#include "algorithms/ir/schedule.hpp"
#include "common/errors.hpp"

namespace topocoll::algo {

ProgramSymmetry ProgramSymmetry::shift(int ranks, int d) {
  TOPOCOLL_ASSERT(ranks > 0 && d > 0 && d <= ranks && ranks % d == 0,
                  fmt::format("a shift by {} of {} ranks: it must divide the ranks", d, ranks));
  ProgramSymmetry s;
  s.p_ = ranks;
  s.d_ = d;
  return s;
}

ProgramSymmetry ProgramSymmetry::rotation(int ranks, int d, std::vector<std::vector<int>> node_ring,
                                          std::vector<int> pi) {
  ProgramSymmetry s = shift(ranks, d);
  TOPOCOLL_ASSERT(!node_ring.empty() && !pi.empty(), "a rotation needs nodes and channels");
  const int G = static_cast<int>(node_ring.front().size());
  TOPOCOLL_ASSERT(
      G >= 1 && static_cast<int>(node_ring.size()) * G == ranks && d % G == 0,
      fmt::format("a rotation of {} nodes of {} ranks with a shift by {} of {} ranks", node_ring.size(), G, d, ranks));
  s.G_ = G;
  s.node_.assign(static_cast<std::size_t>(ranks), -1);
  s.pos_.assign(static_cast<std::size_t>(ranks), -1);
  for (std::size_t n = 0; n < node_ring.size(); ++n) {
    TOPOCOLL_ASSERT(static_cast<int>(node_ring[n].size()) == G, fmt::format("node {} of another size", n));
    for (std::size_t i = 0; i < node_ring[n].size(); ++i) {
      const int r = node_ring[n][i];
      TOPOCOLL_ASSERT(r >= 0 && r < ranks && r / G == static_cast<int>(n) && s.node_[static_cast<std::size_t>(r)] < 0,
                      fmt::format("node {} lists rank {}: nodes must hold ranks n*G .. n*G+G-1", n, r));
      s.node_[static_cast<std::size_t>(r)] = static_cast<int>(n);
      s.pos_[static_cast<std::size_t>(r)] = static_cast<int>(i);
    }
  }
  // The shift commutes with sigma: node n + d/G's ring is node n's shifted by d.
  const std::size_t nodes = node_ring.size(), dn = static_cast<std::size_t>(d / G);
  for (std::size_t n = 0; n < nodes; ++n)
    for (std::size_t i = 0; i < static_cast<std::size_t>(G); ++i)
      TOPOCOLL_ASSERT(
          node_ring[(n + dn) % nodes][i] == (node_ring[n][i] + d) % ranks,
          fmt::format("the shift by {} does not carry node {}'s ring order onto node {}'s", d, n, (n + dn) % nodes));
  // pi: a permutation whose G-th power is the identity.
  const std::size_t K = pi.size();
  std::vector<char> seen(K, 0);
  for (int c : pi) {
    TOPOCOLL_ASSERT(c >= 0 && static_cast<std::size_t>(c) < K && !seen[static_cast<std::size_t>(c)],
                    "the channel permutation is not one");
    seen[static_cast<std::size_t>(c)] = 1;
  }
  s.pi_pow_.assign(static_cast<std::size_t>(G) + 1, std::vector<int>(K));
  for (std::size_t c = 0; c < K; ++c) s.pi_pow_[0][c] = static_cast<int>(c);
  for (std::size_t k = 1; k <= static_cast<std::size_t>(G); ++k)
    for (std::size_t c = 0; c < K; ++c) s.pi_pow_[k][c] = pi[static_cast<std::size_t>(s.pi_pow_[k - 1][c])];
  TOPOCOLL_ASSERT(s.pi_pow_.back() == s.pi_pow_.front(),
                  fmt::format("the channel permutation's {}-th power is not the identity", G));
  s.pi_pow_.pop_back();
  s.ring_ = std::move(node_ring);
  s.pi_ = std::move(pi);
  return s;
}

ProgramSymmetry ProgramSymmetry::shape_only() && {
  sizes_equal_ = false;
  return std::move(*this);
}

int ProgramSymmetry::sigma(int x, int k) const {
  const auto n = static_cast<std::size_t>(node_[static_cast<std::size_t>(x)]);
  return ring_[n][static_cast<std::size_t>((pos_[static_cast<std::size_t>(x)] + k) % G_)];
}

int ProgramSymmetry::representative(int r) const {
  if (!rotates()) return r % d_;
  return ring_[static_cast<std::size_t>(node_[static_cast<std::size_t>(r)] % (d_ / G_))][0];
}

std::vector<int> ProgramSymmetry::representatives() const {
  std::vector<int> out;
  if (!rotates())
    for (int r = 0; r < d_; ++r) out.push_back(r);
  else
    for (int n = 0; n < d_ / G_; ++n) out.push_back(ring_[static_cast<std::size_t>(n)][0]);
  return out;
}

// g_r = shift^m o sigma^k with k = r's place in its node and m = r's node / (d / G) (the
// rotation), or shift^m with m = r / d.
int ProgramSymmetry::move(int x, int r) const {
  if (!rotates()) return (x + r / d_ * d_) % p_;
  const int k = pos_[static_cast<std::size_t>(r)];
  const int m = node_[static_cast<std::size_t>(r)] / (d_ / G_);
  return (sigma(x, k) + m * d_) % p_;
}

int ProgramSymmetry::move_channel(int c, int r) const {
  if (!rotates()) return c;
  return pi_pow_[static_cast<std::size_t>(pos_[static_cast<std::size_t>(r)])][static_cast<std::size_t>(c)];
}

std::string symmetry_mismatch(const Schedule& s, int r) {
  Program a, b;
  return symmetry_mismatch(s, r, a, b);
}

std::string symmetry_mismatch(const Schedule& s, int r, Program& a, Program& b) {
  const ProgramSymmetry* sym = s.symmetry();
  if (sym == nullptr) return {};
  const int rep = sym->representative(r), K = s.num_channels();
  // Per channel, each program's ops in order.
  auto by_channel = [K](const Program& prog) {
    std::vector<std::vector<const Op*>> out(static_cast<std::size_t>(K));
    for (const Op& op : prog)
      if (op.channel < K) out[static_cast<std::size_t>(op.channel)].push_back(&op);
    return out;
  };
  s.program_into(rep, a);
  b.reserve(a.size());  // the same length when the declaration holds
  s.program_into(r, b);
  const auto x = by_channel(a), y = by_channel(b);
  for (int c = 0; c < K; ++c) {
    const auto& xs = x[static_cast<std::size_t>(c)];
    const int mc = sym->move_channel(c, r);
    const auto& ys = y[static_cast<std::size_t>(mc)];
    if (xs.size() != ys.size())
      return fmt::format("rank {} has {} ops on channel {}, its representative {} {} on channel {}", r, ys.size(), mc,
                         rep, xs.size(), c);
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const Op& o = *xs[i];
      const Op& q = *ys[i];
      const bool transfer = is_transfer(o.kind);
      // Shape only: sizes may differ (a size that is zero on one side only shows as another op
      // count or kind: zero-element ops are dropped).
      const bool sizes_ok = !sym->sizes_equal() || o.count() == q.count();
      if (o.kind != q.kind || !sizes_ok || (transfer ? sym->move(o.peer, r) != q.peer : o.peer != q.peer))
        return fmt::format("rank {} channel {} op {} is {}; its representative {}'s on channel {} moved gives {}", r,
                           mc, i, describe(q), rep, c, describe(o));
    }
  }
  return {};
}

}  // namespace topocoll::algo
