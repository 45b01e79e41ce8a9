#include "runtime/rounds.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <span>

#include "algorithms/ir/program_index.hpp"
#include "common/errors.hpp"

namespace topocoll::runtime {

using algo::BufferId;
using algo::Chunk;
using algo::Op;
using algo::OpKind;

namespace {

using algo::is_transfer;
using algo::OpRef;

// Whether two chunks of one rank may share memory, in place or out of place: where they live in
// place (algo::in_place_storage) overlaps. Chunks of one buffer overlap there exactly when they
// do out of place, and input and output chunks share memory only in place, so a plan made with
// this holds for both placements.
struct MayOverlap {
  const algo::CollectiveArgs& args;
  int rank;
  bool operator()(const Chunk& a, const Chunk& b) const {
    if (a.count == 0 || b.count == 0) return false;
    const algo::Storage x = algo::in_place_storage(args, rank, a), y = algo::in_place_storage(args, rank, b);
    return x.buffer == y.buffer && x.offset < y.offset + b.count && y.offset < x.offset + a.count;
  }
};

// What an op reads and writes (a receive-reduce both; zero-element chunks touch nothing).
struct Access {
  Chunk read, write;
};
Access access(const Op& op) {
  switch (op.kind) {
    case OpKind::Send:
      return {op.src, {}};
    case OpKind::Recv:
      return {{}, op.dst};
    case OpKind::RecvReduce:
      return {op.dst, op.dst};
    case OpKind::RecvReduceCopy:
      return {op.src, op.dst};
    case OpKind::Copy:
      return {op.src, op.dst};
    case OpKind::Reduce:
      return {op.src, op.dst};  // dst is read too: covered by the write
    case OpKind::SwitchSend:    // refused by plan_rounds; listed for completeness
      return {op.src, {}};
    case OpKind::SwitchRecv:
      return {{}, op.dst};
  }
  return {};
}

// A dependency of op i on an earlier op j of the same channel: val(i) >= val(j) + delta, where
// val is a transfer's round and a local op's "after round".
struct Dep {
  std::uint32_t on;
  std::int32_t delta;
};

// The dependencies of every op of one rank's program (contract rule 6: channels share no written
// memory, so only the same channel's earlier ops count):
//   send reading what an earlier receive or local op wrote      one round later
//   receive writing what an earlier transfer touches            the same round or later (it
//                                                               lands in staging in that round)
//   receive touching what an earlier local op touches           one round later
//   local op touching what an earlier transfer touches          after that transfer's round
//   local op touching what an earlier local op touches          in the same slot or later
std::vector<std::vector<Dep>> dependencies(const algo::ProgramIndex& index, const algo::CollectiveArgs& args) {
  const algo::Program& prog = index.program();
  const MayOverlap may_overlap{args, index.rank()};
  std::vector<std::vector<Dep>> deps(prog.size());
  for (int c = 0; c < index.num_channels(); ++c) {
    const std::span<const std::uint32_t> ops = index.channel(c);
    for (std::size_t n = 0; n < ops.size(); ++n) {
      const std::uint32_t i = ops[n];
      const Op& op = prog[i];
      const Access ai = access(op);
      for (std::uint32_t j : ops.first(n)) {
        const Op& other = prog[j];
        const Access aj = access(other);
        const bool i_reads_j_writes = may_overlap(ai.read, aj.write);
        const bool conflict = i_reads_j_writes || may_overlap(ai.write, aj.write) || may_overlap(ai.write, aj.read);
        if (!conflict) continue;
        const bool i_comm = is_transfer(op.kind), j_comm = is_transfer(other.kind);
        std::int32_t delta = 0;
        if (op.kind == OpKind::Send)
          delta = 1;  // reads a write: the write's group or slot must be over
        else if (i_comm && !j_comm)
          delta = 1;  // a receive after a local op
        else
          delta = 0;
        if (op.kind == OpKind::Send && !i_reads_j_writes) continue;  // a send after a send: no order needed
        deps[i].push_back({j, delta});
      }
    }
  }
  return deps;
}

// One rank's values given the forces of its transfers' partners: program order is a topological
// order of the dependencies, so one pass is exact. Local ops default to -1 (before round 0).
void assign(const algo::Program& prog, const std::vector<std::vector<Dep>>& deps,
            const std::vector<std::int32_t>& force, std::vector<std::int32_t>& val) {
  val.resize(prog.size());
  for (std::size_t i = 0; i < prog.size(); ++i) {
    std::int32_t v = is_transfer(prog[i].kind) ? force[i] : -1;
    for (const Dep& d : deps[i]) v = std::max(v, val[d.on] + d.delta);
    val[i] = v;
  }
}

}  // namespace

std::vector<RoundPlan> plan_rounds(const algo::Schedule& s) {
  refuse_switch_ops(s, "the round executor (the NCCL and MPI round runtimes)");
  const int p = s.num_ranks();
  std::vector<algo::ProgramIndex> index;  // every rank's program, checked
  std::size_t comm_ops = 0;
  for (int r = 0; r < p; ++r) {
    index.emplace_back(s, r);
    for (const Op& op : index.back().program()) comm_ops += is_transfer(op.kind) ? 1 : 0;
  }
  const std::vector<std::vector<OpRef>> partner = algo::match_fifo(index, s.num_channels());
  auto prog_of = [&](int r) -> const algo::Program& { return index[static_cast<std::size_t>(r)].program(); };
  std::vector<std::vector<std::int32_t>> force(static_cast<std::size_t>(p)), round(static_cast<std::size_t>(p));
  std::vector<std::vector<std::vector<Dep>>> deps;
  for (int r = 0; r < p; ++r) {
    force[static_cast<std::size_t>(r)].assign(prog_of(r).size(), 0);
    deps.push_back(dependencies(index[static_cast<std::size_t>(r)], s.args()));
  }
  // Raise each matched pair to the larger side until a sweep changes nothing (Gauss-Seidel: a rank
  // sees the forces the ranks before it set in the same sweep). Each sweep that changes something
  // raises some op's round by at least one, and no round can exceed the number of transfers
  // without a cycle of forces, which a schedule that cannot run in rounds has.
  const std::size_t max_sweeps = comm_ops + 2;
  for (std::size_t sweep = 0;; ++sweep) {
    if (sweep > max_sweeps)
      throw ScheduleError(
          fmt::format("round plan: schedule '{}' cannot be cut into rounds (its transfers force each other "
                      "into ever later rounds: a cycle a rendezvous transport would deadlock on)",
                      s.name()));
    bool changed = false;
    for (int r = 0; r < p; ++r) {
      auto& rr = round[static_cast<std::size_t>(r)];
      assign(prog_of(r), deps[static_cast<std::size_t>(r)], force[static_cast<std::size_t>(r)], rr);
      const auto& pr = partner[static_cast<std::size_t>(r)];
      for (std::size_t i = 0; i < rr.size(); ++i) {
        if (!is_transfer(prog_of(r)[i].kind)) continue;
        std::int32_t& f = force[static_cast<std::size_t>(pr[i].rank)][pr[i].op];
        if (rr[i] > f) {
          f = rr[i];
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  std::int32_t rounds = 0;
  for (int r = 0; r < p; ++r)
    for (std::size_t i = 0; i < round[static_cast<std::size_t>(r)].size(); ++i)
      if (is_transfer(prog_of(r)[i].kind)) rounds = std::max(rounds, round[static_cast<std::size_t>(r)][i] + 1);
  std::vector<RoundPlan> out(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    out[static_cast<std::size_t>(r)].rounds = rounds;
    out[static_cast<std::size_t>(r)].round = std::move(round[static_cast<std::size_t>(r)]);
  }
  return out;
}

// ---- the executor -------------------------------------------------------------------------------

RoundExecutor::RoundExecutor(const algo::Schedule& s, int rank, RoundPlan plan, MemorySpace& memory)
    : args_(s.args()), rank_(rank), plan_(std::move(plan)), memory_(&memory) {
  refuse_switch_ops(s, "the round executor (the NCCL and MPI round runtimes)");
  const algo::Program prog = algo::ProgramIndex(s, rank).release_program();  // checked
  TOPOCOLL_ASSERT(plan_.round.size() == prog.size(), fmt::format("round executor: rank {}: a plan of {} ops for a "
                                                                 "program of {}",
                                                                 rank, plan_.round.size(), prog.size()));
  const std::size_t elem = algo::size_of(args_.dtype);
  comm_.resize(static_cast<std::size_t>(plan_.rounds));
  after_.resize(static_cast<std::size_t>(plan_.rounds) + 1);
  std::vector<std::size_t> round_bytes(static_cast<std::size_t>(plan_.rounds), 0);
  ops_ = bind_program(prog, elem);
  needs_ = buffer_needs(ops_);
  for (std::uint32_t i = 0; i < prog.size(); ++i) {
    const Op& op = prog[i];
    const BoundOp& b = ops_[i];
    const std::int32_t k = plan_.round[i];
    if (is_transfer(op.kind)) {
      TOPOCOLL_ASSERT(k >= 0 && k < plan_.rounds,
                      fmt::format("round executor: rank {} op {}: round {} of {}", rank, i, k, plan_.rounds));
      comm_[static_cast<std::size_t>(k)].push_back(i);
      if (op.kind != OpKind::Send) round_bytes[static_cast<std::size_t>(k)] += (b.bytes + 63) / 64 * 64;
    } else {
      TOPOCOLL_ASSERT(k >= -1 && k < plan_.rounds,
                      fmt::format("round executor: rank {} op {}: after round {} of {}", rank, i, k, plan_.rounds));
      after_[static_cast<std::size_t>(k + 1)].push_back(i);
    }
  }
  // Within a round: channel by channel, program order inside each (both ends of a pair of ranks
  // then queue the messages between them in the same order).
  for (auto& list : comm_)
    std::stable_sort(list.begin(), list.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return ops_[a].channel < ops_[b].channel; });
  const std::size_t most = round_bytes.empty() ? 0 : *std::max_element(round_bytes.begin(), round_bytes.end());
  staging_ = SpaceBuffer(memory, most);
  // Which receives land in staging, decided once: a receive-reduce always; a plain receive when
  // another transfer of its round touches its destination (the group runs them all at once).
  // (what another reads or writes; a receive-reduce-copy reads its src when the round ends). On
  // chunks as they live in place (MayOverlap), so it holds in place and out of place.
  const MayOverlap may_overlap{args_, rank};
  staged_.assign(prog.size(), false);
  for (const std::vector<std::uint32_t>& list : comm_)
    for (std::uint32_t i : list) {
      if (prog[i].kind == OpKind::Send) continue;
      bool staged = prog[i].kind != OpKind::Recv;  // a receive-reduce (-copy) always
      for (std::uint32_t j : list)
        if (!staged && j != i) {
          const Access aj = access(prog[j]);
          staged = may_overlap(prog[i].dst, aj.read) || may_overlap(prog[i].dst, aj.write);
        }
      staged_[i] = staged;
    }
}

std::vector<int> RoundExecutor::peers(int k) const {
  std::vector<int> out;
  if (k < 0 || k >= plan_.rounds) return out;
  for (std::uint32_t i : comm_[static_cast<std::size_t>(k)]) out.push_back(ops_[i].peer);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void RoundExecutor::begin(const Buffers& b) {
  base_[0] = static_cast<std::byte*>(b.input);
  base_[1] = static_cast<std::byte*>(b.output);
  base_[2] = static_cast<std::byte*>(b.scratch);
  base_[3] = nullptr;
  if (needs_.first_null(base_) >= 0)
    throw InputError(fmt::format("round executor: rank {}: a buffer the program needs is null", rank_));
  for (std::uint32_t i : after_[0]) run_local(ops_[i]);
}

void RoundExecutor::issue(int k, RoundTransport& t) {
  const std::vector<std::uint32_t>& list = comm_[static_cast<std::size_t>(k)];
  landed_.clear();
  landed_at_.clear();
  std::size_t at = 0;
  for (std::uint32_t i : list) {
    const BoundOp& b = ops_[i];
    if (b.kind == OpKind::Send) {
      t.send(b.peer, src(b), b.bytes);
      continue;
    }
    if (!staged_[i]) {
      t.recv(b.peer, dst(b), b.bytes);
      continue;
    }
    t.recv(b.peer, staging_.data() + at, b.bytes);
    landed_.push_back(i);
    landed_at_.push_back(at);
    at += (b.bytes + 63) / 64 * 64;
  }
}

void RoundExecutor::finish(int k, RoundTransport& t) {
  t.end_round();
  // Program order per channel: landed_ follows comm_'s order, which keeps it within a channel.
  for (std::size_t n = 0; n < landed_.size(); ++n) {
    const BoundOp& b = ops_[landed_[n]];
    std::byte* from = staging_.data() + landed_at_[n];
    if (b.kind == OpKind::RecvReduce)
      memory_->reduce(args_.dtype, args_.op, dst(b), from, b.count);
    else if (b.kind == OpKind::RecvReduceCopy)
      memory_->reduce_copy(args_.dtype, args_.op, dst(b), own_operand(*memory_, src(b), dst(b), b.bytes, overlap_),
                           from, b.count);
    else
      memory_->copy(dst(b), from, b.bytes);
  }
  for (std::uint32_t i : after_[static_cast<std::size_t>(k) + 1]) run_local(ops_[i]);
}

void RoundExecutor::end() {
  finish_avg(args_, rank_, base_[1], *memory_);
}

void RoundExecutor::run(const Buffers& b, RoundTransport& t) {
  begin(b);
  for (int k = 0; k < plan_.rounds; ++k) {
    issue(k, t);
    finish(k, t);
  }
  end();
}

void RoundExecutor::run_local(const BoundOp& b) {
  if (b.bytes == 0) return;
  if (b.kind == OpKind::Copy) {
    memory_->copy(dst(b), src(b), b.bytes);
    return;
  }
  reduce_local(*memory_, args_.dtype, args_.op, dst(b), src(b), b.count, b.bytes, overlap_);
}

}  // namespace topocoll::runtime
