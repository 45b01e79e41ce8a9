// mpi_fault_probe: ranks that disagree about a collective call, for tools/fault_test.sh.
// Rank 1 passes one element more than the others to a ring allreduce.
//
//   mpi_fault_probe checked     check_same_call first: every rank must throw the same InputError
//                               naming both signatures (prints "rank R: error: ...", exits 2)
//   mpi_fault_probe unchecked   straight into the executor over the MPI transport: the job must
//                               end with an error (a message of the wrong size, or a timeout of a
//                               rank that waits on one that stopped), never succeed or hang
//
// Exit status per rank: 2 the expected input error, 1 a runtime error, 0 the collective
// "succeeded" (which with different counts is a defect the test reports).
#include <fmt/format.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "common/errors.hpp"
#include "runtime/executor.hpp"
#include "runtime/faults.hpp"
#include "runtime/mpi_transport.hpp"

using namespace topocoll;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const std::string mode = argc > 1 ? argv[1] : "";
  const auto timeout = std::chrono::milliseconds(3000);
  int rc = 0;
  try {
    if (mode != "checked" && mode != "unchecked")
      throw InputError(fmt::format("mode '{}': expected checked or unchecked", mode));
    const std::uint64_t count = 1000 + (rank == 1 ? 1 : 0);
    const algo::CollectiveArgs args =
        algo::CollectiveArgs::allreduce(count, algo::DataType::Float32, algo::ReduceOp::Sum, ranks);
    algo::Tuning tuning;
    const algo::Algorithm& ring = algo::find_algorithm("ring");
    const algo::Layout layout = algo::uniform_layout(1, ranks);
    const runtime::PeerTable peers = runtime::PeerTable::gather(MPI_COMM_WORLD);
    if (mode == "checked")
      runtime::check_same_call(MPI_COMM_WORLD, {args, ring.name, tuning.channels, tuning.slice_bytes}, timeout, &peers);
    const algo::Schedule s = ring.generate(layout, args, tuning);
    std::vector<float> in(count, 1.0f), out(count, 0.0f), scratch(s.scratch_count());
    runtime::MpiTransport transport(MPI_COMM_WORLD);
    runtime::ExecOptions o;
    o.progress_timeout = timeout;
    runtime::execute(s, rank, runtime::Buffers{in.data(), out.data(), scratch.data()}, transport, o);
    std::fprintf(stderr, "rank %d: the allreduce of %llu elements completed\n", rank,
                 static_cast<unsigned long long>(count));
  } catch (const InputError& e) {
    std::fprintf(stderr, "rank %d: error: %s\n", rank, e.what());
    rc = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: error: %s\n", rank, e.what());
    rc = 1;
  }
  std::fflush(stderr);
  // After a failed collective messages may still be in flight: leave without MPI_Finalize (the
  // launcher sees the exit status; a non-zero one ends the job).
  // The input error is raised on every rank alike: let all of them print it before the first
  // non-zero exit makes mpirun end the job.
  if (rc == 2 && mode == "checked") MPI_Barrier(MPI_COMM_WORLD);
  if (rc != 0) std::_Exit(rc);
  MPI_Finalize();
  return 0;
}
