// One rank's checked program (algo::ProgramIndex) bound for execution, shared by the two
// executors: Plan (runtime/executor.hpp: round-robin over channels, a send window) and
// RoundExecutor (runtime/rounds.hpp: lockstep rounds). They differ only in their scheduling.
//
//   bind_program   every op's chunks as (buffer, byte offset), its element and byte counts
//   BufferNeeds    which buffers the program touches and the first op that needs each; a run
//                  checks its buffers against it (first_null) instead of walking the ops
//   reduce_local   dst (op)= src for a local reduce, through a staged copy when the operands
//                  partially overlap (the reducer takes identical or disjoint operands);
//   own_operand    the same for a receive-reduce-copy's own operand
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/ir/schedule.hpp"
#include "runtime/memory_space.hpp"

namespace topocoll::runtime {

// The "no memory" buffer of zero-element chunks (a run's base[kNoBuffer] stays null).
inline constexpr std::uint8_t kNoBuffer = 3;

struct BoundOp {
  algo::OpKind kind{};
  std::uint8_t src_buffer = 0, dst_buffer = 0;  // algo::BufferId, or kNoBuffer
  int peer = -1;
  int channel = 0;
  std::size_t src_offset = 0, dst_offset = 0;  // bytes
  std::size_t count = 0, bytes = 0;
};

// A chunk of a checked program as (buffer index, byte offset) for `elem`-byte elements. A
// zero-element chunk resolves to kNoBuffer, offset 0.
void resolve_chunk(const algo::Chunk& c, std::size_t elem, std::uint8_t& buffer, std::size_t& offset);

// Executors that cannot run switch ops (contract rule 11) refuse a schedule that has switch
// groups, at bind time: InputError "schedule 'nvls' uses in-network reduction (switch_send on an
// NVLS group), which <executor> cannot run: ...". Nothing for a schedule without groups.
void refuse_switch_ops(const algo::Schedule& s, const std::string& executor);

// Every op of a checked program, bound for `elem`-byte elements.
std::vector<BoundOp> bind_program(const algo::Program& program, std::size_t elem);

struct BufferNeeds {
  static constexpr std::uint32_t kNone = UINT32_MAX;
  std::uint32_t first_user[3] = {kNone, kNone, kNone};  // per buffer: the first op that needs it
  // The buffer (0 input, 1 output, 2 scratch) that the program needs and `base` leaves null, the
  // first of them; -1 when there is none.
  int first_null(std::byte* const base[3]) const {
    for (int b = 0; b < 3; ++b)
      if (first_user[b] != kNone && base[b] == nullptr) return b;
    return -1;
  }
};
BufferNeeds buffer_needs(const std::vector<BoundOp>& ops);

// dst (op)= src over `count` elements of `bytes` in all: straight when the operands are
// identical or disjoint, else from a copy of src in `staging` (grown on first use).
// A receive-reduce-copy's own operand (its src) as the reducer takes it (MemorySpace::reduce_copy):
// itself when it is dst or disjoint from dst, else (in place, input and output aliased at an
// offset) a copy of it in `staging` (grown on first use).
const std::byte* own_operand(MemorySpace& memory, const std::byte* own, const std::byte* dst, std::size_t bytes,
                             SpaceBuffer& staging);

void reduce_local(MemorySpace& memory, algo::DataType dtype, algo::ReduceOp op, std::byte* dst, const std::byte* src,
                  std::size_t count, std::size_t bytes, SpaceBuffer& staging);

}  // namespace topocoll::runtime
