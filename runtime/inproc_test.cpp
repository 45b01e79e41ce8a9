// The in-process transport, the executor and the runner on hand-made schedules: FIFO matching,
// a 2-rank allreduce on known values, the progress timeout, and rank exceptions reaching the caller.
#include "runtime/inproc.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/verifier.hpp"
#include "common/errors.hpp"
#include "runtime/executor.hpp"
#include "runtime/test_data.hpp"
#include "runtime/testing/run_inproc.hpp"

using namespace topocoll::runtime;
using topocoll::InputError;
using namespace topocoll::algo;

namespace {

using Clock = std::chrono::steady_clock;

// Receives one int from `peer` on `channel`, or nullopt-like -1 when none has arrived.
std::int64_t recv_int(InprocTransport& t, int peer, int channel) {
  std::int64_t value = -1;
  return t.try_recv(peer, channel, &value, sizeof value) ? value : -1;
}

void send_int(InprocTransport& t, int peer, int channel, std::int64_t value) {
  t.post_send(peer, channel, &value, sizeof value);
}

CollectiveArgs args_of(Collective c, std::uint64_t count, int ranks, DataType t = DataType::Int32,
                       ReduceOp op = ReduceOp::Sum) {
  CollectiveArgs a;
  a.collective = c;
  a.count = count;
  a.ranks = ranks;
  a.dtype = t;
  a.op = op;
  return a;
}

// A 2-rank allreduce of 4 elements on 2 channels: each channel owns half of the buffer; a rank
// copies its half to the output, sends its input half to the peer and reduces the peer's in.
Schedule two_rank_allreduce(DataType t, ReduceOp op) {
  std::vector<Program> programs(2);
  for (int r = 0; r < 2; ++r) {
    ProgramBuilder b(programs[static_cast<std::size_t>(r)]);
    // Channel c carries elements [2c, 2c + 2).
    for (int c = 0; c < 2; ++c) {
      const std::uint64_t off = 2 * static_cast<std::uint64_t>(c);
      b.copy({BufferId::Input, off, 2}, {BufferId::Output, off, 2}, c);
      b.send(1 - r, {BufferId::Input, off, 2}, c);
      b.recv_reduce(1 - r, {BufferId::Output, off, 2}, c);
    }
  }
  return Schedule::from_programs("two-rank", args_of(Collective::AllReduce, 4, 2, t, op), 2, 0, std::move(programs));
}

// Rank 0 waits on channel 1 for a message rank 1 never sends.
Schedule silent_peer() {
  std::vector<Program> programs(2);
  ProgramBuilder b(programs[0]);
  b.copy({BufferId::Input, 0, 2}, {BufferId::Output, 0, 2}, 0);
  b.recv(1, {BufferId::Output, 2, 2}, 1);
  return Schedule::from_programs("silent-peer", args_of(Collective::AllReduce, 4, 2), 2, 0, std::move(programs));
}

// Two ranks, one channel: each copies input[0:4] to output[0:4], sends output[0:4] to the
// other, then receives the other's output[0:4] into it (reduced into it when `reduce`): the
// receive's destination is the region the send still reads.
Schedule send_then_receive_same_region(const char* name, bool reduce) {
  std::vector<Program> programs(2);
  for (int r = 0; r < 2; ++r) {
    ProgramBuilder b(programs[static_cast<std::size_t>(r)]);
    b.copy({BufferId::Input, 0, 4}, {BufferId::Output, 0, 4}, 0);
    b.send(1 - r, {BufferId::Output, 0, 4}, 0);
    if (reduce)
      b.recv_reduce(1 - r, {BufferId::Output, 0, 4}, 0);
    else
      b.recv(1 - r, {BufferId::Output, 0, 4}, 0);
  }
  return Schedule::from_programs(name, args_of(Collective::AllReduce, 4, 2), 1, 0, std::move(programs));
}

}  // namespace

