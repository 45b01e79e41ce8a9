// topocoll-bench: the measured side of topocoll, a separate executable so that MPI stays out of
// the `topocoll` tool. See tools/bench_command.hpp and runtime/bench/run.hpp.
// Exit status: 0 success, 1 a wrong result, a fault (a peer gone or stalled) or an internal error,
// 2 bad input (on every rank, after the agreement; or a rank's own, e.g. a message of the wrong size).
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "common/cli_io.hpp"
#include "common/errors.hpp"
#include "runtime/executor.hpp"
#include "runtime/faults.hpp"
#include "tools/bench_command.hpp"

namespace {

constexpr const char* kExamples = R"(
Examples:
  mpirun -np 4 topocoll-bench --algorithm ring,dbt,hierarchical,mpi -b 8 -e 128M -f 2
  mpirun -np 2 topocoll-bench --algorithm all -b 8 -e 64K -f 4 -n 5 -w 1 -d int32 -o max
  mpirun -np 2 topocoll-bench --algorithm ring,mpi -b 1M -e 256M --format jsonl -O measured.jsonl
  mpirun -np 4 topocoll-bench --algorithm ring,mpi --format nccl-tests -O 'ar-{algorithm}.log' -J 'ar-{algorithm}.json'
  mpirun -np 4 topocoll-bench --collective alltoall -b 8 -e 64M -f 4
  mpirun -np 4 topocoll-bench --collective broadcast --root 2 --algorithm broadcast-tree,mpi
  mpirun -np 4 --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any topocoll-bench --backend ucx --algorithm all
nccl-tests' flags: -b -e -f -i -n -w -N -c -d -o -r -a -z -J as all_reduce_perf's; -g and -t 1 only.
NCCL_TESTS_MIN_BW=X: a table whose average bus bandwidth is below 0.9 X says FAILED and the run exits 1.
As root, and with more ranks than cores: mpirun --oversubscribe --allow-run-as-root ...)";

std::string fmt_rank(int rank) {
  return "rank " + std::to_string(rank) + ": ";
}

