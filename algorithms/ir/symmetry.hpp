// What a generator knows of its programs' symmetry, declared on the schedule so that an engine
// can simulate one rank per orbit without generating the others (the analytic engine's
// quotient: simulator/analytic.cpp, docs/simulator.md "Symmetry").
//
// Two moves of the ranks, each a whole-schedule automorphism of the programs (op for op on
// each channel: the same kinds and sizes, transfer peers moved along):
//   the shift by d (d divides p): rank (r + d) mod p's program on channel c is rank r's with every
//     transfer peer q replaced by (q + d) mod p;
//   the rotation (optional) sigma, pi: sigma moves each rank one place on along its node's ring
//     order (node_ring[n]: node n's ranks, which are n*G .. n*G+G-1), pi permutes the channels in
//     cycles whose lengths divide G; rank sigma(r)'s program on channel pi(c) is rank r's on
//     channel c with every transfer peer q replaced by sigma(q).
// With the rotation the shift is a whole number of nodes and commutes with sigma; the group the
// two generate moves every rank (no element but the identity fixes one), so every rank r is
// g_r(rep(r)) for exactly one element g_r and one representative rep(r): the first rank of node
// n mod (d / G) with the rotation, r mod d without.
//
// Declared only where it holds exactly: `symmetry_mismatch` compares a rank's generated program
// with its representative's moved, and a test does so for every rank over the registry.
//
// Shape only (`sizes_equal()` false): the moves hold op for op but for the operations' sizes (a
// ring whose segments differ by an element from rank to rank: the same ops, the same peers, the
// same slices). Times depend on sizes, so an engine takes such a declaration only for what does
// not: the analytic engine's latency bound (every size zero) on the quotient, which lets it skip
// a run that cannot be the fastest without generating every rank (simulator/analytic.cpp).
#pragma once

#include <string>
#include <vector>

namespace topocoll::algo {

class Schedule;
struct Op;

class ProgramSymmetry {
 public:
  // The shift alone. InternalError unless 0 < d <= p and d divides p.
  static ProgramSymmetry shift(int ranks, int d);
  // The shift with the rotation. InternalError when they are inconsistent (above).
  static ProgramSymmetry rotation(int ranks, int d, std::vector<std::vector<int>> node_ring, std::vector<int> pi);

  // The same declaration, holding for the ops' kinds, channels and peers but not their sizes.
  ProgramSymmetry shape_only() &&;
  bool sizes_equal() const { return sizes_equal_; }

  int ranks() const { return p_; }
  int shift_ranks() const { return d_; }
  bool rotates() const { return !pi_.empty(); }
  int ranks_per_node() const { return G_; }
  const std::vector<std::vector<int>>& node_ring() const { return ring_; }
  const std::vector<int>& pi() const { return pi_; }

  // rep(r), and every representative in increasing order.
  int representative(int r) const;
  std::vector<int> representatives() const;
  // g_r applied to rank x, and to channel c (pi^k for the rotation's power k in g_r).
  int move(int x, int r) const;
  int move_channel(int c, int r) const;

 private:
  int p_ = 0, d_ = 0, G_ = 1;
  bool sizes_equal_ = true;
  std::vector<std::vector<int>> ring_;    // per node, with the rotation
  std::vector<int> node_, pos_;           // per rank, with the rotation
  std::vector<std::vector<int>> pi_pow_;  // [k][c]: pi^k(c), k < G
  std::vector<int> pi_;
  int sigma(int x, int k) const;  // sigma^k(x), k >= 0
};

// Where schedule s's declared symmetry fails at rank r: the first channel and op at which r's
// program differs from its representative's moved by g_r; empty when it holds there (or nothing
// is declared). Generates both programs.
std::string symmetry_mismatch(const Schedule& s, int r);
// The same with the two programs generated into `rep_scratch` and `rank_scratch` (storage kept:
// a caller that holds a large program's storage lends it instead of faulting in two more).
std::string symmetry_mismatch(const Schedule& s, int r, std::vector<Op>& rep_scratch, std::vector<Op>& rank_scratch);

}  // namespace topocoll::algo
