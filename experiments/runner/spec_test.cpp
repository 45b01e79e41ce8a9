#include "experiments/runner/spec.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/errors.hpp"
#include "experiments/runner/provenance.hpp"
#include "experiments/runner/test_support.hpp"

using namespace topocoll;
using experiments::testing::TempDir;

namespace {

// The InputError message of loading `text` as a spec, "" when it loads.
std::string load_error(const TempDir& d, const std::string& text) {
  const std::string path = d.write("experiment.yaml", text);
  try {
    (void)experiments::load_exp_spec(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

constexpr const char* kTiny = R"(description: two algorithms on one PCIe box
engine: analytic
grid:
  topologies: pcie-8gpu
  algorithms: [ring, dbt]
  sizes: {min: 8, max: 1K, factor: 4}
  channels: [1, 2]
)";

}  // namespace

TEST_CASE("spec: a valid spec, its defaults and its hash") {
  TempDir d;
  const std::string path = d.write("experiment.yaml", kTiny);
  const experiments::ExpSpec s = experiments::load_exp_spec(path);
  CHECK(s.path == path);
  CHECK(s.dir == d.path());
  CHECK(s.engine == "analytic");
  CHECK(s.description == "two algorithms on one PCIe box");
  CHECK(s.repetitions == 1);
  CHECK(s.topologies == std::vector<std::string>{"pcie-8gpu"});
  CHECK(s.topology_paths == std::vector<std::string>{"pcie-8gpu"});
  REQUIRE(s.nodes.size() == 1);
  CHECK(!s.nodes[0]);
  REQUIRE(s.fabrics.size() == 1);
  CHECK(!s.fabrics[0]);
  CHECK(!s.transport);
  const experiments::ExpSpec named =
      experiments::load_exp_spec(d.write("named.yaml", std::string(kTiny) + "  transport: hdr\n"));
  CHECK(named.transport == "hdr");
  CHECK(s.algorithms == std::vector<std::string>{"ring", "dbt"});
  CHECK(s.min_bytes == "8");
  CHECK(s.max_bytes == "1K");
  CHECK(s.factor == "4");
  CHECK(s.dtypes == std::vector<std::string>{"float"});
  CHECK(s.channels == std::vector<std::string>{"1", "2"});
  CHECK(s.slice == "512K");
  CHECK(s.op == "sum");
  CHECK(s.nccl_model);
  CHECK(s.nccl.version == sim::NcclVersion::V2_28_9);
  CHECK(s.nccl.algo.empty());
  CHECK(s.sha256 == experiments::sha256_hex(kTiny));
}

TEST_CASE("spec: without grid.channels, simulated engines run with NCCL's channels, the real engine with 2") {
  TempDir d;
  std::string text = kTiny;
  text.replace(text.find("  channels: [1, 2]\n"), std::string("  channels: [1, 2]\n").size(), "");
  CHECK(experiments::load_exp_spec(d.write("sim.yaml", text)).channels == std::vector<std::string>{"nccl"});
  text.replace(text.find("engine: analytic"), std::string("engine: analytic").size(), "engine: real");
  text.replace(text.find("topologies: pcie-8gpu"), std::string("topologies: pcie-8gpu").size(),
               "topologies: local\n  ranks: [2]");
  CHECK(experiments::load_exp_spec(d.write("real.yaml", text)).channels == std::vector<std::string>{"2"});
}

TEST_CASE("spec: nccl_version and nccl_env set the NCCL model's release and environment") {
  TempDir d;
  const std::string ok =
      std::string(kTiny) + "nccl_version: 2.22.3\nnccl_env: {NCCL_ALGO: Ring, NCCL_MAX_NCHANNELS: 4}\n";
  const experiments::ExpSpec s = experiments::load_exp_spec(d.write("experiment.yaml", ok));
  CHECK(s.nccl.version == sim::NcclVersion::V2_22_3);
  CHECK(s.nccl.algo == "Ring");
  CHECK(s.nccl.max_channels == 4);
  auto fails = [&](const std::string& extra, const std::string& message) {
    CAPTURE(extra);
    CHECK_THROWS_WITH_AS(experiments::load_exp_spec(d.write("bad.yaml", std::string(kTiny) + extra)),
                         doctest::Contains(message.c_str()), InputError);
  };
  fails("nccl_version: 2.27\n", "nccl_version 2.27: expected 2.22.3 or 2.28.9");
  fails("nccl_env: {NCCL_DEBUG: INFO}\n", "unknown key 'NCCL_DEBUG' in nccl_env");
  fails("nccl_env: {NCCL_ALGO: Foo}\n", "NCCL_ALGO 'Foo': unknown name 'Foo'");
  fails("nccl_env: {NCCL_MIN_NCHANNELS: many}\n", "NCCL_MIN_NCHANNELS=many: expected an integer");
  fails("nccl_version: 2.22.3\nnccl_env: {NCCL_ALGO: PAT}\n", "unknown name 'PAT'");
}

TEST_CASE("spec: errors name the file and the line") {
  TempDir d;
  const std::string path = d.write("experiment.yaml", "");
  SUBCASE("not YAML") {
    const std::string e = load_error(d, "engine: analytic\ngrid:\n  algorithms: [ring\n  sizes: {min: 8}\n");
    CHECK(e == path + ":4: not valid YAML: end of sequence flow not found");
  }
  SUBCASE("unknown key") {
    CHECK(load_error(d, "engine: analytic\ngrid:\n  topologies: pcie-8gpu\n  colour: blue\n") ==
          path +
              ":4: unknown key 'colour' in grid (allowed: topologies, nodes, fabric, oversubscription, transport, "
              "algorithms, schedules, sizes, matrices, dtypes, channels, slice, op, ranks)");
  }
  SUBCASE("missing key") {
    CHECK(load_error(d, "grid: {}\n") == path + ": missing key 'engine' (required: engine, grid)");
  }
  SUBCASE("bad value") {
    std::string t = kTiny;
    t.replace(t.find("[1, 2]"), 6, "[1, 65]");
    CHECK(load_error(d, t) == path +
                                  ":7: grid.channels 65: expected an integer from 1 to 64, or nccl (what stock NCCL "
                                  "would run with)");
  }
  SUBCASE("unknown fabric") {
    std::string t = kTiny;
    t += "  fabric: torus\n";
    const std::string e = load_error(d, t);
    CHECK(e.rfind(path + ":8: grid.fabric: ", 0) == 0);
  }
  SUBCASE("unknown transport") {
    std::string t = kTiny;
    t += "  transport: ib\n";
    const std::string e = load_error(d, t);
    CHECK(e.rfind(path + ":8: grid.transport: unknown transport 'ib': expected one of hdr, ndr", 0) == 0);
  }
  SUBCASE("no such file") {
    CHECK_THROWS_AS(experiments::load_exp_spec(d.path() + "/none.yaml"), InputError);
  }
}

TEST_CASE("spec: sizes, factors and timeouts within their limits (named)") {
  TempDir d;
  const auto with_sizes = [](const std::string& sizes) {
    std::string t = kTiny;
    t.replace(t.find("{min: 8, max: 1K, factor: 4}"), 28, sizes);
    return t;
  };
  CHECK(load_error(d, with_sizes("{min: 8, max: 18446744073709551615, factor: 2}"))
            .find("grid.sizes.max 18446744073709551615: larger than the size limit kMaxSweepBytes") !=
        std::string::npos);
  CHECK(load_error(d, with_sizes("{min: 8, max: 9223372036854775808, factor: 8}")).find("kMaxSweepBytes") !=
        std::string::npos);
  CHECK(load_error(d, with_sizes("{min: 8, max: 16, factor: 1.0000000000000002}"))
            .find("does not advance the size sweep") != std::string::npos);
  CHECK(load_error(d, with_sizes("{min: 8, max: 1T, factor: 2}")).find("unknown suffix") != std::string::npos);
  const std::string real = R"(engine: real
grid:
  algorithms: [ring]
  ranks: [2]
  sizes: {min: 8, max: 64, factor: 8}
real:
  timeout: TIMEOUT
)";
  for (const char* t : {"9223372036854775807", "1e300", "inf"}) {
    std::string spec = real;
    spec.replace(spec.find("TIMEOUT"), 7, t);
    CAPTURE(t);
    const std::string e = load_error(d, spec);
    CHECK(e.find("real.timeout") != std::string::npos);
    CHECK(e.find('\n') == std::string::npos);
  }
  CHECK(load_error(d, "engine: analytic\n{a: 1}: 2\ngrid: {}\n").find("a key of the spec is not a name") !=
        std::string::npos);
  CHECK(load_error(d, "engine: analytic\n\"col\\nour\": 2\ngrid: {}\n").find("unknown key 'col\\nour'") !=
        std::string::npos);
}

TEST_CASE("spec: the fuzzing reproducers are input errors of one line") {
  namespace fs = std::filesystem;
  TempDir d;
  // The spec naming a calibration and local topologies gets them: its sizes are what fails.
  const fs::path local = fs::path(TOPOCOLL_SOURCE_DIR) / "experiments" / "sim-vs-real-local";
  fs::copy(local / "calibration.json", d.path() + "/calibration.json");
  fs::copy(local / "topologies", d.path() + "/topologies", fs::copy_options::recursive);
  for (const char* name : {"exp-factor-1ulp-hang.yaml", "exp-max-2e64-hang.yaml", "exp-real-timeout-huge-ubsan.yaml",
                           "exp-real-vector-max-size-internal-error.yaml", "exp-sizes-max-2e63-memory.yaml"}) {
    CAPTURE(name);
    std::ifstream in(fs::path(TOPOCOLL_SOURCE_DIR) / "fuzz" / "repros" / name);
    std::ostringstream text;
    text << in.rdbuf();
    const std::string e = load_error(d, text.str());
    CHECK(!e.empty());
    CHECK(e.find('\n') == std::string::npos);
    CHECK((e.find("kMaxSweep") != std::string::npos || e.find("kMaxTimeoutSeconds") != std::string::npos));
  }
  // Found by fuzz/exp_spec_fuzz: a calibration name the file system refuses (too long).
  std::ifstream in(fs::path(TOPOCOLL_SOURCE_DIR) / "fuzz" / "repros" / "exp-calibration-name-too-long.yaml");
  std::ostringstream text;
  text << in.rdbuf();
  CHECK(load_error(d, text.str()).find(": no such file (looked for") != std::string::npos);
}

TEST_CASE("spec: collective (default allreduce) and algorithms checked against it") {
  TempDir d;
  CHECK(experiments::load_exp_spec(d.write("a.yaml", kTiny)).collective == algo::Collective::AllReduce);
  const std::string gather = R"(engine: analytic
collective: allgather
grid:
  topologies: pcie-8gpu
  algorithms: allgather-ring
  sizes: {min: 1K, max: 1M}
)";
  const experiments::ExpSpec s = experiments::load_exp_spec(d.write("b.yaml", gather));
  CHECK(s.collective == algo::Collective::AllGather);
  CHECK(s.nccl_model);
  CHECK(s.algorithms == std::vector<std::string>{"allgather-ring"});
  // An algorithm of another collective: the line, the name and the collective's algorithms.
  CHECK(load_error(d,
                   "engine: analytic\ncollective: broadcast\ngrid:\n  topologies: pcie-8gpu\n  algorithms: [ring]\n"
                   "  sizes: {min: 8, max: 1K}\n")
            .find("experiment.yaml:5: grid.algorithms ring: an algorithm for allreduce, expected one of the broadcast "
                  "algorithms broadcast-chain, broadcast-tree") != std::string::npos);
  CHECK(load_error(d, std::string(kTiny) + "collective: allgather\n").find("an algorithm for allreduce") !=
        std::string::npos);
  CHECK(load_error(d, std::string(kTiny) + "collective: allgathr\n")
            .find(":8: collective: unknown collective 'allgathr': expected one of allreduce") != std::string::npos);
  // MPI_Allreduce is the allreduce baseline only; 2.22.3 models allreduce only; alltoall has no model.
  CHECK(load_error(d,
                   "engine: real\ncollective: reduce\ngrid:\n  algorithms: [reduce-chain, mpi]\n"
                   "  sizes: {min: 8, max: 1K}\n")
            .find("MPI_Allreduce is an allreduce, the collective is reduce") != std::string::npos);
  CHECK(load_error(d, std::string(gather) + "nccl_version: 2.22.3\n").find("covers allreduce only") !=
        std::string::npos);
  CHECK(load_error(d,
                   "engine: analytic\ncollective: alltoall\nnccl_model: true\ngrid:\n  topologies: pcie-8gpu\n"
                   "  algorithms: [ring]\n  sizes: {min: 8, max: 1K}\n")
            .find(":3: nccl_model: NCCL's tuner has no model for alltoall") != std::string::npos);
}

