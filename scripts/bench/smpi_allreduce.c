/* The SMPI peer of scripts/bench-sim: one MPI_Allreduce (float sum) of BYTES bytes per rank,
 * timed with MPI_Wtime (simulated time under SMPI). Rank 0 prints
 *   smpi_allreduce ranks P bytes S simulated_s T
 * where T is the slowest rank's time from the common start (after a barrier) to its return from
 * MPI_Allreduce. Under SMPI the buffers come from SMPI_SHARED_MALLOC (all ranks share the pages:
 * the data is meaningless, which is fine for timing, and 1024 ranks x 64 MiB fit in memory).
 * Usage: smpi_allreduce BYTES   (K, M, G suffixes allowed) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t parse_bytes(const char* s) {
  char* end = NULL;
  double v = strtod(s, &end);
  switch (end && *end ? *end : 0) {
    case 'K': case 'k': v *= 1024.0; break;
    case 'M': case 'm': v *= 1024.0 * 1024.0; break;
    case 'G': case 'g': v *= 1024.0 * 1024.0 * 1024.0; break;
    default: break;
  }
  return (size_t)v;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t bytes = argc > 1 ? parse_bytes(argv[1]) : (size_t)64 << 20;
  int count = (int)(bytes / sizeof(float));
  if (count < 1) count = 1;
#ifdef SMPI_SHARED_MALLOC
  float* send = (float*)SMPI_SHARED_MALLOC((size_t)count * sizeof(float));
  float* recv = (float*)SMPI_SHARED_MALLOC((size_t)count * sizeof(float));
#else
  float* send = (float*)malloc((size_t)count * sizeof(float));
  float* recv = (float*)malloc((size_t)count * sizeof(float));
  for (int i = 0; i < count; i++) send[i] = 1.0f;
  memset(recv, 0, (size_t)count * sizeof(float));
#endif
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double dt = MPI_Wtime() - t0, worst = 0;
  MPI_Reduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("smpi_allreduce ranks %d bytes %zu simulated_s %.9f\n", size, (size_t)count * sizeof(float), worst);
#ifdef SMPI_SHARED_MALLOC
  SMPI_SHARED_FREE(send);
  SMPI_SHARED_FREE(recv);
#else
  free(send);
  free(recv);
#endif
  MPI_Finalize();
  return 0;
}
