// The record schema shared by the simulator, the runtime and the experiments: one JSON object
// per (algorithm, size) point, a line each in a JSONL file. Documented in docs/records.md.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>

namespace topocoll::records {

inline constexpr const char* kRecordSchema = "topocoll.record/1";

struct Record {
  std::string kind = "simulated";  // simulated | measured | model
  std::string engine;              // analytic | simgrid | nccl-model | mpi | ucx | nccl ...
  std::string collective = "allreduce";
  std::string algorithm;  // ring, dbt, ... or nccl:<algo>/<proto>
  std::string topology;   // what --topology said
  int nodes = 0;
  std::string fabric;  // "" when one node
  double oversubscription = 1.0;
  int ranks = 0;
  std::uint64_t size_bytes = 0;
  std::uint64_t count = 0;
  std::string dtype;
  std::string op;
  int channels = 0;
  std::uint64_t slice_bytes = 0;
  bool in_place = false;
  double time_us = 0.0;
  double algbw_gbps = 0.0;
  double busbw_gbps = 0.0;
  std::optional<std::uint64_t> wrong;       // measured runs: elements that failed verification
  std::optional<std::string> protocol;      // simulated: the NCCL protocol of the calibration (LL, LL128, Simple)
  std::optional<int> nccl_channels;         // model: the channels NCCL runs its choice with
  std::optional<std::string> nccl_version;  // model: the NCCL release modelled ("2.22.3", "2.28.9")
  // simulated: the engine's time of the collective on the GPUs, before the per-call host floor
  // (time_us = max(device_time_us, the calibration's host_call_us); docs/simulator.md).
  std::optional<double> device_time_us;
  std::string calibration;
  std::string version;  // topocoll version
  std::string date;     // ISO 8601 UTC
  std::string machine;  // hostname of the machine that produced it
  // Experiment provenance (`topocoll exp run`; absent elsewhere). docs/records.md.
  std::optional<std::string> experiment;  // the spec's folder name
  std::optional<std::string> spec_hash;   // "sha256:<hex>" of the spec file's bytes
  std::optional<std::string> commit;      // `git describe --always --dirty` of the spec's tree, or "unknown"
  std::optional<int> repetition;          // 0-based
  std::optional<std::string> point;       // the point's grid coordinates: the resume key
};

nlohmann::json to_json(const Record& r);
Record record_from_json(const nlohmann::json& j);  // throws InputError on a missing or wrong field
std::string now_iso8601();
std::string hostname();

}  // namespace topocoll::records
