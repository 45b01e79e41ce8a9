// Push at bind time (NCCL's directRecvReduceCopySend): which sends of a rank's program may have
// their bytes written straight into the matching receive's destination in the peer's buffers, by
// the pass that computes them, instead of being read out of the sender's buffer by the receiver.
//
//   rank's channel c                          peer B's channel c
//   ... recv_reduce_copy(A, src, D)  ──┐      ... op g-1 (the last op before the receive that
//       (ops that do not write D)      │              touches R: its destination region)
//       send(B, D)   <- fused          └──>   ... recv(rank, R)   <- already filled: no copy
//       send(C, D)   <- fused
//
// A send is a push candidate when its source is exactly the result of a reducing receive
// (recv_reduce or recv_reduce_copy) earlier on its channel that no op of this rank has written
// since (on that channel) or writes at all (on another): the executor then reduces once and
// writes the result to its own destination and to every candidate's target, one cache-sized tile
// at a time (read two operands, write 1 + n), where the pull model has each receiver read it back
// out of D. The data is written at the receive; the send, when its turn comes, only posts its
// descriptor, so the connection's FIFO order stays the program's. That is what lets a two-shot
// allreduce move 4(p-1)/p S bytes per rank instead of a pulled ring's 5(p-1)/p S.
//
// The write lands in the peer's memory before the peer runs its receive, so it is safe only when
// nothing of the peer touches R between the write and that receive. A candidate is accepted
// (PushTarget::ok) when, in the peer's program as matched FIFO per (source, destination, channel):
//   - its receive is a plain recv of a non-empty chunk (R);
//   - no op of the peer on another channel touches R (reads or writes it);
//   - on channel c, the ops before the receive that touch R are local ops or receives (they are
//     over once the peer's channel has completed them: gate = 1 + the last one's position), or
//     sends to this rank on channel c that this rank has received by the time it pushes (at or
//     before the fused reducing receive; the one read by that receive itself must read exactly R,
//     as the in-place ring's does, because the tile loop reads a tile before it writes it).
// At run time the transport still checks that the peer runs the same plan and run, that its
// channel c has completed `gate` ops, and that R lies in memory this rank can write
// (Transport::push_target); otherwise the send goes the ordinary way.
//
// In place, chunks are compared where NCCL's aliasing puts them (algo::in_place_storage), so a
// plan holds two tables, one per placement.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/ir/schedule.hpp"

namespace topocoll::runtime {

struct PushTarget {
  static constexpr std::uint32_t kNone = UINT32_MAX;
  bool ok = false;
  std::uint32_t fuse = kNone;  // the reducing receive it is fused into (op index)
  std::uint8_t buffer = 0;     // the receiver's buffer (algo::BufferId) that holds R
  std::size_t offset = 0;      // R's first byte in it
  std::uint32_t gate = 0;      // ops the receiver's channel must have completed before the write
};

// Per op of `rank`'s program (indexed as s.program(rank)): the push target of each candidate send
// (ok false for every other op and for candidates that fail a rule above). Builds the programs of
// the peers that candidates send to, nothing else.
std::vector<PushTarget> push_targets(const algo::Schedule& s, int rank, bool in_place);

}  // namespace topocoll::runtime
