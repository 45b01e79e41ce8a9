// The measured bench (issue 5, part 1): one collective (allreduce, allgather, reduce_scatter,
// broadcast, reduce or alltoall) over a size sweep under MPI, one block per algorithm, as
// nccl-tests' *_perf binaries measure it (sizes, counts and busbw as nccl_tests_args /
// nccl_tests_bytes / busbw_factor say). topocoll-bench (tools/bench_command.*)
// parses its flags into BenchOptions, calls run_bench and prints what the BenchReport receives
// (a table, or JSONL records of common/records.hpp's schema: kind "measured", engine = the backend).
//
// Per algorithm and size, out of place then in place: inputs filled once, `warmup` untimed runs,
// then `iters` timed runs, each between a barrier and the end of the rank's part, with nothing
// else between two runs (in place too, as nccl-tests: the values grow from run to run); the time
// is the median over iterations of the maximum over ranks. With check != 0 one more run on fresh
// inputs is compared bit for bit with test_data's exact result (fill_collective_expected; a reduce
// checks the root's output only): `wrong` is the number of wrong elements over all ranks; for the
// mpi baseline, against the MPI library's own integer sums where they saturate
// (mpi_arithmetic.hpp). In place uses NCCL's layouts (placement.hpp). `mpi` is the MPI library's collective on the same
// buffers (MPI_Iallreduce, MPI_Iallgather, MPI_Ireduce_scatter_block, MPI_Ibcast, MPI_Ireduce, MPI_Ialltoall; avg:
// MPI_SUM then finish_avg; the reductions have no fp16 / bf16, the other collectives move bytes).
//
// Backends: the transport topocoll's schedules run over, `mpi` (MPI point-to-point) or `ucx` (UCP
// tag API, endpoints bootstrapped through MPI; built when UCX is found), `shm` (runtime/
// shm_transport.hpp: ranks of a node read each other's buffers in place, which the bench then
// allocates in shared regions; MPI point-to-point between nodes), or `nccl` (device buffers,
// schedules cut into rounds over NCCL send/recv, the stock NCCL baselines: nccl_baselines.hpp).
// Each (algorithm, size) is bound once into a runtime::Plan (or a RoundExecutor) and run for every
// iteration. The `mpi` algorithm is the MPI library's collective in every backend.
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
#include "runtime/bench/overlap.hpp"

namespace topocoll::algo {
struct Algorithm;
}