TEST_CASE("spec: collective alltoallv runs size matrices (grid.matrices)") {
  TempDir d;
  d.write(
      "moe-8.csv", "# 8 x 8\n" + [] {
        std::string rows;
        for (int i = 0; i < 8; ++i)
          for (int j = 0; j < 8; ++j) rows += std::to_string(1 + i + 3 * j) + (j == 7 ? "\n" : ",");
        return rows;
      }());
  d.write("four.csv", "1,2,3,4\n4,3,2,1\n0,0,0,0\n5,5,5,5\n");
  const std::string head =
      "engine: analytic\ncollective: alltoallv\ngrid:\n  topologies: pcie-8gpu\n"
      "  algorithms: [alltoallv-pairwise]\n";
  const std::string path = d.write("experiment.yaml", head + "  matrices: [moe-8.csv]\n");
  const experiments::ExpSpec s = experiments::load_exp_spec(path);
  CHECK(s.collective == algo::Collective::AllToAllV);
  REQUIRE(s.matrix_sizes.size() == 1);
  CHECK(s.matrix_sizes[0]->count(2, 1) == 1 + 2 + 3);
  CHECK_FALSE(s.nccl_model);  // NCCL's tuner has no model for it
  CHECK(s.cluster_ranks.at("pcie-8gpu|-") == 8);
  // The mistakes, each named with its line.
  CHECK(load_error(d, head + "  sizes: {min: 8, max: 1K}\n")
            .find("grid: missing key 'matrices' (required: algorithms or schedules, matrices (collective alltoallv: "
                  "size matrix files)") != std::string::npos);
  CHECK(load_error(d, head + "  matrices: [moe-8.csv]\n  sizes: {min: 8, max: 1K}\n")
            .find(":7: grid.sizes: collective alltoallv runs the calls of its size matrices: grid.matrices") !=
        std::string::npos);
  CHECK(load_error(d, std::string(kTiny) + "  matrices: [moe-8.csv]\n")
            .find("grid.matrices: size matrices are for collective alltoallv; the collective is allreduce") !=
        std::string::npos);
  CHECK(load_error(d, head + "  matrices: [nosuch.csv]\n").find(":6: grid.matrices nosuch.csv: ") != std::string::npos);
  CHECK(load_error(d, head + "  matrices: [moe-8.csv, moe-8.csv]\n").find("a file is listed twice") !=
        std::string::npos);
  CHECK(load_error(d, head + "  matrices: [moe-8.csv, four.csv]\n")
            .find(":6: grid.matrices four.csv: a matrix of 4 ranks, and the grid has no job of 4 ranks (pcie-8gpu x "
                  "nodes -: 8)") != std::string::npos);
  CHECK(load_error(d,
                   "engine: analytic\ncollective: alltoallv\nnccl_model: true\ngrid:\n  topologies: pcie-8gpu\n"
                   "  algorithms: [alltoallv-pairwise]\n  matrices: [moe-8.csv]\n")
            .find(":3: nccl_model: NCCL's tuner has no model for alltoallv") != std::string::npos);
  // Engine real: a matrix runs on the rank counts of its size.
  CHECK(
      load_error(d,
                 "engine: real\ncollective: alltoallv\ngrid:\n  algorithms: [alltoallv-pairwise]\n"
                 "  matrices: [four.csv]\n  ranks: [2, 8]\n")
          .find("grid.matrices four.csv: a matrix of 4 ranks, and the grid has no job of 4 ranks (grid.ranks 2, 8)") !=
      std::string::npos);
  CHECK(load_error(d,
                   "engine: real\ncollective: alltoallv\ngrid:\n  algorithms: [alltoallv-pairwise]\n"
                   "  matrices: [four.csv]\n  ranks: [4]\n") == "");
}
