// mpi_window_probe: the send window over MPI (runtime/send_window_test.cpp runs it in process).
//
//   mpi_window_probe N        a 2-rank allreduce where each rank posts N sends of 128 KiB (past
//                             Open MPI's eager limits: a send completes once received) before its
//                             first receive-reduce of the same regions
//   mpi_window_probe FILE     a schedule JSON (an allreduce), e.g. runtime/testdata's repros
//
// Each rank checks its output bit for bit against test_data's exact expectation and prints
// "rank R: N sends ahead: correct" (exit 0), or the error (exit 1). Run under mpirun -np 2.
#include <fmt/format.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/ir/schedule_json.hpp"
#include "algorithms/verifier.hpp"
#include "common/errors.hpp"
#include "runtime/executor.hpp"
#include "runtime/mpi_transport.hpp"
#include "runtime/test_data.hpp"

using namespace topocoll;

namespace {

algo::Schedule sends_ahead(std::uint64_t sends, std::uint64_t slice) {
  const algo::CollectiveArgs a =
      algo::CollectiveArgs::allreduce(sends * slice, algo::DataType::Float32, algo::ReduceOp::Sum, 2);
  std::vector<algo::Program> programs(2);
  for (int r = 0; r < 2; ++r) {
    algo::ProgramBuilder b(programs[static_cast<std::size_t>(r)]);
    b.copy({algo::BufferId::Input, 0, a.count}, {algo::BufferId::Output, 0, a.count}, 0);
    for (std::uint64_t k = 0; k < sends; ++k) b.send(1 - r, {algo::BufferId::Output, k * slice, slice}, 0);
    for (std::uint64_t k = 0; k < sends; ++k) b.recv_reduce(1 - r, {algo::BufferId::Output, k * slice, slice}, 0);
  }
  return algo::Schedule::from_programs(fmt::format("{}-sends-ahead", sends), a, 1, 0, std::move(programs));
}

algo::Schedule load(const std::string& arg) {
  if (!arg.empty() && arg.find_first_not_of("0123456789") == std::string::npos)
    return sends_ahead(std::stoull(arg), 32768);
  std::ifstream in(arg);
  if (!in) throw InputError(fmt::format("cannot read '{}'", arg));
  std::stringstream ss;
  ss << in.rdbuf();
  return algo::read_schedule_json(ss.str(), arg);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int rc = 0;
  try {
    if (argc != 2) throw InputError("usage: mpi_window_probe N | SCHEDULE.json");
    const algo::Schedule s = load(argv[1]);
    const algo::CollectiveArgs& a = s.args();
    if (a.collective != algo::Collective::AllReduce || a.ranks != ranks)
      throw InputError(fmt::format("'{}': expected an allreduce of {} ranks", argv[1], ranks));
    if (!algo::verify(s).ok()) throw InputError(fmt::format("'{}': the verifier rejects it", argv[1]));
    const std::size_t bytes = static_cast<std::size_t>(a.count) * algo::size_of(a.dtype);
    std::vector<std::byte> in(bytes), out(bytes), expected(bytes), scratch(s.scratch_count() * algo::size_of(a.dtype));
    runtime::fill_input(a.dtype, a.op, rank, ranks, 0, in.data(), a.count);
    runtime::fill_expected(a.dtype, a.op, ranks, 0, expected.data(), a.count);
    runtime::MpiTransport transport(MPI_COMM_WORLD);
    runtime::ExecOptions o;
    o.progress_timeout = std::chrono::milliseconds(5000);
    runtime::execute(s, rank, runtime::Buffers{in.data(), out.data(), scratch.data()}, transport, o);
    const std::size_t wrong = runtime::count_wrong(a.dtype, out.data(), expected.data(), a.count);
    if (wrong != 0) throw std::runtime_error(fmt::format("{} of {} output elements wrong", wrong, a.count));
    std::fprintf(stderr, "rank %d: %s (%zu ops): correct\n", rank, s.name().c_str(), s.program(rank).size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: error: %s\n", rank, e.what());
    rc = 1;
  }
  std::fflush(stderr);
  if (rc != 0) std::_Exit(rc);  // messages may still be in flight: no MPI_Finalize
  MPI_Finalize();
  return 0;
}
