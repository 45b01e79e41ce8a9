// The NCCL transport under MPI (run as one process, or under mpirun with one GPU per rank): a ring
// step (send to the next rank, receive-reduce from the previous) checked bit for bit against the
// CPU reducer, then a plain receive, then communicators with NCCL_ALGO forced. One process sends
// to itself (NCCL allows it in a group). Without a usable GPU: prints why and exits 77 (CTest:
// skipped).
#include "runtime/cuda/nccl_transport.hpp"

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <mpi.h>

#include <cstdio>
#include <exception>
#include <vector>

#include "runtime/cuda/test_support.hpp"
#include "runtime/reducer.hpp"
#include "runtime/test_data.hpp"

using namespace topocoll;
using namespace topocoll::runtime;

namespace {

int failures = 0;
void expect(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  failures += ok ? 0 : 1;
}

void run(int rank, int size) {
  int devices = 0;
  cuda::throw_if_failed(cuda::Status{static_cast<int>(cudaGetDeviceCount(&devices)), "cudaGetDeviceCount"});
  cuda::throw_if_failed(cuda::Status{static_cast<int>(cudaSetDevice(rank % devices)), "cudaSetDevice"});
  cuda::NcclComm comm(MPI_COMM_WORLD);
  cudaStream_t stream = nullptr;
  cuda::throw_if_failed(cuda::Status{static_cast<int>(cudaStreamCreate(&stream)), "cudaStreamCreate"});
  cuda::NcclTransport t(comm, stream);
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;

  for (algo::DataType dtype : {algo::DataType::Float32, algo::DataType::BFloat16, algo::DataType::Int8}) {
    const std::size_t n = 1009 + 65536, elem = algo::size_of(dtype);
    std::vector<unsigned char> mine(n * elem), theirs(n * elem), got(n * elem);
    fill_input(dtype, algo::ReduceOp::Sum, rank, size, 0, mine.data(), n);
    fill_input(dtype, algo::ReduceOp::Sum, prev, size, 0, theirs.data(), n);
    cuda::test::DeviceBuffer send_buf(n * elem), acc(n * elem);
    send_buf.upload(mine.data(), n * elem);
    acc.upload(mine.data(), n * elem);
    // Step 1: send mine to next, receive-reduce prev's into acc.
    t.send(next, send_buf.data(), n * elem);
    t.recv_reduce(prev, acc.data(), n, dtype, algo::ReduceOp::Sum);
    t.end_step();
    t.synchronize();
    acc.download(got.data(), n * elem);
    reduce(dtype, algo::ReduceOp::Sum, mine.data(), theirs.data(), n);
    expect(count_wrong(dtype, got.data(), mine.data(), n) == 0,
           fmt::format("rank {}: ring step recv_reduce, {} x {}", rank, n, algo::to_string(dtype)));
    // Step 2: plain receive of the reduced buffer from prev (it sends its own).
    t.send(next, acc.data(), n * elem);
    t.recv(prev, send_buf.data(), n * elem);
    t.end_step();
    t.synchronize();
  }
  // Forced algorithms: the communicators initialise (NCCL_ALGO read at init) and the env is restored.
  for (const char* algo_name : {"Ring", "Tree"}) {
    try {
      cuda::NcclComm forced(MPI_COMM_WORLD, algo_name);
      expect(true, fmt::format("rank {}: communicator with NCCL_ALGO={}", rank, algo_name));
    } catch (const std::exception& e) {
      expect(false, fmt::format("rank {}: communicator with NCCL_ALGO={}: {}", rank, algo_name, e.what()));
    }
  }
  cudaStreamDestroy(stream);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string why;
  if (!cuda::device_available(&why)) {
    if (rank == 0) std::printf("SKIP: no usable CUDA device: %s\n", why.c_str());
    MPI_Finalize();
    return 77;
  }
  if (rank == 0) std::printf("NCCL %s, %d rank(s)\n", cuda::nccl_version().c_str(), size);
  try {
    run(rank, size);
  } catch (const std::exception& e) {
    std::printf("FAILED: rank %d: %s\n", rank, e.what());
    ++failures;
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