TEST_CASE("inproc transport: FIFO per (source, destination, channel)") {
  InprocFabric fabric(3);
  InprocTransport r0(fabric, 0), r1(fabric, 1), r2(fabric, 2);
  // Interleave three streams into rank 1: (0, ch 0), (0, ch 1), (2, ch 0).
  for (std::int64_t i = 0; i < 50; ++i) {
    send_int(r0, 1, 0, i);
    send_int(r0, 1, 1, 1000 + i);
    send_int(r2, 1, 0, 2000 + i);
  }
  CHECK(recv_int(r1, 0, 2) == -1);  // nothing on channel 2
  CHECK(recv_int(r0, 1, 0) == -1);  // nothing for rank 0
  // Drain them in another order than they were sent: each stream keeps its own order.
  for (std::int64_t i = 0; i < 50; ++i) CHECK(recv_int(r1, 0, 1) == 1000 + i);
  for (std::int64_t i = 0; i < 50; ++i) CHECK(recv_int(r1, 2, 0) == 2000 + i);
  for (std::int64_t i = 0; i < 50; ++i) CHECK(recv_int(r1, 0, 0) == i);
  CHECK(recv_int(r1, 0, 0) == -1);

  SUBCASE("the send buffer may be reused as soon as post_send returns") {
    std::int64_t v = 7;
    r0.post_send(2, 0, &v, sizeof v);
    v = 8;
    CHECK(recv_int(r2, 0, 0) == 7);
  }
  SUBCASE("a message of another size than the receive is an error") {
    send_int(r0, 2, 0, 1);
    std::int32_t small = 0;
    CHECK_THROWS_WITH_AS(
        r2.try_recv(0, 0, &small, 4),
        doctest::Contains("rank 2 receives 4 bytes from rank 0 on channel 0, but the next message has 8 bytes"),
        InputError);
  }
  SUBCASE("a sender thread and a polling receiver keep the order") {
    constexpr std::int64_t kMessages = 20000;
    std::thread sender([&] {
      for (std::int64_t i = 0; i < kMessages; ++i) send_int(r0, 2, 3, i);
    });
    std::int64_t next = 0, mismatches = 0;
    // Poll until every message has arrived, waiting for arrivals in between.
    while (next < kMessages) {
      const std::int64_t v = recv_int(r2, 0, 3);
      if (v == -1) {
        r2.wait(Clock::now() + std::chrono::milliseconds(100));
        continue;
      }
      mismatches += v != next ? 1 : 0;
      ++next;
    }
    sender.join();
    CHECK(mismatches == 0);
  }
}

TEST_CASE("executor: a hand-made 2-rank allreduce on known values") {
  const Schedule s = two_rank_allreduce(DataType::Int32, ReduceOp::Sum);
  REQUIRE(verify(s).ok());
  InprocFabric fabric(2);
  std::array<std::array<std::int32_t, 4>, 2> in = {{{1, 2, 3, 4}, {10, 20, 30, 40}}};
  std::array<std::array<std::int32_t, 4>, 2> out{};
  std::thread rank1([&] {
    InprocTransport t(fabric, 1);
    execute(s, 1, Buffers{in[1].data(), out[1].data(), nullptr}, t);
  });
  InprocTransport t0(fabric, 0);
  execute(s, 0, Buffers{in[0].data(), out[0].data(), nullptr}, t0);
  rank1.join();
  const std::array<std::int32_t, 4> want = {11, 22, 33, 44};
  CHECK(out[0] == want);
  CHECK(out[1] == want);
  CHECK(in[0] == std::array<std::int32_t, 4>{1, 2, 3, 4});  // the input is read-only

  SUBCASE("run_inproc: every dtype, sum and avg, in place and out of place") {
    for (DataType t : {DataType::Int8, DataType::Uint64, DataType::Float16, DataType::BFloat16, DataType::Float64})
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg})
        for (bool in_place : {false, true}) {
          const Schedule st = two_rank_allreduce(t, op);
          INFO(fmt::format("{} {} in_place={}", to_string(t), to_string(op), in_place));
          CHECK(count_wrong_outputs(st, run_inproc(st, in_place)) == 0);
        }
  }
  SUBCASE("count_wrong_outputs sees a wrong element") {
    RunResult r = run_inproc(s, false);
    r.outputs[1][5] ^= std::byte{1};
    CHECK(count_wrong_outputs(s, r) == 1);
  }
}

