// Tests of the SimGrid platform XML (platform_xml.hpp): the file SimGrid loads is the platform
// the engine simulates. Every route of the file, loaded into SimGrid, is the Router's (link by
// link, with the calibrated latency), every link has the calibrated rate, and a ring step
// simulated on the file ends when the same step ends on the adapter's in-memory platform.
#include "simulator/simgrid/platform_xml.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <simgrid/s4u.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "simulator/calibration.hpp"
#include "simulator/routes.hpp"
#include "simulator/simgrid/simgrid_adapter.hpp"
#include "topologies/constants.hpp"
#include "topologies/presets.hpp"
#include "topologies/transform.hpp"

namespace topocoll::sim::sg {

namespace {

namespace sg4 = ::simgrid::s4u;
using topo::FabricKind;
using topo::FabricSpec;
using topo::Topology;

FabricSpec fabric(FabricKind kind, int radix = topo::constants::kQuantum2Radix) {
  FabricSpec f;
  f.kind = kind;
  f.switch_radix = radix;
  return f;
}

// A platform file in the temporary directory, removed with this object.
class PlatformFile {
 public:
  PlatformFile(const std::string& xml, std::string_view tag)
      : path_(std::filesystem::temp_directory_path() /
              fmt::format("topocoll_platform_xml_test_{}_{}.xml", getpid(), tag)) {
    std::ofstream(path_) << xml;
  }
  ~PlatformFile() { std::filesystem::remove(path_); }
  PlatformFile(const PlatformFile&) = delete;
  PlatformFile& operator=(const PlatformFile&) = delete;
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

std::string host_of(const Topology& t, int rank, int channel = 0) {
  return fmt::format("{}/ch{}", t.device_name(t.rank(rank).gpu), channel);
}

// SimGrid with the engine's settings (simgrid_adapter.cpp, start_engine), the file loaded.
std::unique_ptr<sg4::Engine> load(const std::string& path) {
  static char arg0[] = "platform_xml_test", arg1[] = "--log=root.thres:critical";
  static char* argv[] = {arg0, arg1, nullptr};
  int argc = 2;
  auto engine = std::make_unique<sg4::Engine>(&argc, argv);
  engine->load_platform(path);
  sg4::Engine::set_config("network/latency-factor:0");
  sg4::Engine::set_config("network/bandwidth-factor:1");
  sg4::Engine::set_config("surf/precision:1e-13");
  engine->seal_platform();
  return engine;
}

// In a child process: every pair's route in the file, one line each: "latency name name ...".
std::vector<std::string> file_routes(const std::string& path,
                                     const std::vector<std::pair<std::string, std::string>>& pairs) {
  const std::string text = run_isolated([&](std::string& out) {
    auto engine = load(path);
    for (const auto& [a, b] : pairs) {
      const sg4::Host* src = sg4::Host::by_name_or_null(a);
      const sg4::Host* dst = sg4::Host::by_name_or_null(b);
      if (src == nullptr || dst == nullptr) throw std::runtime_error(fmt::format("no host {} or {}", a, b));
      std::vector<sg4::Link*> links;
      double latency = 0.0;
      src->route_to(dst, links, &latency);
      out += fmt::format("{:.17g}", latency);
      for (const sg4::Link* l : links) out += fmt::format(" {}@{:.17g}", l->get_name(), l->get_bandwidth());
      out += "\n";
    }
  });
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The line file_routes() must give for the Router's route a -> b: the calibrated latency, and
// each link with its calibrated rate.
std::string expected_route(const Topology& t, const Calibration& c, Router& router, int a, int b) {
  const Route& r = router.route(a, b);
  const std::vector<std::string> names = link_names(t, a, r);
  double latency = 0.0;
  for (topo::Edge e : r.links) latency += c.latency_s(t.graph(), e);
  std::string line = fmt::format("{:.17g}", latency);
  for (std::size_t k = 0; k < names.size(); ++k)
    line += fmt::format(" {}@{:.17g}", names[k], c.rate_bytes_per_s(t.graph(), r.links[k]));
  return line;
}

std::string xml_of(const Topology& t) {
  std::ostringstream out;
  write_platform_xml(t, out);
  return out.str();
}

}  // namespace

TEST_CASE("platform xml: every GPU pair's route in the file is the Router's (links, rates, latency)") {
  struct Case {
    std::string name;
    Topology t;
  };
  std::vector<Case> cases;
  cases.push_back({"dgx-h100 x1", Topology::build(topo::make_dgx_h100_node(), 1, fabric(FabricKind::RailFatTree))});
  cases.push_back(
      {"dgx-h100 x2 rail-fat-tree", Topology::build(topo::make_dgx_h100_node(), 2, fabric(FabricKind::RailFatTree))});
  // Radix 4: two nodes per scalable unit, so node 2 is across the spines (hashed ECMP).
  cases.push_back({"dgx-h100 x3 rail-fat-tree radix 4",
                   Topology::build(topo::make_dgx_h100_node(), 3, fabric(FabricKind::RailFatTree, 4))});
  cases.push_back(
      {"dgx-a100 x2 fat-tree", Topology::build(topo::make_dgx_a100_node(), 2, fabric(FabricKind::FatTree, 4))});
  // The fabrics beyond fat trees, a named transport (its efficiency on the links) and two NICs
  // per GPU.
  FabricSpec df = fabric(FabricKind::Dragonfly);
  df.nics_per_switch = 8;
  df.group_switches = 2;
  df.global_links = 2;
  df.transport = "slingshot-11";
  cases.push_back({"dgx-a100 x4 dragonfly (2 groups of 2 switches, 2 global links)",
                   Topology::build(topo::make_dgx_a100_node(), 4, df)});
  cases.push_back({"dgx-h100 x3 multi-plane radix 4",
                   Topology::build(topo::make_dgx_h100_node(), 3, fabric(FabricKind::MultiPlane, 4))});
  cases.push_back({"dgx-h100 x2 two NICs per GPU", Topology::build(topo::multiply_nics(topo::make_dgx_h100_node(), 2),
                                                                   2, fabric(FabricKind::RailFatTree))});
  const Calibration c = ideal_calibration();
  for (Case& k : cases) {
    CAPTURE(k.name);
    const Topology& t = k.t;
    const PlatformFile file(xml_of(t), "routes");
    std::vector<std::pair<std::string, std::string>> pairs;
    std::vector<std::string> expected;
    for (int a = 0; a < t.num_ranks(); ++a) {
      Router router(t);
      for (int b = 0; b < t.num_ranks(); ++b)
        if (a != b) {
          pairs.emplace_back(host_of(t, a), host_of(t, b));
          expected.push_back(expected_route(t, c, router, a, b));
        }
    }
    const std::vector<std::string> got = file_routes(file.path(), pairs);
    REQUIRE(got.size() == expected.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
      if (got[i] != expected[i] && differ++ < 3) {
        CAPTURE(pairs[i].first);
        CAPTURE(pairs[i].second);
        CHECK(got[i] == expected[i]);
      }
    CHECK(differ == 0);
  }
}

TEST_CASE("platform xml: bench-sim's SMPI hostfile reads one GPU host per rank from the file") {
  const Topology t = Topology::build(topo::make_dgx_h100_node(), 2, fabric(FabricKind::RailFatTree));
  std::istringstream in(xml_of(t));
  std::vector<std::string> hosts(static_cast<std::size_t>(t.num_ranks()));
  std::size_t found = 0;
  for (std::string line; std::getline(in, line);) {
    // scripts/bench-sim: grep 'value="gpu"' | sed 's/.*<host id="\([^"]*\)".*<prop id="rank" value="\([0-9]*\)".*/...'
    if (line.find("value=\"gpu\"") == std::string::npos) continue;
    const auto id = line.find("<host id=\""), rank = line.find("<prop id=\"rank\" value=\"");
    REQUIRE(id != std::string::npos);
    REQUIRE(rank != std::string::npos);
    const std::string name = line.substr(id + 10, line.find('"', id + 10) - id - 10);
    const int r = std::stoi(line.substr(rank + 23));
    hosts.at(static_cast<std::size_t>(r)) = name;
    ++found;
  }
  CHECK(found == hosts.size());
  for (int r = 0; r < t.num_ranks(); ++r) CHECK(hosts[static_cast<std::size_t>(r)] == host_of(t, r));
}

namespace {

// Ends every transfer of a step at once, records when the last one ended.
class StepListener final : public Listener {
 public:
  StepListener(Simulation*& sim, std::size_t transfers, double bytes) : sim_(sim), left_(transfers), bytes_(bytes) {}
  void transfers_done(const std::vector<std::uint32_t>& done) override {
    left_ -= done.size();
    if (left_ == 0) end = sim_->now();
  }
  void compute_done(std::uint32_t) override {}
  void wake() override {
    for (std::uint32_t i = 0; i < left_; ++i) sim_->transfer(i, bytes_);
  }
  double end = -1.0;

 private:
  Simulation*& sim_;
  std::size_t left_;
  double bytes_;
};

}  // namespace

TEST_CASE("platform xml: a ring step on the file takes the time it takes on the engine's platform") {
  // 2 x DGX-H100 and 3 with spines: every rank sends 64 MiB to the next at once (the links the
  // ring shares across nodes are the NICs and, at radix 4, the spine links).
  for (int nodes : {2, 3}) {
    CAPTURE(nodes);
    const Topology t = Topology::build(topo::make_dgx_h100_node(), nodes, fabric(FabricKind::RailFatTree, 4));
    const Calibration c = ideal_calibration();
    const double bytes = 64.0 * 1024 * 1024;
    PlatformSpec spec;
    spec.topology = &t;
    spec.calibration = &c;
    spec.channels = 1;
    for (int r = 0; r < t.num_ranks(); ++r) spec.connections.push_back({r, (r + 1) % t.num_ranks(), 0});

    // The engine's platform, built in memory by the adapter.
    const std::string engine_text = run_isolated([&](std::string& out) {
      Simulation* sim = nullptr;
      StepListener listener(sim, spec.connections.size(), bytes);
      Simulation simulation(spec, listener);
      sim = &simulation;
      simulation.wake_at(0.0);
      simulation.run();
      out = fmt::format("{:.17g}", listener.end);
    });

    // One ring step (every connection sends `bytes` at once) on a platform file: its end time.
    auto ring_step_on = [&](const std::string& path) {
      return run_isolated([&](std::string& out) {
        auto engine = load(path);
        double end = -1.0;
        sg4::Actor::create("ring-step", sg4::Host::by_name(host_of(t, 0)), [&] {
          std::vector<sg4::CommPtr> comms;
          for (const Connection& k : spec.connections)
            comms.push_back(sg4::Comm::sendto_async(sg4::Host::by_name(host_of(t, k.src)),
                                                    sg4::Host::by_name(host_of(t, k.dst)),
                                                    static_cast<std::uint64_t>(bytes)));
          for (auto& comm : comms) comm->wait();
          end = sg4::Engine::get_clock();
        });
        engine->run();
        out = fmt::format("{:.17g}", end);
      });
    };
    // The same connections' platform written as XML, loaded, and the same step run on it.
    std::ostringstream xml;
    write_platform_xml(spec, xml);
    const PlatformFile file(xml.str(), fmt::format("ring{}", nodes));
    const std::string file_text = ring_step_on(file.path());
    const double on_engine = std::stod(engine_text), on_file = std::stod(file_text);
    CHECK(on_engine > 0.0);
    CHECK(on_file == doctest::Approx(on_engine).epsilon(1e-9));
    // The whole ring step on the file, from the export of every pair, takes the same time too.
    const PlatformFile all(xml_of(t), fmt::format("ringall{}", nodes));
    const std::string all_text = ring_step_on(all.path());
    CHECK(std::stod(all_text) == doctest::Approx(on_engine).epsilon(1e-9));
  }
}

}  // namespace topocoll::sim::sg
