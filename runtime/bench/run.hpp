// The measured bench (issue 5, part 1): allreduce over a size sweep under MPI, one block per
// algorithm, as nccl-tests' all_reduce_perf measures it. topocoll-bench (tools/bench_command.*)
// parses its flags into BenchOptions, calls run_bench and prints what the BenchReport receives
// (a table, or JSONL records of common/records.hpp's schema: kind "measured", engine = the backend).
//
// Per algorithm and size, out of place then in place: `warmup` untimed runs, then `iters` timed
// runs, each between a barrier and the end of the rank's part; the time is the median over
// iterations of the maximum over ranks. With check != 0 one more run on fresh inputs is compared
// bit for bit with test_data's exact result: `wrong` is the number of wrong elements over all
// ranks. `mpi` is MPI_Allreduce on the same buffers (avg: MPI_SUM then finish_avg; no fp16 / bf16).
//
// Backends: the transport topocoll's schedules run over, `mpi` (MPI point-to-point) or `ucx` (UCP
// tag API, endpoints bootstrapped through MPI; built when UCX is found), or `nccl` (device buffers,
// schedules cut into rounds over NCCL send/recv, the stock NCCL baselines: nccl_baselines.hpp).
// Each (algorithm, size) is bound once into a runtime::Plan (or a RoundExecutor) and run for every
// iteration. The `mpi` algorithm is MPI_Allreduce in every backend.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "algorithms/ir/types.hpp"
#include "algorithms/schedule_file.hpp"
#include "common/records.hpp"
#include "runtime/bench/job_layout.hpp"

namespace topocoll::algo {
struct Algorithm;
}

namespace topocoll::runtime {

enum class BenchBackend { Mpi, Ucx, Nccl };
std::string_view to_string(BenchBackend b);  // "mpi", "ucx", "nccl"
// Whether this build has the backend: mpi always; ucx when UCX was found; nccl with CUDA + NCCL.
bool bench_backend_built(BenchBackend b);

// One block of the bench: a topocoll algorithm, or a stock baseline (alg null: mpi, nccl,
// nccl-ring, nccl-tree, named by `name`).
struct BenchEntry {
  const algo::Algorithm* alg = nullptr;
  std::string name;
  // A schedule file (--schedule): asked for by name, so a point it cannot run is an error unless
  // it is a fixed-count file at another size (algorithms/schedule_file.hpp).
  const algo::ScheduleFile* file = nullptr;
};

// The typed configuration of a measured run. The caller checks it (topocoll-bench's flag parsing
// does, before MPI_Init, so that every rank rejects bad input alike): a built backend; entries of
// allreduce algorithms, mpi, or NCCL baselines with the nccl backend; sizes ascending, in whole
// elements; iters >= 1; warmup >= 0; channels 1..64; slice_bytes > 0; rounds only with mpi.
struct BenchOptions {
  BenchBackend backend = BenchBackend::Mpi;
  std::vector<BenchEntry> entries;   // the blocks, in order
  std::vector<std::uint64_t> sizes;  // bytes
  algo::DataType dtype = algo::DataType::Float32;
  algo::ReduceOp op = algo::ReduceOp::Sum;
  int iters = 20, warmup = 5;
  int check = 1;  // 0: no verification
  int channels = 2;
  std::uint64_t slice_bytes = std::uint64_t{1} << 20;
  bool rounds = false;               // topocoll's schedules cut into rounds (backend mpi)
  std::uint64_t ucx_bulk_bytes = 0;  // ucx: messages this large use UCX's bulk endpoint (0: never)
  std::chrono::milliseconds progress_timeout{60000};
  BenchTopology topology;  // empty: detected from MPI
};

// What rank 0 learns before the first block, for a header.
struct BenchStart {
  records::Record base;  // the fields every record of the run shares (kind, engine, topology, ...)
  int ranks = 0, nodes = 0, ranks_per_node = 0;
  std::string topology;         // one line: the job's topology (JobLayout::description)
  double busbw_factor = 1.0;    // busbw = algbw * busbw_factor (nccl-tests' allreduce factor)
  std::string transport_note;   // the transport, one or more lines joined by "\n# "
  int local_ranks = 0;          // ranks on this node
  unsigned cores = 1;           // of this node
  bool oversubscribed = false;  // more ranks than cores: a stalled rank yields at once
  std::int64_t spin_us = 0;     // else: how long a stalled rank polls before it yields
  std::string mpi_pml;          // which point-to-point layer Open MPI uses, as far as the process can tell
};

// One size of a block: out of place (points[0]) and in place (points[1]), complete records.
struct BenchRow {
  std::uint64_t bytes = 0, count = 0;
  records::Record points[2];
};

// Receives the run's results on rank 0, in order: start, then [device,] then per block
// block_start, a row or an unsupported size per size, block_end; finally finish before the closing
// barrier. Other ranks receive nothing.
class BenchReport {
 public:
  virtual ~BenchReport() = default;
  virtual void start(const BenchStart& s) = 0;
  virtual void device(const std::string& description) = 0;  // --backend nccl: GPU and NCCL, one line
  virtual void block_start(const BenchEntry& e) = 0;
  virtual void unsupported(const BenchEntry& e, std::uint64_t bytes, const std::string& reason) = 0;
  virtual void row(const BenchEntry& e, const BenchRow& r) = 0;
  // `wrong`: over every size and rank of the block; avg_busbw over its rows, both placements.
  virtual void block_end(const BenchEntry& e, std::uint64_t wrong, double avg_busbw) = 0;
  virtual void finish() = 0;
};

// The fields every rank's options must agree on (runtime::agree, before MPI moves any data):
// everything that changes the collectives the ranks run (not the output format or the timeout).
std::vector<std::pair<std::string, std::string>> agreement_fields(const BenchOptions& o);

// Runs the benchmark; MPI must be initialised. Collective: every rank calls it with the same
// options. Returns the number of wrong elements over every block (0 when unchecked). InputError
// when the job does not fit the options (on every rank alike), std::runtime_error naming the rank
// when a run fails there (a peer gone or stalled: possibly on this rank only).
std::uint64_t run_bench(const BenchOptions& o, BenchReport& report);

}  // namespace topocoll::runtime
