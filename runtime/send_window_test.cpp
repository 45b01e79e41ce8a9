// The send window is a performance knob, not a limit (Plan::kSendWindow): a schedule with more
// sends in flight on one channel than the window, which the verifier accepts, runs. Over a
// rendezvous transport (a send completes only once its peer has received it, as MPI's large
// messages do; the in-process transport completes every send at once) at window - 1, window,
// window + 1 and 2 x window sends ahead of the receives, and the two repro files of
// runtime/testdata/.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/ir/schedule_json.hpp"
#include "algorithms/verifier.hpp"
#include "runtime/testing/rendezvous_world.hpp"
#include "runtime/testing/run_inproc.hpp"

using namespace topocoll::algo;
using namespace topocoll::runtime;

namespace {

// Two ranks, one channel: each copies its input to its output, sends `sends` slices of it to the
// other, then receive-reduces the other's slices into the same places (each write waits for the
// send that reads it, which completes only once the peer, past its own sends, receives it).
Schedule sends_ahead(std::size_t sends, std::uint64_t slice) {
  CollectiveArgs a;
  a.collective = Collective::AllReduce;
  a.count = sends * slice;
  a.dtype = DataType::Float32;
  a.op = ReduceOp::Sum;
  a.ranks = 2;
  std::vector<Program> programs(2);
  for (int r = 0; r < 2; ++r) {
    ProgramBuilder b(programs[static_cast<std::size_t>(r)]);
    b.copy({BufferId::Input, 0, a.count}, {BufferId::Output, 0, a.count}, 0);
    for (std::size_t k = 0; k < sends; ++k) b.send(1 - r, {BufferId::Output, k * slice, slice}, 0);
    for (std::size_t k = 0; k < sends; ++k) b.recv_reduce(1 - r, {BufferId::Output, k * slice, slice}, 0);
  }
  return Schedule::from_programs(fmt::format("{}-sends-ahead", sends), a, 1, 0, std::move(programs));
}

ExecOptions short_timeout() {
  ExecOptions o;
  o.progress_timeout = std::chrono::seconds(5);
  return o;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("send window: more sends in flight than the window run, at window - 1, window, window + 1, 2 x window") {
  constexpr std::size_t w = Plan::kSendWindow;
  for (std::size_t sends : {w - 1, w, w + 1, 2 * w, 4 * w + 3}) {
    for (bool in_place : {false, true}) {
      INFO(fmt::format("{} sends ahead, in_place={}", sends, in_place));
      const Schedule s = sends_ahead(sends, 3);
      VerifyOptions vo;
      vo.in_place = in_place;
      REQUIRE(verify(s, vo).ok());
      const auto t0 = std::chrono::steady_clock::now();
      RendezvousWorld world(2, 1);
      CHECK(count_wrong_outputs(s, run_in_world(s, in_place, world, short_timeout())) == 0);
      CHECK(count_wrong_outputs(s, run_inproc(s, in_place, short_timeout())) == 0);
      MESSAGE(fmt::format("{} sends ahead (window {}), in_place={}: rendezvous and eager runs correct in {:.1f} ms",
                          sends, w, in_place,
                          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count()));
    }
  }
}

TEST_CASE("send window: the 64- and 65-send repros (runtime/testdata) verify and run") {
  for (const char* file : {"schedule-window-64-sends-control.json", "schedule-window-65-sends-runtime-stall.json"}) {
    INFO(std::string(file));
    const std::string path = std::string(TOPOCOLL_SOURCE_DIR) + "/runtime/testdata/" + file;
    const Schedule s = read_schedule_json(slurp(path), path);
    REQUIRE(verify(s).ok());
    RendezvousWorld world(s.num_ranks(), s.num_channels());
    CHECK(count_wrong_outputs(s, run_in_world(s, false, world, short_timeout())) == 0);
    CHECK(count_wrong_outputs(s, run_inproc(s, false, short_timeout())) == 0);
  }
}
