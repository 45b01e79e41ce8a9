// Each failure the verifier reports, proven on a hand-made broken schedule.
#include "algorithms/verifier.hpp"

#include <doctest/doctest.h>

#include "algorithms/registry.hpp"

using namespace topocoll::algo;

namespace {

Op send(int peer, Chunk c, int ch = 0) {
  return Op{OpKind::Send, static_cast<std::uint16_t>(ch), peer, c, Chunk{}};
}
Op recv(int peer, Chunk c, int ch = 0) {
  return Op{OpKind::Recv, static_cast<std::uint16_t>(ch), peer, Chunk{}, c};
}
Op recv_reduce(int peer, Chunk c, int ch = 0) {
  return Op{OpKind::RecvReduce, static_cast<std::uint16_t>(ch), peer, Chunk{}, c};
}
Op recv_reduce_copy(int peer, Chunk s, Chunk d, int ch = 0) {
  return Op{OpKind::RecvReduceCopy, static_cast<std::uint16_t>(ch), peer, s, d};
}
Op copy(Chunk s, Chunk d, int ch = 0) {
  return Op{OpKind::Copy, static_cast<std::uint16_t>(ch), -1, s, d};
}
Op reduce(Chunk s, Chunk d, int ch = 0) {
  return Op{OpKind::Reduce, static_cast<std::uint16_t>(ch), -1, s, d};
}

Chunk in(std::uint64_t o, std::uint64_t n) {
  return Chunk{BufferId::Input, o, n};
}
Chunk out(std::uint64_t o, std::uint64_t n) {
  return Chunk{BufferId::Output, o, n};
}
Chunk scratch(std::uint64_t o, std::uint64_t n) {
  return Chunk{BufferId::Scratch, o, n};
}

CollectiveArgs allreduce(int ranks, std::uint64_t count) {
  CollectiveArgs a;
  a.ranks = ranks;
  a.count = count;
  return a;
}

// A correct 2-rank allreduce of 4 elements: exchange, reduce.
std::vector<Program> good_pair() {
  return {
      {copy(in(0, 4), out(0, 4)), send(1, in(0, 4)), recv_reduce(1, out(0, 4))},
      {copy(in(0, 4), out(0, 4)), send(0, in(0, 4)), recv_reduce(0, out(0, 4))},
  };
}

VerifyResult run(std::vector<Program> programs, CollectiveArgs a = allreduce(2, 4), int channels = 1,
                 std::uint64_t scratch_count = 0, VerifyOptions o = {}) {
  return verify(Schedule::from_programs("hand-made", a, channels, scratch_count, std::move(programs)), o);
}

void expect(const VerifyResult& r, Failure f, const std::string& text) {
  CHECK(r.failure == f);
  CHECK_MESSAGE(r.message.find(text) != std::string::npos, r.message);
}

}  // namespace

TEST_CASE("verifier: a correct hand-made schedule passes, with counts") {
  const VerifyResult r = run(good_pair());
  CHECK(r.ok());
  CHECK(r.operations == 6);
  CHECK(r.steps == 1);
  CHECK(r.max_bytes_sent == 16);
}

TEST_CASE("verifier: deadlock names the cycle of waiting ranks") {
  // Three ranks each receive from the next before sending to it.
  std::vector<Program> p(3);
  for (int r = 0; r < 3; ++r) {
    const int next = (r + 1) % 3;
    p[static_cast<std::size_t>(r)] = {copy(in(0, 4), out(0, 4)), recv_reduce(next, out(0, 4)), send(next, out(0, 4))};
  }
  expect(run(p, allreduce(3, 4)), Failure::Deadlock, "ranks wait in a cycle 0 -> 1 -> 2 -> 0");
}

TEST_CASE("verifier: unmatched receive and unmatched send") {
  auto p = good_pair();
  p[0].erase(p[0].begin() + 1);  // rank 0 never sends
  expect(run(p), Failure::UnmatchedRecv,
         "rank 1 channel 0 op 2 (recv_reduce(peer 0, output[0:4]) ch 0): waits for rank 0");
  auto q = good_pair();
  q[1].push_back(send(0, out(0, 4)));  // one send too many
  expect(run(q), Failure::UnmatchedSend, "rank 1 channel 0 op 3");
}

