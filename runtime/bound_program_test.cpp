#include "runtime/bound_program.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <cstring>

using namespace topocoll::algo;
using namespace topocoll::runtime;

TEST_CASE("bound program: chunks as (buffer, byte offset); zero-element chunks point nowhere") {
  Program p;
  ProgramBuilder b(p);
  b.copy({BufferId::Input, 2, 3}, {BufferId::Output, 1, 3}, 0);
  b.send(1, {BufferId::Scratch, 4, 2}, 1);
  p.push_back(Op{OpKind::Recv, 0, 1, {}, {BufferId::Output, 0, 0}});  // zero elements (hand-made)
  const std::vector<BoundOp> ops = bind_program(p, 4);
  REQUIRE(ops.size() == 3);
  CHECK(ops[0].src_buffer == 0);
  CHECK(ops[0].src_offset == 8);
  CHECK(ops[0].dst_buffer == 1);
  CHECK(ops[0].dst_offset == 4);
  CHECK(ops[0].bytes == 12);
  CHECK(ops[1].src_buffer == 2);
  CHECK(ops[1].src_offset == 16);
  CHECK(ops[1].channel == 1);
  CHECK(ops[1].peer == 1);
  CHECK(ops[2].dst_buffer == kNoBuffer);

  const BufferNeeds n = buffer_needs(ops);
  CHECK(n.first_user[0] == 0);
  CHECK(n.first_user[1] == 0);
  CHECK(n.first_user[2] == 1);
  std::array<std::byte, 64> mem{};
  std::byte* all[3] = {mem.data(), mem.data(), mem.data()};
  CHECK(n.first_null(all) == -1);
  std::byte* no_scratch[3] = {mem.data(), mem.data(), nullptr};
  CHECK(n.first_null(no_scratch) == 2);
  const BufferNeeds none = buffer_needs(bind_program({}, 4));
  std::byte* nulls[3] = {nullptr, nullptr, nullptr};
  CHECK(none.first_null(nulls) == -1);
}

TEST_CASE("bound program: a local reduce whose operands partially overlap reduces from a copy") {
  std::array<std::int32_t, 6> v = {1, 2, 3, 4, 5, 6};
  SpaceBuffer staging;
  auto* base = reinterpret_cast<std::byte*>(v.data());
  // v[2:6] += v[0:4], every source element as it was before the reduce.
  reduce_local(host_memory(), DataType::Int32, ReduceOp::Sum, base + 8, base, 4, 16, staging);
  CHECK(v == std::array<std::int32_t, 6>{1, 2, 4, 6, 8, 10});
  CHECK(staging.size() >= 16);
  // Identical operands go straight to the reducer: x = x + x.
  reduce_local(host_memory(), DataType::Int32, ReduceOp::Sum, base, base, 2, 8, staging);
  CHECK(v[0] == 2);
  CHECK(v[1] == 4);
}
