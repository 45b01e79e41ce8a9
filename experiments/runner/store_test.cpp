#include "experiments/runner/store.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "common/errors.hpp"
#include "experiments/runner/provenance.hpp"
#include "experiments/runner/test_support.hpp"

using namespace topocoll;
using experiments::testing::TempDir;

namespace {

experiments::ExpSpec spec(const std::string& path) {
  experiments::ExpSpec s;
  s.path = path;
  s.name = "tiny";
  s.sha256 = experiments::sha256_hex("spec bytes");
  return s;
}

records::Record record(const experiments::ExpSpec& s, const std::string& point) {
  records::Record r = experiments::provenance(s, "abc1234");
  r.engine = "analytic";
  r.algorithm = "ring";
  r.point = point;
  r.date = "2026-01-01T00:00:00Z";
  return r;
}

}  // namespace

TEST_CASE("store: records_file names the file after the spec") {
  CHECK(experiments::records_file(spec("e/x/experiment.yaml"), "out") == "out/records.jsonl");
  CHECK(experiments::records_file(spec("e/x/scaling.yaml"), "out") == "out/records-scaling.jsonl");
}

TEST_CASE("store: written records are read back; a partial last line is cut off") {
  TempDir d;
  const experiments::ExpSpec s = spec(d.path() + "/experiment.yaml");
  const std::string file = experiments::records_file(s, d.path());
  CHECK(experiments::read_existing(file, s).points.empty());  // no file yet
  {
    experiments::RecordWriter w(file);
    w.write(record(s, "a"));
    w.write(record(s, "b"));
  }
  const std::uintmax_t complete = std::filesystem::file_size(file);
  const std::string partial = R"({"schema":"topocoll.rec)";  // an interrupted write
  { std::ofstream(file, std::ios::app) << partial; }
  const experiments::Existing ex = experiments::read_existing(file, s);
  CHECK(ex.points == std::set<std::string>{"a", "b"});
  CHECK(ex.dropped_partial == partial.size());
  CHECK(std::filesystem::file_size(file) == complete);
  CHECK(experiments::read_existing(file, s).dropped_partial == 0);

  // exp compare's view: keyed by point, without date, machine and commit.
  const auto points = experiments::load_points(file);
  REQUIRE(points.size() == 2);
  CHECK(points.at("a")["algorithm"] == "ring");
  CHECK(!points.at("a").contains("date"));
  CHECK(!points.at("a").contains("machine"));
  CHECK(!points.at("a").contains("commit"));
}

TEST_CASE("store: records of another spec, or not records, are errors") {
  TempDir d;
  const experiments::ExpSpec s = spec(d.path() + "/experiment.yaml");
  const std::string file = experiments::records_file(s, d.path());
  SUBCASE("another version of the spec") {
    experiments::ExpSpec other = s;
    other.sha256 = experiments::sha256_hex("other bytes");
    experiments::RecordWriter(file).write(record(other, "a"));
    CHECK_THROWS_WITH_AS(experiments::read_existing(file, s),
                         doctest::Contains((file + ":1: written from another version of the spec").c_str()),
                         InputError);
  }
  SUBCASE("not a record") {
    d.write("records.jsonl", "{\"x\": 1}\n");
    CHECK_THROWS_WITH_AS(experiments::read_existing(file, s), doctest::Contains((file + ":1: not a record").c_str()),
                         InputError);
    CHECK_THROWS_WITH_AS(experiments::load_points(file), doctest::Contains((file + ":1: not a record").c_str()),
                         InputError);
  }
  SUBCASE("a point twice") {
    experiments::RecordWriter w(file);
    w.write(record(s, "a"));
    w.write(record(s, "a"));
    CHECK_THROWS_WITH_AS(experiments::load_points(file), doctest::Contains(":2: point a appears twice"), InputError);
  }
}

TEST_CASE("store: record fields out of their type's range are input errors, never truncated") {
  const nlohmann::json good = records::to_json(record(spec("experiment.yaml"), "a"));
  CHECK(records::record_from_json(good).point == std::optional<std::string>("a"));
  for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{{"nodes", 4294967298ull},
                                                                                      {"ranks", -1},
                                                                                      {"channels", 1e20},
                                                                                      {"size_bytes", -5},
                                                                                      {"count", 1.5},
                                                                                      {"repetition", 2147483648ll},
                                                                                      {"wrong", "3"},
                                                                                      {"nodes", nullptr}}) {
    nlohmann::json j = good;
    j[key] = value;
    CAPTURE(key);
    CAPTURE(value.dump());
    CHECK_THROWS_WITH_AS(records::record_from_json(j), doctest::Contains(("'" + key + "'").c_str()), InputError);
  }
  nlohmann::json j = good;
  j["schema"] = 7;
  CHECK_THROWS_WITH_AS(records::record_from_json(j), doctest::Contains("not a topocoll.record/1 record"), InputError);
}
