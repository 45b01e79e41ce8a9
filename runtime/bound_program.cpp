#include "runtime/bound_program.hpp"

#include <fmt/format.h>

#include "algorithms/ir/program_index.hpp"
#include "common/errors.hpp"

namespace topocoll::runtime {

void resolve_chunk(const algo::Chunk& c, std::size_t elem, std::uint8_t& buffer, std::size_t& offset) {
  buffer = c.count == 0 ? kNoBuffer : static_cast<std::uint8_t>(c.buffer);
  offset = c.count == 0 ? 0 : static_cast<std::size_t>(c.offset) * elem;
}

void refuse_switch_ops(const algo::Schedule& s, const std::string& executor) {
  if (!s.uses_switch()) return;
  const bool nvls = s.switch_groups().front().kind == algo::SwitchKind::Nvls;
  throw InputError(
      fmt::format("schedule '{}' uses in-network reduction (switch_send on an {} group), which {} cannot "
                  "run: it needs NVSwitch multicast (NVLS) or SHARP; simulate it with `topocoll sim`",
                  s.name(), nvls ? "NVLS" : "SHARP", executor));
}

std::vector<BoundOp> bind_program(const algo::Program& program, std::size_t elem) {
  std::vector<BoundOp> ops(program.size());
  for (std::size_t i = 0; i < program.size(); ++i) {
    const algo::Op& op = program[i];
    BoundOp& b = ops[i];
    b.kind = op.kind;
    b.peer = op.peer;
    b.channel = static_cast<int>(op.channel);
    if (algo::reads_src(op.kind)) resolve_chunk(op.src, elem, b.src_buffer, b.src_offset);
    if (algo::writes_dst(op.kind)) resolve_chunk(op.dst, elem, b.dst_buffer, b.dst_offset);
    b.count = static_cast<std::size_t>(op.count());
    b.bytes = b.count * elem;
  }
  return ops;
}

BufferNeeds buffer_needs(const std::vector<BoundOp>& ops) {
  BufferNeeds n;
  auto use = [&](std::uint8_t buffer, std::size_t i) {
    if (buffer != kNoBuffer && n.first_user[buffer] == BufferNeeds::kNone)
      n.first_user[buffer] = static_cast<std::uint32_t>(i);
  };
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (algo::reads_src(ops[i].kind)) use(ops[i].src_buffer, i);
    if (algo::writes_dst(ops[i].kind)) use(ops[i].dst_buffer, i);
  }
  return n;
}

void reduce_local(MemorySpace& memory, algo::DataType dtype, algo::ReduceOp op, std::byte* dst, const std::byte* src,
                  std::size_t count, std::size_t bytes, SpaceBuffer& staging) {
  if (src != dst && overlaps(src, bytes, dst, bytes)) {
    if (staging.size() < bytes) staging = SpaceBuffer(memory, bytes);  // first use only
    memory.copy(staging.data(), src, bytes);
    src = staging.data();
  }
  memory.reduce(dtype, op, dst, src, count);
}

const std::byte* own_operand(MemorySpace& memory, const std::byte* own, const std::byte* dst, std::size_t bytes,
                             SpaceBuffer& staging) {
  if (own == dst || !overlaps(own, bytes, dst, bytes)) return own;
  if (staging.size() < bytes) staging = SpaceBuffer(memory, bytes);  // first use only
  memory.copy(staging.data(), own, bytes);
  return staging.data();
}

}  // namespace topocoll::runtime
