// `topocoll-bench` (issue 5, part 1): a measured collective (--collective: allreduce, allgather,
// reduce_scatter, broadcast, reduce, alltoall) over a size sweep under MPI, printed as nccl-tests'
// *_perf binaries print it (one block per algorithm), or as JSONL records of the record schema
// (kind "measured", engine = the backend, collective).
//
//   mpirun -np P topocoll-bench --algorithm ring,dbt,hierarchical,mpi -b 8 -e 128M -f 2
//   mpirun -np P topocoll-bench --collective alltoall --algorithm alltoall-pairwise,mpi -b 8 -e 128M -f 2
//
// The measurement is runtime/bench/run.hpp's run_bench (what is timed, how #wrong is counted, the
// backends); this command parses the flags into its BenchOptions and prints what it reports.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/nccl_tests_table.hpp"
#include "runtime/bench/run.hpp"

namespace topocoll::tools {

// The flags as given (tools/bench_main.cpp binds them).
struct BenchFlags {
  std::string backend = "mpi";  // mpi | ucx | nccl
  std::string collective = "allreduce";
  int root = 0;           // --root: broadcast and reduce
  std::string algorithm;  // empty: allreduce ring,dbt,hierarchical,mpi; other collectives all
  std::string min_bytes = "8", max_bytes = "128M";
  std::string factor = "2";
  int iters = 20, warmup = 5, check = 1;
  std::string dtype = "float", op = "sum";
  int channels = 2;
  bool rounds = false;            // --rounds: topocoll's schedules cut into rounds (backend mpi)
  std::string ucx_bulk = "0";     // --ucx-bulk: messages this large use UCX's bulk endpoint (0: never)
  std::string shm_copy = "push";  // --shm-copy: push, fused, map (buffers in shared regions) or cma (process_vm_readv)
  bool overlap = false;           // --overlap: the overlap benchmark (runtime/bench/overlap.hpp)
  std::string slice = "1M";
  double timeout_s = 60.0;
  std::string format = "table";               // table | jsonl | nccl-tests
  std::string nccl_tests_layout = "current";  // --format nccl-tests: current | classic
  // -O FILE (rank 0 writes); with --format nccl-tests a name holding {algorithm} writes one file
  // per algorithm.
  std::string output;
  // nccl-tests' flags that mean something here (tools/bench_main.cpp says what each does):
  int nthreads = 1, ngpus = 1;    // -t, -g: only 1 (one rank per process and GPU)
  std::string stepbytes;          // -i: linear increments instead of -f (empty: not given)
  int run_cycles = 1;             // -N: the sweep this many times
  int blocking = 1;               // -z: only 1 (each timed call waits for completion and a barrier)
  int average = -1;               // -a 0..3; -1: not given (median of the max over ranks)
  std::string json;               // -J FILE: nccl-tests' JSON document ({algorithm}: one per algorithm)
  std::vector<std::string> argv;  // the command line, for -J's "args"
  std::string topology;           // --topology: preset, NCCL XML or YAML; empty: detected from MPI
  int nodes = 0;                  // --nodes (0: the topology's own)
  std::string fabric;             // --fabric (empty: the topology's default)
  // --schedule FILE (repeatable): schedule files run beside the algorithms (algorithms/schedule_file.hpp);
  // without --algorithm, instead of its default list (the mpi baseline stays).
  std::vector<std::string> schedules;
  bool no_verify = false;
  std::string sizes_file;  // --sizes FILE: the alltoallv size matrix (algo::load_alltoallv_sizes)
  // Which flags the command line gave: a schedule file supplies the dtype, op and (fixed-count
  // files) the sizes left out.
  bool algorithm_given = false, sizes_given = false, dtype_given = false, op_given = false;
  bool collective_given = false, root_given = false;
  bool factor_given = false;
};

// The run and how to print it.
struct BenchCommand {
  runtime::BenchOptions options;
  std::shared_ptr<const algo::ScheduleFileSet> files;  // what options.entries' files point into
  bool jsonl = false;                                  // --format jsonl, else the table
  std::string output;                                  // -O FILE; empty: the stream given to bench_command
  // --format nccl-tests: nccl-tests' layout; the run header's values; -J; NCCL_TESTS_MIN_BW.
  std::optional<nccl_tests::Layout> nccl_tests;
  nccl_tests::RunHeader run_header;
  std::string json;
  std::vector<std::string> argv;
  std::optional<double> min_bw;
};

// Checks the flags without MPI (so every rank rejects bad input before MPI_Init); throws
// InputError naming the flag. The blocks are in the order asked ("all": every algorithm of the
// collective, then mpi); an algorithm of another collective is refused, naming the collective's.
BenchCommand parse_bench_flags(const BenchFlags& f);

// Runs the benchmark; MPI must be initialised. Rank 0 writes to `out` (or -O). Returns 0 when
// every result was right, 1 when an element was wrong or (--format nccl-tests) the average bus
// bandwidth of a table is below NCCL_TESTS_MIN_BW (nccl-tests' FAILED).
int bench_command(const BenchCommand& c, std::ostream& out);

}  // namespace topocoll::tools