TEST_CASE("verifier: out-of-bounds chunk, bad peer, bad channel, write to input") {
  auto p = good_pair();
  p[1][1] = send(0, in(2, 4));
  expect(run(p), Failure::OutOfBounds,
         "rank 1 channel 0 op 1 (send(peer 0, input[2:6]) ch 0): input[2:6] is outside the input buffer of 4 elements");
  auto q = good_pair();
  q[0][1] = send(7, in(0, 4));
  expect(run(q), Failure::BadPeer, "peer 7 is not another rank of 0..1");
  auto s = good_pair();
  s[0][1].channel = 3;
  expect(run(s), Failure::BadChannel, "channel 3 but the schedule has 1 channels");
  auto w = good_pair();
  w[0][2] = recv_reduce(1, in(0, 4));
  expect(run(w), Failure::WritesInput, "rank 0 channel 0 op 2");
  auto sc = good_pair();
  sc[0][0] = copy(in(0, 4), scratch(0, 4));
  expect(run(sc), Failure::OutOfBounds, "scratch[0:4] is outside the scratch buffer of 0 elements");
}

TEST_CASE("verifier: size mismatch between matched operations") {
  auto p = good_pair();
  p[1][1] = send(0, in(0, 3));
  expect(run(p), Failure::SizeMismatch,
         "rank 0 channel 0 op 2 (recv_reduce(peer 1, output[0:4]) ch 0): receives 4 elements but rank 1 sent 3");
}

TEST_CASE("verifier: double-counted and missing contributions") {
  auto p = good_pair();
  p[0].push_back(reduce(in(0, 4), out(0, 4)));  // rank 0 adds its own input a second time
  expect(run(p), Failure::DoubleCounted, "rank 0's contribution counted twice");
  auto q = good_pair();
  q[0][2] = recv(1, out(0, 4));  // overwrites instead of reducing: rank 0's part is lost
  expect(run(q), Failure::Missing, "rank 0: output[0:4] is the reduction of ranks {1} but must be of ranks {0-1}");
  auto m = good_pair();
  m[1][2] = recv_reduce(0, out(0, 2));
  m[0][1] = send(1, in(0, 2));
  expect(run(m), Failure::Missing, "rank 1: output[2:4] is the reduction of ranks {1}");
}

TEST_CASE("verifier: wrong element and uninitialised data") {
  // Rank 1 sends its elements shifted by one: element 0 of rank 0 meets element 1 of rank 1.
  std::vector<Program> p = {
      {copy(in(0, 4), out(0, 4)), send(1, in(0, 4)), recv_reduce(1, out(0, 3))},
      {copy(in(0, 4), out(0, 4)), send(0, in(1, 3)), recv_reduce(0, out(0, 4))},
  };
  expect(run(p), Failure::WrongElement, "reduces input element 1 into a value of input element 0");
  std::vector<Program> u = {
      {send(1, out(0, 4)), recv(1, out(0, 4))},
      {copy(in(0, 4), out(0, 4)), recv_reduce(0, out(0, 4)), send(0, out(0, 4))},
  };
  expect(run(u), Failure::Uninitialised,
         "rank 0 channel 0 op 0 (send(peer 1, output[0:4]) ch 0): reads elements [0:4]");
  std::vector<Program> never = {{}, {copy(in(0, 4), out(0, 4))}};
  expect(run(never, allreduce(2, 4)), Failure::Missing, "rank 0: output[0:4] is never written");
}

TEST_CASE("verifier: two channels writing the same elements race") {
  std::vector<Program> p = {
      {copy(in(0, 4), out(0, 4), 0), send(1, in(0, 4), 1), recv_reduce(1, out(0, 4), 1)},
      {copy(in(0, 4), out(0, 4), 0), send(0, in(0, 4), 1), recv_reduce(0, out(0, 4), 1)},
  };
  expect(run(p, allreduce(2, 4), 2), Failure::ChannelRace,
         "rank 0: channel 0 writes output[0:4] that channel 1 writes too");
  // Channel 1 sends what channel 0 writes: a read-write race, whatever the timing.
  std::vector<Program> q = {
      {copy(in(0, 4), out(0, 4), 0), recv_reduce(1, out(0, 4), 0), send(1, out(0, 4), 1)},
      {copy(in(0, 4), out(0, 4), 0), send(0, in(0, 4), 0), recv_reduce(0, out(0, 4), 1)},
  };
  expect(run(q, allreduce(2, 4), 2), Failure::ChannelRace, "rank 0: channel 0 writes output[0:4] that channel 1 reads");
}

