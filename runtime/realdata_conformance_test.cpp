// One conformance test iterates the registry (style rule 17) and runs every algorithm on real
// buffers over the in-process transport, checking the outputs bit for bit against test_data's
// closed-form expectation (style rule 16: awkward rank counts and element counts).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/testing.hpp"
#include "runtime/testing/run_inproc.hpp"

using namespace topocoll::algo;
using namespace topocoll::runtime;

namespace {

constexpr auto& kDataTypes = topocoll::algo::kAllDataTypes;
constexpr auto& kOps = topocoll::algo::kAllOps;

// Node shapes for p ranks: one node, and one multi-node shape when p has 4 or 8 ranks per node
// to give (8 per node preferred; 4 ranks as 2 x 2 so that they are a multi-node shape too).
std::vector<std::pair<int, int>> shapes(int p) {
  std::vector<std::pair<int, int>> out = {{1, p}};
  if (p % 8 == 0 && p > 8)
    out.push_back({p / 8, 8});
  else if (p % 4 == 0 && p > 4)
    out.push_back({p / 4, 4});
  else if (p == 4)
    out.push_back({2, 2});
  return out;
}

std::vector<std::uint64_t> counts(int p) {
  return topocoll::algo::testing::awkward_counts(p);
}

// The covering design. Every (algorithm, p, shape, count) -- combination j, counted in loop order --
// runs out of place and in place (m = 0, 1), with
//   dtype    = kDataTypes[(j + 5m) % 10]
//   op       = kOps[(j + j / 10 + 2m) % 5]   any 10 consecutive j: every dtype and every op in each
//                                             mode; any 50: every (dtype, op) pair in each mode
//                                             (j = 10a + b -> (b, (a + b) % 5) is one-to-one)
//   channels = 1 or 3, alternating every 2 combinations and flipped by the mode; root = j % p;
//   push     = on for odd j (runtime/push_plan.hpp: the fabric lets fused sends write straight
//              into the receiver's buffer), so every algorithm runs both ways in both modes.
struct Pick {
  DataType dtype;
  ReduceOp op;
  int channels;
  bool push;
};
Pick pick(std::size_t j, bool in_place) {
  const std::size_t m = in_place ? 1 : 0;
  return {kDataTypes[(j + 5 * m) % 10], kOps[(j + j / 10 + 2 * m) % 5], ((j / 2) + m) % 2 == 0 ? 1 : 3, j % 2 == 1};
}

}  // namespace

TEST_CASE("realdata conformance: every registered algorithm is bit-exact on real buffers") {
  const std::vector<int> rank_counts = {1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 16, 17, 24, 32, 64};
  ExecOptions o;
  o.progress_timeout = std::chrono::seconds(20);  // a stuck run fails in CI time, not after a minute
  std::size_t combinations = 0, runs = 0, unsupported = 0;
  std::set<std::pair<std::size_t, DataType>> alg_dtype;
  std::set<std::pair<std::size_t, ReduceOp>> alg_op;
  std::set<std::pair<std::size_t, int>> alg_channels;
  std::set<std::tuple<DataType, ReduceOp, bool>> dtype_op_mode;
  std::set<std::tuple<std::size_t, bool, bool>> alg_push_mode;
  std::map<std::pair<std::string, bool>, std::uint64_t> pushed;  // (algorithm, in place): sends pushed
  const std::vector<Algorithm>& algs = registry();
  const std::size_t sample = topocoll::algo::testing::conformance_sample();
  // Every (algorithm, p, shape, count, in place or not), the rest chosen by the covering design.
  for (std::size_t ai = 0; ai < algs.size(); ++ai) {
    const Algorithm& alg = algs[ai];
    for (int p : rank_counts) {
      for (auto [nodes, per_node] : shapes(p)) {
        // NVLS in every node and SHARP in the fabric: the in-process transport runs switch ops.
        const Layout layout = uniform_layout(nodes, per_node, {.nvls = true, .sharp = true});
        for (std::uint64_t n : counts(p)) {
          if (combinations % sample != 0) {  // TOPOCOLL_CONFORMANCE_SAMPLE (sanitizer jobs)
            ++combinations;
            continue;
          }
          for (bool in_place : {false, true}) {
            const Pick k = pick(combinations, in_place);
            CollectiveArgs a = topocoll::algo::testing::conformance_args(
                alg.collective, p, n, static_cast<int>(combinations % static_cast<std::size_t>(p)), in_place, k.dtype);
            a.op = k.op;
            Tuning t;
            t.channels = k.channels;
            t.slice_bytes = 64;  // several slices per chunk at 1009 elements: pipelining runs too
            if (!alg.supports(layout, a, t).ok) {
              ++unsupported;
              continue;
            }
            const Schedule s = alg.generate(layout, a, t);
            INFO(fmt::format("{} p={} shape={}x{} count={} {} {} channels={} root={} in_place={} push={}", alg.name, p,
                             nodes, per_node, n, to_string(a.dtype), to_string(a.op), t.channels, a.root, in_place,
                             k.push));
            if (k.push) {
              std::uint64_t n_pushed = 0;
              CHECK(count_wrong_outputs(s, run_inproc_push(s, in_place, n_pushed, o)) == 0);
              pushed[{alg.name, in_place}] += n_pushed;
            } else {
              CHECK(count_wrong_outputs(s, run_inproc(s, in_place, o)) == 0);
            }
            alg_push_mode.insert({ai, k.push, in_place});
            alg_dtype.insert({ai, a.dtype});
            alg_op.insert({ai, a.op});
            alg_channels.insert({ai, t.channels});
            dtype_op_mode.insert({a.dtype, a.op, in_place});
            ++runs;
          }
          ++combinations;
        }
      }
    }
  }
  MESSAGE(fmt::format("{} real-data runs over {} algorithms, {} combinations unsupported (with a reason){}", runs,
                      algs.size(), unsupported,
                      sample > 1 ? fmt::format("; one combination in {} (TOPOCOLL_CONFORMANCE_SAMPLE)", sample) : ""));
  if (sample > 1) return;  // the coverage below is the whole matrix's
  // The covering design reached every pair it promises.
  CHECK(alg_dtype.size() == algs.size() * kDataTypes.size());
  CHECK(alg_op.size() == algs.size() * kOps.size());
  CHECK(alg_channels.size() == algs.size() * 2);
  CHECK(dtype_op_mode.size() == kDataTypes.size() * kOps.size() * 2);
  CHECK(alg_push_mode.size() == algs.size() * 4);
  // Pushes happened where the schedules fuse a send into the receive that computes it: the ring's
  // last reduce-scatter step, in both placements (the 2-rank ring in place: the peer's part is
  // what it sent us).
  std::string seen;
  for (const auto& [key, n] : pushed) seen += fmt::format(" {}{}={}", key.first, key.second ? "(in place)" : "", n);
  MESSAGE(fmt::format("sends pushed:{}", seen));
  CHECK(pushed[{"ring", false}] > 0);
  CHECK(pushed[{"ring", true}] > 0);
}