TEST_CASE("executor: a peer that never sends times out, naming the peer, the channel and the op") {
  const Schedule s = silent_peer();
  InprocFabric fabric(2);
  InprocTransport t0(fabric, 0);
  std::array<std::int32_t, 4> in = {1, 2, 3, 4}, out{};
  ExecOptions o;
  o.progress_timeout = std::chrono::milliseconds(200);
  const auto start = Clock::now();
  bool thrown = false;
  try {
    execute(s, 0, Buffers{in.data(), out.data(), nullptr}, t0, o);
  } catch (const PeerTimeout& e) {
    thrown = true;
    const std::string what = e.what();
    INFO(what);
    CHECK(e.rank() == 0);
    CHECK(e.peer() == 1);
    CHECK(e.channel() == 1);
    CHECK(e.op_index() == 1);
    CHECK(what.find("waits for peer 1") != std::string::npos);
    CHECK(what.find("channel 1 op 1 (recv(peer 1, output[2:4]) ch 1)") != std::string::npos);
    CHECK(what.find("no progress for 200 ms") != std::string::npos);
  }
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  CHECK(thrown);
  CHECK(elapsed.count() >= 200);
  CHECK(elapsed.count() < 2000);
  CHECK(out[0] == 1);  // channel 0 ran to the end meanwhile
  CHECK(out[1] == 2);
}

TEST_CASE("run_inproc: exceptions from rank threads reach the caller") {
  SUBCASE("a timeout on one rank") {
    ExecOptions o;
    o.progress_timeout = std::chrono::milliseconds(200);
    CHECK_THROWS_WITH_AS(run_inproc(silent_peer(), false, o), doctest::Contains("rank 0: no progress for 200 ms"),
                         PeerTimeout);
  }
  SUBCASE("a bad schedule on rank 1 aborts rank 0 instead of letting it wait for the timeout") {
    std::vector<Program> programs(2);
    ProgramBuilder(programs[0]).recv(1, {BufferId::Output, 0, 4}, 0);
    ProgramBuilder(programs[1]).send(0, {BufferId::Output, 2, 4}, 0);  // output[2:6] of 4 elements
    const Schedule s =
        Schedule::from_programs("out-of-bounds", args_of(Collective::AllReduce, 4, 2), 1, 0, std::move(programs));
    const auto start = Clock::now();
    CHECK_THROWS_WITH_AS(
        run_inproc(s, false),
        doctest::Contains(
            "rank 1 channel 0 op 0 (send(peer 0, output[2:6]) ch 0): output[2:6] is outside the output buffer of 4 "
            "elements"),
        topocoll::ScheduleError);
    CHECK(Clock::now() - start < std::chrono::seconds(5));
  }
  SUBCASE("a message of the wrong size names the receiving op") {
    std::vector<Program> programs(2);
    ProgramBuilder(programs[0]).recv(1, {BufferId::Output, 0, 4}, 0);
    ProgramBuilder(programs[1]).send(0, {BufferId::Input, 0, 2}, 0);
    const Schedule s =
        Schedule::from_programs("size-mismatch", args_of(Collective::AllReduce, 4, 2), 1, 0, std::move(programs));
    CHECK_THROWS_WITH_AS(
        run_inproc(s, false),
        doctest::Contains("rank 0 op 0 (recv(peer 1, output[0:4]) ch 0): inproc: rank 0 receives 16 bytes"),
        InputError);
  }
}

namespace {

// A zero-copy transport stand-in: a send is only recorded when posted, and its bytes are copied
// into the in-process fabric later: when the executor tests it a second time, or one per wait().
// Until then the executor must not write its source (contract rule 2), or the peer would receive
// the overwritten data.
class LateCopyTransport final : public Transport {
 public:
  LateCopyTransport(InprocFabric& fabric, int rank) : inner_(fabric, rank) {}
  Request post_send(int peer, int channel, const void* data, std::size_t bytes) override {
    pending_.push_back(Pending{peer, channel, data, bytes, 0, false});
    return static_cast<Request>(pending_.size() - 1);
  }
  bool test_send(Request r) override {
    if (++pending_[r].tests < 2) return false;
    forward_through(r);
    return true;
  }
  Request post_recv(int peer, int channel, void* dst, std::size_t bytes) override {
    return inner_.post_recv(peer, channel, dst, bytes);
  }
  bool test_recv(Request r) override { return inner_.test_recv(r); }
  void wait(std::chrono::steady_clock::time_point deadline) override {
    for (std::size_t r = 0; r < pending_.size(); ++r)
      if (!pending_[r].sent) {
        forward_through(static_cast<Request>(r));
        return;
      }
    inner_.wait(std::min(deadline, Clock::now() + std::chrono::milliseconds(5)));
  }
  std::size_t sends() const { return pending_.size(); }

