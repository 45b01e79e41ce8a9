// The verifier cannot say OK wrongly: a property test that mutates valid schedules of the registry
// (drop, duplicate, retarget, move to another channel, resize, shift, swap, recv <-> recv_reduce)
// and runs every mutant both through algo::verify and on real exact data in process
// (run_inproc, and over a rendezvous transport for accepted mutants; count_wrong_outputs). Every mutant the executor
// computes wrongly or cannot finish (a timeout, a deadlock, an error) must be one the verifier rejects; the verifier
// may be stricter (a mutant it rejects that happens to compute right is counted, not an error).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/testing.hpp"
#include "algorithms/verifier.hpp"
#include "runtime/testing/rendezvous_world.hpp"
#include "runtime/testing/run_inproc.hpp"

using namespace topocoll::algo;
using namespace topocoll::runtime;

namespace {

enum class Mutation { Drop, Duplicate, Retarget, MoveChannel, Resize, Shift, Swap, FlipReduce, kCount };
constexpr const char* kMutationNames[] = {"drop",   "duplicate", "retarget", "move-channel",
                                          "resize", "shift",     "swap",     "recv<->recv_reduce"};

bool is_transfer(OpKind k) {
  return k != OpKind::Copy && k != OpKind::Reduce;
}

// Applies mutation `m` to op `i` of `prog`; false when it does not apply (or changes nothing).
bool mutate(Program& prog, std::size_t i, Mutation m, int ranks, int channels, std::mt19937_64& rng) {
  Op& op = prog[i];
  const auto pick = [&](std::uint64_t n) { return static_cast<std::uint64_t>(rng() % n); };
  // The chunk an op's count lives in (a send's source, every other op's destination; copy and
  // reduce have both, one chosen at random).
  Chunk& chunk = op.kind == OpKind::Send                                             ? op.src
                 : (op.kind == OpKind::Copy || op.kind == OpKind::Reduce) && pick(2) ? op.src
                                                                                     : op.dst;
  switch (m) {
    case Mutation::Drop:
      prog.erase(prog.begin() + static_cast<std::ptrdiff_t>(i));
      return true;
    case Mutation::Duplicate:
      prog.insert(prog.begin() + static_cast<std::ptrdiff_t>(i), Op(op));
      return true;
    case Mutation::Retarget: {
      if (!is_transfer(op.kind)) return false;
      // Another rank, now and then one that does not exist.
      const int peer =
          pick(16) == 0 ? (pick(2) ? ranks : -1) : static_cast<int>(pick(static_cast<std::uint64_t>(ranks)));
      if (peer == op.peer) return false;
      op.peer = peer;
      return true;
    }
    case Mutation::MoveChannel: {
      const int c = pick(16) == 0 ? channels : static_cast<int>(pick(static_cast<std::uint64_t>(channels)));
      if (c == op.channel) return false;
      op.channel = static_cast<std::uint16_t>(c);
      return true;
    }
    case Mutation::Resize:
      if (pick(2) || chunk.count == 0)
        ++chunk.count;
      else
        --chunk.count;
      return true;
    case Mutation::Shift:
      if (pick(2) || chunk.offset == 0)
        ++chunk.offset;
      else
        --chunk.offset;
      return true;
    case Mutation::Swap: {
      // With a later op of the same channel (the next one, or any later one).
      std::vector<std::size_t> later;
      for (std::size_t j = i + 1; j < prog.size(); ++j)
        if (prog[j].channel == op.channel) later.push_back(j);
      if (later.empty()) return false;
      const std::size_t j = pick(2) ? later.front() : later[pick(later.size())];
      if (prog[j] == op) return false;
      std::swap(prog[i], prog[j]);
      return true;
    }
    case Mutation::FlipReduce:
      if (op.kind == OpKind::Recv)
        op.kind = OpKind::RecvReduce;
      else if (op.kind == OpKind::RecvReduce)
        op.kind = OpKind::Recv;
      else
        return false;
      return true;
    case Mutation::kCount:
      break;
  }
  return false;
}

// How a run on real data ended.
enum class Outcome { Correct, Wrong, Failed };
// Over the eager in-process transport, or with `rendezvous` over one whose sends complete only once
// received (runtime/testing/rendezvous_world.hpp: the executor's send window fills).
Outcome run(const Schedule& s, bool in_place, std::chrono::milliseconds timeout, std::string* why,
            bool rendezvous = false) {
  ExecOptions o;
  o.progress_timeout = timeout;
  o.spin = std::chrono::microseconds(0);
  try {
    RunResult result;
    if (rendezvous) {
      RendezvousWorld world(s.num_ranks(), s.num_channels());
      result = run_in_world(s, in_place, world, o);
    } else {
      result = run_inproc(s, in_place, o);
    }
    const std::size_t wrong = count_wrong_outputs(s, result);
    if (wrong == 0) return Outcome::Correct;
    *why = fmt::format("{} output elements wrong", wrong);
    return Outcome::Wrong;
  } catch (const std::exception& e) {
    *why = e.what();
    return Outcome::Failed;
  }
}

}  // namespace

