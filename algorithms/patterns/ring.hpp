// Ring patterns: pure functions of (layout, channel) that say who follows whom and which part of
// the data a channel and a ring position own. No operations are emitted here (blocks.hpp does).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "algorithms/ir/layout.hpp"
#include "algorithms/ir/schedule.hpp"

namespace topocoll::algo {

// The elements channel c of `channels` carries: the c-th of nearly equal parts of 0..count-1.
Range channel_range(std::uint64_t count, int channels, int c);

// For declared symmetries (ir/symmetry.hpp): whether the layout's ranks are numbered node by
// node with each node's ring order node 0's shifted by n * G (uniform nodes of G ranks), and the
// channel permutation of rings that rotate each node by the channel (channel c + 1, c + 1 - G
// at the end of a block of G channels; K a multiple of G).
bool nodes_alike(const Layout& l);
std::vector<int> rotation_channels(int K, int G);

// v rotated left by `by`: out[i] = v[(i + by) mod n].
std::vector<int> rotate(std::span<const int> v, int by);

// The flat ring of channel c: node 0's GPUs, then node 1's, ...; inside a node in its ring
// order rotated by c, so each channel enters and leaves a node through different GPUs and
// therefore different NICs (rails).
//
//   channel 0:  n0[a b c d] -> n1[a b c d] -> ... -> back to n0's a
//   channel 1:  n0[b c d a] -> n1[b c d a] -> ...     (n0 left by a, entered by b)
std::vector<int> flat_ring(const Layout& l, int c);

// The inverse of a ring: pos[rank] = index of rank in `ring` (-1 for ranks not in it).
std::vector<int> positions(std::span<const int> ring, int ranks);

// `parts` chunks of buffer b covering `whole`: the i-th of nearly equal parts, one per position.
std::vector<Chunk> segments(BufferId b, Range whole, int parts);

// The flat rings of K channels and each rank's position in them, built once per schedule.
struct RingPlan {
  std::vector<std::vector<int>> ring;  // [channel]: flat_ring(l, channel)
  std::vector<std::vector<int>> pos;   // [channel][rank]: position of rank in ring[channel]

  static RingPlan flat(const Layout& l, int channels);
  const std::vector<int>& ring_of(int c) const { return ring[static_cast<std::size_t>(c)]; }
  int position(int c, int rank) const { return pos[static_cast<std::size_t>(c)][static_cast<std::size_t>(rank)]; }
};

}  // namespace topocoll::algo