TEST_CASE("verifier: in place, an allreduce that reads its input after overwriting it fails") {
  // Out of place this is correct; in place, the first recv_reduce into output (= input) makes the
  // later send of input carry rank 1's data back to it.
  std::vector<Program> p = {
      {copy(in(0, 4), out(0, 4)), recv_reduce(1, out(0, 4)), send(1, in(0, 4))},
      {copy(in(0, 4), out(0, 4)), send(0, in(0, 4)), recv(0, out(0, 4))},
  };
  CHECK(run(p).failure == Failure::Missing);  // rank 1 gets only rank 0's input: wrong either way
  std::vector<Program> q = {
      {copy(in(0, 4), out(0, 4)), send(1, in(0, 4)), recv_reduce(1, out(0, 4))},
      {recv_reduce(0, out(0, 4)), send(0, in(0, 4))},  // out of place: output uninitialised
  };
  CHECK(run(q).failure == Failure::Uninitialised);
  VerifyOptions o;
  o.in_place = true;
  // In place the output already holds the input: the same programs now double count at rank 0.
  expect(run(q, allreduce(2, 4), 1, 0, o), Failure::DoubleCounted, "rank 0's contribution counted twice");
}

TEST_CASE("verifier: reduce_scatter and allgather postconditions") {
  CollectiveArgs rs;
  rs.collective = Collective::ReduceScatter;
  rs.ranks = 2;
  rs.count = 2;
  // Each rank sends the other's block and reduces its own block straight into the output.
  std::vector<Program> p = {
      {copy(in(0, 2), out(0, 2)), send(1, in(2, 2)), recv_reduce(1, out(0, 2))},
      {copy(in(2, 2), out(0, 2)), send(0, in(0, 2)), recv_reduce(0, out(0, 2))},
  };
  CHECK(run(p, rs).ok());
  auto swapped = p;
  swapped[1][0] = copy(in(0, 2), out(0, 2));  // rank 1 starts from block 0: wrong elements
  expect(run(swapped, rs), Failure::WrongElement, "reduces input element");
  CollectiveArgs ag;
  ag.collective = Collective::AllGather;
  ag.ranks = 2;
  ag.count = 2;
  std::vector<Program> g = {
      {copy(in(0, 2), out(0, 2)), send(1, in(0, 2)), recv(1, out(2, 2))},
      {copy(in(0, 2), out(2, 2)), send(0, in(0, 2)), recv(0, out(0, 2))},
  };
  CHECK(run(g, ag).ok());
  auto bad = g;
  bad[1][2] = recv(0, out(2, 2));  // overwrites its own block with rank 0's
  bad[1][0] = copy(in(0, 2), out(0, 2));
  expect(run(bad, ag), Failure::WrongElement,
         "rank 1: output[0:2] is the reduction of ranks {1} but must be of ranks {0}");
}

TEST_CASE("verifier: a generated ring for 16,384 ranks can be walked rank by rank") {
  // Generation is lazy: each program is built on demand, O(p) per rank; nothing O(p^2) is held.
  const Layout l = uniform_layout(2048, 8);
  CollectiveArgs a;
  a.ranks = l.ranks;
  a.count = 1 << 20;
  Tuning t;
  t.channels = 2;
  t.slice_bytes = 1 << 30;
  const Schedule s = find_algorithm("ring").generate(l, a, t);
  std::uint64_t sends = 0;
  for (int r = 0; r < l.ranks; r += 997) {
    for (const Op& op : s.program(r)) sends += op.kind == OpKind::Send;
  }
  CHECK(sends == 17 * 2 * 2 * 16383);  // 17 ranks walked, 2 channels, 2(p-1) sends each
}

// ---- switch ops (contract rule 11) ------------------------------------------------------------