TEST_CASE("mutation property: every mutant the executor gets wrong or cannot finish, the verifier rejects") {
  constexpr std::size_t kMutants = 10000;
  const std::vector<std::pair<int, int>> shapes = {{1, 2}, {1, 3}, {1, 4}, {2, 1}, {2, 2}};
  std::mt19937_64 rng(20);  // deterministic
  // Valid base schedules: every registered algorithm on small layouts and awkward counts.
  std::vector<Schedule> bases;
  std::size_t j = 0;
  for (const Algorithm& alg : registry())
    for (auto [nodes, per_node] : shapes) {
      const int p = nodes * per_node;
      const Layout layout = uniform_layout(nodes, per_node);
      for (std::uint64_t n : {std::uint64_t{1}, static_cast<std::uint64_t>(p + 1), std::uint64_t{13}}) {
        CollectiveArgs a;
        a.collective = alg.collective;
        a.count = n;
        a.dtype = kAllDataTypes[j % kAllDataTypes.size()];
        a.op = kAllOps[(j + j / kAllDataTypes.size()) % kAllOps.size()];
        a.ranks = p;
        a.root = static_cast<int>(j % static_cast<std::size_t>(p));
        if (a.collective == Collective::AllToAllV)
          a.sizes = topocoll::algo::testing::skewed_alltoallv_sizes(p, n, false);
        Tuning t;
        t.channels = 1 + static_cast<int>(j % 2);
        t.slice_bytes = 8;  // several slices per chunk: pipelined steps
        ++j;
        if (!alg.supports(layout, a, t).ok) continue;
        Schedule s = alg.generate(layout, a, t);
        REQUIRE(verify(s).ok());
        bases.push_back(std::move(s));
      }
    }
  REQUIRE(!bases.empty());

  std::size_t mutants = 0, checks = 0, accepted_correct = 0, rejected = 0, rejected_but_correct = 0;
  std::size_t rejected_not_run = 0, disagreements = 0;
  std::map<std::string, std::size_t> by_failure, by_mutation_rejected, by_mutation_accepted;
  const auto t0 = std::chrono::steady_clock::now();
  while (mutants < kMutants) {
    const Schedule& base = bases[rng() % bases.size()];
    const int p = base.num_ranks();
    std::vector<Program> programs;
    for (int r = 0; r < p; ++r) programs.push_back(base.program(r));
    const auto r = static_cast<std::size_t>(rng() % static_cast<std::uint64_t>(p));
    if (programs[r].empty()) continue;
    const std::size_t i = rng() % programs[r].size();
    const auto m = static_cast<Mutation>(rng() % static_cast<std::uint64_t>(Mutation::kCount));
    if (!mutate(programs[r], i, m, p, base.num_channels(), rng)) continue;
    const Schedule mutant = Schedule::from_programs(base.name() + "-mutant", base.args(), base.num_channels(),
                                                    base.scratch_count(), programs);
    ++mutants;
    for (bool in_place : {false, true}) {
      // An asymmetric all-to-allv has no in-place form (the verifier refuses to be asked).
      if (in_place && base.args().sizes && !base.args().sizes->symmetric()) continue;
      ++checks;
      VerifyOptions vo;
      vo.in_place = in_place;
      const VerifyResult v = verify(mutant, vo);
      std::string why;
      if (v.ok()) {
        ++by_mutation_accepted[kMutationNames[static_cast<int>(m)]];
        // Both transports: eager and rendezvous completion of sends.
        bool all_correct = true;
        for (bool rendezvous : {false, true}) {
          Outcome out = run(mutant, in_place, std::chrono::milliseconds(200), &why, rendezvous);
          // A slow machine can stall a correct run 200 ms: confirm a failure with a long timeout.
          if (out == Outcome::Failed) out = run(mutant, in_place, std::chrono::seconds(10), &why, rendezvous);
          if (out != Outcome::Correct) {
            why += rendezvous ? " (rendezvous transport)" : " (eager transport)";
            all_correct = false;
            break;
          }
        }
        if (all_correct) {
          ++accepted_correct;
          continue;
        }
        ++disagreements;
        FAIL_CHECK(fmt::format("verifier said OK, executor: {} ({} of {} rank {} op {}, in_place={})", why,
                               kMutationNames[static_cast<int>(m)], base.name(), r, i, in_place));
        continue;
      }
      ++rejected;
      ++by_failure[std::string(to_string(v.failure))];
      ++by_mutation_rejected[kMutationNames[static_cast<int>(m)]];
      // A mutant the verifier finds waiting for ever would cost the executor its whole timeout;
      // run one in eight of those, every other rejected mutant (for the "stricter" tally).
      const bool waits =
          v.failure == Failure::Deadlock || v.failure == Failure::UnmatchedSend || v.failure == Failure::UnmatchedRecv;
      if (waits && rng() % 8 != 0) {
        ++rejected_not_run;
        continue;
      }
      if (run(mutant, in_place, std::chrono::milliseconds(20), &why) == Outcome::Correct) ++rejected_but_correct;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string failures, per_mutation;
  for (const auto& [k, n] : by_failure) failures += fmt::format(" {}={}", k, n);
  for (const char* name : kMutationNames)
    per_mutation += fmt::format(" {}={}/{}", name, by_mutation_rejected[name], by_mutation_accepted[name]);
  MESSAGE(fmt::format(
      "{} mutants of {} base schedules, {} checks (out of place and in place) in {:.1f} s: {} accepted and "
      "correct, {} rejected ({} of them computed right by the executor: the verifier is stricter; {} waiting ones "
      "not run), {} disagreements. Rejected by failure:{}. Per mutation rejected/accepted:{}",
      mutants, bases.size(), checks, secs, accepted_correct, rejected, rejected_but_correct, rejected_not_run,
      disagreements, failures, per_mutation));
  CHECK(disagreements == 0);
  CHECK(mutants >= kMutants);
}
