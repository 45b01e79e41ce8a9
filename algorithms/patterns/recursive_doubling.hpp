// Recursive doubling's roles (MPICH's, Open MPI's latency allreduce), as group positions. With m
// the largest power of two <= p and r = p - m, the first 2r positions pair up and the even one
// folds its data into the odd one; the m remaining positions exchange the whole buffer with the
// partner at distance 1, 2, 4, ... in a virtual numbering (log2 m steps), reducing what they
// receive; then each odd one of the first 2r hands the result back.
//
//   p = 6, m = 4, r = 2:   fold     0 -> 1, 2 -> 3
//                          exchange over {1, 3, 4, 5} (virtual 0 1 2 3): 1<->3, 4<->5; 1<->4, 3<->5
//                          unfold   1 -> 0, 3 -> 2
#pragma once

#include <cstdint>
#include <vector>

namespace topocoll::algo {

// One position's part of recursive doubling, as group positions (-1: none).
struct RdRole {
  int fold_to = -1;           // even position of the first 2r: sends its data here, then waits
  int fold_from = -1;         // odd position of the first 2r: reduces this one's data first
  std::vector<int> partners;  // exchange partners, in step order
  bool operator==(const RdRole&) const = default;
};

RdRole rd_role(int p, int pos);

// Longest chain of dependent transfers (the verifier's logical clock): a step's send leaves at
// the sender's clock, a receive moves the receiver's clock past it. The fold overlaps the first
// exchange of the positions that do not fold, so a non-power of two costs log2 m + 1 or + 2.
std::uint64_t rd_steps(int p);

}  // namespace topocoll::algo