namespace {

Op switch_send(int group, Chunk c, int ch = 0) {
  return Op{OpKind::SwitchSend, static_cast<std::uint16_t>(ch), group, c, Chunk{}};
}
Op switch_recv(int group, Chunk c, int ch = 0) {
  return Op{OpKind::SwitchRecv, static_cast<std::uint16_t>(ch), group, Chunk{}, c};
}

std::vector<int> iota_ranks(int p) {
  std::vector<int> v;
  for (int r = 0; r < p; ++r) v.push_back(r);
  return v;
}

// `programs` with the given switch groups.
VerifyResult run_switch(std::vector<Program> programs, const std::vector<SwitchGroup>& groups,
                        CollectiveArgs a = allreduce(3, 4), VerifyOptions o = {}) {
  Schedule s = Schedule::from_programs("hand-made", a, 1, 0, std::move(programs));
  for (const SwitchGroup& g : groups) s.add_switch_group(g);
  return verify(s, o);
}

// SHARP-style: 3 ranks give their input to one group (all contribute, all receive).
std::vector<Program> switch_allreduce(int p) {
  std::vector<Program> programs(static_cast<std::size_t>(p));
  for (auto& prog : programs) prog = {switch_send(0, in(0, 4)), switch_recv(0, out(0, 4))};
  return programs;
}

}  // namespace

TEST_CASE("verifier: switch groups prove an allreduce, a reduce-scatter + multicast, and count bytes") {
  const SwitchGroup all{SwitchKind::Sharp, iota_ranks(3), iota_ranks(3)};
  VerifyOptions nodes;
  nodes.node_of = {0, 1, 2};
  const VerifyResult r = run_switch(switch_allreduce(3), {all}, allreduce(3, 4), nodes);
  CHECK_MESSAGE(r.ok(), r.message);
  CHECK(r.steps == 1);
  CHECK(r.max_bytes_sent == 16);
  CHECK(r.max_inter_bytes_sent == 16);  // SHARP: to the network
  // NVLS: rank j receives element j reduced (groups 0..1), then multicasts it (groups 2..3).
  std::vector<SwitchGroup> nv;
  for (int j = 0; j < 2; ++j) nv.push_back({SwitchKind::Nvls, {0, 1}, {j}});
  for (int j = 0; j < 2; ++j) nv.push_back({SwitchKind::Nvls, {j}, {0, 1}});
  std::vector<Program> p(2);
  for (int r2 = 0; r2 < 2; ++r2) {
    const std::uint64_t mine = static_cast<std::uint64_t>(r2) * 2;
    p[static_cast<std::size_t>(r2)] = {switch_send(0, in(0, 2)),      switch_send(1, in(2, 2)),
                                       switch_recv(r2, out(mine, 2)), switch_send(2 + r2, out(mine, 2)),
                                       switch_recv(2, out(0, 2)),     switch_recv(3, out(2, 2))};
  }
  const VerifyResult v = run_switch(p, nv, allreduce(2, 4));
  CHECK_MESSAGE(v.ok(), v.message);
  CHECK(v.steps == 2);
  CHECK(v.max_bytes_sent == 24);  // 4 elements reduced + 2 multicast, 4 bytes each
  CHECK(v.max_inter_bytes_sent == 0);
}

TEST_CASE("verifier: a switch receive waiting for a part that never comes") {
  auto p = switch_allreduce(3);
  p[2].clear();  // rank 2 never contributes (nor receives)
  expect(run_switch(p, {{SwitchKind::Sharp, iota_ranks(3), iota_ranks(3)}}), Failure::UnmatchedRecv,
         "rank 0 channel 0 op 1 (switch_recv(group 0, output[0:4]) ch 0): waits for instance 0 of switch group 0, but "
         "contributor rank 2 finished channel 0 after giving 0 parts");
}

TEST_CASE("verifier: deadlock through a switch group and a point-to-point receive") {
  // Rank 0 receives from rank 1 before contributing; rank 1 waits for the switch before sending.
  std::vector<Program> p = {
      {recv(1, out(0, 4)), switch_send(0, in(0, 4)), switch_recv(0, out(0, 4))},
      {switch_send(0, in(0, 4)), switch_recv(0, out(0, 4)), send(0, in(0, 4))},
  };
  expect(run_switch(p, {{SwitchKind::Nvls, {0, 1}, {0, 1}}}, allreduce(2, 4)), Failure::Deadlock,
         "ranks wait in a cycle 0 -> 1 -> 0");
  // A receiver that contributes after its own receive waits on itself.
  std::vector<Program> self = {{switch_recv(0, out(0, 4)), switch_send(0, in(0, 4))}};
  expect(run_switch(self, {{SwitchKind::Nvls, {0}, {0}}}, allreduce(1, 4)), Failure::Deadlock,
         "ranks wait in a cycle 0 -> 0");
}