// Before MPI_Init the launcher's environment says how many ranks the job has: with one (or none:
// started by hand) bad input is reported at once, without MPI.
int launcher_size() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"})
    if (const char* s = std::getenv(v)) return std::atoi(s);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "topocoll-bench: a measured collective of topocoll's schedules and of MPI (and NCCL), as nccl-tests' table"};
  topocoll::tools::BenchFlags a;
  app.add_option(
         "--backend", a.backend,
         "transport of topocoll's schedules: mpi, shm (ranks of a node read each other's buffers in place; mpi between "
         "nodes) or ucx (nccl: CUDA+NCCL builds only); the mpi algorithm is "
         "MPI's collective in every backend")
      ->default_val("mpi");
  app.add_option("--collective", a.collective,
                 "allreduce, allgather, reduce_scatter, broadcast, reduce, alltoall or alltoallv (with --sizes)")
      ->default_val("allreduce");
  app.add_option("--root,-r", a.root, "root rank of broadcast and reduce")->default_val(0);
  app.add_option("--algorithm", a.algorithm,
                 "algorithms of the collective and/or mpi: comma list or 'all' (default: allreduce "
                 "ring,dbt,hierarchical,mpi; the other collectives all)");
  app.add_option("-b,--minbytes", a.min_bytes, "smallest size (8, 1K, 1M, 1G)")->default_val("8");
  app.add_option("-e,--maxbytes", a.max_bytes, "largest size")->default_val("128M");
  app.add_option("-f,--stepfactor", a.factor, "multiplication factor between sizes")->default_val("2");
  app.add_option("-i,--stepbytes", a.stepbytes, "increment between sizes, in bytes (instead of -f)");
  app.add_option("-N,--run_cycles", a.run_cycles, "run the sweep this many times (each printed)")->default_val(1);
  app.add_option("-a,--average", a.average,
                 "nccl-tests' time over ranks: 0 rank 0, 1 average, 2 min, 3 max of each rank's mean (default: the "
                 "median over iterations of the max over ranks)");
  app.add_option("-g,--ngpus", a.ngpus, "GPUs per thread: 1 only (one rank per process and GPU)")->default_val(1);
  app.add_option("-t,--nthreads", a.nthreads, "threads per process: 1 only")->default_val(1);
  app.add_option("-z,--blocking", a.blocking, "1 only: every timed call waits for completion and a barrier")
      ->default_val(1);
  app.add_option("-n,--iters", a.iters, "timed iterations")->default_val(20);
  app.add_option("-w,--warmup_iters", a.warmup, "untimed warmup iterations")->default_val(5);
  app.add_option("-c,--check", a.check, "verify bit for bit (0: off)")->default_val(1);
  app.add_option("-d,--datatype", a.dtype, "data type")->default_val("float");
  app.add_option("-o,--op", a.op, "reduction: sum prod min max avg")->default_val("sum");
  app.add_option("--channels", a.channels, "channels of topocoll's schedules")->default_val(2);
  app.add_flag("--rounds", a.rounds,
               "run topocoll's schedules cut into rounds (runtime/rounds.hpp), one group of MPI_Isend/Irecv per round, "
               "as --backend nccl runs them (backend mpi)");
  app.add_flag("--overlap", a.overlap,
               "also measure overlap: each size's collective started, driven from a compute loop of about its own "
               "length (test() between slices), then completed; prints compute, collective and overlapped times and "
               "the overlap efficiency (backends mpi, ucx and shm; out of place)");
  app.add_option(
         "--ucx-bulk", a.ucx_bulk,
         "ucx backend, experimental: messages of this many bytes or more go over an endpoint without peer-failure "
         "handling, which may use CMA (one copy); 0: none. 64K hung with dbt at 4 MiB on 2 ranks (UCX 1.13.1)")
      ->default_val("0");
  app.add_option("--shm-copy", a.shm_copy,
                 "shm backend: push (fused, and a send of what a receive-reduce just computed is written straight "
                 "into the receiver's buffer by that pass), fused (the bench's buffers in shared memory; receives "
                 "memcpy from the peer's mapping, receive-reduces reduce from it in one pass), map (the same, "
                 "receive-reduces through staging) or cma (private buffers, receivers read them with "
                 "process_vm_readv)")
      ->default_val("push");
  app.add_option("--slice", a.slice, "pipelining slice in bytes")->default_val("1M");
  app.add_option(
      "--topology", a.topology,
      "the job's topology: preset, NCCL XML or YAML spec; its GPUs must match the ranks (default: detected from MPI)");
  app.add_option("--nodes", a.nodes, "nodes of --topology (presets: default 1)");
  app.add_option("--fabric", a.fabric, "fabric of --topology: single-switch | rail-fat-tree | fat-tree");
  // Bad input on a rank of a larger job does not end that rank alone: it takes part in the
  // agreement below with its error, so that every rank stops with it (never a rank waiting in MPI
  // for one that left).
  std::string input_error;
  double env_timeout_s = 60;  // TOPOCOLL_TIMEOUT, when set, is --timeout's default
  try {
    env_timeout_s =
        static_cast<double>(topocoll::runtime::ExecOptions::from_environment().progress_timeout.count()) / 1000.0;
  } catch (const std::exception& e) {
    input_error = e.what();
  }
  app.add_option("--timeout", a.timeout_s, "progress timeout in seconds (default: TOPOCOLL_TIMEOUT, else 60)")
      ->default_val(env_timeout_s);
  app.add_option("--schedule", a.schedules,
                 "schedule file to run (topocoll JSON or MSCCL XML), repeatable; without --algorithm it runs with the "
                 "mpi baseline only");
  app.add_flag("--no-verify", a.no_verify, "run --schedule files without proving them first");
  app.add_option("--sizes", a.sizes_file,
                 "alltoallv: the size matrix, one row per rank of the element counts it sends each rank");
  app.add_option("--format", a.format, "table | jsonl | nccl-tests (all_reduce_perf's output, one table per algorithm)")
      ->default_val("table");
  app.add_option("--nccl-tests-layout", a.nccl_tests_layout,
                 "--format nccl-tests: current (nccl-tests 2.17 and later) | classic (earlier releases)")
      ->default_val("current");
  app.add_option("-O,--output", a.output,
                 "output file (default stdout; rank 0 writes); with --format nccl-tests a name holding {algorithm} "
                 "writes one file per algorithm");
  app.add_option("-J", a.json,
                 "nccl-tests' JSON document (rank 0 writes); several algorithms: a name holding {algorithm}");
  app.footer(kExamples);
  topocoll::tools::BenchCommand command;
  if (input_error.empty()) {
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return app.exit(e);
    } catch (const CLI::ParseError& e) {
      input_error = std::string(e.what()) + " (see --help)";
    }
  }
  if (input_error.empty()) {
    try {
      a.algorithm_given = app.count("--algorithm") > 0;
      a.sizes_given = app.count("-b") + app.count("-e") > 0;
      a.dtype_given = app.count("--datatype") > 0;
      a.op_given = app.count("--op") > 0;
      a.collective_given = app.count("--collective") > 0;
      a.root_given = app.count("--root") > 0;
      a.factor_given = app.count("-f") > 0;
      a.argv.assign(argv, argv + argc);
      command = topocoll::tools::parse_bench_flags(a);
    } catch (const std::exception& e) {
      input_error = e.what();
    }
  }
  if (!input_error.empty() && launcher_size() <= 1) {
    std::fprintf(stderr, "topocoll-bench: error: %s\n", topocoll::cli::one_line(input_error).c_str());
    return 2;
  }

  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int rc = 0;
  try {
    topocoll::runtime::arm_test_faults(rank);  // TOPOCOLL_TEST_KILL / _STALL (tools/fault_test.sh); unset: nothing
    // Every rank agrees on the command before any data moves (runtime/faults.hpp): the same
    // AgreedInputError on every rank when one rank's input was bad or two ranks differ.
    topocoll::runtime::Agreement mine;
    if (input_error.empty())
      mine.fields = topocoll::runtime::agreement_fields(command.options);
    else
      mine.input_error = input_error;
    const auto timeout = input_error.empty()
                             ? command.options.progress_timeout
                             : std::chrono::milliseconds(static_cast<std::int64_t>(env_timeout_s * 1000.0));
    topocoll::runtime::agree(MPI_COMM_WORLD, mine, "the command line", timeout);
    rc = topocoll::tools::bench_command(command, std::cout);
  } catch (const topocoll::runtime::AgreedInputError& e) {
    // Raised alike on every rank, after an agreement: rank 0 says it, every rank ends cleanly.
    if (rank == 0) std::fprintf(stderr, "topocoll-bench: error: %s\n", e.what());
    MPI_Finalize();
    return 2;
  } catch (const std::exception& e) {
    // Possibly on this rank only (a peer died or stalled, a message of the wrong size): say so
    // and leave at once, without MPI_Finalize (messages may be in flight). mpirun ends the job
    // on a non-zero exit; a launcher that does not (mpirun --enable-recovery) lets every other
    // rank run into its own progress timeout and report what it waits for. Not MPI_Abort: it
    // would kill the others before they can say which rank is gone.
    topocoll::runtime::set_own_state(topocoll::runtime::PeerState::Failed);
    const bool input = dynamic_cast<const topocoll::InputError*>(&e) != nullptr;
    std::fprintf(stderr, "topocoll-bench: error: %s%s\n", input ? fmt_rank(rank).c_str() : "", e.what());
    std::fflush(stderr);
    std::fflush(stdout);
    std::_Exit(input ? 2 : 1);
  }
  MPI_Finalize();
  return rc;
}
