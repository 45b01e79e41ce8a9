// A schedule written elsewhere (a file), taken into a run as if it were a registered algorithm:
// `topocoll sim --schedule FILE`, `topocoll bench --schedule FILE`, an experiment's `schedules:`.
//
// Two kinds of file (told apart by their content, docs/schedule.md "Schedule files"):
//   - topocoll's schedule JSON (schedule_json.hpp) is written for ONE call: its element count,
//     rank count, collective and root are fixed. It runs at that count only; a point of another
//     size is refused naming both counts (Support::no), so a sweep that asks for it by name stops
//     with that message.
//   - MSCCL XML (msccl_xml.hpp) is size-generic: its chunks are fractions of the buffers, so it is
//     instantiated at every count that is a multiple of its chunk count.
// Before a schedule of a file runs, the verifier proves it on the job's layout (nodes and NVLink
// domains from the topology) unless verification is turned off (`--no-verify`); a schedule the
// verifier refuses is an InputError naming the file, the failure and the verifier's message.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/ir/schedule.hpp"
#include "algorithms/registry.hpp"

namespace topocoll::algo {

struct ScheduleFile {
  std::string path;
  std::string format;  // "topocoll-schedule JSON" | "MSCCL XML"
  std::string name;    // the schedule's own name, as the file gives it
  std::string digest;  // of the file's bytes (FNV-1a 64, hex): ranks of a job agree on it
  Collective collective = Collective::AllReduce;
  int ranks = 0;
  int root = 0;
  DataType dtype = DataType::Float32;  // the file's (a JSON schedule's header; MSCCL XML: float32)
  ReduceOp op = ReduceOp::Sum;
  std::optional<std::uint64_t> count;           // a JSON schedule's one count; nullopt: size-generic
  std::uint64_t granularity = 1;                // size-generic: counts must be multiples of it
  std::shared_ptr<const AllToAllVSizes> sizes;  // an alltoallv file's size matrix (fixed, as its count)
  // The schedule of one call (args checked by the caller: as_algorithm's supports()).
  std::function<Schedule(const CollectiveArgs&)> instantiate;

  // The call the file is written for, at `count` elements (its own dtype, op, ranks and root).
  CollectiveArgs args_at(std::uint64_t count) const;
  // A fixed-count file's size as nccl-tests names sizes (nccl_tests_bytes) in `dtype`; nullopt
  // when size-generic.
  std::optional<std::uint64_t> bytes(DataType dtype) const;
  // A sweep point the file sits out (said in the table, not an error): a fixed-count file at
  // another size than its own, a size-generic file at a count that is not a multiple of its
  // granularity.
  bool sits_out(std::uint64_t bytes, DataType dtype) const;
  // What the table says of such a point: "not run: the schedule is for 4000 B only" or "not run:
  // counts must be multiples of 16 (count 250)".
  std::string sits_out_line(std::uint64_t bytes, DataType dtype) const;
  // A one-line description: "MSCCL XML allreduce, 8 ranks, any count that is a multiple of 16".
  std::string describe() const;
};

// Reads the file (InputError naming the path when it cannot be read or parsed).
ScheduleFile load_schedule_file(const std::string& path);

struct ScheduleFileOptions {
  bool verify = true;     // prove each instantiated schedule before it is generated
  bool in_place = false;  // prove it in place as well (the bench runs both)
};

// The file as an Algorithm: supports() checks the call against the file (ranks, collective, root,
// count); generate() instantiates it at the call's count, with the call's dtype and op, and
// verifies it on the layout (memoised per count). `name` is what tables and records call it.
Algorithm as_algorithm(std::shared_ptr<const ScheduleFile> file, std::string name, ScheduleFileOptions options = {});

// The names schedule files take in one run: the schedule's own name, unless that is a registered
// algorithm's or another file's in the same run; then "NAME@BASENAME" (and a number after it
// when even that repeats).
std::vector<std::string> schedule_file_names(const std::vector<std::shared_ptr<const ScheduleFile>>& files);

// The size matrix of an all-to-allv run: `path` (--sizes FILE) when given, else the first schedule
// file's; the files' own matrices must equal it. InputError when the collective is not alltoallv but
// a matrix is given, when alltoallv has none, or when its rank count is not `ranks` (0: not known
// yet, not checked). Null for other collectives.
std::shared_ptr<const AllToAllVSizes> run_alltoallv_sizes(Collective collective, const std::string& path,
                                                          const std::vector<std::shared_ptr<const ScheduleFile>>& files,
                                                          int ranks);

// Loads every path and makes each an Algorithm (the usual entry point of the commands).
struct ScheduleFileSet {
  std::vector<std::shared_ptr<const ScheduleFile>> files;
  std::vector<Algorithm> algorithms;  // one per file, same order
};
ScheduleFileSet load_schedule_files(const std::vector<std::string>& paths, ScheduleFileOptions options = {});

// The sizes (bytes) of a run with schedule files: `sweep` as the command line gives it; when it
// gives no sizes (sizes_given false) and every file is fixed-count, the files' own sizes instead.
// InputError when a fixed-count file's size is not among them, naming both.
std::vector<std::uint64_t> sweep_with_files(const ScheduleFileSet& set, std::vector<std::uint64_t> sweep,
                                            bool sizes_given, DataType dtype);

}  // namespace topocoll::algo