TEST_CASE("verifier: parts of one instance of different sizes") {
  auto p = switch_allreduce(3);
  p[1][0] = switch_send(0, in(0, 3));
  expect(run_switch(p, {{SwitchKind::Nvls, iota_ranks(3), iota_ranks(3)}}), Failure::SizeMismatch,
         "rank 1 channel 0 op 0 (switch_send(group 0, input[0:3]) ch 0): gives 3 elements to instance 0 of switch "
         "group 0 on channel 0, but rank 0 gave 4 (its op 0)");
  auto q = switch_allreduce(3);
  q[2][1] = switch_recv(0, out(0, 2));
  expect(run_switch(q, {{SwitchKind::Nvls, iota_ranks(3), iota_ranks(3)}}), Failure::SizeMismatch,
         "rank 2 channel 0 op 1 (switch_recv(group 0, output[0:2]) ch 0): receives 2 elements from instance 0 of "
         "switch group 0, whose parts have 4");
}

TEST_CASE("verifier: parts that no receiver takes, and a receiver that skips an instance") {
  auto p = switch_allreduce(3);
  for (auto& prog : p) prog.push_back(switch_send(0, in(0, 4)));  // a second instance nobody receives
  expect(run_switch(p, {{SwitchKind::Nvls, iota_ranks(3), iota_ranks(3)}}), Failure::UnmatchedSend,
         "op 2 (switch_send(group 0, input[0:4]) ch 0): its part of instance 1 of switch group 0 is never received: "
         "receiver rank 0 finished channel 0 after receiving 1 instances (3 of 3 parts given)");
  auto q = switch_allreduce(3);
  q[1].pop_back();  // rank 1 never receives instance 0
  const VerifyResult r = run_switch(q, {{SwitchKind::Nvls, iota_ranks(3), iota_ranks(3)}});
  expect(r, Failure::UnmatchedSend, "receiver rank 1 finished channel 0 after receiving 0 instances");
}

TEST_CASE("verifier: a rank contributing twice to one reduction is double counted") {
  // Group 0's contributors are ranks 0 and 1, but rank 1 gives rank 0's value (received first).
  std::vector<Program> p = {
      {send(1, in(0, 4)), switch_send(0, in(0, 4)), switch_recv(0, out(0, 4))},
      {recv(0, out(0, 4)), switch_send(0, out(0, 4)), switch_recv(0, out(0, 4))},
  };
  expect(run_switch(p, {{SwitchKind::Nvls, {0, 1}, {0, 1}}}, allreduce(2, 4)), Failure::DoubleCounted,
         "rank 0's contribution counted twice");
}

TEST_CASE("verifier: an NVLS group across nodes and a SHARP group inside one node") {
  VerifyOptions o;
  o.node_of = {0, 0, 1};
  expect(run_switch(switch_allreduce(3), {{SwitchKind::Nvls, iota_ranks(3), iota_ranks(3)}}, allreduce(3, 4), o),
         Failure::BadGroup,
         "switch group 0 (nvls) spans NVLink domains: rank 0 is in domain 0, rank 2 in domain 1; NVLS reduces inside "
         "one NVLink domain");
  // The same nodes in one NVLink domain (an NVL72's trays): fine.
  o.domain_of = {0, 0, 0};
  CHECK(run_switch(switch_allreduce(3), {{SwitchKind::Nvls, iota_ranks(3), iota_ranks(3)}}, allreduce(3, 4), o).ok());
  VerifyOptions one;
  one.node_of = {0, 0, 0};
  expect(run_switch(switch_allreduce(3), {{SwitchKind::Sharp, iota_ranks(3), iota_ranks(3)}}, allreduce(3, 4), one),
         Failure::BadGroup,
         "switch group 0 (sharp) has all its ranks on node 0; SHARP reduces in the network switches, between nodes");
}

