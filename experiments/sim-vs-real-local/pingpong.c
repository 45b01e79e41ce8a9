/* experiments/sim-vs-real-local/pingpong.c: the microbenchmarks behind calibration.json.
 *
 *   mpirun -np 2 ./pingpong      (rank 0 prints one JSON object)
 *
 * - latency_us: half the round trip of an 8-byte MPI_Send / MPI_Recv ping-pong, median of 9
 *   batches of 200 round trips each;
 * - bandwidth: for 1, 4, 16 and 64 MiB, half the round trip (median of 5), and the rate
 *   bytes / (one-way time - latency);
 * - reduce_gbps: a float sum a[i] += b[i] over 16 MiB arrays on rank 0 (bytes of a per second,
 *   median of 9), what a rank's local reduction costs.
 * Measured on this machine at the time it runs; nothing here is a constant from elsewhere. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}
static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return v[n / 2];
}

/* Half the round trip of `bytes` between ranks 0 and 1, averaged over `reps`. */
static double one_way(char* buf, int bytes, int reps, int rank) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < reps; ++i) {
    if (rank == 0) {
      MPI_Send(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
  }
  return (MPI_Wtime() - t0) / reps / 2.0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "pingpong: run with exactly 2 ranks (got %d)\n", size);
    MPI_Finalize();
    return 2;
  }
  const int max_bytes = 64 << 20;
  char* buf = malloc((size_t)max_bytes);
  memset(buf, 1, (size_t)max_bytes);

  double lat[9];
  (void)one_way(buf, 8, 100, rank); /* warm-up */
  for (int b = 0; b < 9; ++b) lat[b] = one_way(buf, 8, 200, rank);
  const double latency = median(lat, 9);

  const int sizes[4] = {1 << 20, 4 << 20, 16 << 20, 64 << 20};
  double t[4], rate[4];
  for (int s = 0; s < 4; ++s) {
    double v[5];
    (void)one_way(buf, sizes[s], 1, rank);
    for (int b = 0; b < 5; ++b) v[b] = one_way(buf, sizes[s], 2, rank);
    t[s] = median(v, 5);
    rate[s] = sizes[s] / (t[s] - latency) / 1e9;
  }

  double reduce = 0.0;
  if (rank == 0) {
    const size_t n = (16u << 20) / sizeof(float);
    float* a = malloc(n * sizeof *a);
    float* b = malloc(n * sizeof *b);
    for (size_t i = 0; i < n; ++i) a[i] = 0.0f, b[i] = 1.0f;
    double v[9];
    for (int r = 0; r < 9; ++r) {
      const double t0 = MPI_Wtime();
      for (size_t i = 0; i < n; ++i) a[i] += b[i];
      v[r] = (double)(n * sizeof *a) / (MPI_Wtime() - t0) / 1e9;
    }
    reduce = median(v, 9);
    if (a[n / 2] < 0) printf("impossible\n"); /* keeps the loop */
    free(a);
    free(b);
    printf("{\"latency_us\": %.4f, \"bandwidth\": [", latency * 1e6);
    for (int s = 0; s < 4; ++s)
      printf("%s{\"bytes\": %d, \"one_way_us\": %.3f, \"gbps\": %.4f}", s ? ", " : "", sizes[s], t[s] * 1e6, rate[s]);
    printf("], \"reduce_gbps\": %.4f}\n", reduce);
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