 private:
  struct Pending {
    int peer, channel;
    const void* data;
    std::size_t bytes;
    int tests;
    bool sent;
  };
  // Sends go out in posting order (FIFO per stream), copied now, not when posted.
  void forward_through(Request r) {
    for (std::size_t i = 0; i <= r; ++i)
      if (!pending_[i].sent) {
        inner_.post_send(pending_[i].peer, pending_[i].channel, pending_[i].data, pending_[i].bytes);
        pending_[i].sent = true;
      }
  }
  InprocTransport inner_;
  std::vector<Pending> pending_;
};

}  // namespace

TEST_CASE("executor: writes wait for unfinished sends of the same region (zero-copy transports)") {
  // Each rank sends output[0:4] and then reduces the peer's output[0:4] into it, on one channel:
  // the receive-reduce may only write output[0:4] once the send has completed. A plan is bound
  // once and run three times, in place (the allreduce's input is its output).
  const Schedule s = send_then_receive_same_region("send-then-overwrite", true);
  REQUIRE(verify(s).ok());
  InprocFabric fabric(2);
  std::array<std::array<std::int32_t, 4>, 2> buf{};
  std::array<std::size_t, 2> sends{};
  auto rank_main = [&](int r) {
    LateCopyTransport t(fabric, r);
    Plan plan(s, r);
    for (int run = 0; run < 3; ++run) {
      for (int i = 0; i < 4; ++i)
        buf[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)] = (r + 1) * 10 + i + run;
      void* p = buf[static_cast<std::size_t>(r)].data();
      plan.run(Buffers{p, p, nullptr}, t);
      // Rank r holds (r + 1) * 10 + i + run: the sum is 30 + 2i + 2 run.
      const std::array<std::int32_t, 4> want = {30 + 2 * run, 32 + 2 * run, 34 + 2 * run, 36 + 2 * run};
      CHECK(buf[static_cast<std::size_t>(r)] == want);
    }
    sends[static_cast<std::size_t>(r)] = t.sends();
  };
  std::thread rank1(rank_main, 1);
  rank_main(0);
  rank1.join();
  CHECK(sends[0] == 3);
  CHECK(sends[1] == 3);
}

namespace {

// A rendezvous-protocol stand-in (UCX and MPI switch to one above their eager limit): a send
// completes, and its bytes are copied, only once the peer has posted the matching receive. A
// receive that the executor held back until a send of the same region completed would wait for
// the peer, and the peer for it.
struct PostedCounts {
  // [src][dst][channel]: receives rank dst has posted for messages from src on channel.
  std::array<std::array<std::array<std::atomic<int>, 4>, 4>, 4> posted{};
};

class RendezvousTransport final : public Transport {
 public:
  RendezvousTransport(InprocFabric& fabric, int rank, PostedCounts& counts)
      : inner_(fabric, rank), rank_(rank), counts_(counts) {}
  Request post_send(int peer, int channel, const void* data, std::size_t bytes) override {
    const int seq = sent_[static_cast<std::size_t>(peer)][static_cast<std::size_t>(channel)]++;
    pending_.push_back(Pending{peer, channel, data, bytes, seq, false});
    return static_cast<Request>(pending_.size() - 1);
  }
  bool test_send(Request r) override {
    progress();
    return pending_[r].sent;
  }
  Request post_recv(int peer, int channel, void* dst, std::size_t bytes) override {
    ++counts_
          .posted[static_cast<std::size_t>(peer)][static_cast<std::size_t>(rank_)][static_cast<std::size_t>(channel)];
    return inner_.post_recv(peer, channel, dst, bytes);
  }
  bool test_recv(Request r) override {
    progress();
    return inner_.test_recv(r);
  }
  void wait(std::chrono::steady_clock::time_point deadline) override {
    progress();
    inner_.wait(std::min(deadline, Clock::now() + std::chrono::milliseconds(1)));
  }