TEST_CASE("verifier: a switch part is the value when it is issued") {
  // Rank 0 contributes, then overwrites its output: the reduction keeps the value given.
  std::vector<Program> p = {
      {copy(in(0, 4), out(0, 4)), switch_send(0, out(0, 4)), recv(1, out(0, 4)), switch_recv(0, out(0, 4))},
      {switch_send(0, in(0, 4)), send(0, in(0, 4)), switch_recv(0, out(0, 4))},
  };
  const VerifyResult r = run_switch(p, {{SwitchKind::Nvls, {0, 1}, {0, 1}}}, allreduce(2, 4));
  CHECK_MESSAGE(r.ok(), r.message);
}

TEST_CASE("verifier: recv_reduce_copy reduces from its src into dst, in place and out of place") {
  // dst = src (op) data: no copy of the input first.
  std::vector<Program> p = {
      {send(1, in(0, 4)), recv_reduce_copy(1, in(0, 4), out(0, 4))},
      {send(0, in(0, 4)), recv_reduce_copy(0, in(0, 4), out(0, 4))},
  };
  const VerifyResult r = run(p);
  CHECK_MESSAGE(r.ok(), r.message);
  CHECK(r.operations == 4);
  VerifyOptions o;
  o.in_place = true;
  const VerifyResult ip = run(p, allreduce(2, 4), 1, 0, o);
  CHECK_MESSAGE(ip.ok(), ip.message);
  // With the output as src after a copy, rank 0's own data is counted twice.
  std::vector<Program> twice = {
      {copy(in(0, 4), out(0, 4)), send(1, in(0, 4)), recv_reduce_copy(1, out(0, 4), out(0, 4)),
       recv_reduce_copy(1, out(0, 4), out(0, 4))},
      {send(0, in(0, 4)), send(0, in(0, 4)), recv_reduce_copy(0, in(0, 4), out(0, 4))},
  };
  expect(run(twice), Failure::DoubleCounted, "rank 1's contribution counted twice");
  // src never written.
  std::vector<Program> u = {
      {send(1, in(0, 4)), recv_reduce_copy(1, scratch(0, 4), out(0, 4))},
      {send(0, in(0, 4)), recv_reduce_copy(0, in(0, 4), out(0, 4))},
  };
  expect(run(u, allreduce(2, 4), 1, 4), Failure::Uninitialised,
         "rank 0 channel 0 op 1 (recv_reduce_copy(peer 1, scratch[0:4] -> output[0:4]) ch 0): reads elements [0:4]");
  // src shifted by one element against the message.
  std::vector<Program> w = {
      {send(1, in(0, 3)), recv_reduce_copy(1, in(1, 3), out(0, 3))},
      {send(0, in(0, 3)), recv_reduce_copy(0, in(0, 3), out(0, 3))},
  };
  expect(run(w), Failure::WrongElement, "reduces input element 0 into a value of input element 1");
  // src and dst of different counts, and a src outside its buffer: refused statically.
  Op bad = recv_reduce_copy(1, in(0, 3), out(0, 4));
  std::vector<Program> sizes = {{send(1, in(0, 4)), bad},
                                {send(0, in(0, 4)), recv_reduce_copy(0, in(0, 4), out(0, 4))}};
  expect(run(sizes), Failure::SizeMismatch, "3 elements into 4");
  std::vector<Program> bounds = {{send(1, in(0, 4)), recv_reduce_copy(1, in(2, 4), out(0, 4))},
                                 {send(0, in(0, 4)), recv_reduce_copy(0, in(0, 4), out(0, 4))}};
  expect(run(bounds), Failure::OutOfBounds, "input[2:6] is outside the input buffer of 4 elements");
  // Its src is read by the channel: another channel writing it races.
  std::vector<Program> race = {
      {copy(in(0, 4), out(0, 4), 1), send(1, in(0, 4), 0), recv_reduce_copy(1, out(0, 4), scratch(0, 4), 0),
       copy(scratch(0, 4), out(0, 4), 0)},
      {send(0, in(0, 4)), recv_reduce_copy(0, in(0, 4), out(0, 4))},
  };
  expect(run(race, allreduce(2, 4), 2, 4), Failure::ChannelRace,
         "rank 0: channel 0 writes output[0:4] that channel 1 writes too");
}
