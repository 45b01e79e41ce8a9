#include "common/records.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <ctime>

#include "common/errors.hpp"
#include "common/json_input.hpp"

namespace topocoll::records {

nlohmann::json to_json(const Record& r) {
  nlohmann::json j = {{"schema", kRecordSchema},
                      {"kind", r.kind},
                      {"engine", r.engine},
                      {"collective", r.collective},
                      {"algorithm", r.algorithm},
                      {"topology", r.topology},
                      {"nodes", r.nodes},
                      {"fabric", r.fabric},
                      {"oversubscription", r.oversubscription},
                      {"ranks", r.ranks},
                      {"size_bytes", r.size_bytes},
                      {"count", r.count},
                      {"dtype", r.dtype},
                      {"op", r.op},
                      {"channels", r.channels},
                      {"slice_bytes", r.slice_bytes},
                      {"in_place", r.in_place},
                      {"time_us", r.time_us},
                      {"algbw_gbps", r.algbw_gbps},
                      {"busbw_gbps", r.busbw_gbps},
                      {"calibration", r.calibration},
                      {"version", r.version},
                      {"date", r.date},
                      {"machine", r.machine}};
  if (r.wrong) j["wrong"] = *r.wrong;
  if (r.protocol) j["protocol"] = *r.protocol;
  if (r.device_time_us) j["device_time_us"] = *r.device_time_us;
  if (r.nccl_channels) j["nccl_channels"] = *r.nccl_channels;
  if (r.nccl_version) j["nccl_version"] = *r.nccl_version;
  if (r.experiment) j["experiment"] = *r.experiment;
  if (r.spec_hash) j["spec_hash"] = *r.spec_hash;
  if (r.commit) j["commit"] = *r.commit;
  if (r.repetition) j["repetition"] = *r.repetition;
  if (r.point) j["point"] = *r.point;
  return j;
}

namespace {

// A non-negative integer field, range-checked before it is narrowed (never truncated or wrapped).
template <typename T>
T count_of(const nlohmann::json& j, const char* key) {
  return json_input::integer<T>(j.at(key), "record", fmt::format("'{}'", key), T{0});
}

}  // namespace

Record record_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("schema") || j["schema"] != kRecordSchema)
    throw InputError(fmt::format("not a {} record: {}", kRecordSchema, json_input::echo(j)));
  Record r;
  try {
    r.kind = j.at("kind").get<std::string>();
    r.engine = j.at("engine").get<std::string>();
    r.collective = j.at("collective").get<std::string>();
    r.algorithm = j.at("algorithm").get<std::string>();
    r.topology = j.at("topology").get<std::string>();
    r.nodes = count_of<int>(j, "nodes");
    r.fabric = j.at("fabric").get<std::string>();
    r.oversubscription = j.at("oversubscription").get<double>();
    r.ranks = count_of<int>(j, "ranks");
    r.size_bytes = count_of<std::uint64_t>(j, "size_bytes");
    r.count = count_of<std::uint64_t>(j, "count");
    r.dtype = j.at("dtype").get<std::string>();
    r.op = j.at("op").get<std::string>();
    r.channels = count_of<int>(j, "channels");
    r.slice_bytes = count_of<std::uint64_t>(j, "slice_bytes");
    r.in_place = j.at("in_place").get<bool>();
    r.time_us = j.at("time_us").get<double>();
    r.algbw_gbps = j.at("algbw_gbps").get<double>();
    r.busbw_gbps = j.at("busbw_gbps").get<double>();
    r.calibration = j.at("calibration").get<std::string>();
    r.version = j.at("version").get<std::string>();
    r.date = j.at("date").get<std::string>();
    r.machine = j.at("machine").get<std::string>();
    if (j.contains("wrong")) r.wrong = count_of<std::uint64_t>(j, "wrong");
    if (j.contains("protocol")) r.protocol = j.at("protocol").get<std::string>();
    if (j.contains("device_time_us")) r.device_time_us = j.at("device_time_us").get<double>();
    if (j.contains("nccl_channels")) r.nccl_channels = count_of<int>(j, "nccl_channels");
    if (j.contains("nccl_version")) r.nccl_version = j.at("nccl_version").get<std::string>();
    if (j.contains("experiment")) r.experiment = j.at("experiment").get<std::string>();
    if (j.contains("spec_hash")) r.spec_hash = j.at("spec_hash").get<std::string>();
    if (j.contains("commit")) r.commit = j.at("commit").get<std::string>();
    if (j.contains("repetition")) r.repetition = count_of<int>(j, "repetition");
    if (j.contains("point")) r.point = j.at("point").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("record field missing or of the wrong type: {}", e.what()));
  } catch (const InputError& e) {
    throw InputError(fmt::format("record field of the wrong type: {}", e.what()));
  }
  return r;
}

std::string now_iso8601() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

}  // namespace topocoll::records