 private:
  struct Pending {
    int peer, channel;
    const void* data;
    std::size_t bytes;
    int seq;
    bool sent;
  };
  // Every call progresses every send, as UCX's and MPI's progress engines do: a send whose
  // receive the peer has posted is copied into the fabric (in posting order per peer, channel).
  void progress() {
    for (Pending& q : pending_) {
      if (q.sent) continue;
      const int posted = counts_.posted[static_cast<std::size_t>(rank_)][static_cast<std::size_t>(q.peer)]
                                       [static_cast<std::size_t>(q.channel)];
      if (posted <= q.seq) continue;
      inner_.post_send(q.peer, q.channel, q.data, q.bytes);
      q.sent = true;
    }
  }
  InprocTransport inner_;
  int rank_;
  PostedCounts& counts_;
  std::array<std::array<int, 4>, 4> sent_{};
  std::vector<Pending> pending_;
};

// Runs `s` (at most 4 ranks and 4 channels) over RendezvousTransport; the outputs per rank.
RunResult run_rendezvous(const Schedule& s) {
  const int p = s.num_ranks();
  InprocFabric fabric(p);
  PostedCounts counts;
  RunResult result;
  result.outputs.resize(static_cast<std::size_t>(p));
  std::vector<std::string> errors(static_cast<std::size_t>(p));
  ExecOptions o;
  o.progress_timeout = std::chrono::milliseconds(3000);
  auto rank_main = [&](int r) {
    try {
      const std::size_t bytes = s.args().count * size_of(s.args().dtype);
      std::vector<std::byte> in(bytes), out(bytes);
      topocoll::runtime::fill_input(s.args().dtype, s.args().op, r, p, 0, in.data(), s.args().count);
      RendezvousTransport t(fabric, r, counts);
      Plan(s, r).run(Buffers{in.data(), out.data(), nullptr}, t, o);
      result.outputs[static_cast<std::size_t>(r)] = std::move(out);
    } catch (const std::exception& e) {
      errors[static_cast<std::size_t>(r)] = e.what();
      fabric.abort(e.what());
    }
  };
  std::vector<std::thread> threads;
  for (int r = 1; r < p; ++r) threads.emplace_back(rank_main, r);
  rank_main(0);
  for (auto& th : threads) th.join();
  for (const std::string& e : errors)
    if (!e.empty()) throw std::runtime_error(e);
  return result;
}

}  // namespace

TEST_CASE("executor: receives are posted while a send of the same region is unfinished (rendezvous transports)") {
  SUBCASE("two ranks swap one region: send it, then receive the peer's into it") {
    const Schedule s = send_then_receive_same_region("swap", false);
    const RunResult r = run_rendezvous(s);
    // Each rank ends with the other's input.
    for (int rank = 0; rank < 2; ++rank) {
      std::vector<std::byte> want(16);
      fill_input(DataType::Int32, ReduceOp::Sum, 1 - rank, 2, 0, want.data(), 4);
      CHECK(r.outputs[static_cast<std::size_t>(rank)] == want);
    }
  }
  SUBCASE("recursive doubling, every rank count up to 4, several slices and channels") {
    for (int p : {2, 3, 4}) {
      for (int channels : {1, 3}) {
        Tuning t;
        t.channels = channels;
        t.slice_bytes = 64;  // 16 floats: several slices per exchange
        CollectiveArgs a = args_of(Collective::AllReduce, 3 * 4096 + 7, p, DataType::Float32);
        const Schedule s = find_algorithm("recursive-doubling").generate(uniform_layout(1, p), a, t);
        INFO(fmt::format("p={} channels={} ({} used)", p, channels, s.num_channels()));
        CHECK(count_wrong_outputs(s, run_rendezvous(s)) == 0);
      }
    }
  }
}
