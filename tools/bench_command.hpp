// `topocoll-bench` (issue 5, part 1): measured allreduce over a size sweep under MPI, printed as
// nccl-tests' all_reduce_perf prints it (one block per algorithm), or as JSONL records of the
// simulator's schema (kind "measured", engine = the backend).
//
//   mpirun -np P topocoll-bench --algorithm ring,dbt,hierarchical,mpi -b 8 -e 128M -f 2
//
// Per algorithm and size, out of place then in place: `warmup` untimed runs, then `iters` timed
// runs, each between a barrier and the end of the rank's part; the time shown is the median over
// iterations of the maximum over ranks. With check != 0 one more run on fresh inputs is compared
// bit for bit with test_data's exact result: #wrong is the number of wrong elements over all ranks.
// `mpi` is MPI_Allreduce on the same buffers (avg: MPI_SUM then finish_avg; no fp16 / bf16).
//
// Backends (--backend): the transport topocoll's schedules run over, `mpi` (MPI point-to-point)
// or `ucx` (UCP tag API, endpoints bootstrapped through MPI; built when UCX is found). Each
// (algorithm, size) is bound once into a runtime::Plan and run for every iteration. The `mpi`
// algorithm is MPI_Allreduce in every backend; the header names the PML Open MPI uses for it.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace topocoll::algo {
struct Algorithm;
}

namespace topocoll::tools {

struct BenchArgs {
  std::string backend = "mpi";  // mpi | ucx
  std::string algorithm = "ring,dbt,hierarchical,mpi";
  std::string min_bytes = "8", max_bytes = "128M";
  std::string factor = "2";
  int iters = 20, warmup = 5, check = 1;
  std::string dtype = "float", op = "sum";
  int channels = 2;
  bool rounds = false;         // --rounds: topocoll's schedules cut into rounds (backend mpi)
  std::string ucx_bulk = "0";  // --ucx-bulk: messages this large use UCX's bulk endpoint (0: never)
  std::string slice = "1M";
  double timeout_s = 60.0;
  std::string format = "table";  // table | jsonl
  std::string output;            // -O FILE (rank 0 writes)
  std::string topology;          // --topology: preset, NCCL XML or YAML; empty: detected from MPI
  int nodes = 0;                 // --nodes (0: the topology's own)
  std::string fabric;            // --fabric (empty: the topology's default)
};

// One block of the bench: a topocoll algorithm, or a stock baseline (alg null: mpi, nccl,
// nccl-ring, nccl-tree, named by `name`).
struct BenchEntry {
  const algo::Algorithm* alg = nullptr;
  std::string name;
};

// Checks the arguments without MPI (so every rank rejects bad input before MPI_Init); throws
// InputError. Returns the blocks in the order asked ("all": every allreduce algorithm, then mpi).
std::vector<BenchEntry> validate_bench_args(const BenchArgs& a);

// Runs the benchmark; MPI must be initialised. Rank 0 writes to `out` (or -O). Returns 0 when
// every result was right, 1 when an element was wrong.
int bench_command(const BenchArgs& a, std::ostream& out);

}  // namespace topocoll::tools