namespace topocoll::runtime {

enum class BenchBackend { Mpi, Ucx, Nccl, Shm };
std::string_view to_string(BenchBackend b);  // "mpi", "ucx", "nccl", "shm"
// Whether this build has the backend: mpi and shm always; ucx when UCX was found; nccl with CUDA +
// NCCL.
bool bench_backend_built(BenchBackend b);

// --backend shm: Push (the default), Fused and a send of what a receive-reduce just computed
// written by that pass straight into the receiver's buffer (runtime/push_plan.hpp); Fused, the
// bench's buffers in shared regions and receive-reduces reading the peer's bytes in place (one
// pass); Map, the same buffers, receive-reduces through staging; Cma, private buffers that
// receivers read with process_vm_readv.
enum class ShmCopy { Push, Fused, Map, Cma };
std::string_view to_string(ShmCopy c);  // "push", "fused", "map", "cma"

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
// algorithms of `collective`, mpi, or NCCL baselines with the nccl backend; sizes ascending, in whole
// elements (ascending, or the same sweep repeated: nccl-tests' -N cycles; the last size the
// largest); iters >= 1; warmup >= 0; channels 1..64; slice_bytes > 0; rounds only with mpi;
// average -1..3.
struct BenchOptions {
  BenchBackend backend = BenchBackend::Mpi;
  algo::Collective collective = algo::Collective::AllReduce;
  int root = 0;                      // broadcast and reduce; a rank of the job (run_bench checks)
  std::vector<BenchEntry> entries;   // the blocks, in order
  std::vector<std::uint64_t> sizes;  // bytes (alltoallv: the one size of its matrix's call)
  std::shared_ptr<const algo::AllToAllVSizes> alltoallv_sizes;  // alltoallv: the size matrix
  algo::DataType dtype = algo::DataType::Float32;
  algo::ReduceOp op = algo::ReduceOp::Sum;
  int iters = 20, warmup = 5;
  int check = 1;  // 0: no verification
  // The time of a point. -1 (the default): the median over iterations of the maximum over ranks.
  // 0..3, nccl-tests' -a: each rank's mean over its iterations, then rank 0's (0), the average (1),
  // the minimum (2) or the maximum (3) over ranks (bench_rank_time).
  int average = -1;
  int channels = 2;
  std::uint64_t slice_bytes = std::uint64_t{1} << 20;
  bool rounds = false;               // topocoll's schedules cut into rounds (backend mpi)
  std::uint64_t ucx_bulk_bytes = 0;  // ucx: messages this large use UCX's bulk endpoint (0: never)
  ShmCopy shm_copy = ShmCopy::Push;  // shm: where receivers read messages (see ShmCopy)
  std::chrono::milliseconds progress_timeout{60000};
  BenchTopology topology;  // empty: detected from MPI
  // --overlap: after each size's out-of-place timing, the overlap benchmark (overlap.hpp) for
  // topocoll's plans and the mpi baseline (backends mpi, ucx and shm; not --rounds).
  bool overlap = false;
};

// What rank 0 learns before the first block, for a header.
struct BenchStart {
  records::Record base;  // the fields every record of the run shares (kind, engine, topology, ...)
  int ranks = 0, nodes = 0, ranks_per_node = 0;
  std::string topology;  // one line: the job's topology (JobLayout::description)
  algo::Collective collective = algo::Collective::AllReduce;
  double busbw_factor = 1.0;    // busbw = algbw * busbw_factor (nccl-tests' factor of the collective)
  std::string transport_note;   // the transport, one or more lines joined by "\n# "
  int local_ranks = 0;          // ranks on this node
  unsigned cores = 1;           // of this node
  bool oversubscribed = false;  // more ranks than cores: a stalled rank yields at once
  std::int64_t spin_us = 0;     // else: how long a stalled rank polls before it yields
  std::string mpi_pml;          // which point-to-point layer Open MPI uses, as far as the process can tell
};

// One size of a block: out of place (points[0]) and in place (points[1]), complete records.
// bytes: nccl_tests_bytes of the call; count: its per-rank count (nccl-tests' count column).
struct BenchRow {
  std::uint64_t bytes = 0, count = 0;
  int root = -1;  // broadcast and reduce: the root; else -1
  records::Record points[2];
  // Per placement, the first and third quartile of the per-iteration maximum over ranks (us).
  double quartiles_us[2][2] = {{0, 0}, {0, 0}};
  bool in_place_run = true;  // false: points[1] was not run (an asymmetric alltoallv has no in-place form)
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
  // A line about the block's results, after block_start (the mpi baseline: how MPI's arithmetic
  // differs from nccl-tests' and what #wrong counts).
  virtual void note(const BenchEntry& e, const std::string& line) = 0;
  virtual void unsupported(const BenchEntry& e, std::uint64_t bytes, const std::string& reason) = 0;
  virtual void row(const BenchEntry& e, const BenchRow& r) = 0;
  // `wrong`: over every size and rank of the block; avg_busbw over its rows, both placements.
  virtual void block_end(const BenchEntry& e, std::uint64_t wrong, double avg_busbw) = 0;
  // --overlap: a size's overlap figures (after its row); by default not reported.
  virtual void overlap(const BenchEntry& e, std::uint64_t bytes, const OverlapTimes& t) {
    (void)e;
    (void)bytes;
    (void)t;
  }
  virtual void finish() = 0;
};

// nccl-tests' -a over the ranks' mean times (per_rank, one per rank): 0 rank 0's, 1 the average,
// 2 the minimum, 3 the maximum.
double bench_rank_time(int average, const std::vector<double>& per_rank);

// The MPI call of the mpi baseline: MPI_Iallreduce, MPI_Iallgather, MPI_Ireduce_scatter_block,
// MPI_Ibcast, MPI_Ireduce, MPI_Ialltoall.
std::string_view mpi_baseline_call(algo::Collective c);

// The fields every rank's options must agree on (runtime::agree, before MPI moves any data):
// everything that changes the collectives the ranks run (not the output format or the timeout).
std::vector<std::pair<std::string, std::string>> agreement_fields(const BenchOptions& o);

// Runs the benchmark; MPI must be initialised. Collective: every rank calls it with the same
// options. Returns the number of wrong elements over every block (0 when unchecked). InputError
// when the job does not fit the options (on every rank alike), std::runtime_error naming the rank
// when a run fails there (a peer gone or stalled: possibly on this rank only).
std::uint64_t run_bench(const BenchOptions& o, BenchReport& report);

}  // namespace topocoll::runtime
